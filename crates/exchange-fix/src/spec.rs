//! The messages the gateway accepts, field by field: which tags each may
//! carry, which it must, and each tag's data format. A message that breaks
//! these rules gets a session-level Reject naming the tag.
//!
//! Strict on purpose: a tag the gateway does not know for a message type is
//! refused rather than ignored, so a client never believes the exchange
//! honoured an instruction it silently dropped. The standard fields that
//! carry no instruction here (identification, parties, free text) are
//! accepted, checked for format and defined values, and not used. The one
//! repeating group accepted inbound is Parties (453). Every FIX 4.4 group
//! of an accepted message type is counted, taken or not: its NumInGroup
//! must match its entries.

use crate::message::{parse_uint, Message, Problem};
use crate::tags::{self, session_reject as reason};
use crate::time;

#[path = "spec_values.rs"]
mod values;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// Non-negative integer (SeqNum, Length, NumInGroup, TagNum, int).
    Uint,
    /// `Y` or `N`.
    Bool,
    /// One character.
    Char,
    /// Decimal number: `-?digits[.digits]`.
    Float,
    Timestamp,
    Text,
}

fn format_of(tag: u32) -> Format {
    use tags::*;
    match tag {
        MSG_SEQ_NUM
        | BEGIN_SEQ_NO
        | END_SEQ_NO
        | NEW_SEQ_NO
        | REF_SEQ_NUM
        | HEART_BT_INT
        | ENCRYPT_METHOD
        | REF_TAG_ID
        | SESSION_REJECT_REASON
        | NEXT_EXPECTED_MSG_SEQ_NUM
        | MAX_MESSAGE_SIZE
        | LAST_MSG_SEQ_NUM_PROCESSED
        | MASS_CANCEL_REQUEST_TYPE
        | NO_PARTIES
        | NO_TRADING_SESSIONS
        | PARTY_ROLE
        | PEG_OFFSET_TYPE
        | CONTINGENCY_TYPE => Format::Uint,
        POSS_DUP_FLAG
        | POSS_RESEND
        | GAP_FILL_FLAG
        | RESET_SEQ_NUM_FLAG
        | TEST_MESSAGE_INDICATOR => Format::Bool,
        SIDE
        | ORD_TYPE
        | TIME_IN_FORCE
        | HANDL_INST
        | SELF_TRADE_PREVENTION
        | PARTY_ID_SOURCE
        | SUBSCRIPTION_REQUEST_TYPE => Format::Char,
        PRICE | ORDER_QTY | CASH_ORDER_QTY | ORDER_PERCENT | STOP_PX | MIN_QTY | MAX_FLOOR
        | DISPLAY_QTY | PEG_OFFSET_VALUE => Format::Float,
        SENDING_TIME | ORIG_SENDING_TIME | TRANSACT_TIME | EXPIRE_TIME => Format::Timestamp,
        _ => Format::Text,
    }
}

fn well_formed(format: Format, value: &[u8]) -> bool {
    match format {
        Format::Uint => parse_uint(value).is_some(),
        Format::Bool => value == b"Y" || value == b"N",
        Format::Char => value.len() == 1 && value[0].is_ascii_graphic(),
        Format::Float => {
            let digits = value.strip_prefix(b"-").unwrap_or(value);
            let points = digits.iter().filter(|b| **b == b'.').count();
            points <= 1
                && digits.iter().any(u8::is_ascii_digit)
                && digits.iter().all(|b| b.is_ascii_digit() || *b == b'.')
        }
        Format::Timestamp => time::parse(value).is_some(),
        Format::Text => true,
    }
}

/// A field's data format (373=6), then, for the enumerated fields the
/// gateway accepts without using, whether FIX 4.4 defines the value
/// (373=5).
fn check_value(tag: u32, value: &[u8]) -> Result<(), Problem> {
    if !well_formed(format_of(tag), value) {
        return Err(Problem::new(
            Some(tag),
            reason::INCORRECT_DATA_FORMAT,
            format!("tag {tag} has an incorrect data format"),
        ));
    }
    if !values::defined(tag, value) {
        return Err(Problem::new(
            Some(tag),
            reason::VALUE_INCORRECT,
            format!(
                "{:?} is not a valid value for tag {tag}",
                String::from_utf8_lossy(value)
            ),
        ));
    }
    Ok(())
}

