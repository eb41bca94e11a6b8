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
use exchange_node::admission::Admission;
use exchange_node::entry::LogEntry;
use exchange_node::recovery::journal_dir;
use exchange_node::replication::decode_entry_payload;

#[derive(clap::Subcommand)]
pub enum LogCmd {
    /// Print every entry of a journal as one JSON line, oldest first.
    Dump(DumpArgs),
}

#[derive(clap::Args)]
pub struct DumpArgs {
    /// A node's data directory, or its `journal` directory.
    path: PathBuf,
    /// Only the core's commands that were applied (no API-key entries;
    /// commands inside session and guarded entries bare, and only if
    /// applied): a stream `exchange replay` reads.
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
    let mut admission = Admission::new();
    let records = reader::for_each_entry(&dir, |record| -> anyhow::Result<()> {
        let index = record.index;
        let entries =
            decode_entry_payload(&record.payload).with_context(|| format!("entry {index}"))?;
        for entry in entries {
            let lines_of: Vec<LogEntry> = if args.core_only {
                // What the state applied, bare: a wrapped command if it was
                // applied, and the cancels of expired client sessions.
                admission
                    .core_commands(&entry)
                    .into_iter()
                    .map(LogEntry::Core)
                    .collect()
            } else {
                vec![entry]
            };
            for line in lines_of {
                let json = line.to_json().with_context(|| format!("entry {index}"))?;
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
        }
        Ok(())
    });
    out.flush()?;
    let records = records.with_context(|| format!("reading {}", dir.display()))?;
    eprintln!("{records} records, {lines} lines from {}", dir.display());
    Ok(())
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
            cancel_grace_ms: None,
            incarnation: None,
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
        let mut admission = Admission::new();
        let printed: Vec<LogEntry> = log
            .iter()
            .flat_map(|entry| admission.core_commands(entry))
            .map(LogEntry::Core)
            .collect();
        assert_eq!(
            printed,
            [deposit(1), deposit(2), deposit(4), deposit(6)],
            "a key entry's number is used up as the state uses it"
        );
    }
}
