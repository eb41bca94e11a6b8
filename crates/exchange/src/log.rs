//! `exchange log dump`: prints a journal's entries as JSON Lines, so a log
//! whose commands are in the binary encoding stays inspectable with the
//! ordinary tools (`jq`, `grep`, `diff`).
//!
//! Journals of either form are read: commands written as JSON lines by
//! earlier versions and binary commands are told apart by their first
//! byte, so no journal needs converting before a node starts on it.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use exchange_journal::reader;
use exchange_node::entry::LogEntry;
use exchange_node::recovery::journal_dir;
use exchange_node::replication::decode_entry_payload;
use exchange_node::sessions::Sessions;

#[derive(clap::Subcommand)]
pub enum LogCmd {
    /// Print every entry of a journal as one JSON line, oldest first.
    Dump(DumpArgs),
}

#[derive(clap::Args)]
pub struct DumpArgs {
    /// A node's data directory, or its `journal` directory.
    path: PathBuf,
    /// Only the core's commands (no API-key or session entries): a stream
    /// `exchange replay` reads. A command sent through a client session
    /// is printed bare, iff the session admitted it (the sessions are
    /// replayed from the journal's start, so a journal compacted below a
    /// session's open leaves that session's commands out).
    #[arg(long)]
    core_only: bool,
    /// Put each entry's Raft index first, as `{"index":N,"entry":{...}}`.
    #[arg(long, conflicts_with = "core_only")]
    with_index: bool,
}

pub fn run(cmd: LogCmd) -> anyhow::Result<()> {
    match cmd {
        LogCmd::Dump(args) => dump(&args),
    }
}

/// A data directory holds the journal in `journal/`; a path that is the
/// journal itself is used as it is.
fn journal_of(path: &Path) -> PathBuf {
    let inner = journal_dir(path);
    if inner.is_dir() {
        inner
    } else {
        path.to_path_buf()
    }
}

fn dump(args: &DumpArgs) -> anyhow::Result<()> {
    let dir = journal_of(&args.path);
    if !dir.is_dir() {
        anyhow::bail!("{}: no journal directory there", dir.display());
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut lines = 0u64;
    let mut sessions = Sessions::default();
    let records = reader::for_each_entry(&dir, |record| -> anyhow::Result<()> {
        let index = record.index;
        let entries =
            decode_entry_payload(&record.payload).with_context(|| format!("entry {index}"))?;
        for entry in entries {
            let entry = if args.core_only {
                match core_command(entry, &mut sessions) {
                    Some(core) => core,
                    None => continue,
                }
            } else {
                entry
            };
            let json = entry.to_json().with_context(|| format!("entry {index}"))?;
            if args.with_index {
                write!(out, "{{\"index\":{index},\"entry\":")?;
                out.write_all(&json)?;
                out.write_all(b"}\n")?;
            } else {
                out.write_all(&json)?;
                out.write_all(b"\n")?;
            }
            lines += 1;
        }
        Ok(())
    });
    out.flush()?;
    let records = records.with_context(|| format!("reading {}", dir.display()))?;
    eprintln!("{records} records, {lines} lines from {}", dir.display());
    Ok(())
}

/// The core command an entry applies, if any, with the session table
/// kept as the state keeps it (its decisions depend on session entries
/// alone).
fn core_command(entry: LogEntry, sessions: &mut Sessions) -> Option<LogEntry> {
    match entry {
        LogEntry::Core(_) => Some(entry),
        LogEntry::OpenSession {
            session, gateway, ..
        } => {
            // A refused open changes nothing, as in the state.
            let _ = sessions.open(session, &gateway);
            None
        }
        LogEntry::Sequenced {
            session,
            seq,
            entry,
        } => {
            let admitted = sessions.admit(session, seq).is_ok();
            match *entry {
                LogEntry::Core(_) if admitted => Some(*entry),
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use exchange_types::Stamped;

    use super::*;

    fn deposit(amount: u64) -> LogEntry {
        let line = format!(r#"{{"cmd":"deposit","account":1,"asset":"USD","amount":"{amount}"}}"#);
        let stamped: Stamped = exchange_codec::decode_command(&line).expect("command");
        LogEntry::Core(stamped)
    }

    fn sequenced(session: u64, seq: u64, entry: LogEntry) -> LogEntry {
        LogEntry::Sequenced {
            session,
            seq,
            entry: Box::new(entry),
        }
    }

    fn open(session: u64, gateway: &str) -> LogEntry {
        LogEntry::OpenSession {
            ts: 1,
            session,
            gateway: gateway.into(),
        }
    }

    /// The core-only stream holds what the state applied: each admitted
    /// command once, bare, and nothing a session refused.
    #[test]
    fn core_only_prints_the_commands_the_sessions_admitted() {
        let log = [
            deposit(1),
            open(7, "gw"),
            sequenced(7, 1, deposit(2)),
            sequenced(7, 1, deposit(2)),
            sequenced(8, 1, deposit(3)),
            sequenced(7, 3, deposit(4)),
            open(9, "gw"),
            sequenced(7, 4, deposit(5)),
            sequenced(9, 1, deposit(6)),
            sequenced(
                9,
                2,
                LogEntry::CreateAccount {
                    ts: 1,
                    api_key: "k".into(),
                    legacy_secret: None,
                },
            ),
            sequenced(9, 2, deposit(7)),
        ];
        let mut sessions = Sessions::default();
        let printed: Vec<LogEntry> = log
            .into_iter()
            .filter_map(|entry| core_command(entry, &mut sessions))
            .collect();
        assert_eq!(
            printed,
            [deposit(1), deposit(2), deposit(4), deposit(6)],
            "a key entry's number is used up as the state uses it"
        );
    }
}
