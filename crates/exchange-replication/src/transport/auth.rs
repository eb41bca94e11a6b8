//! The cluster key, the handshake that proves both ends hold it, and the
//! per-frame MAC under the session key the handshake derives.
//!
//! Wire (every integer little-endian):
//!
//! ```text
//! initiator -> responder  HELLO  = MAGIC(8) id_i(8) nonce_i(32)
//! responder -> initiator  ANSWER = MAGIC(8) id_r(8) nonce_r(32) proof_r(32)
//! initiator -> responder  PROOF  = proof_i(32)
//! then, initiator -> responder, per Raft message:
//!                         len(4) payload(len) tag(16)
//! ```
//!
//! `proof_x = HMAC-SHA256(key, LABEL_x || nonce_i || nonce_r || id_i || id_r)`
//! with a different label per direction, so that neither proof can be
//! reflected back as the other. The session key is the same HMAC under the
//! label `session`: fresh for every connection, since both nonces are. A
//! frame's tag is HMAC-SHA256(session, counter || len || payload)
//! truncated to 16 bytes (as RFC 4868's HMAC-SHA-256-128); the counter
//! counts the connection's frames from 0 on both ends and never travels,
//! so a frame dropped, reordered, repeated or taken from another
//! connection fails its check.
//!
//! Other protocols over the same key ([`super::channel`]) use the same
//! handshake with their own MAGIC and labels that name that MAGIC ([`Protocol`]):
//! a proof or a session key of one protocol is never one of another's,
//! even when the MAGIC is rewritten on the wire. Duplex protocols derive
//! one session key per direction. A responder that gets a hello of
//! another MAGIC answers its own MAGIC alone and closes, so that the
//! initiator can tell a wrong protocol from a wrong key.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Identifies the protocol (and its version) in the first bytes of a
/// connection, so that anything else (an older node's bare frames, a port
/// scan) is told apart from a wrong key.
pub(crate) const MAGIC: [u8; 8] = *b"EXRAFT01";
pub(crate) const NONCE: usize = 32;
pub(crate) const PROOF: usize = 32;
/// Bytes a frame's tag adds to it.
pub const TAG_BYTES: usize = 16;
pub(crate) const HELLO: usize = MAGIC.len() + 8 + NONCE;
pub(crate) const ANSWER: usize = HELLO + PROOF;

const LABEL_INITIATOR: &[u8] = b"exchange-raft-v1 initiator\n";
const LABEL_RESPONDER: &[u8] = b"exchange-raft-v1 responder\n";
const LABEL_SESSION: &[u8] = b"exchange-raft-v1 session\n";
const LABEL_SESSION_BACK: &[u8] = b"exchange-raft-v1 session back\n";

/// A protocol run over the cluster key: the MAGIC its handshake opens
/// with and the labels its proofs and session keys are derived under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Protocol {
    pub magic: [u8; 8],
    initiator: Vec<u8>,
    responder: Vec<u8>,
    /// Session key of the frames the initiator sends.
    forth: Vec<u8>,
    /// Session key of the frames the responder sends (duplex protocols).
    back: Vec<u8>,
}

impl Protocol {
    /// Raft's transport, whose labels predate the other protocols and
    /// stay as they were so that its handshake is unchanged on the wire.
    pub fn raft() -> Protocol {
        Protocol {
            magic: MAGIC,
            initiator: LABEL_INITIATOR.to_vec(),
            responder: LABEL_RESPONDER.to_vec(),
            forth: LABEL_SESSION.to_vec(),
            back: LABEL_SESSION_BACK.to_vec(),
        }
    }

    /// Any other protocol: every label names its MAGIC.
    pub fn named(magic: [u8; 8]) -> Protocol {
        let label = |role: &[u8]| {
            let mut out = b"exchange-channel-v1 ".to_vec();
            out.extend_from_slice(&magic);
            out.push(b' ');
            out.extend_from_slice(role);
            out.push(b'\n');
            out
        };
        Protocol {
            magic,
            initiator: label(b"initiator"),
            responder: label(b"responder"),
            forth: label(b"session forth"),
            back: label(b"session back"),
        }
    }
}

/// The secret every member of a cluster holds: 32 bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct ClusterKey([u8; 32]);

// The key must never reach a log line.
impl std::fmt::Debug for ClusterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterKey(..)")
    }
}

impl ClusterKey {
    pub fn from_bytes(bytes: [u8; 32]) -> ClusterKey {
        ClusterKey(bytes)
    }

    /// 32 bytes from the operating system's random source.
    pub fn generate() -> std::io::Result<ClusterKey> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(ClusterKey(bytes))
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    fn mac(&self) -> HmacSha256 {
        <HmacSha256 as Mac>::new_from_slice(&self.0).expect("HMAC takes keys of any length")
    }
}

