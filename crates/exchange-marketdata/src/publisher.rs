//! Numbers the binary feed's messages, packs them into MoldUDP64 packets
//! and keeps the most recent ones for retransmission. No sockets: the
//! server sends what [`Publisher::take_packets`] returns.

use std::collections::VecDeque;

use crate::mold::{heartbeat, PacketWriter, Session, SnapshotBody};
use crate::wire::Message;

/// Largest retransmission packet: TCP is not bound by the path MTU.
pub const MAX_RETRANSMIT_BYTES: usize = 60_000;

#[derive(Debug)]
pub struct Publisher {
    session: Session,
    /// Sequence number the next message gets; the first is 1.
    next_seq: u64,
    /// The newest messages, encoded; the front is `next_seq - len`.
    store: VecDeque<Box<[u8]>>,
    capacity: usize,
    max_packet: usize,
    current: Option<PacketWriter>,
    ready: Vec<Vec<u8>>,
    scratch: Vec<u8>,
}

impl Publisher {
    /// `capacity` messages are kept for retransmission; packets carry at
    /// most `max_packet` bytes.
    pub fn new(session: Session, capacity: usize, max_packet: usize) -> Publisher {
        Publisher {
            session,
            next_seq: 1,
            store: VecDeque::new(),
            capacity: capacity.max(1),
            max_packet,
            current: None,
            ready: Vec::new(),
            scratch: Vec::new(),
        }
    }

    pub fn session(&self) -> Session {
        self.session
    }

    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The oldest sequence number still available for retransmission.
    pub fn first_stored(&self) -> u64 {
        self.next_seq - self.store.len() as u64
    }

    /// Numbers, stores and packs one message.
    pub fn push(&mut self, message: &Message) {
        self.scratch.clear();
        message.encode(&mut self.scratch);
        let fits = self
            .current
            .as_ref()
            .is_some_and(|p| p.fits(self.scratch.len()));
        if !fits {
            self.flush();
            self.current = Some(PacketWriter::new(
                &self.session,
                self.next_seq,
                self.max_packet,
            ));
        }
        if let Some(packet) = self.current.as_mut() {
            packet.push(&self.scratch);
        }
        self.store.push_back(self.scratch.as_slice().into());
        if self.store.len() > self.capacity {
            self.store.pop_front();
        }
        self.next_seq += 1;
    }

    /// Closes the packet being filled, so it goes out now.
    pub fn flush(&mut self) {
        if let Some(packet) = self.current.take() {
            self.ready.push(packet.finish());
        }
    }

    /// Finished packets, in sequence order.
    pub fn take_packets(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.ready)
    }

    pub fn heartbeat(&self) -> Vec<u8> {
        heartbeat(&self.session, self.next_seq)
    }

    /// A packet with up to `count` stored messages from `seq`. With none
    /// to give it has no messages and its sequence says why: the oldest
    /// one kept (above `seq`: those were dropped, take a snapshot), or the
    /// next one to come (at or below `seq`: nothing was sent yet). Another
    /// session's request gets this session's next sequence.
    pub fn retransmit(&self, session: &Session, seq: u64, count: u16) -> Vec<u8> {
        if *session != self.session || seq >= self.next_seq {
            return heartbeat(&self.session, self.next_seq);
        }
        let first = self.first_stored();
        if seq < first {
            return heartbeat(&self.session, first);
        }
        let mut packet = PacketWriter::new(&self.session, seq, MAX_RETRANSMIT_BYTES);
        let start = (seq - first) as usize;
        for message in self.store.iter().skip(start).take(usize::from(count)) {
            if !packet.fits(message.len()) {
                break;
            }
            packet.push(message);
        }
        packet.finish()
    }

    /// A snapshot made of `messages`, valid just before the next message.
    /// Flush first so that every message before it has gone out.
    pub fn snapshot(&self, messages: &[Message]) -> SnapshotBody {
        SnapshotBody {
            session: self.session,
            next_seq: self.next_seq,
            messages: messages.iter().map(Message::to_bytes).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mold::{session_from, Packet, HEADER_LEN};
    use crate::wire::STATUS_LEN;

    fn status(ts: u64) -> Message {
        Message::Status {
            locate: 0,
            ts,
            halted: false,
        }
    }

    #[test]
    fn packs_numbers_and_retransmits() {
        let session = session_from("s1");
        // Room for two status messages per packet.
        let mut publisher = Publisher::new(session, 3, HEADER_LEN + 2 * (STATUS_LEN + 2));
        for ts in 1..=5 {
            publisher.push(&status(ts));
        }
        publisher.flush();
        let packets = publisher.take_packets();
        let parsed: Vec<(u64, u16)> = packets
            .iter()
            .map(|p| Packet::parse(p).map(|p| (p.seq, p.count)).unwrap())
            .collect();
        assert_eq!(parsed, vec![(1, 2), (3, 2), (5, 1)]);
        assert_eq!(publisher.next_seq(), 6);
        assert_eq!(publisher.first_stored(), 3);

        let again = publisher.retransmit(&session, 4, 10);
        let again = Packet::parse(&again).unwrap();
        assert_eq!((again.seq, again.count), (4, 2));
        assert_eq!(Message::decode(again.messages[0]), Ok(status(4)));

        let gone = publisher.retransmit(&session, 1, 1);
        let gone = Packet::parse(&gone).unwrap();
        assert_eq!((gone.seq, gone.count), (3, 0), "evicted: the oldest kept");
        let future = publisher.retransmit(&session, 9, 1);
        let future = Packet::parse(&future).unwrap();
        assert_eq!((future.seq, future.count), (6, 0));
        let other = publisher.retransmit(&session_from("s0"), 3, 1);
        let other = Packet::parse(&other).unwrap();
        assert_eq!((other.session, other.count), (session, 0));
    }
}
