//! JSON codecs (being built).
