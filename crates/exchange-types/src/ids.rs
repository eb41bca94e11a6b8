//! Identifiers that travel inside commands, events and orders.
//!
//! Text identifiers are stored inline with a fixed capacity so that an order
//! is one allocation-free record and comparing or hashing one never chases a
//! pointer. The capacities are limits of the protocol (see `limits`).

use std::fmt;
use thiserror::Error;

use crate::limits::{MAX_ASSET_LEN, MAX_CLIENT_ORDER_ID_LEN, MAX_SYMBOL_LEN};

/// Account number as clients and operators know it.
pub type AccountId = u64;
/// Exchange-assigned order id: unique, increasing, never reused.
pub type OrderId = u64;
/// Exchange-assigned trade id: unique, increasing, never reused.
pub type TradeId = u64;

/// The largest order, trade or account id the exchange takes from a
/// client: 2^63 - 1. The core numbers orders and trades from 1 upwards
/// (2^63 of them is beyond any venue's lifetime) and accounts from 0 (the
/// fee account) upwards, so a larger id can only name nothing; refusing it
/// at the edge keeps it out of the log, and every signed 64-bit client
/// (SQL `BIGINT`, Java `long`, most FIX engines) can hold every id.
pub const MAX_ID: u64 = i64::MAX as u64;

/// An order or trade id a client may name: 1 to [`MAX_ID`] (0 is never
/// assigned).
pub fn order_id_in_range(id: u64) -> bool {
    (1..=MAX_ID).contains(&id)
}

/// An account id a client or the operator may name: 0 (the fee account)
/// to [`MAX_ID`].
pub fn account_id_in_range(id: u64) -> bool {
    id <= MAX_ID
}

/// Why a text identifier was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum IdError {
    #[error("identifier is empty")]
    Empty,
    #[error("identifier is longer than {0} bytes")]
    TooLong(usize),
    #[error("identifier contains a character outside printable ASCII")]
    InvalidChar,
}

/// A printable-ASCII string of at most `N` bytes, stored inline.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InlineStr<const N: usize> {
    len: u8,
    bytes: [u8; N],
}

impl<const N: usize> InlineStr<N> {
    /// Accepts 1..=N bytes of printable ASCII without spaces, so that an id
    /// survives every wire format (JSON, FIX, URLs) unchanged.
    pub fn new(text: &str) -> Result<Self, IdError> {
        let raw = text.as_bytes();
        if raw.is_empty() {
            return Err(IdError::Empty);
        }
        if raw.len() > N {
            return Err(IdError::TooLong(N));
        }
        if !raw.iter().all(|b| b.is_ascii_graphic()) {
            return Err(IdError::InvalidChar);
        }
        let mut bytes = [0u8; N];
        bytes[..raw.len()].copy_from_slice(raw);
        Ok(InlineStr {
            len: raw.len() as u8,
            bytes,
        })
    }

    pub fn as_str(&self) -> &str {
        // Only printable ASCII is ever stored, so the bytes are valid UTF-8.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// Written as the string it holds, and read back only if it is a valid one
/// (as the node's snapshots keep order records).
#[cfg(feature = "serde")]
impl<const N: usize> serde::Serialize for InlineStr<N> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[cfg(feature = "serde")]
impl<'de, const N: usize> serde::Deserialize<'de> for InlineStr<N> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        InlineStr::new(&text).map_err(serde::de::Error::custom)
    }
}

impl<const N: usize> fmt::Debug for InlineStr<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl<const N: usize> fmt::Display for InlineStr<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A client's own id for an order; unique among the account's open orders.
pub type ClientOrderId = InlineStr<MAX_CLIENT_ORDER_ID_LEN>;
/// An instrument's symbol, such as `BTC-USD`.
pub type Symbol = InlineStr<MAX_SYMBOL_LEN>;
/// An asset's code, such as `BTC` or `USD`.
pub type AssetCode = InlineStr<MAX_ASSET_LEN>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_str_validates() {
        let id = ClientOrderId::new("c-1").unwrap();
        assert_eq!(id.as_str(), "c-1");
        assert_eq!(ClientOrderId::new(""), Err(IdError::Empty));
        assert_eq!(ClientOrderId::new("a b"), Err(IdError::InvalidChar));
        assert_eq!(ClientOrderId::new("é"), Err(IdError::InvalidChar));
        let long = "x".repeat(MAX_CLIENT_ORDER_ID_LEN + 1);
        assert_eq!(
            ClientOrderId::new(&long),
            Err(IdError::TooLong(MAX_CLIENT_ORDER_ID_LEN))
        );
        assert!(Symbol::new("BTC-USD").unwrap() < Symbol::new("ETH-USD").unwrap());
    }

    #[test]
    fn id_ranges_stop_at_the_signed_64_bit_limit() {
        assert!(!order_id_in_range(0));
        assert!(order_id_in_range(1));
        assert!(order_id_in_range(MAX_ID));
        assert!(!order_id_in_range(MAX_ID + 1));
        assert!(!order_id_in_range(u64::MAX));
        assert!(account_id_in_range(0));
        assert!(account_id_in_range(MAX_ID));
        assert!(!account_id_in_range(MAX_ID + 1));
    }
}