/// A FIX 4.4 repeating group of the accepted messages: its NumInGroup
/// tag, its members, the first of which opens each entry, and the message
/// types FIX 4.4 defines it for. A group is read as a structure before the
/// gateway decides whether it takes the group at all, so a count that
/// does not match the entries is that (373=16) even for a group refused
/// afterwards as not taken (373=2).
struct Group {
    count: u32,
    members: &'static [u32],
    msg_types: &'static [&'static [u8]],
}

const GROUPS: &[Group] = &[
    Group {
        count: tags::NO_PARTIES,
        members: &[tags::PARTY_ID, tags::PARTY_ID_SOURCE, tags::PARTY_ROLE],
        msg_types: &[b"D", b"F", b"G", b"H"],
    },
    Group {
        count: tags::NO_TRADING_SESSIONS,
        members: &[tags::TRADING_SESSION_ID, tags::TRADING_SESSION_SUB_ID],
        msg_types: &[b"D", b"G"],
    },
];

/// Checks the entries of `group` at the start of `rest` against the
/// NumInGroup value `count`; returns how many fields they take.
fn check_group(group: &Group, count: &[u8], rest: &[(u32, &[u8])]) -> Result<usize, Problem> {
    let declared = parse_uint(count).unwrap_or(0);
    let mut entries = 0u64;
    let mut in_entry: Vec<u32> = Vec::with_capacity(group.members.len());
    let mut used = 0;
    for &(tag, value) in rest {
        if !group.members.contains(&tag) {
            break;
        }
        if tag == group.members[0] {
            entries += 1;
            in_entry.clear();
        } else if entries == 0 || in_entry.contains(&tag) {
            return Err(Problem::new(
                Some(tag),
                reason::REPEATING_GROUP_OUT_OF_ORDER,
                format!(
                    "tag {tag} is outside an entry of group {}: each entry begins with tag {}",
                    group.count, group.members[0]
                ),
            ));
        }
        in_entry.push(tag);
        check_value(tag, value)?;
        used += 1;
    }
    if entries != declared {
        return Err(Problem::new(
            Some(group.count),
            reason::INCORRECT_NUM_IN_GROUP_COUNT,
            format!(
                "NumInGroup {} says {declared} entries but {entries} follow",
                group.count
            ),
        ));
    }
    Ok(used)
}

/// Standard header tags, in any order after BeginString, BodyLength, MsgType.
const HEADER_REQUIRED: &[u32] = &[
    tags::SENDER_COMP_ID,
    tags::TARGET_COMP_ID,
    tags::MSG_SEQ_NUM,
    tags::SENDING_TIME,
];
const HEADER_OPTIONAL: &[u32] = &[
    tags::POSS_DUP_FLAG,
    tags::POSS_RESEND,
    tags::ORIG_SENDING_TIME,
    tags::SENDER_SUB_ID,
    tags::TARGET_SUB_ID,
    tags::ON_BEHALF_OF_COMP_ID,
    tags::ON_BEHALF_OF_SUB_ID,
    tags::DELIVER_TO_COMP_ID,
    tags::DELIVER_TO_SUB_ID,
    tags::SENDER_LOCATION_ID,
    tags::TARGET_LOCATION_ID,
    tags::ON_BEHALF_OF_LOCATION_ID,
    tags::DELIVER_TO_LOCATION_ID,
    tags::LAST_MSG_SEQ_NUM_PROCESSED,
];

struct MsgSpec {
    required: &'static [u32],
    optional: &'static [u32],
}

/// The order-entry messages' fields, one constant a message type.
mod order_entry {
    use super::MsgSpec;
    use crate::tags::*;

    /// NewOrderSingle (35=D).
    pub(super) const NEW_ORDER: MsgSpec = MsgSpec {
        required: &[CL_ORD_ID, SYMBOL, SIDE, TRANSACT_TIME, ORD_TYPE],
        optional: &[
            ACCOUNT,
            HANDL_INST,
            PRICE,
            TIME_IN_FORCE,
            EXEC_INST,
            TEXT,
            SELF_TRADE_PREVENTION,
            ORDER_QTY,
            CASH_ORDER_QTY,
            ORDER_PERCENT,
            STOP_PX,
            EXPIRE_TIME,
            MIN_QTY,
            MAX_FLOOR,
            DISPLAY_QTY,
            PEG_OFFSET_VALUE,
            PEG_OFFSET_TYPE,
            CONTINGENCY_TYPE,
            CL_ORD_LINK_ID,
            SECONDARY_CL_ORD_ID,
            SECURITY_ID,
            SECURITY_ID_SOURCE,
            SECURITY_TYPE,
            NO_PARTIES,
        ],
    };

