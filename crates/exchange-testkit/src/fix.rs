//! An exchange node in-process (journal, core, FIX acceptor on an ephemeral
//! port) and a minimal FIX client over TCP, for the FIX gateway's tests
//! and its latency benchmark (`exchange-fix/examples/fix_latency.rs`).

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use exchange_fix::acceptor::BoxedStream;
use exchange_fix::config::{FixConfig, FixSessionConfig};
use exchange_fix::frame::{next_frame, seal, Frame};
use exchange_fix::message::Message;
use exchange_fix::time;
use exchange_node::config::Config;
use exchange_node::instruments::ensure_instruments;
use exchange_node::recovery;
use exchange_node::sequencer::PipelineConfig;
use exchange_node::{Handle, LogEntry, Pipeline};
use exchange_types::{AssetCode, Command, Dec, Stamped, Transfer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Longest wait for one FIX message.
pub const WAIT: Duration = Duration::from_secs(10);

/// A running node with its FIX acceptor.
pub struct Node {
    pub handle: Handle,
    pub addr: SocketAddr,
    stop: watch::Sender<bool>,
    gateway: JoinHandle<()>,
    pipeline: Pipeline,
}

/// A session `sender` -> `EXCHANGE` with password `pw-SENDER`, trading
/// for `account`.
pub fn session(sender: &str, account: u64, cancel_on_disconnect: bool) -> FixSessionConfig {
    FixSessionConfig {
        sender_comp_id: sender.into(),
        target_comp_id: "EXCHANGE".into(),
        password: format!("pw-{sender}"),
        account: Some(account),
        drop_copy_accounts: Vec::new(),
        cancel_on_disconnect,
    }
}

/// Credits `amount` of `asset` to `account` through the log.
pub async fn deposit(handle: &Handle, account: u64, asset: &str, amount: &str) {
    let command = Command::Deposit(Transfer {
        account,
        asset: AssetCode::new(asset).expect("asset"),
        amount: Dec::parse(amount).expect("amount"),
    });
    handle
        .submit(LogEntry::Core(Stamped { ts: 0, command }))
        .await
        .expect("deposit");
}

impl Node {
    /// A node on `dir` with the default instruments, `accounts` funded, and
    /// the FIX gateway serving `sessions`.
    pub async fn start(dir: &Path, sessions: Vec<FixSessionConfig>, accounts: &[u64]) -> Node {
        let config = FixConfig {
            sessions,
            ..FixConfig::default()
        };
        Node::start_with(dir, config, accounts).await
    }

    /// A node with session "A" (account 1, canceling on disconnect) and
    /// session "B" (account 2), both funded, and a client logged on to each.
    pub async fn with_two_clients(dir: &Path) -> (Node, Client, Client) {
        let sessions = vec![session("A", 1, true), session("B", 2, false)];
        let node = Node::start(dir, sessions, &[1, 2]).await;
        let a = Client::logon(node.addr, "A").await;
        let b = Client::logon(node.addr, "B").await;
        (node, a, b)
    }

    /// The same with the gateway's whole `[fix]` section given (its listen
    /// address is replaced by an ephemeral port).
    pub async fn start_with(dir: &Path, config: FixConfig, accounts: &[u64]) -> Node {
        let pipeline_config = PipelineConfig {
            submit_queue: 65_536,
            core_queue: 1_024,
            events_buffer: 65_536,
            snapshot_every: 0,
            snapshot_dir: recovery::snapshot_dir(dir),
            master_key: exchange_node::master_key::MasterKey::from_bytes([1; 32]),
        };
        let (pipeline, _) = recovery::start(dir, pipeline_config).expect("start the node");
        let handle = pipeline.handle.clone();
        ensure_instruments(&handle, &Config::default().instruments)
            .await
            .expect("instruments");
        for account in accounts {
            deposit(&handle, *account, "USD", "100000000").await;
            deposit(&handle, *account, "BTC", "10000").await;
        }
        let config = FixConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            ..config
        };
        let (stop, stopping) = watch::channel(false);
        let (addr, gateway) =
            exchange_fix::acceptor::start(handle.clone(), &config, dir, stopping).expect("gateway");
        Node {
            handle,
            addr,
            stop,
            gateway,
            pipeline,
        }
    }

    /// Logs every session out and stops the pipeline.
    pub async fn stop(self) {
        // The gateway may have stopped already; how it stopped is checked
        // next.
        let _ = self.stop.send(true);
        self.gateway.await.expect("the FIX gateway stops cleanly");
        let Node {
            handle, pipeline, ..
        } = self;
        drop(handle);
        tokio::task::spawn_blocking(move || pipeline.join())
            .await
            .expect("join the pipeline");
    }
}

