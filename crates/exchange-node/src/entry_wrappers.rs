//! The wrapper entries' encodings (sequenced, guarded): their binary
//! headers, written in place before the entry they carry, their JSON lines,
//! and the rule of how they nest.

use serde::Deserialize;

use super::{EntryError, LogEntry, FIX_SEQUENCED_TAG, GUARDED_TAG, SEQUENCED_TAG};

pub(super) const SEQUENCED: &str = "sequenced";
pub(super) const GUARDED: &str = "guarded";
pub(super) const FIX_SEQUENCED: &str = "fix_sequenced";

/// What the entry being decoded sits in: wrappers nest in one order only.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Within {
    Nothing,
    Sequenced,
    Guarded,
    FixSequenced,
}

/// A sequenced entry as `exchange log dump` prints it; the journal holds
/// the binary form.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SequencedWire {
    // Only there to be accepted: the decoder already read it.
    #[allow(dead_code)]
    cmd: String,
    session: u64,
    seq: u64,
    entry: serde_json::Value,
}

/// A FIX-sequenced entry as `exchange log dump` prints it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FixSequencedWire {
    #[allow(dead_code)]
    cmd: String,
    link: u64,
    seq: u64,
    entry: serde_json::Value,
}

/// A guarded entry as `exchange log dump` prints it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GuardedWire {
    #[allow(dead_code)]
    cmd: String,
    fingerprint: String,
    forget_after_ms: u64,
    entry: serde_json::Value,
}

