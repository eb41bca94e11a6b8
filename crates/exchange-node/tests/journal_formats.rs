//! Journals written before commands were binary still recover. The
//! fixture is a single node's data directory from a build that wrote every
//! command as a JSON line: its journal (the demo's first seconds: listings,
//! accounts, keys, deposits, orders and trades) and the snapshot that build
//! wrote of the same state when it stopped.

use std::path::{Path, PathBuf};

use exchange_node::recovery::{journal_dir, recover, snapshot_dir};
use exchange_node::replication::ClusterSettings;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/json-journal")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for item in std::fs::read_dir(from).unwrap() {
        let path = item.unwrap().path();
        std::fs::copy(&path, to.join(path.file_name().unwrap())).unwrap();
    }
}

#[test]
fn a_journal_of_json_commands_recovers_to_the_state_its_build_snapshotted() {
    let data = tempfile::tempdir().unwrap();
    // The journal alone: every entry is replayed, none restored.
    copy_dir(&journal_dir(&fixture()), &journal_dir(data.path()));
    let journal_bytes =
        std::fs::read(journal_dir(data.path()).join("00000000000000000002.log")).unwrap();
    assert!(
        journal_bytes.windows(13).any(|w| w == br#"{"cmd":"place"#),
        "the fixture holds its commands as JSON lines"
    );

    let (replayed, _replica, report) = recover(data.path(), &ClusterSettings::default()).unwrap();
    assert_eq!(report.snapshot_index, None);
    assert!(report.replayed > 0);

    // The same journal beside the snapshot its build wrote at the end.
    let restored_dir = tempfile::tempdir().unwrap();
    copy_dir(&journal_dir(&fixture()), &journal_dir(restored_dir.path()));
    copy_dir(
        &snapshot_dir(&fixture()),
        &snapshot_dir(restored_dir.path()),
    );
    let (restored, _replica, from_snapshot) =
        recover(restored_dir.path(), &ClusterSettings::default()).unwrap();
    assert_eq!(
        from_snapshot.snapshot_index,
        Some(replayed.state.raft_index)
    );
    assert_eq!(from_snapshot.replayed, 0);
    assert_eq!(
        replayed.state.state_hash().unwrap(),
        restored.state.state_hash().unwrap()
    );
}
