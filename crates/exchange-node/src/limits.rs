//! Every bound of the server's layers (node, gateways, market data) in one
//! place, and the relations between limits of crates that only the server
//! sees together, checked at compile time.
//!
//! The protocol's and the core's limits are in `exchange_types::limits`;
//! the journal's largest record is `exchange_journal::MAX_PAYLOAD_BYTES`.
//! One group commit is one Raft entry: the replica's entry-type byte, then
//! the batch ([`crate::replication::encode_batch`]: a count, and each
//! command's line behind its length). The journal stores the entry as one
//! record and a follower receives it inside one transport frame.

use exchange_journal::MAX_PAYLOAD_BYTES;
use exchange_replication::transport::MAX_FRAME_BYTES;
use std::time::Duration;

use exchange_types::limits::MAX_ENCODED_COMMAND_BYTES;

/// Commands taken into one group commit at most: far above the batches
/// the benchmarks form at their peak rates (tens of commands), so it never
/// holds a burst back, and a full batch of the longest commands, each in
/// both wrappers, still fits one record.
pub const MAX_BATCH: usize = 4_000;

/// The byte before a Raft entry's data in the journal (its entry type).
const ENTRY_TYPE_BYTES: usize = 1;
/// A batch's command count, and each command's length, are `u32`s.
const COUNT_BYTES: usize = 4;
const LENGTH_BYTES: usize = 4;

/// Bytes of the journal record that holds `commands` commands whose lines
/// take `line_bytes` each.
pub const fn batch_record_bytes(commands: usize, line_bytes: usize) -> usize {
    ENTRY_TYPE_BYTES + COUNT_BYTES + commands * (LENGTH_BYTES + line_bytes)
}

/// The largest record the pipeline writes: a full batch of the longest
/// commands, each a signed request's (`LogEntry::Guarded` puts its header
/// before the command) sent through a client session (and
/// `LogEntry::Sequenced` its header before that).
pub const MAX_BATCH_RECORD_BYTES: usize = batch_record_bytes(
    MAX_BATCH,
    MAX_ENCODED_COMMAND_BYTES
        + crate::entry::SEQUENCED_HEADER_BYTES
        + crate::entry::GUARDED_HEADER_BYTES,
);

// A proposal larger than a record is refused and all its commands are
// answered `unavailable`: no batch the pipeline forms may be.
const _: () = assert!(MAX_BATCH_RECORD_BYTES <= MAX_PAYLOAD_BYTES);
// A follower receives an entry inside one frame, with Raft's message
// around it: at least as much room again.
const _: () = assert!(2 * MAX_PAYLOAD_BYTES <= MAX_FRAME_BYTES);

// Client sessions (`crate::sessions`), part of the replicated state.

/// Open sessions at most: one per gateway process, so far more than any
/// deployment runs; an open beyond it is refused.
pub const MAX_OPEN_SESSIONS: usize = 4_096;
/// Closed sessions remembered (so a late copy of an open cannot reopen
/// one); the oldest are forgotten beyond it.
pub const MAX_CLOSED_SESSIONS: usize = 4_096;
/// Longest gateway name a session is opened for, in bytes.
pub const MAX_GATEWAY_NAME_LEN: usize = 64;
/// FIX sessions whose numbers the replicated state keeps
/// (`crate::fix_links`): far more than any gateway configures.
pub const MAX_FIX_LINKS: usize = 4_096;
/// Accounts one session protects at most (cancel-on-disconnect kept by
/// the cluster, `crate::sessions`); a protection beyond it is refused.
pub const MAX_PROTECTED_ACCOUNTS: usize = 4_096;

// The replay guard of the replicated state (`crate::replay_guard`).

/// How much a gateway's clock may differ from the leader's and the guard
/// still take its requests: a request whose window ends further past the
/// log's time than a window allows is refused as stale.
pub const MAX_GATEWAY_CLOCK_SKEW_MS: u64 = 5_000;
/// How far past its entry's time a guarded entry's `forget_after_ms` may
/// be: the longest receive window, as far ahead as a signed timestamp may
/// be, and the clocks' difference. No fingerprint is kept longer than
/// this after its entry.
pub const MAX_GUARD_AHEAD_MS: u64 =
    MAX_RECV_WINDOW_MS + MAX_TIMESTAMP_AHEAD_MS + MAX_GATEWAY_CLOCK_SKEW_MS;
