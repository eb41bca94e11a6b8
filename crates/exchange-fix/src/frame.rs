//! The FIX byte stream: cutting it into messages, and writing messages.
//!
//! A message is `8=FIX.4.4|9=N|` followed by exactly N bytes of body and
//! `10=CCC|`, where CCC is the byte sum of everything before it modulo 256.
//! A message whose CheckSum is wrong, whose BodyLength does not lead to a
//! `10=CCC<SOH>` trailer, or whose first three fields are not 8, 9 and 35
//! is "garbled": the FIX specification says to drop it without counting
//! it, and the counterparty's resend mechanism repairs the gap. A wrong
//! BodyLength means the message's end is unknown, so reading resumes at
//! the next `8=FIX.4.4<SOH>9=` after the garbled message's first byte.
//! Only a BodyLength beyond `MAX_FIX_MESSAGE_BYTES` is fatal: the bytes
//! it claims cannot be buffered, so the stream cannot be resynchronised
//! safely. A message that frames correctly under another BeginString
//! (`8=FIX.4.2`) is not garbled: it is a counterparty speaking another
//! version, which the session answers with a Logout.
//!
//! Nothing here can panic on any input: every index is checked.

use exchange_node::limits::MAX_FIX_MESSAGE_BYTES;
use thiserror::Error;

pub const SOH: u8 = 0x01;
pub const BEGIN_STRING: &str = "FIX.4.4";
const PREFIX: &[u8] = b"8=FIX.4.4\x019=";
/// `10=CCC<SOH>`.
const TRAILER_LEN: usize = 7;
/// Digits of a BodyLength below `MAX_FIX_MESSAGE_BYTES`.
const MAX_LENGTH_DIGITS: usize = 5;
/// Longest BeginString value read as another FIX version's ("FIXT.1.1"
/// is eight characters); anything longer is garbage.
const MAX_BEGIN_STRING_LEN: usize = 16;

/// The stream cannot be read any further.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum FrameError {
    /// Only for the first bytes of a connection (see [`begins_like_fix`]):
    /// within a session, such bytes are skipped as garbled.
    #[error("message does not begin with 8=FIX.4.4 followed by BodyLength (9)")]
    BadBeginString,
    #[error("message is longer than {MAX_FIX_MESSAGE_BYTES} bytes")]
    TooLarge,
}

/// One framed message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// A well-formed message, all its bytes (header to trailer). Its
    /// BeginString may be another version's (see [`is_fix44`]).
    Message(Vec<u8>),
    /// Bytes that are not a well-formed message: to be ignored, uncounted.
    Garbled { reason: &'static str },
}

/// Whether `buf` starts as a FIX 4.4 message does (or could, once more
/// bytes arrive).
pub fn begins_like_fix(buf: &[u8]) -> bool {
    let head = buf.len().min(PREFIX.len());
    buf[..head] == PREFIX[..head]
}

/// Skips garbled bytes at the front of `buf`: up to the next place a
/// message could begin, at least one byte on.
fn resync(buf: &[u8], reason: &'static str) -> Option<(Frame, usize)> {
    let skip = (1..buf.len())
        .find(|&at| begins_like_fix(&buf[at..]))
        .unwrap_or(buf.len());
    Some((Frame::Garbled { reason }, skip))
}

/// The byte sum modulo 256 that CheckSum (10) carries.
pub fn checksum(bytes: &[u8]) -> u8 {
    bytes.iter().fold(0u8, |sum, b| sum.wrapping_add(*b))
}

fn digits_value(digits: &[u8]) -> Option<usize> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    digits.iter().try_fold(0usize, |n, d| {
        n.checked_mul(10)?.checked_add(usize::from(d - b'0'))
    })
}

/// Takes the next message off the front of `buf`. `Ok(None)` means more
/// bytes are needed; `Ok(Some((frame, used)))` consumed `used` bytes.
pub fn next_frame(buf: &[u8]) -> Result<Option<(Frame, usize)>, FrameError> {
    if buf.is_empty() {
        return Ok(None);
    }
    if !begins_like_fix(buf) {
        return other_begin_string(buf);
    }
    if buf.len() < PREFIX.len() {
        return Ok(None);
    }
    framed(buf, PREFIX.len())
}