/// A fresh nonce from the operating system's random source.
pub(crate) fn nonce() -> std::io::Result<[u8; NONCE]> {
    let mut bytes = [0u8; NONCE];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(bytes)
}

/// What both ends bind their proofs and the session key to.
pub(crate) struct Transcript {
    pub nonce_i: [u8; NONCE],
    pub nonce_r: [u8; NONCE],
    pub id_i: u64,
    pub id_r: u64,
}

impl Transcript {
    fn keyed(&self, key: &ClusterKey, label: &[u8]) -> HmacSha256 {
        let mut mac = key.mac();
        mac.update(label);
        mac.update(&self.nonce_i);
        mac.update(&self.nonce_r);
        mac.update(&self.id_i.to_le_bytes());
        mac.update(&self.id_r.to_le_bytes());
        mac
    }

    pub fn initiator_proof(&self, key: &ClusterKey, protocol: &Protocol) -> [u8; PROOF] {
        self.keyed(key, &protocol.initiator)
            .finalize()
            .into_bytes()
            .into()
    }

    pub fn responder_proof(&self, key: &ClusterKey, protocol: &Protocol) -> [u8; PROOF] {
        self.keyed(key, &protocol.responder)
            .finalize()
            .into_bytes()
            .into()
    }

    /// Checks the initiator's proof in constant time.
    pub fn initiator_proved(&self, key: &ClusterKey, protocol: &Protocol, proof: &[u8]) -> bool {
        self.keyed(key, &protocol.initiator)
            .verify_slice(proof)
            .is_ok()
    }

    pub fn responder_proved(&self, key: &ClusterKey, protocol: &Protocol, proof: &[u8]) -> bool {
        self.keyed(key, &protocol.responder)
            .verify_slice(proof)
            .is_ok()
    }

    /// The session of the frames the initiator sends.
    pub fn session(&self, key: &ClusterKey, protocol: &Protocol) -> FrameMac {
        self.session_under(key, &protocol.forth)
    }

    /// The session of the frames the responder sends.
    pub fn session_back(&self, key: &ClusterKey, protocol: &Protocol) -> FrameMac {
        self.session_under(key, &protocol.back)
    }

    fn session_under(&self, key: &ClusterKey, label: &[u8]) -> FrameMac {
        let session: [u8; 32] = self.keyed(key, label).finalize().into_bytes().into();
        FrameMac {
            keyed: <HmacSha256 as Mac>::new_from_slice(&session)
                .expect("HMAC takes keys of any length"),
            counter: 0,
        }
    }
}

/// Tags (sender) or checks (receiver) a connection's frames in order.
/// The session key's ipad and opad blocks are hashed once, here; each
/// frame clones that state instead of keying again.
pub(crate) struct FrameMac {
    keyed: HmacSha256,
    counter: u64,
}

impl FrameMac {
    fn next(&mut self, payload: &[u8]) -> HmacSha256 {
        let mut mac = self.keyed.clone();
        mac.update(&self.counter.to_le_bytes());
        mac.update(&(payload.len() as u32).to_le_bytes());
        mac.update(payload);
        self.counter += 1;
        mac
    }

    /// The tag of the connection's next frame.
    pub fn seal(&mut self, payload: &[u8]) -> [u8; TAG_BYTES] {
        let full = self.next(payload).finalize().into_bytes();
        let mut tag = [0u8; TAG_BYTES];
        tag.copy_from_slice(&full[..TAG_BYTES]);
        tag
    }

    /// Whether `tag` is the next frame's, in constant time.
    pub fn open(&mut self, payload: &[u8], tag: &[u8]) -> bool {
        self.next(payload).verify_truncated_left(tag).is_ok()
    }
}

/// Why a connection was refused or closed: the log line and the counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// More connections were waiting for their handshake than allowed.
    TooManyPending,
    /// The handshake did not finish in time.
    Timeout,
    /// The first bytes were not this protocol's (an older node, a scan).
    NotAHandshake,
    /// The other end does not hold the cluster key.
    BadProof,
    /// The initiator left after our proof: it does not hold our key.
    Abandoned,
    /// It claimed an id it cannot have (0, ours, or not the peer dialled).
    BadId,
    /// A frame after the handshake failed its MAC: tampered, reordered
    /// or replayed.
    BadFrame,
}

impl Refusal {
    fn as_str(self) -> &'static str {
        match self {
            Refusal::TooManyPending => "too many connections waiting for their handshake",
            Refusal::Timeout => "handshake timed out",
            Refusal::NotAHandshake => "not a cluster handshake (an older node, or not a node)",
            Refusal::BadProof => "the peer does not hold the cluster key",
            Refusal::Abandoned => {
                "the peer left the handshake (it holds another cluster key, or none)"
            }
            Refusal::BadId => "the peer claimed an impossible node id",
            Refusal::BadFrame => "a frame failed its MAC (tampered, reordered or replayed)",
        }
    }
}

