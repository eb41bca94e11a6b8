//! The values FIX defines for the enumerated fields the gateway accepts
//! without using, and for those whose values it checks before the order
//! is read (PegOffsetType, ContingencyType): a value outside them is
//! "value is incorrect" (373=5), as for the other fields it uses.

use crate::tags;

/// SecurityType (167), FIX 4.4.
const SECURITY_TYPES: &[&str] = &[
    "ABS",
    "AMENDED",
    "AN",
    "BA",
    "BN",
    "BOX",
    "BRADY",
    "BRIDGE",
    "BUYSELL",
    "CB",
    "CD",
    "CL",
    "CMBS",
    "CMO",
    "COFO",
    "COFP",
    "CORP",
    "CP",
    "CPP",
    "CS",
    "DEFLTED",
    "DINP",
    "DN",
    "DUAL",
    "EUCD",
    "EUCORP",
    "EUCP",
    "EUSOV",
    "EUSUPRA",
    "FAC",
    "FADN",
    "FOR",
    "FORWARD",
    "FUT",
    "GO",
    "IET",
    "LOFC",
    "LQN",
    "MATURED",
    "MBS",
    "MF",
    "MIO",
    "MLEG",
    "MPO",
    "MPP",
    "MPT",
    "MT",
    "MTN",
    "NONE",
    "ONITE",
    "OPT",
    "PEF",
    "PFAND",
    "PN",
    "PS",
    "PZFJ",
    "RAN",
    "REPLACD",
    "REPO",
    "RETIRED",
    "REV",
    "RVLV",
    "RVLVTRM",
    "RVRP",
    "SECLOAN",
    "SECPLEDGE",
    "SPCLA",
    "SPCLO",
    "SPCLT",
    "STN",
    "STRUCT",
    "SUPRA",
    "SWING",
    "TAN",
    "TAXA",
    "TBA",
    "TBILL",
    "TBOND",
    "TCAL",
    "TD",
    "TECP",
    "TERM",
    "TINT",
    "TIPS",
    "TNOTE",
    "TPRN",
    "TRAN",
    "UST",
    "USTB",
    "VRDN",
    "WAR",
    "WITHDRN",
    "XCN",
    "XLINKD",
    "YANK",
    "?",
];
/// SecurityIDSource (22), FIX 4.4: one character each.
const SECURITY_ID_SOURCES: &[u8] = b"123456789ABCDEFGHIJ";
/// PartyIDSource (447), FIX 4.4.
const PARTY_ID_SOURCES: &[u8] = b"BCDEFGHI123456789";
/// PartyRole (452), FIX 4.4: 1 to 81.
const PARTY_ROLES: std::ops::RangeInclusive<u64> = 1..=81;

/// Whether `value` is one FIX 4.4 defines for `tag` (any value, for a tag
/// not listed here).
pub fn defined(tag: u32, value: &[u8]) -> bool {
    match tag {
        tags::SECURITY_TYPE => SECURITY_TYPES.iter().any(|t| t.as_bytes() == value),
        tags::SECURITY_ID_SOURCE => matches!(value, [c] if SECURITY_ID_SOURCES.contains(c)),
        tags::PARTY_ID_SOURCE => matches!(value, [c] if PARTY_ID_SOURCES.contains(c)),
        // PegOffsetType (FIX 4.4): price, basis points, ticks, price tier.
        tags::PEG_OFFSET_TYPE => matches!(value, b"0" | b"1" | b"2" | b"3"),
        // ContingencyType (FIX 5.0 SP1): OCO, OTO, OUO absolute and
        // proportional, bid and offer, bid and offer OCO.
        tags::CONTINGENCY_TYPE => matches!(value, [b'1'..=b'6']),
        tags::PARTY_ROLE => {
            crate::message::parse_uint(value).is_some_and(|r| PARTY_ROLES.contains(&r))
        }
        _ => true,
    }
}