/// A message that begins with another BeginString than FIX 4.4's: a
/// message still when the rest of it frames as one does (the session
/// refuses it, see [`is_fix44`]), else garbled bytes.
fn other_begin_string(buf: &[u8]) -> Result<Option<(Frame, usize)>, FrameError> {
    const NOT_FIX: &str = "does not begin with 8=FIX.4.4 and BodyLength (9)";
    let head = buf.len().min(2);
    if buf[..head] != b"8="[..head] {
        return Ok(resync(buf, NOT_FIX));
    }
    let value = &buf[head..];
    let Some(end) = value
        .iter()
        .take(MAX_BEGIN_STRING_LEN + 1)
        .position(|b| *b == SOH)
    else {
        let waiting = value.len() <= MAX_BEGIN_STRING_LEN && value.iter().all(u8::is_ascii_graphic);
        return if waiting {
            Ok(None)
        } else {
            Ok(resync(buf, NOT_FIX))
        };
    };
    let begin_string = &value[..end];
    let named = !begin_string.is_empty() && begin_string.iter().all(u8::is_ascii_graphic);
    // From the SOH that ends the BeginString: BodyLength's tag comes next.
    let after = &value[end..];
    const LENGTH_TAG: &[u8] = b"\x019=";
    if named && after.len() < LENGTH_TAG.len() && LENGTH_TAG.starts_with(after) {
        return Ok(None);
    }
    if !named || !after.starts_with(LENGTH_TAG) {
        return Ok(resync(buf, NOT_FIX));
    }
    framed(buf, head + end + LENGTH_TAG.len())
}

/// Whether a framed message's BeginString is FIX 4.4's.
pub fn is_fix44(raw: &[u8]) -> bool {
    raw.starts_with(PREFIX)
}

/// Frames the message at the front of `buf` from its BodyLength's value,
/// which starts at `length_at`.
fn framed(buf: &[u8], length_at: usize) -> Result<Option<(Frame, usize)>, FrameError> {
    let rest = &buf[length_at..];
    let Some(soh) = rest
        .iter()
        .take(MAX_LENGTH_DIGITS + 1)
        .position(|b| *b == SOH)
    else {
        if !rest.iter().all(u8::is_ascii_digit) {
            return Ok(resync(buf, "BodyLength (9) is not a number"));
        }
        if rest.len() > MAX_LENGTH_DIGITS {
            return Err(FrameError::TooLarge);
        }
        return Ok(None);
    };
    let Some(body_len) = digits_value(&rest[..soh]) else {
        return Ok(resync(buf, "BodyLength (9) is not a number"));
    };
    let body_start = length_at + soh + 1;
    let body_end = body_start + body_len;
    let total = body_end + TRAILER_LEN;
    if total > MAX_FIX_MESSAGE_BYTES {
        return Err(FrameError::TooLarge);
    }
    if buf.len() < total {
        return Ok(None);
    }
    // The body ends with a field's SOH; the trailer is `10=` three digits.
    let trailer = &buf[body_end..total];
    let ends_field = body_len > 0 && buf[body_end - 1] == SOH;
    let declared = digits_value(&trailer[3..6]).and_then(|v| u8::try_from(v).ok());
    if !ends_field || &trailer[..3] != b"10=" || trailer[6] != SOH || declared.is_none() {
        return Ok(resync(
            buf,
            "no CheckSum (10) where BodyLength (9) says the message ends",
        ));
    }
    if declared != Some(checksum(&buf[..body_end])) {
        return Ok(Some((
            Frame::Garbled {
                reason: "CheckSum (10) does not match",
            },
            total,
        )));
    }
    if !buf[body_start..].starts_with(b"35=") {
        return Ok(Some((
            Frame::Garbled {
                reason: "the third field is not MsgType (35)",
            },
            total,
        )));
    }
    Ok(Some((Frame::Message(buf[..total].to_vec()), total)))
}

/// Appends `tag=value<SOH>`. A SOH inside a value would end the field
/// early and corrupt the message, so it is replaced.
pub fn push_field(out: &mut Vec<u8>, tag: u32, value: &[u8]) {
    out.extend_from_slice(tag.to_string().as_bytes());
    out.push(b'=');
    out.extend(value.iter().map(|b| if *b == SOH { b'?' } else { *b }));
    out.push(SOH);
}