/// Signed writes a second, across all gateways, the guard is sized for.
pub const GUARDED_WRITES_PER_SEC: usize = 200_000;
/// Fingerprints the guard holds at most: the rate above sustained over
/// [`MAX_GUARD_AHEAD_MS`] (13.2 million, about 45 bytes each in memory
/// and 50 in a snapshot; a guard holds what the actual rate and window
/// need, not this). Beyond it new guarded entries are refused
/// (`replay_guard_full`), none forgotten early.
pub const MAX_GUARDED_REQUESTS: usize =
    GUARDED_WRITES_PER_SEC * (MAX_GUARD_AHEAD_MS / 1_000) as usize;

// The API's view of orders and trades kept by each node.

/// Fills returned by `GET /v1/fills` at most.
pub const FILLS_PER_ACCOUNT: usize = 1_000;
/// Closed orders returned by `GET /v1/orders?status=all|closed` at most.
pub const CLOSED_ORDERS_PER_ACCOUNT: usize = 1_000;
/// Trades remembered per symbol.
pub const TRADES_PER_SYMBOL: usize = 1_000;

// The leader's log-sync thread.

/// Jobs queued at most; the Raft thread hands out one per ready, and a
/// full queue makes it wait for the disk as it did before the thread.
pub const LOG_SYNC_QUEUE: usize = 4_096;

// The HTTP gateway.

