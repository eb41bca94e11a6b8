//! A framed message split into its fields, and a builder for outgoing
//! bodies.
//!
//! Splitting never fails: a field that is not `tag=value` is remembered as
//! the message's first problem, so the session can reject the message
//! with a reason that names the tag (or disconnect when the problem is in
//! a field it needs to do even that).

use std::fmt::Display;
use std::ops::Range;

use crate::frame::{push_field, SOH};
use crate::tags;

/// The first thing wrong with a message's fields, as a session-level
/// Reject describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// RefTagID (371), when the problem is one field's.
    pub tag: Option<u32>,
    /// SessionRejectReason (373).
    pub reason: u32,
    pub text: String,
}

impl Problem {
    pub fn new(tag: Option<u32>, reason: u32, text: impl Into<String>) -> Problem {
        Problem {
            tag,
            reason,
            text: text.into(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Field {
    tag: u32,
    value: Range<usize>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    raw: Vec<u8>,
    fields: Vec<Field>,
    problem: Option<Problem>,
}

fn parse_tag(text: &[u8]) -> Option<u32> {
    // A tag is a positive integer without leading zeros.
    if text.is_empty() || text.len() > 9 || text[0] == b'0' || !text.iter().all(u8::is_ascii_digit)
    {
        return None;
    }
    text.iter().try_fold(0u32, |n, d| {
        n.checked_mul(10)?.checked_add(u32::from(d - b'0'))
    })
}

impl Message {
    /// Splits a framed message (as `frame::next_frame` returned it).
    pub fn parse(raw: Vec<u8>) -> Message {
        let mut fields = Vec::new();
        let mut problem = None;
        let mut start = 0;
        while start < raw.len() {
            let end = raw[start..]
                .iter()
                .position(|b| *b == SOH)
                .map_or(raw.len(), |p| start + p);
            let segment = &raw[start..end];
            match segment.iter().position(|b| *b == b'=') {
                Some(eq) => match parse_tag(&segment[..eq]) {
                    Some(tag) if eq + 1 == segment.len() => {
                        problem.get_or_insert(Problem::new(
                            Some(tag),
                            tags::session_reject::TAG_WITHOUT_VALUE,
                            format!("tag {tag} has no value"),
                        ));
                    }
                    Some(tag) => fields.push(Field {
                        tag,
                        value: start + eq + 1..end,
                    }),
                    None => {
                        // Tag 0 is a number, only not a valid tag: the
                        // Reject can name it.
                        let zero = (&segment[..eq] == b"0").then_some(0);
                        problem.get_or_insert(Problem::new(
                            zero,
                            tags::session_reject::INVALID_TAG_NUMBER,
                            format!(
                                "invalid tag number {:?}",
                                String::from_utf8_lossy(&segment[..eq])
                            ),
                        ));
                    }
                },
                None => {
                    problem.get_or_insert(Problem::new(
                        None,
                        tags::session_reject::INVALID_TAG_NUMBER,
                        "a field without '='",
                    ));
                }
            }
            start = end + 1;
        }
        Message {
            raw,
            fields,
            problem,
        }
    }

    pub fn raw(&self) -> &[u8] {
        &self.raw
    }

    /// The first structural problem found while splitting, if any.
    pub fn problem(&self) -> Option<&Problem> {
        self.problem.as_ref()
    }

    /// Every field in order, BeginString to CheckSum.
    pub fn fields(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        self.fields
            .iter()
            .map(|f| (f.tag, &self.raw[f.value.clone()]))
    }

    /// The first value of `tag`.
    pub fn get(&self, tag: u32) -> Option<&[u8]> {
        self.fields
            .iter()
            .find(|f| f.tag == tag)
            .map(|f| &self.raw[f.value.clone()])
    }

    /// The first value of `tag` as text; `None` if absent or not UTF-8.
    pub fn text(&self, tag: u32) -> Option<&str> {
        self.get(tag).and_then(|v| std::str::from_utf8(v).ok())
    }

    pub fn msg_type(&self) -> Option<&[u8]> {
        self.get(tags::MSG_TYPE)
    }

    /// The first value of `tag` as an unsigned integer.
    pub fn uint(&self, tag: u32) -> Option<u64> {
        parse_uint(self.get(tag)?)
    }

    pub fn flag(&self, tag: u32) -> bool {
        self.get(tag) == Some(b"Y")
    }

    pub fn seq_num(&self) -> Option<u64> {
        self.uint(tags::MSG_SEQ_NUM)
    }
}

/// Plain decimal digits, no sign, at most 18 of them.
pub fn parse_uint(value: &[u8]) -> Option<u64> {
    if value.is_empty() || value.len() > 18 || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(value.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0')))
}

/// An outgoing message before the session sequences it: the type and the
/// body fields (everything after the standard header).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    pub msg_type: &'static str,
    /// Header fields beyond the ones the session writes: the routing of
    /// the message this one answers.
    pub routing: Vec<u8>,
    pub body: Vec<u8>,
}

/// Each third-party routing field of a received message, and the field
/// that carries the same value back on its answers: whoever the message
/// came on behalf of is whom the answer is delivered to, and the reverse.
const ROUTING_REVERSED: [(u32, u32); 6] = [
    (tags::ON_BEHALF_OF_COMP_ID, tags::DELIVER_TO_COMP_ID),
    (tags::DELIVER_TO_COMP_ID, tags::ON_BEHALF_OF_COMP_ID),
    (tags::ON_BEHALF_OF_SUB_ID, tags::DELIVER_TO_SUB_ID),
    (tags::DELIVER_TO_SUB_ID, tags::ON_BEHALF_OF_SUB_ID),
    (tags::ON_BEHALF_OF_LOCATION_ID, tags::DELIVER_TO_LOCATION_ID),
    (tags::DELIVER_TO_LOCATION_ID, tags::ON_BEHALF_OF_LOCATION_ID),
];

/// The routing fields of an answer to `message`, encoded.
pub fn answer_routing(message: &Message) -> Vec<u8> {
    let mut routing = Vec::new();
    for (received, answered) in ROUTING_REVERSED {
        if let Some(value) = message.get(received) {
            push_field(&mut routing, answered, value);
        }
    }
    routing
}

impl Outgoing {
    pub fn new(msg_type: &'static str) -> Outgoing {
        Outgoing {
            msg_type,
            routing: Vec::new(),
            body: Vec::with_capacity(256),
        }
    }

    /// This message answers one whose routing was `routing` (see
    /// [`answer_routing`]).
    pub fn routed(mut self, routing: &[u8]) -> Outgoing {
        self.routing = routing.to_vec();
        self
    }

    pub fn field(mut self, tag: u32, value: impl Display) -> Outgoing {
        self.push(tag, value);
        self
    }

    pub fn push(&mut self, tag: u32, value: impl Display) {
        push_field(&mut self.body, tag, value.to_string().as_bytes());
    }

    pub fn push_opt(&mut self, tag: u32, value: Option<impl Display>) {
        if let Some(value) = value {
            self.push(tag, value);
        }
    }

    /// The body's fields, for tests and logs.
    pub fn fields(&self) -> Vec<(u32, String)> {
        let parsed = Message::parse(self.body.clone());
        parsed
            .fields()
            .map(|(t, v)| (t, String::from_utf8_lossy(v).into_owned()))
            .collect()
    }

    pub fn get(&self, tag: u32) -> Option<String> {
        self.fields()
            .into_iter()
            .find(|(t, _)| *t == tag)
            .map(|(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Message {
        Message::parse(text.replace('|', "\x01").into_bytes())
    }

    #[test]
    fn splits_fields_in_order() {
        let m = parse("8=FIX.4.4|9=12|35=D|34=7|58=a=b|10=000|");
        assert_eq!(m.problem(), None);
        assert_eq!(m.msg_type(), Some(&b"D"[..]));
        assert_eq!(m.seq_num(), Some(7));
        assert_eq!(m.text(58), Some("a=b"));
        let tags: Vec<u32> = m.fields().map(|(t, _)| t).collect();
        assert_eq!(tags, vec![8, 9, 35, 34, 58, 10]);
    }

    #[test]
    fn remembers_the_first_problem() {
        let m = parse("8=FIX.4.4|9=1|35=D|55=|x=1|");
        assert_eq!(m.problem().map(|p| (p.tag, p.reason)), Some((Some(55), 4)));
        let m = parse("8=FIX.4.4|035=D|");
        assert_eq!(m.problem().map(|p| (p.tag, p.reason)), Some((None, 0)));
        let m = parse("8=FIX.4.4|0=HI|");
        assert_eq!(m.problem().map(|p| (p.tag, p.reason)), Some((Some(0), 0)));
        let m = parse("8=FIX.4.4|garbage|");
        assert_eq!(m.problem().map(|p| p.reason), Some(0));
        let m = parse("8=FIX.4.4|99999999999=1|");
        assert_eq!(m.problem().map(|p| p.reason), Some(0));
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_uint(b"0"), Some(0));
        assert_eq!(parse_uint(b"123"), Some(123));
        assert_eq!(parse_uint(b"-1"), None);
        assert_eq!(parse_uint(b""), None);
        assert_eq!(parse_uint(b"1234567890123456789"), None);
    }

    #[test]
    fn builder_writes_fields() {
        let out = Outgoing::new("8").field(11, "c-1").field(38, "1.5");
        assert_eq!(out.body, b"11=c-1\x0138=1.5\x01");
        assert_eq!(out.get(38).as_deref(), Some("1.5"));
    }
}
