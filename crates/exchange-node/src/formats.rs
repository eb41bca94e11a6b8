//! The formats a replica reads and writes, each named with its version:
//! what the replicas of a mixed cluster (a rolling upgrade) must share.
//! `exchange version --formats` prints them, and every process reports
//! them in `GET /admin/replication`, so an upgrade can compare the
//! running cluster with a new binary, or a replaced replica with the rest.

use serde_json::{json, Value};

fn name(magic: &[u8; 8]) -> String {
    String::from_utf8_lossy(magic).into_owned()
}

/// The log's command schema and its other entries, the journal, snapshot and Raft state files,
/// and the Raft, ingress and log-stream protocols.
pub fn formats() -> Value {
    json!({
        "log_commands": exchange_codec::binary::SCHEMA_VERSION,
        "log_entries": crate::entry::ENTRY_FORMAT_VERSION,
        "journal": name(exchange_journal::JOURNAL_FORMAT),
        "snapshot": name(exchange_journal::SNAPSHOT_FORMAT),
        "raft_state": name(exchange_replication::RAFT_STATE_FORMAT),
        "raft_protocol": name(&exchange_replication::RAFT_PROTOCOL),
        "ingress_protocol": name(&crate::ingress::PROTOCOL),
        "log_stream_protocol": name(&crate::stream::PROTOCOL),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_is_named_with_its_version() {
        let formats = formats();
        let object = formats.as_object().expect("an object");
        assert_eq!(object.len(), 8);
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