/// A FIX initiator over one TCP connection; messages are written with `|`
/// for SOH.
pub struct Client {
    stream: BoxedStream,
    buf: Vec<u8>,
    pub seq: u64,
    sender: String,
}

impl Client {
    /// Connects and logs on with ResetSeqNumFlag.
    pub async fn logon(addr: SocketAddr, sender: &str) -> Client {
        let stream = TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        Client::logon_over(Box::new(stream), sender).await
    }

    /// Logs on with ResetSeqNumFlag over a connected stream (TLS, say).
    pub async fn logon_over(stream: BoxedStream, sender: &str) -> Client {
        let mut client = Client {
            stream,
            buf: Vec::new(),
            seq: 1,
            sender: sender.into(),
        };
        client
            .send("A", &format!("98=0|108=30|141=Y|554=pw-{sender}|"))
            .await;
        let reply = client.recv().await;
        assert_eq!(
            reply.text(35),
            Some("A"),
            "logon answered with {:?}",
            reply.text(58)
        );
        client
    }

    /// Connects and sends a Logon without waiting for the answer.
    pub async fn logon_raw(addr: SocketAddr, sender: &str) -> Client {
        let stream = TcpStream::connect(addr).await.expect("connect");
        let mut client = Client {
            stream: Box::new(stream),
            buf: Vec::new(),
            seq: 1,
            sender: sender.into(),
        };
        client
            .send("A", &format!("98=0|108=30|554=pw-{sender}|"))
            .await;
        client
    }

    /// Connects and sends a Logon numbered `seq`, without
    /// ResetSeqNumFlag (a session continuing its numbers), without
    /// waiting for the answer.
    pub async fn logon_at(addr: SocketAddr, sender: &str, seq: u64) -> Client {
        let stream = TcpStream::connect(addr).await.expect("connect");
        let mut client = Client {
            stream: Box::new(stream),
            buf: Vec::new(),
            seq,
            sender: sender.into(),
        };
        client
            .send("A", &format!("98=0|108=30|554=pw-{sender}|"))
            .await;
        client
    }

    /// The next message of this session, sealed (length and checksum).
    pub fn encode(&mut self, msg_type: &str, body: &str) -> Vec<u8> {
        self.encode_with_header(msg_type, "", body)
    }

    /// The next message of this session with more standard header fields
    /// (`header`, `|`-separated) after SendingTime.
    pub fn encode_with_header(&mut self, msg_type: &str, header: &str, body: &str) -> Vec<u8> {
        let fields = format!(
            "35={msg_type}|49={}|56=EXCHANGE|34={}|52={}|{header}{body}",
            self.sender,
            self.seq,
            time::format(time::now_ns())
        );
        self.seq += 1;
        seal(&fields.replace('|', "\x01").into_bytes())
    }

    /// Sends the next message of this session.
    pub async fn send(&mut self, msg_type: &str, body: &str) {
        let bytes = self.encode(msg_type, body);
        self.stream.write_all(&bytes).await.expect("write");
    }

    /// Writes raw bytes, framed or not.
    pub async fn write(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("write");
    }

    /// The next message; panics after `WAIT` or if the exchange closes.
    pub async fn recv(&mut self) -> Message {
        tokio::time::timeout(WAIT, self.next())
            .await
            .expect("a message in time")
            .expect("the connection is open")
    }

    /// The next message, or `None` once the exchange closed the connection.
    pub async fn next(&mut self) -> Option<Message> {
        loop {
            match next_frame(&self.buf) {
                Ok(Some((Frame::Message(raw), used))) => {
                    self.buf.drain(..used);
                    return Some(Message::parse(raw));
                }
                Ok(Some((Frame::Garbled { .. }, _))) | Err(_) => {
                    panic!("the exchange sent a malformed message")
                }
                Ok(None) => {}
            }
            if self.stream.read_buf(&mut self.buf).await.ok()? == 0 {
                return None;
            }
        }
    }

    /// Reads until a message satisfies `wanted`, and returns it.
    pub async fn recv_until(&mut self, mut wanted: impl FnMut(&Message) -> bool) -> Message {
        loop {
            let message = self.recv().await;
            if wanted(&message) {
                return message;
            }
        }
    }
}
