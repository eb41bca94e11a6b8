//! A gateway that outlives its client session: the cluster closed it (it
//! expired while the gateway was cut off from the leader for longer than
//! its grace, or during an election as long), and the gateway still runs.
//!
//! The mirror's core thread applies the committed log like every replica,
//! so it sees the closure at the same entry they do; it tells the
//! forwarder, which opens a new session through the log as at start. The
//! commands still in flight in the closed session were not applied by the
//! closure's entry, and never will be (a closed session admits nothing):
//! their clients hear [`crate::sequencer::SubmitError::SessionExpired`].
//! They are not re-submitted in the new session: the closure already
//! cancelled the orders of the accounts the gateway's connections
//! protected, and an order its client sent before that cancel must not
//! rest on the book after it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crossbeam_channel::{unbounded, Receiver, Sender};

use crate::sessions::{SessionRefusal, Sessions};
use crate::state::Applied;

/// Which session the forwarder sends in, for the core thread to watch.
pub(crate) struct SessionWatch {
    /// The session watched; 0 once its closure was reported.
    session: AtomicU64,
    closed: Sender<u64>,
}

impl SessionWatch {
    /// A watch of `session`, and where its closure is reported.
    pub(crate) fn new(session: u64) -> (Arc<SessionWatch>, Receiver<u64>) {
        let (closed, reported) = unbounded();
        let watch = SessionWatch {
            session: AtomicU64::new(session),
            closed,
        };
        (Arc::new(watch), reported)
    }

    /// From now on, `session` is the one to watch.
    pub(crate) fn watch(&self, session: u64) {
        self.session.store(session, Ordering::Release);
    }

    /// Once the state shows the watched session closed, stops watching it
    /// and reports it ([`SessionWatch::closed`], then
    /// [`SessionWatch::report`]).
    #[cfg(test)]
    pub(crate) fn check(&self, sessions: &Sessions) {
        if let Some(session) = self.closed(sessions) {
            self.report(session);
        }
    }

    /// Called by the core thread after it applied entries: once the state
    /// shows the watched session closed, stops watching it and returns it
    /// to report, unless another session of the same gateway name is open:
    /// another process runs under this name (a replacement started while
    /// this one was cut off), and opening again would close that one in
    /// turn.
    pub(crate) fn closed(&self, sessions: &Sessions) -> Option<u64> {
        let session = self.session.load(Ordering::Acquire);
        let closed = sessions.get(session).filter(|s| s.closed.is_some())?;
        self.session
            .compare_exchange(session, 0, Ordering::AcqRel, Ordering::Acquire)
            .ok()?;
        if sessions.gateway_open(&closed.gateway) {
            tracing::error!(
                gateway = %closed.gateway,
                "gateway: another gateway opened a session under this name; this one's \
                 commands are refused as stale until it is restarted under a name of its own"
            );
            return None;
        }
        Some(session)
    }

    /// Tells the forwarder, which opens a new session; the publisher
    /// thread calls it once the entries applied before are answered.
    pub(crate) fn report(&self, session: u64) {
        // The forwarder holds the receiver while the gateway runs.
        let _ = self.closed.send(session);
    }
}

/// The outcome a waiter of a command of a closed session hears: what the
/// state answers a sequenced entry of a closed session, nothing applied.
pub(crate) fn expired() -> Arc<Applied> {
    Arc::new(Applied {
        command: SessionRefusal::ClosedSession.sequenced_command(),
        session_refusal: Some(SessionRefusal::ClosedSession),
        ..Applied::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessions::liveness::deadline;

    const GRACE_MS: u64 = 1_000;

    #[test]
    fn an_expired_session_is_reported_once_and_the_new_one_is_watched() {
        let mut sessions = Sessions::default();
        sessions
            .open_at(7, "gw", 0, Some(GRACE_MS), None)
            .expect("open");
        let (watch, reported) = SessionWatch::new(7);
        watch.check(&sessions);
        assert!(reported.try_recv().is_err(), "open: nothing to report");
        sessions.expire(deadline(0, GRACE_MS) + 1);
        watch.check(&sessions);
        watch.check(&sessions);
        assert_eq!(reported.try_iter().collect::<Vec<_>>(), [7]);
        sessions
            .open_at(8, "gw", 10, Some(GRACE_MS), None)
            .expect("open");
        watch.watch(8);
        watch.check(&sessions);
        assert!(reported.try_recv().is_err(), "8 is open");
        assert!(expired().refused_unapplied());
    }

    #[test]
    fn a_session_closed_by_another_process_of_the_same_name_is_not_reopened() {
        let mut sessions = Sessions::default();
        sessions
            .open_at(7, "gw", 0, Some(GRACE_MS), None)
            .expect("open");
        let (watch, reported) = SessionWatch::new(7);
        sessions
            .open_at(8, "gw", 0, Some(GRACE_MS), None)
            .expect("a later open closes 7");
        watch.check(&sessions);
        watch.check(&sessions);
        assert!(
            reported.try_recv().is_err(),
            "8 runs under the name: no fight"
        );
    }
}