impl LogEntry {
    /// Appends the entry's encoding: a command, and the wrappers' headers,
    /// written in place with no buffer of their own (what the Raft thread
    /// does for every command). Refused, with nothing appended, when the
    /// wrappers nest in a way no reader accepts.
    pub fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), EntryError> {
        self.check_nesting()?;
        let at = out.len();
        self.write_into(out).inspect_err(|_| out.truncate(at))
    }

    fn write_into(&self, out: &mut Vec<u8>) -> Result<(), EntryError> {
        match self {
            LogEntry::Core(stamped) => exchange_codec::binary::encode_command_into(stamped, out),
            LogEntry::Sequenced {
                session,
                seq,
                entry,
            } => {
                out.push(SEQUENCED_TAG);
                out.extend_from_slice(&session.to_le_bytes());
                out.extend_from_slice(&seq.to_le_bytes());
                entry.write_into(out)?;
            }
            LogEntry::FixSequenced { link, seq, entry } => {
                out.push(FIX_SEQUENCED_TAG);
                out.extend_from_slice(&link.to_le_bytes());
                out.extend_from_slice(&seq.to_le_bytes());
                entry.write_into(out)?;
            }
            LogEntry::Guarded {
                fingerprint,
                forget_after_ms,
                entry,
            } => {
                out.push(GUARDED_TAG);
                out.extend_from_slice(fingerprint);
                out.extend_from_slice(&forget_after_ms.to_le_bytes());
                entry.write_into(out)?;
            }
            other => out.extend_from_slice(&other.encode()?),
        }
        Ok(())
    }

    /// A sequenced entry may hold a guarded or a FIX-sequenced one;
    /// neither holds itself, a guarded one holds no sequenced one, and a
    /// FIX-sequenced one holds a core command only.
    fn check_nesting(&self) -> Result<(), EntryError> {
        match self {
            LogEntry::FixSequenced { entry, .. } => match &**entry {
                LogEntry::Core(_) => Ok(()),
                _ => Err(EntryError::NestedFix),
            },
            LogEntry::Sequenced { entry, .. } => match &**entry {
                LogEntry::Sequenced { .. } => Err(EntryError::NestedSequenced),
                inner => inner.check_nesting(),
            },
            LogEntry::Guarded { entry, .. } => match &**entry {
                LogEntry::Sequenced { .. }
                | LogEntry::Guarded { .. }
                | LogEntry::FixSequenced { .. } => Err(EntryError::NestedGuarded),
                _ => Ok(()),
            },
            _ => Ok(()),
        }
    }

    /// A wrapper's JSON line, with the entry it carries inside.
    pub(super) fn wrapper_json(&self) -> Result<Vec<u8>, EntryError> {
        match self {
            LogEntry::Sequenced {
                session,
                seq,
                entry,
            } => {
                self.check_nesting()?;
                let mut out =
                    format!(r#"{{"cmd":"{SEQUENCED}","session":{session},"seq":{seq},"entry":"#)
                        .into_bytes();
                out.extend_from_slice(&entry.to_json()?);
                out.push(b'}');
                Ok(out)
            }
            LogEntry::FixSequenced { link, seq, entry } => {
                self.check_nesting()?;
                let mut out =
                    format!(r#"{{"cmd":"{FIX_SEQUENCED}","link":{link},"seq":{seq},"entry":"#)
                        .into_bytes();
                out.extend_from_slice(&entry.to_json()?);
                out.push(b'}');
                Ok(out)
            }
            LogEntry::Guarded {
                fingerprint,
                forget_after_ms,
                entry,
            } => {
                self.check_nesting()?;
                let fingerprint = hex::encode(fingerprint);
                let mut out =
                    format!(r#"{{"cmd":"{GUARDED}","fingerprint":"{fingerprint}","#,).into_bytes();
                out.extend_from_slice(
                    format!(r#""forget_after_ms":{forget_after_ms},"entry":"#).as_bytes(),
                );
                out.extend_from_slice(&entry.to_json()?);
                out.push(b'}');
                Ok(out)
            }
            _ => self.encode(),
        }
    }
}

/// A sequenced entry in its binary form (after the tag was seen).
pub(super) fn decode_sequenced(bytes: &[u8]) -> Result<LogEntry, EntryError> {
    let rest = bytes.get(1..).ok_or(EntryError::Truncated)?;
    let (session, rest) = rest.split_first_chunk::<8>().ok_or(EntryError::Truncated)?;
    let (seq, inner) = rest.split_first_chunk::<8>().ok_or(EntryError::Truncated)?;
    if inner.is_empty() {
        return Err(EntryError::Truncated);
    }
    Ok(LogEntry::Sequenced {
        session: u64::from_le_bytes(*session),
        seq: u64::from_le_bytes(*seq),
        entry: Box::new(LogEntry::decode_in(inner, Within::Sequenced)?),
    })
}

/// A guarded entry in its binary form (after the tag was seen).
pub(super) fn decode_guarded(bytes: &[u8]) -> Result<LogEntry, EntryError> {
    let rest = bytes.get(1..).ok_or(EntryError::GuardedTruncated)?;
    let (fingerprint, rest) = rest
        .split_first_chunk::<16>()
        .ok_or(EntryError::GuardedTruncated)?;
    let (forget_after_ms, inner) = rest
        .split_first_chunk::<8>()
        .ok_or(EntryError::GuardedTruncated)?;
    if inner.is_empty() {
        return Err(EntryError::GuardedTruncated);
    }
    Ok(LogEntry::Guarded {
        fingerprint: *fingerprint,
        forget_after_ms: u64::from_le_bytes(*forget_after_ms),
        entry: Box::new(LogEntry::decode_in(inner, Within::Guarded)?),
    })
}

/// A FIX-sequenced entry in its binary form (after the tag was seen).
pub(super) fn decode_fix_sequenced(bytes: &[u8]) -> Result<LogEntry, EntryError> {
    let rest = bytes.get(1..).ok_or(EntryError::FixTruncated)?;
    let (link, rest) = rest
        .split_first_chunk::<8>()
        .ok_or(EntryError::FixTruncated)?;
    let (seq, inner) = rest
        .split_first_chunk::<8>()
        .ok_or(EntryError::FixTruncated)?;
    if inner.is_empty() {
        return Err(EntryError::FixTruncated);
    }
    fix_sequenced(
        u64::from_le_bytes(*link),
        u64::from_le_bytes(*seq),
        LogEntry::decode_in(inner, Within::FixSequenced)?,
    )
}

/// A FIX-sequenced entry around `entry`, which must be a core command.
fn fix_sequenced(link: u64, seq: u64, entry: LogEntry) -> Result<LogEntry, EntryError> {
    if !matches!(entry, LogEntry::Core(_)) {
        return Err(EntryError::NestedFix);
    }
    Ok(LogEntry::FixSequenced {
        link,
        seq,
        entry: Box::new(entry),
    })
}

/// Whether a wrapper (`SEQUENCED`, `GUARDED` or `FIX_SEQUENCED`) may sit
/// `within`.
pub(super) fn wrapper_allowed(wrapper: &str, within: Within) -> Result<(), EntryError> {
    match (wrapper, within) {
        (_, Within::Nothing)
        | (GUARDED, Within::Sequenced)
        | (FIX_SEQUENCED, Within::Sequenced) => Ok(()),
        (_, Within::FixSequenced) => Err(EntryError::NestedFix),
        (_, Within::Guarded) => Err(EntryError::NestedGuarded),
        _ => Err(EntryError::NestedSequenced),
    }
}

/// A wrapper in its JSON form, by its `cmd` (`SEQUENCED`, `GUARDED` or
/// `FIX_SEQUENCED`).
pub(super) fn decode_wrapper_json(
    name: &str,
    text: &str,
    within: Within,
) -> Result<LogEntry, EntryError> {
    match name {
        SEQUENCED => {
            wrapper_allowed(SEQUENCED, within)?;
            let wire: SequencedWire = serde_json::from_str(text)?;
            let entry = serde_json::to_vec(&wire.entry).map_err(EntryError::Json)?;
            Ok(LogEntry::Sequenced {
                session: wire.session,
                seq: wire.seq,
                entry: Box::new(LogEntry::decode_in(&entry, Within::Sequenced)?),
            })
        }
        GUARDED => {
            wrapper_allowed(GUARDED, within)?;
            let wire: GuardedWire = serde_json::from_str(text)?;
            let mut fingerprint = [0u8; 16];
            hex::decode_to_slice(&wire.fingerprint, &mut fingerprint)
                .map_err(|_| EntryError::Fingerprint)?;
            let entry = serde_json::to_vec(&wire.entry).map_err(EntryError::Json)?;
            Ok(LogEntry::Guarded {
                fingerprint,
                forget_after_ms: wire.forget_after_ms,
                entry: Box::new(LogEntry::decode_in(&entry, Within::Guarded)?),
            })
        }
        FIX_SEQUENCED => {
            wrapper_allowed(FIX_SEQUENCED, within)?;
            let wire: FixSequencedWire = serde_json::from_str(text)?;
            let entry = serde_json::to_vec(&wire.entry).map_err(EntryError::Json)?;
            let entry = LogEntry::decode_in(&entry, Within::FixSequenced)?;
            fix_sequenced(wire.link, wire.seq, entry)
        }
        _ => Err(exchange_codec::CodecError::UnknownCmd(name.into()).into()),
    }
}
