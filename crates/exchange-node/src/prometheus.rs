//! The one writer of the Prometheus text exposition format (version
//! 0.0.4) behind `/metrics`. The node, the gateway, the reporting and the
//! market-data services each add their families to one [`Exposition`], so
//! the scrape has one HELP and one TYPE per family, its samples together,
//! and label values escaped the one way the format allows, whoever wrote
//! them.

use std::collections::HashMap;
use std::fmt::Write;

/// A family's TYPE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// A sample's value, written the way Prometheus parses it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Int(u64),
    Float(f64),
    /// Nanoseconds written as decimal seconds, exactly: Prometheus wants
    /// base units, and a float would round a long-running total.
    NanosAsSeconds(u64),
}

impl From<u64> for Value {
    fn from(v: u64) -> Value {
        Value::Int(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Float(v)
    }
}

impl Value {
    fn write(self, out: &mut String) {
        let _ = match self {
            Value::Int(v) => write!(out, "{v}"),
            Value::Float(v) => write!(out, "{}", Float(v)),
            Value::NanosAsSeconds(ns) => {
                write!(out, "{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
            }
        };
    }
}

/// A float as the format spells it: `+Inf`, `-Inf` and `NaN`, not Rust's
/// `inf` and `NaN`; finite values as Rust's shortest round-trip decimal.
struct Float(f64);

impl std::fmt::Display for Float {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            v if v.is_nan() => f.write_str("NaN"),
            v if v == f64::INFINITY => f.write_str("+Inf"),
            v if v == f64::NEG_INFINITY => f.write_str("-Inf"),
            v => write!(f, "{v}"),
        }
    }
}

struct Family {
    name: &'static str,
    help: &'static str,
    kind: Kind,
    samples: String,
}

/// A `/metrics` page being built. Families keep the order they were first
/// named in; naming one again adds to its samples rather than repeating
/// its HELP and TYPE.
#[derive(Default)]
pub struct Exposition {
    families: Vec<Family>,
    index: HashMap<&'static str, usize>,
}

impl Exposition {
    pub fn new() -> Exposition {
        Exposition::default()
    }

    /// A counter without labels.
    pub fn counter(&mut self, name: &'static str, help: &'static str, value: impl Into<Value>) {
        self.family(name, Kind::Counter, help).sample(&[], value);
    }

    /// A gauge without labels.
    pub fn gauge(&mut self, name: &'static str, help: &'static str, value: impl Into<Value>) {
        self.family(name, Kind::Gauge, help).sample(&[], value);
    }

    /// The family `name`, opened for samples (with labels, or several).
    pub fn family(
        &mut self,
        name: &'static str,
        kind: Kind,
        help: &'static str,
    ) -> FamilyWriter<'_> {
        debug_assert!(valid_name(name), "metric name {name:?}");
        let at = *self.index.entry(name).or_insert_with(|| {
            self.families.push(Family {
                name,
                help,
                kind,
                samples: String::new(),
            });
            self.families.len() - 1
        });
        let family = &mut self.families[at];
        debug_assert_eq!(family.kind, kind, "{name} named with two types");
        FamilyWriter { family }
    }

    /// A histogram: `buckets` are `(upper bound, cumulative count)` in
    /// rising order; the `+Inf` bucket is `count`.
    pub fn histogram(
        &mut self,
        name: &'static str,
        help: &'static str,
        buckets: impl IntoIterator<Item = (f64, u64)>,
        count: u64,
        sum: f64,
    ) {
        let mut family = self.family(name, Kind::Histogram, help);
        let mut bound = String::new();
        for (le, cumulative) in buckets {
            bound.clear();
            let _ = write!(bound, "{}", Float(le));
            family.suffixed("_bucket", &[("le", &bound)], cumulative);
        }
        family.suffixed("_bucket", &[("le", "+Inf")], count);
        family.suffixed("_sum", &[], sum);
        family.suffixed("_count", &[], count);
    }

    /// The page: each family's HELP, TYPE and samples.
    pub fn finish(self) -> String {
        let mut out = String::new();
        for family in self.families {
            out.push_str("# HELP ");
            out.push_str(family.name);
            out.push(' ');
            escape_help(family.help, &mut out);
            let _ = writeln!(out, "\n# TYPE {} {}", family.name, family.kind.as_str());
            out.push_str(&family.samples);
        }
        out
    }
}

/// Adds samples to one family.
pub struct FamilyWriter<'a> {
    family: &'a mut Family,
}

impl FamilyWriter<'_> {
    /// One sample; `labels` are `(name, value)`, values escaped here.
    pub fn sample(&mut self, labels: &[(&str, &str)], value: impl Into<Value>) -> &mut Self {
        self.suffixed("", labels, value)
    }

    fn suffixed(
        &mut self,
        suffix: &str,
        labels: &[(&str, &str)],
        value: impl Into<Value>,
    ) -> &mut Self {
        let out = &mut self.family.samples;
        out.push_str(self.family.name);
        out.push_str(suffix);
        if !labels.is_empty() {
            out.push('{');
            for (i, (name, value)) in labels.iter().enumerate() {
                debug_assert!(valid_name(name), "label name {name:?}");
                if i > 0 {
                    out.push(',');
                }
                out.push_str(name);
                out.push_str("=\"");
                escape_label(value, out);
                out.push('"');
            }
            out.push('}');
        }
        out.push(' ');
        value.into().write(out);
        out.push('\n');
        self
    }
}

/// Metric and label names: `[a-zA-Z_:][a-zA-Z0-9_:]*` (colons are for
/// recording rules, but the format allows them).
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// A label value: backslash, double quote and line feed escaped.
fn escape_label(value: &str, out: &mut String) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// HELP text: backslash and line feed escaped (a quote is literal there).
fn escape_help(help: &str, out: &mut String) {
    for c in help.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
#[path = "prometheus_tests.rs"]
mod tests;