    /// OrderCancelRequest (35=F).
    pub(super) const CANCEL: MsgSpec = MsgSpec {
        required: &[ORIG_CL_ORD_ID, CL_ORD_ID, SYMBOL, SIDE, TRANSACT_TIME],
        optional: &[
            ORDER_ID,
            ACCOUNT,
            ORDER_QTY,
            CASH_ORDER_QTY,
            ORDER_PERCENT,
            TEXT,
            SECONDARY_CL_ORD_ID,
            SECURITY_ID,
            SECURITY_ID_SOURCE,
            SECURITY_TYPE,
            NO_PARTIES,
        ],
    };

    /// OrderCancelReplaceRequest (35=G).
    pub(super) const REPLACE: MsgSpec = MsgSpec {
        required: &[
            ORIG_CL_ORD_ID,
            CL_ORD_ID,
            SYMBOL,
            SIDE,
            TRANSACT_TIME,
            ORD_TYPE,
        ],
        optional: &[
            ORDER_ID,
            ACCOUNT,
            HANDL_INST,
            PRICE,
            STOP_PX,
            TEXT,
            ORDER_QTY,
            CASH_ORDER_QTY,
            ORDER_PERCENT,
            SECONDARY_CL_ORD_ID,
            SECURITY_ID,
            SECURITY_ID_SOURCE,
            SECURITY_TYPE,
            NO_PARTIES,
        ],
    };

    /// OrderStatusRequest (35=H).
    pub(super) const STATUS: MsgSpec = MsgSpec {
        required: &[CL_ORD_ID, SYMBOL, SIDE],
        optional: &[
            ORDER_ID,
            ACCOUNT,
            ORD_STATUS_REQ_ID,
            SECONDARY_CL_ORD_ID,
            SECURITY_ID,
            SECURITY_ID_SOURCE,
            SECURITY_TYPE,
            NO_PARTIES,
        ],
    };

    /// OrderMassCancelRequest (35=q).
    pub(super) const MASS_CANCEL: MsgSpec = MsgSpec {
        required: &[CL_ORD_ID, MASS_CANCEL_REQUEST_TYPE, TRANSACT_TIME],
        optional: &[
            SYMBOL,
            ACCOUNT,
            TEXT,
            SECURITY_ID,
            SECURITY_ID_SOURCE,
            SECURITY_TYPE,
        ],
    };

    /// SecurityStatusRequest (35=e).
    pub(super) const SECURITY_STATUS: MsgSpec = MsgSpec {
        required: &[SECURITY_STATUS_REQ_ID, SYMBOL, SUBSCRIPTION_REQUEST_TYPE],
        optional: &[SECURITY_ID, SECURITY_ID_SOURCE, SECURITY_TYPE],
    };
}

fn spec(msg_type: &[u8]) -> Option<MsgSpec> {
    use tags::*;
    let (required, optional): (&[u32], &[u32]) = match msg_type {
        b"0" => (&[], &[TEST_REQ_ID]),
        b"1" => (&[TEST_REQ_ID], &[]),
        b"2" => (&[BEGIN_SEQ_NO, END_SEQ_NO], &[]),
        b"3" => (
            &[REF_SEQ_NUM],
            &[REF_TAG_ID, REF_MSG_TYPE, SESSION_REJECT_REASON, TEXT],
        ),
        b"4" => (&[NEW_SEQ_NO], &[GAP_FILL_FLAG]),
        b"5" => (&[], &[TEXT]),
        b"A" => (
            &[ENCRYPT_METHOD, HEART_BT_INT],
            &[
                RESET_SEQ_NUM_FLAG,
                USERNAME,
                PASSWORD,
                NEXT_EXPECTED_MSG_SEQ_NUM,
                MAX_MESSAGE_SIZE,
                TEST_MESSAGE_INDICATOR,
            ],
        ),
        b"D" => return Some(order_entry::NEW_ORDER),
        b"F" => return Some(order_entry::CANCEL),
        b"G" => return Some(order_entry::REPLACE),
        b"H" => return Some(order_entry::STATUS),
        b"q" => return Some(order_entry::MASS_CANCEL),
        b"e" => return Some(order_entry::SECURITY_STATUS),
        _ => return None,
    };
    Some(MsgSpec { required, optional })
}

