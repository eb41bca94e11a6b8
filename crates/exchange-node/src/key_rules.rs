//! Who may manage which key, and what a key's label and allow-list may be.
//!
//! A key that manages keys (create, rotate, revoke on its own account)
//! may only touch keys it *covers*: every scope of theirs is one of its
//! own, their allow-list lies within its own, and they expire no later
//! than it does. A key therefore never hands out, renews or takes away
//! anything wider than itself, and a key's children inherit at least its
//! restrictions. The operator (the admin token) is not held to this.
//!
//! These are checked when the entry is applied, on every replica alike,
//! against the keys as they stand at that log index: a managing key
//! revoked or expired just before its request is applied manages nothing.

use ipnet::{IpNet, Ipv4Net};

pub use crate::source::peer_address;

use crate::keys::{parse_allow, ApiKey, KeyError, Scopes};
use crate::limits::MAX_KEY_LABEL_LEN;

/// What a key would be, as far as covering goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reach<'a> {
    pub scopes: Scopes,
    /// Empty: usable from anywhere.
    pub allow: &'a [String],
    /// `None`: never expires.
    pub expires_at: Option<u64>,
}

impl<'a> Reach<'a> {
    pub fn of(key: &'a ApiKey) -> Self {
        Reach {
            scopes: key.scopes,
            allow: &key.allow,
            expires_at: key.expires_at,
        }
    }
}

/// Whether `manager` covers `target` (see the module's comment).
pub fn covers(manager: &Reach<'_>, target: &Reach<'_>) -> bool {
    let scopes = manager.scopes.covers(target.scopes);
    let expiry = match (manager.expires_at, target.expires_at) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(limit), Some(at)) => at <= limit,
    };
    scopes && expiry && allow_within(manager.allow, target.allow)
}

/// Whether every address `inner` admits, `outer` admits too.
fn allow_within(outer: &[String], inner: &[String]) -> bool {
    if outer.is_empty() {
        return true;
    }
    // An allow-list that does not parse admits nothing a request can use;
    // a target whose list does not parse is not known to be within.
    let (Ok(outer), Ok(inner)) = (parse_allow_mapped(outer), parse_allow_mapped(inner)) else {
        return false;
    };
    !inner.is_empty()
        && inner
            .iter()
            .all(|net| outer.iter().any(|range| range.contains(net)))
}

/// The range an IPv4-mapped IPv6 range (`::ffff:a.b.c.d/n`, n >= 96)
/// stands for: the peers it is meant to match are seen as IPv4.
pub fn unmapped(net: IpNet) -> IpNet {
    let IpNet::V6(v6) = net else {
        return net;
    };
    match (v6.addr().to_ipv4_mapped(), v6.prefix_len().checked_sub(96)) {
        (Some(v4), Some(len)) => Ipv4Net::new(v4, len).map_or(net, |n| IpNet::V4(n.trunc())),
        _ => net,
    }
}

/// As [`parse_allow`], each range as the peers it is meant for are seen.
pub fn parse_allow_mapped(allow: &[String]) -> Result<Vec<IpNet>, KeyError> {
    Ok(parse_allow(allow)?.into_iter().map(unmapped).collect())
}

/// The allow-list as a new key stores it: canonical ranges, IPv4-mapped
/// ones written as the IPv4 ranges they match.
pub fn canonical_allow(allow: &[String]) -> Result<Vec<String>, KeyError> {
    Ok(parse_allow_mapped(allow)?
        .into_iter()
        .map(|net| net.to_string())
        .collect())
}

/// Format characters (Unicode category Cf): invisible, and some reorder
/// the text around them (bidirectional overrides), so a label shown to
/// the owner could read as something it is not.
const FORMAT: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
];

/// Whether `c` may appear in a label: not a control (Cc) or format (Cf)
/// character, not a line or paragraph separator (Zl, Zp), not private-use
/// (Co), whose meaning nobody shares.
pub fn printable(c: char) -> bool {
    let code = u32::from(c);
    let format = FORMAT
        .iter()
        .any(|&(first, last)| (first..=last).contains(&code));
    let separator = matches!(c, '\u{2028}' | '\u{2029}');
    let private = matches!(code, 0xE000..=0xF8FF | 0xF_0000..=0x10_FFFF);
    !(c.is_control() || format || separator || private)
}

/// A label is at most [`MAX_KEY_LABEL_LEN`] bytes of printable text
/// ([`printable`]). Checked where keys are asked for, not where the log
/// is applied, so that keys created before the rule replay unchanged.
pub fn check_label(label: &str) -> Result<(), KeyError> {
    if label.len() > MAX_KEY_LABEL_LEN || !label.chars().all(printable) {
        return Err(KeyError::InvalidLabel);
    }
    Ok(())
}
