//! The replicas' state machine in the simulation: the node's own core
//! state applying the log's batches as the core thread does, and beside
//! it a record of which client command each applied entry was, to check
//! against what the clients heard.

use std::collections::BTreeMap;

use exchange_replication::sim::Machine;
use exchange_types::Command;
use serde::{Deserialize, Serialize};

use crate::core_state::CoreState;
use crate::entry::LogEntry;
use crate::replication::decode_batch;
use crate::sessions::SessionRefusal;
use crate::state::Applied;

/// What the checks need of an applied log, kept in the snapshot beside the
/// state so that a replica restarted from one still knows it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Record {
    /// Client command id -> (Raft index, session) where it was applied.
    pub(super) applied: BTreeMap<u64, (u64, u64)>,
    /// Session -> Raft index of the open that opened it.
    pub(super) opens: BTreeMap<u64, u64>,
    /// Sequenced entries refused as stale (their session closed).
    pub(super) stale: u64,
    /// Sequenced entries refused as duplicates.
    pub(super) duplicates: u64,
}

impl Record {
    /// Notes what applying `entry` (at Raft index `index`) did.
    pub(super) fn note(&mut self, node: u64, index: u64, entry: &LogEntry, applied: &Applied) {
        match entry {
            LogEntry::OpenSession { session, .. } if applied.session_refusal.is_none() => {
                self.opens.entry(*session).or_insert(index);
            }
            LogEntry::Sequenced { session, entry, .. } => {
                match applied.session_refusal {
                    Some(SessionRefusal::Duplicate { .. }) => self.duplicates += 1,
                    Some(SessionRefusal::ClosedSession | SessionRefusal::UnknownSession) => {
                        self.stale += 1;
                    }
                    _ => {}
                }
                if applied.refused_unapplied() {
                    return;
                }
                let Some(id) = command_id(entry) else { return };
                if let Some((first, _)) = self.applied.insert(id, (index, *session)) {
                    panic!("node {node}: command {id} applied twice, at {first} and at {index}");
                }
            }
            _ => {}
        }
    }
}

/// The id of a simulated client's command: its order's client order id
/// is `c` and the id.
pub(super) fn command_id(entry: &LogEntry) -> Option<u64> {
    match entry {
        LogEntry::Core(stamped) => match &stamped.command {
            Command::Place(place) => place
                .client_order_id
                .as_str()
                .strip_prefix('c')?
                .parse()
                .ok(),
            _ => None,
        },
        _ => None,
    }
}

pub(super) struct NodeMachine {
    pub(super) core: CoreState,
    pub(super) raft_index: u64,
    pub(super) record: Record,
}

impl NodeMachine {
    /// A copy of the core state (what a gateway's mirror installs).
    pub(super) fn core_copy(&self) -> CoreState {
        let bytes = self.core.snapshot().expect("the state serialises");
        let mut core = CoreState::restore(&bytes).expect("the state restores");
        core.state.raft_index = self.raft_index;
        core
    }
}

/// Applies a committed batch to `core` as the core thread does, handing
/// each entry and its outcome to `each`.
pub(super) fn apply_batch(
    core: &mut CoreState,
    index: u64,
    payload: Option<&[u8]>,
    mut each: impl FnMut(&LogEntry, Applied),
) {
    let entries = match payload.filter(|p| !p.is_empty()) {
        Some(data) => decode_batch(data).expect("a committed batch decodes"),
        None => Vec::new(),
    };
    for entry in &entries {
        let at = core.state.applied_index + 1;
        let mut applied = core.apply(at, entry);
        applied.raft_index = index;
        each(entry, applied);
    }
    core.state.raft_index = index;
}

impl Machine for NodeMachine {
    type Digest = String;

    fn empty(index: u64) -> NodeMachine {
        let mut core = CoreState::new();
        core.state.raft_index = index;
        NodeMachine {
            core,
            raft_index: index,
            record: Record::default(),
        }
    }

    fn restore(index: u64, data: &[u8]) -> NodeMachine {
        if data.is_empty() {
            return NodeMachine::empty(index);
        }
        let (len, rest) = data.split_at(8);
        let len = u64::from_le_bytes(len.try_into().expect("8 bytes")) as usize;
        let (core, record) = rest.split_at(len);
        let mut core = CoreState::restore(core).expect("a snapshot restores");
        core.state.raft_index = index;
        NodeMachine {
            core,
            raft_index: index,
            record: serde_json::from_slice(record).expect("the record restores"),
        }
    }

    fn snapshot(&self) -> Vec<u8> {
        let core = self.core.snapshot().expect("the state serialises");
        let mut bytes = (core.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(&core);
        bytes.extend_from_slice(&serde_json::to_vec(&self.record).expect("the record"));
        bytes
    }

    fn applied(&self) -> u64 {
        self.raft_index
    }

    fn apply(&mut self, node: u64, index: u64, payload: Option<&[u8]>) {
        assert!(
            index > self.raft_index,
            "node {node}: index {index} handed over after {}",
            self.raft_index
        );
        self.raft_index = index;
        let record = &mut self.record;
        apply_batch(&mut self.core, index, payload, |entry, applied| {
            record.note(node, index, entry, &applied);
        });
    }

    fn digest(&self) -> String {
        self.core.state.state_hash().expect("the state hashes")
    }

    /// The cluster's own proposals carry a clock tick and nothing else.
    fn proposal(n: u64) -> Vec<u8> {
        let tick = exchange_types::Stamped {
            ts: n,
            command: Command::Tick,
        };
        crate::replication::encode_batch(&[LogEntry::Core(tick)]).expect("a tick encodes")
    }
}