/// Counts of refused connections and frames, for metrics.
#[derive(Debug, Default)]
pub struct AuthCounters {
    /// Connections refused before or during the handshake.
    pub handshakes_refused: AtomicU64,
    /// Authenticated connections closed for a frame that failed its MAC.
    pub bad_frames: AtomicU64,
    last_log: Mutex<Option<Instant>>,
    suppressed: AtomicU64,
}

/// At most one log line per this long: a flood of bad connections must not
/// flood the log too.
const LOG_EVERY: Duration = Duration::from_secs(5);

impl AuthCounters {
    /// Counts a refusal and logs it, unless another was logged lately.
    /// Only the reason and the address: never key material or proofs.
    pub(crate) fn refuse(&self, refusal: Refusal, peer: &str) {
        let counter = match refusal {
            Refusal::BadFrame => &self.bad_frames,
            _ => &self.handshakes_refused,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let Ok(mut last) = self.last_log.lock() else {
            return;
        };
        if last.is_some_and(|at| at.elapsed() < LOG_EVERY) {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        *last = Some(Instant::now());
        let suppressed = self.suppressed.swap(0, Ordering::Relaxed);
        tracing::warn!(
            peer,
            suppressed,
            "raft transport: connection closed: {}",
            refusal.as_str()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transcript() -> Transcript {
        Transcript {
            nonce_i: [1; NONCE],
            nonce_r: [2; NONCE],
            id_i: 1,
            id_r: 2,
        }
    }

    #[test]
    fn proofs_are_bound_to_key_direction_and_transcript() {
        let key = ClusterKey::from_bytes([9; 32]);
        let p = &Protocol::raft();
        let t = transcript();
        assert!(t.initiator_proved(&key, p, &t.initiator_proof(&key, p)));
        assert!(t.responder_proved(&key, p, &t.responder_proof(&key, p)));
        // A responder's proof is no initiator's: no reflection.
        assert!(!t.initiator_proved(&key, p, &t.responder_proof(&key, p)));
        let other = ClusterKey::from_bytes([8; 32]);
        assert!(!t.initiator_proved(&key, p, &t.initiator_proof(&other, p)));
        let swapped = Transcript {
            id_i: 2,
            id_r: 1,
            ..transcript()
        };
        assert!(!swapped.initiator_proved(&key, p, &t.initiator_proof(&key, p)));
    }

    #[test]
    fn frames_check_in_order_only() {
        let key = ClusterKey::from_bytes([9; 32]);
        let p = &Protocol::raft();
        let (mut tx, mut rx) = (transcript().session(&key, p), transcript().session(&key, p));
        let first = tx.seal(b"one");
        let second = tx.seal(b"two");
        assert!(!rx.clone_for_test().open(b"two", &second));
        assert!(rx.open(b"one", &first));
        assert!(!rx.clone_for_test().open(b"one", &first));
        assert!(!rx.clone_for_test().open(b"twO", &second));
        assert!(rx.open(b"two", &second));
        let fresh = Transcript {
            nonce_r: [3; NONCE],
            ..transcript()
        };
        assert!(!fresh.session(&key, p).open(b"one", &first));
        // The other direction, and another protocol, have other keys.
        assert!(!transcript().session_back(&key, p).open(b"one", &first));
        let logs = &Protocol::named(*b"EXLOGS01");
        assert!(!transcript().session(&key, logs).open(b"one", &first));
    }

    #[test]
    fn proofs_are_bound_to_the_protocol() {
        let key = ClusterKey::from_bytes([9; 32]);
        let t = transcript();
        let (logs, ingress) = (Protocol::named(*b"EXLOGS01"), Protocol::named(*b"EXINGR01"));
        assert!(t.initiator_proved(&key, &logs, &t.initiator_proof(&key, &logs)));
        assert!(!t.initiator_proved(&key, &ingress, &t.initiator_proof(&key, &logs)));
        let raft = Protocol::raft();
        assert!(!t.responder_proved(&key, &raft, &t.responder_proof(&key, &logs)));
        // Named after Raft's MAGIC, a channel still is not Raft.
        let fake = Protocol::named(MAGIC);
        assert!(!t.initiator_proved(&key, &raft, &t.initiator_proof(&key, &fake)));
    }

    impl FrameMac {
        fn clone_for_test(&self) -> FrameMac {
            FrameMac {
                keyed: self.keyed.clone(),
                counter: self.counter,
            }
        }
    }
}