/// Whether the gateway takes this message type at all (session-level or
/// order entry); a defined FIX type that it does not take gets a
/// BusinessMessageReject.
pub fn is_supported(msg_type: &[u8]) -> bool {
    spec(msg_type).is_some()
}

/// Checks a message against the rules above; the first violation found
/// becomes the Reject's reason.
pub fn validate(msg: &Message) -> Result<(), Problem> {
    if let Some(problem) = msg.problem() {
        return Err(problem.clone());
    }
    let fields: Vec<(u32, &[u8])> = msg.fields().collect();
    let msg_type = check_msg_type(msg, &fields)?;
    let body_spec = spec(msg_type);
    // BeginString, BodyLength and MsgType are checked; CheckSum is last by framing.
    let inner = fields
        .get(3..fields.len().saturating_sub(1))
        .unwrap_or_default();
    let seen = check_fields(inner, msg_type, body_spec.as_ref())?;
    check_required(msg, &seen, body_spec.as_ref())
}

/// MsgType (35) must be the third field and a FIX 4.4 message type.
fn check_msg_type<'m>(msg: &'m Message, fields: &[(u32, &[u8])]) -> Result<&'m [u8], Problem> {
    let third = fields.get(2).map(|(tag, _)| *tag);
    if third != Some(tags::MSG_TYPE) {
        let problem = if msg.msg_type().is_some() {
            Problem::new(
                Some(tags::MSG_TYPE),
                reason::TAG_OUT_OF_ORDER,
                "MsgType (35) must be the third field",
            )
        } else {
            Problem::new(
                Some(tags::MSG_TYPE),
                reason::REQUIRED_TAG_MISSING,
                "required tag MsgType (35) is missing",
            )
        };
        return Err(problem);
    }
    let msg_type = msg.msg_type().unwrap_or_default();
    if !tags::msg::is_defined(msg_type) {
        return Err(Problem::new(
            Some(tags::MSG_TYPE),
            reason::INVALID_MSG_TYPE,
            format!(
                "MsgType {:?} is not a FIX 4.4 message",
                String::from_utf8_lossy(msg_type)
            ),
        ));
    }
    Ok(msg_type)
}

/// Checks the fields between MsgType and CheckSum in order: each tag once,
/// the header before the body, body tags the message type takes, values
/// well formed and groups as counted. Returns the tags seen.
fn check_fields(
    inner: &[(u32, &[u8])],
    msg_type: &[u8],
    body_spec: Option<&MsgSpec>,
) -> Result<Vec<u32>, Problem> {
    let mut seen: Vec<u32> = Vec::with_capacity(inner.len());
    let mut in_body = false;
    let mut at = 0;
    while let Some(&(tag, value)) = inner.get(at) {
        at += 1;
        if seen.contains(&tag)
            || matches!(tag, tags::BEGIN_STRING | tags::BODY_LENGTH | tags::MSG_TYPE)
        {
            return Err(Problem::new(
                Some(tag),
                reason::TAG_APPEARS_MORE_THAN_ONCE,
                format!("tag {tag} appears more than once"),
            ));
        }
        seen.push(tag);
        let in_header = HEADER_REQUIRED.contains(&tag) || HEADER_OPTIONAL.contains(&tag);
        if in_header && in_body {
            return Err(Problem::new(
                Some(tag),
                reason::TAG_OUT_OF_ORDER,
                format!("header tag {tag} after the body began"),
            ));
        }
        let group = GROUPS
            .iter()
            .find(|g| g.count == tag && g.msg_types.contains(&msg_type));
        if let Some(group) = group {
            // Structure first: the entries are counted before the gateway
            // decides whether it takes the group.
            in_body = true;
            check_value(tag, value)?;
            at += check_group(group, value, &inner[at..])?;
            check_body_tag(tag, msg_type, body_spec)?;
            continue;
        }
        if !in_header {
            in_body = true;
            check_body_tag(tag, msg_type, body_spec)?;
        }
        check_value(tag, value)?;
    }
    Ok(seen)
}

