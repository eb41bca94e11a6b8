//! A flat JSON object read without building a `serde_json::Value`: keys and
//! strings borrow from the line unless they contain escapes, and nested
//! values are skipped, remembering only their kind. A command is a flat
//! object, so this is all the decoder needs, and it keeps the type of every
//! value so that errors can say what was found instead of what was wanted.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// One JSON value of a command's object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val<'a> {
    Str(Cow<'a, str>),
    UInt(u64),
    NegInt(i64),
    /// A number with a fraction or an exponent: only ever refused, so its
    /// value is not kept.
    Float,
    Bool(bool),
    Null,
    Array,
    Object,
}

impl Val<'_> {
    /// What the value is, for error messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Val::Str(_) => "a string",
            Val::UInt(_) => "an integer",
            Val::NegInt(_) => "a negative integer",
            Val::Float => "a number with a fraction or exponent",
            Val::Bool(_) => "a boolean",
            Val::Null => "null",
            Val::Array => "an array",
            Val::Object => "an object",
        }
    }
}

/// The members of one JSON object, in input order, keys unique.
pub(crate) struct RawObject<'a> {
    pub(crate) members: Vec<(Cow<'a, str>, Val<'a>)>,
    /// The first key seen twice, if any; reported by the decoder.
    pub(crate) duplicate: Option<String>,
}

struct ValVisitor;

impl<'de> Visitor<'de> for ValVisitor {
    type Value = Val<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Val<'de>, E> {
        Ok(Val::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Val<'de>, E> {
        Ok(Val::Str(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Val<'de>, E> {
        Ok(Val::Str(Cow::Owned(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Val<'de>, E> {
        Ok(Val::UInt(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Val<'de>, E> {
        Ok(if v >= 0 {
            Val::UInt(v.unsigned_abs())
        } else {
            Val::NegInt(v)
        })
    }

    #[allow(
        clippy::disallowed_types,
        reason = "serde's signature; the value is dropped unread"
    )]
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Val<'de>, E> {
        Ok(Val::Float)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Val<'de>, E> {
        Ok(Val::Bool(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Val<'de>, E> {
        Ok(Val::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Val<'de>, E> {
        Ok(Val::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Val<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Val::Array)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Val<'de>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Val::Object)
    }
}

impl<'de> Deserialize<'de> for Val<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValVisitor)
    }
}

/// A key, borrowed from the input when it has no escapes.
struct Key<'a>(Cow<'a, str>);

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(v)))
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct ObjectVisitor;

impl<'de> Visitor<'de> for ObjectVisitor {
    type Value = RawObject<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object such as {\"cmd\":\"place\", ...}")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawObject<'de>, A::Error> {
        // The largest command has 13 fields.
        let mut members: Vec<(Cow<'de, str>, Val<'de>)> = Vec::with_capacity(16);
        let mut duplicate = None;
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let value: Val<'de> = map.next_value()?;
            if duplicate.is_none() && members.iter().any(|(k, _)| *k == key) {
                duplicate = Some(key.clone().into_owned());
            }
            members.push((key, value));
        }
        Ok(RawObject { members, duplicate })
    }
}

impl<'de> Deserialize<'de> for RawObject<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ObjectVisitor)
    }
}

/// Reads one JSON object, rejecting anything after it but whitespace.
pub(crate) fn parse_object(line: &str) -> Result<RawObject<'_>, serde_json::Error> {
    serde_json::from_str(line)
}
