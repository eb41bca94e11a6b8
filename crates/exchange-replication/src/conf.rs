//! Membership-change entries: parsing both encodings Raft uses, what a
//! simple change does, and the wire codec of Raft messages.

use protobuf::Message as _;
use raft::eraftpb::{
    ConfChange, ConfChangeSingle, ConfChangeType, ConfChangeV2, ConfState, Entry, EntryType,
    Message, MessageType,
};

use crate::error::ReplicationError;
use crate::types::Membership;

/// Applies a simple membership change to a configuration, as Raft would:
/// used on start for changes that are in the committed log but not yet in
/// the saved configuration.
pub(crate) fn apply_simple(conf: &mut ConfState, change: &ConfChangeV2) {
    for single in change.get_changes() {
        let id = single.node_id;
        conf.voters.retain(|v| *v != id);
        conf.learners.retain(|v| *v != id);
        match single.get_change_type() {
            ConfChangeType::AddNode => conf.voters.push(id),
            ConfChangeType::AddLearnerNode => conf.learners.push(id),
            ConfChangeType::RemoveNode => {}
        }
    }
    conf.voters.sort_unstable();
    conf.learners.sort_unstable();
}

/// The change a simple (single-step) membership change makes.
pub(crate) fn membership_of(change: &ConfChangeV2) -> Option<Membership> {
    match change.get_changes() {
        [single] => match single.get_change_type() {
            ConfChangeType::AddNode => Some(Membership::AddVoter(single.node_id)),
            ConfChangeType::RemoveNode => Some(Membership::RemoveVoter(single.node_id)),
            ConfChangeType::AddLearnerNode => None,
        },
        _ => None,
    }
}

pub(crate) fn parse_conf_change(entry: &Entry) -> Result<ConfChangeV2, String> {
    match entry.get_entry_type() {
        EntryType::EntryConfChange => {
            let change = ConfChange::parse_from_bytes(&entry.data).map_err(|e| e.to_string())?;
            let mut single = ConfChangeSingle::default();
            single.set_change_type(change.get_change_type());
            single.node_id = change.node_id;
            let mut v2 = ConfChangeV2::default();
            v2.mut_changes().push(single);
            v2.context = change.context;
            Ok(v2)
        }
        EntryType::EntryConfChangeV2 => {
            ConfChangeV2::parse_from_bytes(&entry.data).map_err(|e| e.to_string())
        }
        EntryType::EntryNormal => Err("not a configuration change".into()),
    }
}

/// Encodes a Raft message for the wire.
pub fn encode_message(message: &Message) -> Vec<u8> {
    message.write_to_bytes().unwrap_or_default()
}

/// Decodes a Raft message from the wire.
pub fn decode_message(bytes: &[u8]) -> Result<Message, ReplicationError> {
    Message::parse_from_bytes(bytes).map_err(|e| ReplicationError::Raft(raft::Error::CodecError(e)))
}

/// Whether a message carries a snapshot (its loss must be reported).
pub fn is_snapshot(message: &Message) -> bool {
    message.get_msg_type() == MessageType::MsgSnapshot
}