/// A body tag must be a FIX 4.4 tag the message type takes (any, for a
/// type the gateway does not take), and never CheckSum.
fn check_body_tag(tag: u32, msg_type: &[u8], body_spec: Option<&MsgSpec>) -> Result<(), Problem> {
    if tag == tags::CHECK_SUM {
        return Err(Problem::new(
            Some(tag),
            reason::TAG_OUT_OF_ORDER,
            "CheckSum (10) before the end",
        ));
    }
    let allowed = match body_spec {
        Some(spec) => spec.required.contains(&tag) || spec.optional.contains(&tag),
        None => true,
    };
    if !tags::is_known(tag) {
        return Err(Problem::new(
            Some(tag),
            reason::INVALID_TAG_NUMBER,
            format!("tag {tag} is not a FIX 4.4 tag"),
        ));
    }
    if !allowed {
        return Err(Problem::new(
            Some(tag),
            reason::TAG_NOT_DEFINED_FOR_MESSAGE,
            format!(
                "tag {tag} is not accepted in MsgType {}",
                String::from_utf8_lossy(msg_type)
            ),
        ));
    }
    Ok(())
}

/// The header's and the message type's required tags, the tags required
/// with another, and OrigSendingTime on a possible duplicate.
fn check_required(msg: &Message, seen: &[u32], body_spec: Option<&MsgSpec>) -> Result<(), Problem> {
    let required = HEADER_REQUIRED
        .iter()
        .chain(body_spec.map_or(&[][..], |s| s.required));
    if let Some(missing) = required.copied().find(|tag| !seen.contains(tag)) {
        return Err(Problem::new(
            Some(missing),
            reason::REQUIRED_TAG_MISSING,
            format!("required tag {missing} is missing"),
        ));
    }
    for (given, needs) in [
        (tags::SECURITY_ID, tags::SECURITY_ID_SOURCE),
        (tags::SECURITY_ID_SOURCE, tags::SECURITY_ID),
    ] {
        if seen.contains(&given) && !seen.contains(&needs) {
            return Err(Problem::new(
                Some(needs),
                reason::REQUIRED_TAG_MISSING,
                format!("tag {needs} is required with tag {given}"),
            ));
        }
    }
    if msg.flag(tags::POSS_DUP_FLAG) && !seen.contains(&tags::ORIG_SENDING_TIME) {
        return Err(Problem::new(
            Some(tags::ORIG_SENDING_TIME),
            reason::REQUIRED_TAG_MISSING,
            "OrigSendingTime (122) is required when PossDupFlag (43) is Y",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Result<(), (Option<u32>, u32)> {
        let raw = text.replace('|', "\x01").into_bytes();
        validate(&Message::parse(raw)).map_err(|p| (p.tag, p.reason))
    }

    const HEAD: &str = "8=FIX.4.4|9=1|35=D|49=C|56=X|34=2|52=20240101-00:00:00|";

    #[test]
    fn a_complete_order_passes() {
        let order =
            format!("{HEAD}11=c1|55=BTC-USD|54=1|60=20240101-00:00:00|38=1|40=2|44=100.5|10=000|");
        assert_eq!(check(&order), Ok(()));
    }

    #[test]
    fn names_the_offending_tag() {
        let missing = format!("{HEAD}11=c1|55=BTC-USD|54=1|60=20240101-00:00:00|38=1|10=000|");
        assert_eq!(check(&missing), Err((Some(40), 1)));
        let unknown =
            format!("{HEAD}11=c1|55=B|54=1|60=20240101-00:00:00|38=1|40=2|9999=x|10=000|");
        assert_eq!(check(&unknown), Err((Some(9999), 0)));
        let not_for_orders =
            format!("{HEAD}11=c1|55=B|54=1|60=20240101-00:00:00|38=1|40=2|262=x|10=000|");
        assert_eq!(check(&not_for_orders), Err((Some(262), 2)));
        let no_value = format!("{HEAD}11=|55=B|10=000|");
        assert_eq!(check(&no_value), Err((Some(11), 4)));
        let bad_tag = format!("{HEAD}11=c1|x5=B|10=000|");
        assert_eq!(check(&bad_tag), Err((None, 0)));
        let no_target = "8=FIX.4.4|9=1|35=0|49=C|34=1|52=20240101-00:00:00|10=000|";
        assert_eq!(check(no_target), Err((Some(56), 1)));
        let twice = format!("{HEAD}11=c1|11=c2|10=000|");
        assert_eq!(check(&twice), Err((Some(11), 13)));
        let format = format!("{HEAD}11=c1|55=B|54=1|60=yesterday|38=1|40=2|10=000|");
        assert_eq!(check(&format), Err((Some(60), 6)));
        let qty = format!("{HEAD}11=c1|55=B|54=1|60=20240101-00:00:00|38=1e5|40=2|10=000|");
        assert_eq!(check(&qty), Err((Some(38), 6)));
        let late_header = format!("{HEAD}11=c1|43=N|10=000|");
        assert_eq!(check(&late_header), Err((Some(43), 14)));
        let no_seq = "8=FIX.4.4|9=1|35=0|49=C|56=X|52=20240101-00:00:00|10=000|";
        assert_eq!(check(no_seq), Err((Some(34), 1)));
        let bad_type = "8=FIX.4.4|9=1|35=ZZZ|49=C|56=X|34=1|52=20240101-00:00:00|10=000|";
        assert_eq!(check(bad_type), Err((Some(35), 11)));
        let poss_dup = "8=FIX.4.4|9=1|35=0|49=C|56=X|34=1|43=Y|52=20240101-00:00:00|10=000|";
        assert_eq!(check(poss_dup), Err((Some(122), 1)));
        let type_late = "8=FIX.4.4|9=1|49=C|35=0|56=X|34=1|52=20240101-00:00:00|10=000|";
        assert_eq!(check(type_late), Err((Some(35), 14)));
    }

    #[test]
    fn every_order_type_field_is_taken() {
        let body = "11=c1|55=BTC-USD|54=1|60=20240101-00:00:00|38=1";
        for fields in [
            "40=3|99=95.5",
            "40=4|44=96|99=95",
            "40=2|44=100|59=6|126=20270115-16:30:00",
            "40=2|44=100|111=0.1",
            "40=3|18=a|211=5|836=0",
            "40=3|18=a|211=50|836=1",
            "40=2|44=100|1385=1|583=other",
        ] {
            let order = format!("{HEAD}{body}|{fields}|10=000|");
            assert_eq!(check(&order), Ok(()), "{fields}");
        }
        let cash = format!("{HEAD}11=c1|55=B|54=1|60=20240101-00:00:00|40=1|152=100|10=000|");
        assert_eq!(check(&cash), Ok(()));
        let replace = concat!(
            "8=FIX.4.4|9=1|35=G|49=C|56=X|34=2|52=20240101-00:00:00|",
            "41=a|11=b|55=B|54=1|60=20240101-00:00:00|38=1|40=3|99=94|10=000|"
        );
        assert_eq!(check(replace), Ok(()));
        let bad_stop = format!("{HEAD}{body}|40=3|99=x|10=000|");
        assert_eq!(check(&bad_stop), Err((Some(99), 6)));
        let bad_expiry = format!("{HEAD}{body}|40=2|59=6|126=soon|10=000|");
        assert_eq!(check(&bad_expiry), Err((Some(126), 6)));
        let bad_offset_type = format!("{HEAD}{body}|40=3|18=a|211=5|836=9|10=000|");
        assert_eq!(check(&bad_offset_type), Err((Some(836), 5)));
        let bad_contingency = format!("{HEAD}{body}|40=2|1385=7|583=x|10=000|");
        assert_eq!(check(&bad_contingency), Err((Some(1385), 5)));
    }

    #[test]
    fn unsupported_types_pass_the_header_check() {
        let market_data = "8=FIX.4.4|9=1|35=V|49=C|56=X|34=1|52=20240101-00:00:00|262=r|10=000|";
        assert_eq!(check(market_data), Ok(()));
        assert!(!is_supported(b"V"));
        assert!(is_supported(b"D"));
    }
}