/// Wraps header-and-body fields (everything from MsgType on) into a full
/// message with BeginString, BodyLength and CheckSum.
pub fn seal(fields: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(fields.len() + 32);
    out.extend_from_slice(PREFIX);
    out.extend_from_slice(fields.len().to_string().as_bytes());
    out.push(SOH);
    out.extend_from_slice(fields);
    let sum = checksum(&out);
    out.extend_from_slice(format!("10={sum:03}").as_bytes());
    out.push(SOH);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fix(text: &str) -> Vec<u8> {
        text.replace('|', "\x01").into_bytes()
    }

    #[test]
    fn seal_then_frame_round_trips() {
        let sealed = seal(&fix("35=0|49=A|56=B|34=1|52=20240101-00:00:00|"));
        let (frame, used) = next_frame(&sealed).unwrap().unwrap();
        assert_eq!(used, sealed.len());
        assert_eq!(frame, Frame::Message(sealed.clone()));
        // Byte by byte, the frame is only complete at the very end.
        for cut in 0..sealed.len() {
            assert_eq!(next_frame(&sealed[..cut]), Ok(None), "cut at {cut}");
        }
    }

    #[test]
    fn known_checksum() {
        // Computed independently: sum(b"8=FIX.4.4|9=5|35=0|") % 256 == 163.
        let sealed = seal(&fix("35=0|"));
        assert_eq!(sealed, fix("8=FIX.4.4|9=5|35=0|10=163|"));
    }

    fn skipped(buf: &[u8]) -> usize {
        match next_frame(buf) {
            Ok(Some((Frame::Garbled { .. }, used))) => used,
            other => panic!("expected a garbled frame, got {other:?}"),
        }
    }

    #[test]
    fn garbled_inputs_are_skipped_and_too_large_is_fatal() {
        let mut sealed = seal(&fix("35=0|34=2|"));
        let n = sealed.len();
        sealed[n - 2] = if sealed[n - 2] == b'0' { b'1' } else { b'0' };
        assert_eq!(skipped(&sealed), n);
        assert_eq!(skipped(b"8=FIX.4.2\x01x=5\x01"), 14);
        assert_eq!(skipped(b"8=\x019=5\x01"), 7);
        assert_eq!(skipped(b"8=FIX.4.2.and.more.than.that"), 28);
        assert_eq!(skipped(b"hello"), 5);
        assert_eq!(skipped(b"8=FIX.4.4\x019=x\x01"), 14);
        assert_eq!(skipped(&fix("8=FIX.4.4|9=3|35=0|10=000|")), 26);
        assert_eq!(skipped(&fix("8=FIX.4.4|9=0|10=000|")), 21);
        assert_eq!(skipped(&fix("8=FIX.4.4|9=5|35=0|10=0x0|")), 26);
        assert_eq!(
            next_frame(b"8=FIX.4.4\x019=999999"),
            Err(FrameError::TooLarge)
        );
        assert_eq!(
            next_frame(b"8=FIX.4.4\x019=9000\x01"),
            Err(FrameError::TooLarge)
        );
    }

    #[test]
    fn another_begin_string_frames_as_a_message_of_that_version() {
        let mut other = fix("8=FIX.4.2|9=5|35=0|");
        let sum = checksum(&other);
        other.extend(fix(&format!("10={sum:03}|")));
        assert_eq!(
            next_frame(&other),
            Ok(Some((Frame::Message(other.clone()), other.len())))
        );
        assert!(!is_fix44(&other));
        assert!(is_fix44(&seal(&fix("35=0|"))));
        // Incomplete, it waits for the rest like any message.
        for cut in 0..other.len() {
            assert_eq!(next_frame(&other[..cut]), Ok(None), "cut at {cut}");
        }
        // Its CheckSum wrong, it is garbled like any message.
        let n = other.len();
        other[n - 2] = if other[n - 2] == b'0' { b'1' } else { b'0' };
        assert_eq!(skipped(&other), n);
    }

    #[test]
    fn a_message_whose_third_field_is_not_msg_type_is_garbled() {
        let sealed = seal(&fix("49=A|35=0|56=B|34=2|"));
        assert_eq!(skipped(&sealed), sealed.len());
    }

    #[test]
    fn resynchronises_on_the_next_begin_string() {
        // BodyLength too short: the message's end is unknown, so the next
        // message is found by its BeginString, wherever it starts.
        let good = seal(&fix("35=0|34=3|"));
        let mut buf = fix("8=FIX.4.4|9=4|35=0|34=2|10=000|");
        buf.extend_from_slice(b"junk");
        buf.extend_from_slice(&good);
        let mut at = 0;
        let mut messages = Vec::new();
        while let Some((frame, used)) = next_frame(&buf[at..]).unwrap() {
            if let Frame::Message(raw) = frame {
                messages.push(raw);
            }
            at += used;
        }
        assert_eq!(at, buf.len());
        assert_eq!(messages, vec![good.clone()]);
        // A partial BeginString at the end is kept for the next read.
        let mut tail = b"xx".to_vec();
        tail.extend_from_slice(b"8=FIX");
        assert_eq!(skipped(&tail), 2);
        assert_eq!(next_frame(b"8=FIX"), Ok(None));
    }

    #[test]
    fn two_messages_in_one_buffer() {
        let mut buf = seal(&fix("35=0|34=1|"));
        let first = buf.len();
        buf.extend(seal(&fix("35=0|34=2|")));
        let (_, used) = next_frame(&buf).unwrap().unwrap();
        assert_eq!(used, first);
        assert!(matches!(
            next_frame(&buf[used..]),
            Ok(Some((Frame::Message(_), _)))
        ));
    }

    #[test]
    fn values_cannot_smuggle_fields() {
        let mut out = Vec::new();
        push_field(&mut out, 58, b"a\x0135=D");
        assert_eq!(out, b"58=a?35=D\x01");
    }
}