/// Longest API key looked up; anything longer cannot be one of ours.
pub const MAX_API_KEY_LEN: usize = 128;
/// API keys one account holds at most: enough for a key per program and
/// environment, few enough that listing them is one small answer.
pub const MAX_KEYS_PER_ACCOUNT: usize = 32;
/// Longest label of an API key, in bytes.
pub const MAX_KEY_LABEL_LEN: usize = 64;
/// Address ranges in one key's allow-list at most; with the longest IPv6
/// ranges the key's log entry stays within the command bound.
pub const MAX_KEY_ALLOW: usize = 8;
/// Furthest expiry a key may be given, in seconds (ten years): keeps the
/// expiry time far from overflowing the log's nanosecond clock.
pub const MAX_KEY_LIFETIME_SECS: u64 = 10 * 365 * 24 * 3600;
/// Keys with a bucket at most: with keys of up to 128 bytes, about 15 MB.
pub const MAX_RATE_LIMITED_KEYS: usize = 65_536;
/// `[http] max_connections` at most: each connection holds a descriptor,
/// buffers and a task.
pub const MAX_HTTP_CONNECTIONS: usize = 65_536;
/// Descriptors kept free beyond `[http] max_connections`, for the journal,
/// snapshots, Raft and FIX peers, the reporting store and the
/// `/metrics` listener: a flood of HTTP connections never starves them.
pub const FD_HEADROOM: u64 = 512;
/// Pause after `accept` fails (out of descriptors, say) before trying again.
pub const ACCEPT_RETRY: Duration = Duration::from_millis(50);
/// The node's queues at most (`submit_queue`, `core_queue`,
/// `events_buffer`; each at least 1): a typo of a few digits must not
/// reserve gigabytes. A queue of the event broadcast takes about 16 bytes
/// a slot up front; the entries themselves (about 1.3 KiB each with their
/// events) are held only while a subscriber is behind.
pub const MAX_SUBMIT_QUEUE: usize = 1 << 20;
pub const MAX_CORE_QUEUE: usize = 1 << 16;
pub const MAX_EVENTS_BUFFER: usize = 1 << 22;
/// Entries queued for one socket's private stream; a socket further
/// behind is told `slow_consumer` and closed. Each entry is shared with
/// the sequencer's broadcast, but a socket that never reads would keep
/// `events_buffer` of them alive on its own.
pub const PRIVATE_STREAM_QUEUE: usize = 4_096;
/// Bytes of outgoing WebSocket frames gathered before a write.
pub const WS_WRITE_BUFFER: usize = 64 * 1024;
/// Bytes one WebSocket may hold in outgoing frames beyond the kernel's
/// buffers; a socket whose peer stops reading waits here, not in memory.
pub const WS_MAX_WRITE_BUFFER: usize = 1024 * 1024;
/// How long a closing WebSocket may take to take its close frame; a peer
/// that no longer reads loses the TCP connection without it.
pub const WS_CLOSE_TIMEOUT: Duration = Duration::from_secs(1);
/// Order-entry messages one WebSocket may have awaiting their answers;
/// more are refused (`too_many_in_flight`) until answers have been read.
pub const WS_MAX_IN_FLIGHT: usize = 4_096;
/// How long a stopping server waits for its WebSockets to close.
pub const WS_SHUTDOWN_WAIT: Duration = Duration::from_secs(5);
/// How long readiness waits for the reporting store to reach what
/// recovery applied; past it the node trades, and history reads answer
/// 503 `reporting_behind` until the store catches up.
pub const REPORTING_READY_WAIT: Duration = Duration::from_secs(10);
/// Source addresses whose failed authentications are counted at most
/// (an IPv6 source counts as its /64). Past this a new address is not
/// counted, so a flood from very many addresses can never lock out an
/// address that has not failed.
pub const MAX_LIMITED_ADDRESSES: usize = 65_536;
/// Failed authentications one source address may make at once, and per
/// second sustained, before its signed requests get 429 unread.
pub const AUTH_FAILURE_BURST: u32 = 50;
pub const AUTH_FAILURES_PER_SEC: u32 = 10;
/// The longest receive window a server may be configured with
/// (`recv_window_ms`), as Binance's `recvWindow`.
pub const MAX_RECV_WINDOW_MS: u64 = 60_000;
/// How far ahead of server time a signed timestamp may be: small, so a
/// request is remembered by the replay guard only for about the window.
pub const MAX_TIMESTAMP_AHEAD_MS: u64 = 1_000;
/// Signatures the replay guard remembers at most (each about 50 bytes).
/// With the default window a signature is remembered for 6 s: room for
/// about 170,000 signed requests a second. When full, new signed requests
/// get 503 `overloaded` until entries expire; none is forgotten early.
pub const MAX_REPLAY_ENTRIES: usize = 1_048_576;
/// How long a new socket may take to authenticate.
pub const WS_AUTH_TIMEOUT: Duration = Duration::from_secs(10);
/// Symbols one subscribe message may name.
pub const MAX_SUBSCRIBE_SYMBOLS: usize = 1_024;
/// Book levels per side when the client gives no `depth`.
pub const DEFAULT_BOOK_DEPTH: usize = 50;
/// Most book levels per side one request returns.
pub const MAX_BOOK_DEPTH: usize = 1_000;
/// Trades returned when the client gives no `limit`.
pub const DEFAULT_TRADES_LIMIT: usize = 100;
/// Candles returned when the client gives no `limit`, and at most.
pub const DEFAULT_CANDLES_LIMIT: usize = 300;
pub const MAX_CANDLES_LIMIT: usize = 1_500;

// The market-data service.

/// Requests waiting for the service task.
pub const MARKETDATA_REQUEST_QUEUE: usize = 4_096;
/// Entries applied before the task looks at requests again.
pub const MARKETDATA_BATCH: usize = 1_024;

// The FIX gateway.

/// Largest message accepted; an order is a few hundred bytes.
pub const MAX_FIX_MESSAGE_BYTES: usize = 8 * 1024;
/// Closed orders remembered for answering a late cancel with their status.
pub const FIX_CLOSED_REMEMBERED: usize = 4_096;
/// Sent application messages a FIX session keeps for resends; older ones
/// are dropped and a resend request for them gets a gap fill.
pub const FIX_STORE_RETAINED: usize = 100_000;
/// Connections the FIX acceptor serves before their Logon (TLS handshake
/// included) by default (`[fix] max_pending_logons`); more are closed at
/// once until one finishes.
pub const FIX_PENDING_LOGONS: usize = 256;
/// `[fix] max_pending_logons` at most: each holds a descriptor and a task.
pub const MAX_FIX_PENDING_LOGONS: usize = 16_384;
/// `[fix] logon_timeout_ms` at most: longer lets idle connections hold
/// their slots for longer than any real counterparty needs.
pub const MAX_FIX_LOGON_TIMEOUT_MS: u64 = 60_000;

