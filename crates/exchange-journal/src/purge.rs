//! Purged segments: out of the log's namespace at once, their blocks
//! freed later, a step at a time, on a thread of their own.

use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};

/// A purged segment's name until its file is deleted: outside the `.log`
/// names that opening and reading the journal look at.
pub(crate) const PURGED_SUFFIX: &str = ".purged";

pub(crate) fn purged_name(segment: &Path) -> PathBuf {
    let mut name = segment.as_os_str().to_owned();
    name.push(PURGED_SUFFIX);
    PathBuf::from(name)
}

/// Deletes purged segment files on a thread of their own. Deleting a full
/// segment frees its blocks, about 20 ms for 64 MiB on the benchmark
/// machine's disk, and the caller (the Raft thread, compacting after a
/// snapshot) must not stall every order in flight for that. Nor may the
/// freeing stall the log's own flushes: on that disk, a loop of appends
/// and `fdatasync`s stalled for up to 16-37 ms while three 64 MiB files
/// were deleted at once, and for at most 4-7 ms when each was first
/// shortened [`PURGE_STEP`] at a time, [`PURGE_PAUSE`] apart
/// (docs/benchmarking.md, `bench journal`). So the thread shortens each file
/// step by step, then deletes it: about 0.8 s per 64 MiB segment, the
/// space coming back as it goes. A file a crash leaves behind is deleted
/// when the journal is next opened.
pub(crate) fn delete_purged(paths: Vec<PathBuf>) {
    let spawned = std::thread::Builder::new()
        .name("journal-purge".into())
        .spawn({
            let paths = paths.clone();
            move || {
                for path in &paths {
                    // Best effort: one left behind goes at the next open.
                    let _ = shorten_then_delete(path, PURGE_STEP, PURGE_PAUSE);
                }
            }
        });
    if spawned.is_err() {
        // No thread to pace it on: delete at once rather than hold up the
        // caller for seconds.
        for path in &paths {
            let _ = fs::remove_file(path);
        }
    }
}

/// How much of a purged segment's blocks are freed at once.
const PURGE_STEP: u64 = 4 << 20;
const PURGE_PAUSE: std::time::Duration = std::time::Duration::from_millis(50);

/// Frees `path`'s blocks `step` bytes at a time, `pause` apart, from the
/// end, then deletes it.
fn shorten_then_delete(path: &Path, step: u64, pause: std::time::Duration) -> std::io::Result<()> {
    let file = OpenOptions::new().write(true).open(path)?;
    let mut len = file.metadata()?.len();
    while len > step {
        len -= step;
        file.set_len(len)?;
        std::thread::sleep(pause);
    }
    drop(file);
    fs::remove_file(path)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::shorten_then_delete;

    #[test]
    fn a_purged_file_is_shortened_then_deleted() {
        let dir = tempfile::tempdir().expect("temp dir");
        for len in [0, 999, 1_000, 3_500] {
            let path = dir.path().join(format!("{len}.log.purged"));
            std::fs::write(&path, vec![7u8; len]).expect("write");
            shorten_then_delete(&path, 1_000, Duration::ZERO).expect("delete");
            assert!(!path.exists(), "{len} bytes: still there");
        }
        let missing = dir.path().join("missing.log.purged");
        assert!(shorten_then_delete(&missing, 1_000, Duration::ZERO).is_err());
    }
}
