//! The `nospace` alarm: a write the replica's Raft state needs (log
//! entries, hard state, configuration, a received snapshot) failed for
//! lack of space, and the Raft thread waits for space, retrying the same
//! write, instead of stopping the node.
//!
//! Why it waits rather than going on without the write: Raft counts this
//! replica's copy, and it acknowledges anything, only once the write is
//! durable. Waiting where the write failed keeps that order exactly: once
//! the write succeeds the node goes on from the same point, with no entry
//! lost and none written twice. Readers on other threads (health, status,
//! metrics, the write path) see the alarm through a shared [`DiskAlarm`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use raft::eraftpb::{Message, MessageType};

use crate::error::ReplicationError;
use crate::{DiskStorage, ReplicaNode};

/// Linux's "disk quota exceeded", which Rust's stable error kinds do not
/// name.
const EDQUOT: i32 = 122;
/// Linux's "no space left on device".
const ENOSPC: i32 = 28;

/// Whether an I/O error means the file system (or the user's quota) is
/// full, as opposed to the device failing.
pub fn is_no_space(error: &std::io::Error) -> bool {
    error.kind() == std::io::ErrorKind::StorageFull
        || matches!(error.raw_os_error(), Some(ENOSPC | EDQUOT))
}

/// The alarm's state, shared between the Raft thread and its readers.
#[derive(Debug, Default)]
pub struct DiskAlarm {
    raised: AtomicBool,
    /// Times the alarm went up since the start.
    raised_total: AtomicU64,
    /// Writes retried while it was up.
    retries: AtomicU64,
    /// The node is stopping: a write that fails for lack of space fails
    /// the node as any other disk error does, so the stop does not wait.
    give_up: AtomicBool,
}

impl DiskAlarm {
    pub fn new() -> Arc<DiskAlarm> {
        Arc::new(DiskAlarm::default())
    }

    /// Whether the replica is waiting for disk space now.
    pub fn is_raised(&self) -> bool {
        self.raised.load(Ordering::Acquire)
    }

    pub fn raised_total(&self) -> u64 {
        self.raised_total.load(Ordering::Relaxed)
    }

    pub fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    /// Stops any wait for space: the pending write fails at its next try.
    pub fn stop_retrying(&self) {
        self.give_up.store(true, Ordering::Release);
    }

    pub(crate) fn retrying_stopped(&self) -> bool {
        self.give_up.load(Ordering::Acquire)
    }

    /// Raises the alarm; true when it was not up already.
    pub(crate) fn raise(&self) -> bool {
        let newly = !self.raised.swap(true, Ordering::AcqRel);
        if newly {
            self.raised_total.fetch_add(1, Ordering::Relaxed);
        }
        newly
    }

    pub(crate) fn count_retry(&self) {
        self.retries.fetch_add(1, Ordering::Relaxed);
    }

    /// Clears the alarm; true when it was up.
    pub(crate) fn clear(&self) -> bool {
        self.raised.swap(false, Ordering::AcqRel)
    }
}

impl ReplicationError {
    /// Whether this is a write that failed for lack of space (see
    /// [`is_no_space`]).
    pub fn is_no_space(&self) -> bool {
        match self {
            ReplicationError::Io { source, .. } => is_no_space(source),
            ReplicationError::Journal(exchange_journal::JournalError::Io { source, .. }) => {
                is_no_space(source)
            }
            // A failed sync of the log is not retried whatever its cause
            // (see `JournalError::Sync`): the node stops.
            _ => false,
        }
    }
}

impl ReplicaNode {
    /// Runs a write Raft's state needs. While it fails for lack of space
    /// the alarm is up, a leader hands leadership over, and the same write
    /// is tried again after a pause: once it succeeds the node goes on
    /// from where it stopped. Any other failure, or one after
    /// [`DiskAlarm::stop_retrying`], is returned as before.
    pub(crate) fn durably<T>(
        &mut self,
        send: &mut dyn FnMut(Message),
        mut write: impl FnMut(&mut DiskStorage) -> Result<T, ReplicationError>,
    ) -> Result<T, ReplicationError> {
        let mut tries = 0u64;
        loop {
            match write(self.raw.mut_store()) {
                Err(error) if error.is_no_space() && !self.alarm.retrying_stopped() => {
                    if tries == 0 {
                        if self.alarm.raise() {
                            tracing::error!(%error, "nospace alarm raised: waiting for disk space");
                        }
                        self.give_up_leadership(send);
                    } else {
                        self.alarm.count_retry();
                    }
                    tries += 1;
                    std::thread::sleep(self.nospace_retry);
                }
                result => {
                    if tries > 0 && self.alarm.clear() {
                        tracing::warn!(tries, "nospace alarm cleared: the write went through");
                    }
                    return result;
                }
            }
        }
    }