// A close frame always fits what a socket may buffer.
const _: () = assert!(WS_WRITE_BUFFER < WS_MAX_WRITE_BUFFER);

// What REST serves by default is within what it keeps or allows.
const _: () = assert!(DEFAULT_TRADES_LIMIT <= TRADES_PER_SYMBOL);
const _: () = assert!(DEFAULT_BOOK_DEPTH <= MAX_BOOK_DEPTH);
const _: () = assert!(DEFAULT_CANDLES_LIMIT <= MAX_CANDLES_LIMIT);
// A FIX message's BodyLength is read as at most five digits.
const _: () = assert!(MAX_FIX_MESSAGE_BYTES < 100_000);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::LogEntry;
    use crate::random_hex;
    use crate::replication::{decode_batch, encode_batch};

    /// A `create_account` entry whose line is exactly `bytes` long.
    fn entry_of(bytes: usize) -> LogEntry {
        let entry = |key_len: usize| LogEntry::CreateAccount {
            ts: u64::MAX,
            api_key: "k".repeat(key_len),
            legacy_secret: None,
        };
        let bare = entry(0).encode().unwrap().len();
        let sized = entry(bytes - bare);
        assert_eq!(sized.encode().unwrap().len(), bytes);
        sized
    }

    #[test]
    fn a_full_batch_of_the_longest_commands_fits_one_record() {
        let longest = LogEntry::Sequenced {
            session: u64::MAX,
            seq: u64::MAX,
            entry: Box::new(LogEntry::Guarded {
                fingerprint: [0xFF; 16],
                forget_after_ms: u64::MAX,
                entry: Box::new(entry_of(MAX_ENCODED_COMMAND_BYTES)),
            }),
        };
        let batch = vec![longest; MAX_BATCH];
        let data = encode_batch(&batch).unwrap();
        // The formula the compile-time check relies on is the real size.
        assert_eq!(ENTRY_TYPE_BYTES + data.len(), MAX_BATCH_RECORD_BYTES);
        assert!(ENTRY_TYPE_BYTES + data.len() <= MAX_PAYLOAD_BYTES);
        assert_eq!(decode_batch(&data).unwrap().len(), MAX_BATCH);
    }

    /// The server's own entries are held to the command bound too, each
    /// at its largest.
    #[test]
    fn key_entries_fit_the_command_bound() {
        let longest_id = "k".repeat(MAX_API_KEY_LEN);
        let widest_range = "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ff00/120".to_string();
        let entries = [
            LogEntry::CreateAccount {
                ts: u64::MAX,
                api_key: random_hex(16),
                legacy_secret: None,
            },
            LogEntry::CreateKey {
                ts: u64::MAX,
                account: u64::MAX,
                key: crate::keys::KeySpec {
                    key_id: longest_id.clone(),
                    label: "l".repeat(MAX_KEY_LABEL_LEN),
                    scopes: crate::keys::Scopes::all(),
                    expires_in_secs: Some(MAX_KEY_LIFETIME_SECS),
                    allow: vec![widest_range; MAX_KEY_ALLOW],
                    ed25519: Some("ab".repeat(32)),
                },
                by: Some(longest_id.clone()),
            },
            LogEntry::RevokeKey {
                ts: u64::MAX,
                key_id: longest_id.clone(),
                account: Some(u64::MAX),
                by: Some(longest_id.clone()),
            },
            LogEntry::OpenSession {
                ts: u64::MAX,
                session: u64::MAX,
                gateway: "g".repeat(MAX_GATEWAY_NAME_LEN),
                cancel_grace_ms: Some(u64::MAX),
                incarnation: Some(u64::MAX),
            },
            LogEntry::SessionProtect {
                ts: u64::MAX,
                account: u64::MAX,
                on: false,
            },
            LogEntry::RotateKey {
                ts: u64::MAX,
                key_id: longest_id.clone(),
                account: Some(u64::MAX),
                new_key_id: longest_id.clone(),
                ed25519: Some("ab".repeat(32)),
                by: Some(longest_id),
            },
        ];
        for entry in entries {
            let line = entry.encode().unwrap();
            assert!(line.len() <= MAX_ENCODED_COMMAND_BYTES, "{}", line.len());
            assert_eq!(LogEntry::decode(&line).unwrap(), entry);
        }
    }
}
