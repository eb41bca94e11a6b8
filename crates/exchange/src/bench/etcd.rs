//! `bench etcd`: etcd's put latency and throughput under the shape of
//! `bench e2e --transport rest`, for a side-by-side with the exchange's
//! own Raft cluster.
//!
//! Drives the v3 JSON gateway of a running etcd (`POST /v3/kv/put`, key
//! and value in base64): `--clients` clients with `--inflight` keep-alive
//! HTTP/1.1 connections each, one put at a time on each connection (the
//! gateway has no pipelining), as fast as etcd answers, for `--warmup`
//! plus `--duration` seconds; `--sequential` is one connection, one put at
//! a time. A put is *acknowledged* when etcd answers 200 with a header
//! carrying the new revision: etcd answers only after a majority of the
//! members wrote (and fsync'd) the entry and the leader applied it. The
//! latency runs from just before the request is written to the socket to
//! the end of the answer, recorded and reported with `bench e2e`'s code.
//!
//! Each connection overwrites its own 1,024 keys in turn, so the key space
//! stays small while every put is a new revision.

use std::fmt::Write as _;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::e2e::record::{Outcome, Recorder, Totals, Window};
use super::e2e::{progress, report, resolve, rest, show_progress};

#[derive(clap::Args, Debug, Clone)]
pub struct EtcdArgs {
    /// An etcd member's client address (host:port); the leader's for the
    /// fewest hops.
    #[arg(long, default_value = "127.0.0.1:2379")]
    pub url: String,
    /// Concurrent clients.
    #[arg(long, default_value_t = 16)]
    pub clients: usize,
    /// Keep-alive connections per client, one put at a time on each.
    #[arg(long, default_value_t = 8)]
    pub inflight: usize,
    /// Seconds measured.
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Seconds of load before the measurement starts.
    #[arg(long, default_value_t = 2.0)]
    pub warmup: f64,
    /// One connection, one put at a time (overrides --clients and
    /// --inflight).
    #[arg(long)]
    pub sequential: bool,
    /// Bytes of each value: about the size of an order's JSON by default.
    #[arg(long, default_value_t = 160)]
    pub value_size: usize,
    /// Threads of the load generator's runtime.
    #[arg(long, default_value_t = 1)]
    pub client_threads: usize,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding, as the gateway's JSON wants `bytes`.
pub fn base64(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(BASE64[(n >> shift) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The whole HTTP/1.1 request putting `value` at `key`.
pub fn put_request(host: &str, key: &[u8], value: &[u8]) -> Vec<u8> {
    let body = json!({ "key": base64(key), "value": base64(value) }).to_string();
    format!(
        "POST /v3/kv/put HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The revision a put created, from the gateway's answer
/// (`{"header":{...,"revision":"N",...}}`; int64 fields come as strings).
pub fn put_revision(body: &str) -> Option<u64> {
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    let revision = &value["header"]["revision"];
    revision
        .as_str()
        .and_then(|s| s.parse().ok())
        .or_else(|| revision.as_u64())
}

struct Driver {
    host: String,
    prefix: String,
    value: Vec<u8>,
    stop: Instant,
    recorder: Recorder,
}

impl Driver {
    async fn run(mut self, mut stream: TcpStream) -> anyhow::Result<Totals> {
        let mut buf = Vec::with_capacity(4096);
        let mut n = 0u64;
        while Instant::now() < self.stop {
            let key = format!("{}/{}", self.prefix, n % 1024);
            n += 1;
            let request = put_request(&self.host, key.as_bytes(), &self.value);
            let sent = Instant::now();
            stream.write_all(&request).await?;
            let response = loop {
                if let Some(response) = rest::parse(&buf)? {
                    break response;
                }
                if stream.read_buf(&mut buf).await? == 0 {
                    bail!("etcd closed a connection");
                }
            };
            let body = std::str::from_utf8(&buf[response.body.clone()]).unwrap_or_default();
            let outcome = match (response.status, put_revision(body)) {
                (200, Some(_)) => Outcome::Ok,
                (status, _) => Outcome::Refused {
                    code: "etcd_error",
                    status,
                },
            };
            self.recorder.record(sent, Instant::now(), true, outcome);
            buf.drain(..response.used);
        }
        Ok(self.recorder.totals)
    }
}

async fn bench(args: &EtcdArgs) -> anyhow::Result<(Totals, f64)> {
    let addr = resolve(&args.url).await?;
    let host = addr.to_string();
    let value: Vec<u8> = (0..args.value_size)
        .map(|i| b'a' + (i % 26) as u8)
        .collect();
    let answered = Arc::new(AtomicU64::new(0));
    let mut sockets = Vec::new();
    for _ in 0..args.clients * args.inflight {
        let stream = TcpStream::connect(addr)
            .await
            .with_context(|| format!("connecting to etcd at {addr}"))?;
        stream.set_nodelay(true)?;
        sockets.push(stream);
    }
    let start = Instant::now() + Duration::from_millis(20);
    let from = start + Duration::from_secs_f64(args.warmup);
    let window = Window {
        from,
        to: from + Duration::from_secs_f64(args.duration),
    };
    let mut tasks = tokio::task::JoinSet::new();
    for (n, stream) in sockets.into_iter().enumerate() {
        let driver = Driver {
            host: host.clone(),
            prefix: format!("bench/{}/{n}", std::process::id()),
            value: value.clone(),
            stop: window.to,
            recorder: Recorder::new(window, answered.clone()),
        };
        tasks.spawn(async move {
            tokio::time::sleep_until(start.into()).await;
            driver.run(stream).await
        });
    }
    let bar = progress("etcd", window.to - start);
    let ticker = tokio::spawn(show_progress(bar.clone(), start, answered));
    let mut totals = Totals::default();
    while let Some(done) = tasks.join_next().await {
        totals.merge(&done.context("a client task failed")??);
    }
    ticker.abort();
    bar.finish_and_clear();
    Ok((totals, window.to.duration_since(window.from).as_secs_f64()))
}

pub fn run(mut args: EtcdArgs) -> anyhow::Result<()> {
    let runtime = super::load_generator(super::LoadShape {
        sequential: args.sequential,
        clients: &mut args.clients,
        inflight: &mut args.inflight,
        client_threads: args.client_threads,
        duration: args.duration,
        warmup: args.warmup,
    })?;
    let (totals, seconds) = runtime.block_on(bench(&args))?;
    let per_sec = totals.acked() as f64 / seconds;
    if args.json {
        let value = json!({
            "target": "etcd",
            "clients": args.clients,
            "inflight": args.inflight,
            "seconds": seconds,
            "acked": totals.acked(),
            "acked_per_sec": per_sec,
            "errors": totals.errors,
            "latency_us": report::latency_json(&totals.latency),
        });
        println!("{value}");
    } else {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} clients x {} connections to etcd at {}, {:.1} s measured",
            args.clients, args.inflight, args.url, seconds
        );
        let _ = writeln!(out, "acknowledged    {per_sec:>10.0} puts/s");
        let _ = writeln!(out, "{}", report::latency_line(&totals.latency));
        let errors: Vec<String> = totals
            .errors
            .iter()
            .map(|(code, n)| format!("{code} {n}"))
            .collect();
        let errors = if errors.is_empty() {
            "none".to_owned()
        } else {
            errors.join(", ")
        };
        let _ = writeln!(out, "errors          {errors}");
        print!("{out}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_pads_like_the_standard() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64(&[0xff, 0xfe, 0x00]), "//4A");
    }

    #[test]
    fn a_put_is_one_whole_request_and_its_revision_is_read_back() {
        let request = put_request("127.0.0.1:2379", b"foo", b"bar");
        let text = String::from_utf8(request).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("POST /v3/kv/put HTTP/1.1\r\n"));
        assert!(head.contains(&format!("Content-Length: {}", body.len())));
        let sent: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(sent, json!({"key": "Zm9v", "value": "YmFy"}));

        let answer =
            r#"{"header":{"cluster_id":"828","member_id":"848","revision":"42","raft_term":"2"}}"#;
        assert_eq!(put_revision(answer), Some(42));
        let refused = concat!(
            r#"{"error":"etcdserver: request timed out","#,
            r#""message":"etcdserver: request timed out","code":14}"#
        );
        assert_eq!(put_revision(refused), None);
        assert_eq!(put_revision("not json"), None);
    }
}
