//! `exchange version`: this binary's version and, with `--formats`, the
//! formats it reads and writes, as JSON. `cluster upgrade` compares the
//! formats of the running binary and the new one before it replaces
//! anything: replicas of a mixed cluster must read each other's log,
//! snapshots and protocols.

use serde_json::{json, Value};

#[derive(clap::Args)]
pub struct VersionArgs {
    /// Also the log, journal, snapshot and protocol formats.
    #[arg(long)]
    formats: bool,
}

fn name(magic: &[u8; 8]) -> String {
    String::from_utf8_lossy(magic).into_owned()
}

/// Every format a replica of another binary must share with this one.
pub fn formats() -> Value {
    json!({
        "log_commands": exchange_codec::binary::SCHEMA_VERSION,
        "journal": name(exchange_journal::JOURNAL_FORMAT),
        "snapshot": name(exchange_journal::SNAPSHOT_FORMAT),
        "raft_state": name(exchange_replication::RAFT_STATE_FORMAT),
        "raft_protocol": name(&exchange_replication::RAFT_PROTOCOL),
        "ingress_protocol": name(&exchange_node::ingress::PROTOCOL),
        "log_stream_protocol": name(&exchange_node::stream::PROTOCOL),
    })
}

pub fn run(args: &VersionArgs) {
    let mut out = json!({ "version": env!("CARGO_PKG_VERSION") });
    if args.formats {
        out["formats"] = formats();
    }
    println!("{out}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_is_named_with_its_version() {
        let formats = formats();
        let object = formats.as_object().expect("an object");
        assert_eq!(object.len(), 7);
        for (what, value) in object {
            match value {
                Value::String(magic) => {
                    assert_eq!(magic.len(), 8, "{what}");
                    assert!(magic.starts_with("EX"), "{what}: {magic}");
                }
                Value::Number(version) => assert!(version.as_u64() >= Some(1), "{what}"),
                other => panic!("{what}: {other}"),
            }
        }
    }
}
