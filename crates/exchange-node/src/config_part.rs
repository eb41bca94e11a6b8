//! One layer's part of the configuration file: the file is one TOML
//! document, but each layer's crate defines (and checks) only the keys it
//! owns. A part is read straight from the file's text, so that an error
//! inside a section still points at its line, and a layer's unknown-key
//! check still covers its own keys (which serde's `flatten` would not).

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::{MapAccessDeserializer, StringDeserializer};
use serde::de::{
    DeserializeOwned, DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, Visitor,
};
use serde::Deserialize;

/// Reads `T` from the file's top-level table as if the table held only the
/// keys `keep` accepts; the others are skipped unread.
pub fn parse_part<T, K>(text: &str, keep: K) -> Result<T, toml::de::Error>
where
    T: DeserializeOwned,
    K: Fn(&str) -> bool,
{
    toml::Deserializer::new(text).deserialize_map(PartVisitor {
        keep,
        part: PhantomData,
    })
}

struct PartVisitor<T, K> {
    keep: K,
    part: PhantomData<T>,
}

impl<'de, T, K> Visitor<'de> for PartVisitor<T, K>
where
    T: DeserializeOwned,
    K: Fn(&str) -> bool,
{
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a table")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::deserialize(MapAccessDeserializer::new(Kept {
            map,
            keep: self.keep,
        }))
    }
}

/// The file's top-level entries whose key `keep` accepts.
struct Kept<A, K> {
    map: A,
    keep: K,
}

impl<'de, A, K> MapAccess<'de> for Kept<A, K>
where
    A: MapAccess<'de>,
    K: Fn(&str) -> bool,
{
    type Error = A::Error;

    fn next_key_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, A::Error> {
        let mut seed = Some(seed);
        loop {
            let key = KeptKey {
                seed: &mut seed,
                keep: &self.keep,
            };
            match self.map.next_key_seed(key)? {
                None => return Ok(None),
                Some(Some(key)) => return Ok(Some(key)),
                Some(None) => {
                    self.map.next_value::<IgnoredAny>()?;
                }
            }
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// One key, handed to the part when it is the part's: read inside the
/// file's own key, so that an error (an unknown field) points at it.
struct KeptKey<'s, S, K> {
    seed: &'s mut Option<S>,
    keep: &'s K,
}

impl<'de, S, K> DeserializeSeed<'de> for KeptKey<'_, S, K>
where
    S: DeserializeSeed<'de>,
    K: Fn(&str) -> bool,
{
    type Value = Option<S::Value>;

    fn deserialize<D: Deserializer<'de>>(self, key: D) -> Result<Self::Value, D::Error> {
        let key = String::deserialize(key)?;
        if !(self.keep)(&key) {
            return Ok(None);
        }
        match self.seed.take() {
            Some(seed) => seed.deserialize(StringDeserializer::new(key)).map(Some),
            None => Err(D::Error::custom("a key was read twice")),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::parse_part;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields, default)]
    struct Mine {
        a: u32,
        inner: Inner,
    }

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields, default)]
    struct Inner {
        b: u32,
    }

    const TEXT: &str = "a = 1\nother = \"x\"\n[inner]\nb = 2\n[theirs]\nc = 3\n";

    #[test]
    fn a_part_sees_only_its_keys_and_refuses_unknown_ones() {
        let mine: Mine = parse_part(TEXT, |key| matches!(key, "a" | "inner")).unwrap();
        assert_eq!(
            mine,
            Mine {
                a: 1,
                inner: Inner { b: 2 }
            }
        );
        let error = parse_part::<Mine, _>(TEXT, |key| key != "theirs")
            .unwrap_err()
            .to_string();
        assert!(error.contains("unknown field `other`"), "{error}");
        assert!(error.contains("line 2, column 1"), "{error}");
        let typo = "[inner]\nb = 2\nbb = 3\n";
        let error = parse_part::<Mine, _>(typo, |_| true)
            .unwrap_err()
            .to_string();
        assert!(error.contains("unknown field `bb`"), "{error}");
        assert!(error.contains("line 3, column 1"), "{error}");
    }

    #[test]
    fn syntax_errors_are_reported_whatever_the_part() {
        let error = parse_part::<Mine, _>("a = \n", |_| false)
            .unwrap_err()
            .to_string();
        assert!(error.contains("line 1"), "{error}");
    }
}