    /// A leader that cannot write asks its most up-to-date follower to
    /// campaign now, so the cluster takes writes through the others while
    /// it waits. Raft's own transfer cannot run while this thread waits in
    /// the middle of a ready, so the follower gets the message the
    /// transfer ends with (`MsgTimeoutNow`); an election is safe whichever
    /// node starts it, and one that fails leaves the election timeout to
    /// elect someone.
    fn give_up_leadership(&mut self, send: &mut dyn FnMut(Message)) {
        if !self.is_leader() {
            return;
        }
        let id = self.id();
        let voters = &self.raw.store().conf_state().voters;
        let target = self
            .raw
            .raft
            .prs()
            .iter()
            .filter(|(peer, _)| **peer != id && voters.contains(peer))
            .max_by_key(|(_, progress)| progress.matched)
            .map(|(peer, _)| *peer);
        let Some(target) = target else {
            return;
        };
        tracing::warn!(target, "the disk is full: handing leadership over");
        let mut message = Message::default();
        message.set_msg_type(MessageType::MsgTimeoutNow);
        message.from = id;
        message.to = target;
        message.term = self.term();
        send(message);
    }
}

/// Fails the next writes of a [`crate::DiskStorage`] for lack of space, as
/// a full disk would: the seam tests drive the alarm through without one.
#[derive(Clone, Debug, Default)]
pub struct WriteFaults(Option<Arc<AtomicU64>>);

impl WriteFaults {
    /// Faults that fail nothing until [`WriteFaults::fail_next`] is called.
    pub fn armed() -> WriteFaults {
        WriteFaults(Some(Arc::new(AtomicU64::new(0))))
    }

    /// Fails the next `count` writes (log appends and state records).
    pub fn fail_next(&self, count: u64) {
        if let Some(left) = &self.0 {
            left.store(count, Ordering::Release);
        }
    }

    /// Writes still to fail.
    pub fn pending(&self) -> u64 {
        self.0
            .as_ref()
            .map_or(0, |left| left.load(Ordering::Acquire))
    }

    /// The fault due for this write, if any.
    pub(crate) fn check(&self, path: &std::path::Path) -> Result<(), ReplicationError> {
        let Some(left) = &self.0 else {
            return Ok(());
        };
        let due = left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok();
        if due {
            return Err(crate::error::io(
                path,
                std::io::Error::from(std::io::ErrorKind::StorageFull),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn space_errors_are_told_from_device_errors() {
        assert!(is_no_space(&std::io::Error::from_raw_os_error(ENOSPC)));
        assert!(is_no_space(&std::io::Error::from_raw_os_error(EDQUOT)));
        assert!(is_no_space(&std::io::Error::from(
            std::io::ErrorKind::StorageFull
        )));
        assert!(!is_no_space(&std::io::Error::from_raw_os_error(5)));
        let journal = ReplicationError::Journal(exchange_journal::JournalError::Io {
            path: "x".into(),
            source: std::io::Error::from_raw_os_error(ENOSPC),
        });
        assert!(journal.is_no_space());
        assert!(!ReplicationError::Config("x".into()).is_no_space());
        let sync = ReplicationError::Journal(exchange_journal::JournalError::Sync {
            path: "x".into(),
            source: std::io::Error::from_raw_os_error(ENOSPC),
        });
        assert!(!sync.is_no_space());
    }

    #[test]
    fn faults_fail_as_many_writes_as_asked() {
        let faults = WriteFaults::armed();
        let path = std::path::Path::new("log");
        assert!(faults.check(path).is_ok());
        faults.fail_next(2);
        assert!(faults.check(path).is_err_and(|e| e.is_no_space()));
        assert!(faults.check(path).is_err_and(|e| e.is_no_space()));
        assert!(faults.check(path).is_ok());
        assert!(WriteFaults::default().check(path).is_ok());
    }
}
