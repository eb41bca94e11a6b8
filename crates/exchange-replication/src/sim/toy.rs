//! The toy state machine: a hash chain over 8-byte payload ids.

use std::collections::BTreeSet;

use super::Machine;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Toy {
    pub raft_index: u64,
    pub hash: u64,
    pub ids: BTreeSet<u64>,
}

fn mix(hash: u64, value: u64) -> u64 {
    let mut h = hash ^ value.wrapping_mul(0x1000_0000_01b3);
    h = h.wrapping_mul(0x0100_0000_01b3).rotate_left(29);
    h ^ (h >> 17)
}

impl Machine for Toy {
    type Digest = u64;

    fn empty(index: u64) -> Toy {
        Toy {
            raft_index: index,
            ..Toy::default()
        }
    }

    fn restore(index: u64, data: &[u8]) -> Toy {
        if data.is_empty() {
            return Toy::empty(index);
        }
        let word = |at: usize| u64::from_le_bytes(data[at..at + 8].try_into().expect("word"));
        let toy = Toy {
            raft_index: word(0),
            hash: word(8),
            ids: (16..data.len()).step_by(8).map(word).collect(),
        };
        assert!(toy.raft_index <= index, "a snapshot holds a later state");
        Toy {
            raft_index: index,
            ..toy
        }
    }

    fn snapshot(&self) -> Vec<u8> {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&self.raft_index.to_le_bytes());
        bytes.extend_from_slice(&self.hash.to_le_bytes());
        for id in &self.ids {
            bytes.extend_from_slice(&id.to_le_bytes());
        }
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
        let Some(payload) = payload.filter(|p| !p.is_empty()) else {
            return;
        };
        let id = u64::from_le_bytes(payload.try_into().expect("8-byte payload"));
        assert!(
            self.ids.insert(id),
            "node {node}: payload {id} applied twice (index {index})"
        );
        self.hash = mix(self.hash, id);
    }

    fn digest(&self) -> u64 {
        self.hash
    }

    fn proposal(n: u64) -> Vec<u8> {
        n.to_le_bytes().to_vec()
    }
}
