//! Feeds a mirror's core thread from a replica's log stream, attaching the
//! waiting replies of this gateway's own commands as they commit.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use exchange_replication::ConfState;

use super::inflight::InFlight;
use crate::parked;
use crate::pipeline::{CommittedBatch, CoreMsg};
use crate::replication::{ClusterShared, RaftMeta};
use crate::stream::{Follower, StreamItem};

pub(crate) struct Follow {
    pub(crate) follower: Follower,
    pub(crate) core: parked::Sender<CoreMsg>,
    /// The gateway's commands in flight; none on a market-data gateway.
    pub(crate) inflight: Option<Arc<Mutex<InFlight>>>,
    pub(crate) cluster: Arc<ClusterShared>,
    /// Set when the pipeline stops.
    pub(crate) stop: Arc<AtomicBool>,
}

/// How often a quiet stream checks whether the pipeline stops.
const STOP_CHECK: Duration = Duration::from_millis(200);

impl Follow {
    /// Until the pipeline or its core thread stops.
    pub(crate) fn run(self) {
        let conf = Arc::new(ConfState::default());
        while !self.stop.load(Ordering::Acquire) {
            let Ok(item) = self.follower.items().recv_timeout(STOP_CHECK) else {
                continue;
            };
            let message = match item {
                StreamItem::Install {
                    raft_index,
                    term,
                    data,
                } => CoreMsg::Install {
                    meta: RaftMeta {
                        index: raft_index,
                        term,
                        conf: conf.clone(),
                    },
                    data,
                },
                StreamItem::Entries(entries) => CoreMsg::Entries(self.batches(entries, &conf)),
            };
            if self.core.send(message).is_err() {
                break;
            }
            let delivered = self.follower.delivered_raft_index();
            self.cluster.publish_mirror(
                self.follower.following(),
                delivered + self.follower.behind(),
            );
        }
        self.follower.stop();
    }

    fn batches(
        &self,
        entries: Vec<(u64, u64, Vec<crate::LogEntry>)>,
        conf: &Arc<ConfState>,
    ) -> Vec<CommittedBatch> {
        let mut inflight = self.inflight.as_ref().map(|table| {
            table
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        });
        entries
            .into_iter()
            .map(|(index, term, commands)| CommittedBatch {
                meta: RaftMeta {
                    index,
                    term,
                    conf: conf.clone(),
                },
                items: commands
                    .into_iter()
                    .map(|entry| {
                        let reply = inflight.as_mut().and_then(|table| table.committed(&entry));
                        (entry, reply)
                    })
                    .collect(),
            })
            .collect()
    }
}
