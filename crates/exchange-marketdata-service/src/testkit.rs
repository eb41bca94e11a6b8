//! A real node with two listed instruments and funded accounts, a random
//! workload, and a model of the level2 books, for the market-data tests
//! here and in the gateway (feature `testkit`).

use std::collections::BTreeMap;
use std::time::Duration;

use exchange_core::BookView;
use exchange_types::Dec;
use serde_json::Value;
use tempfile::TempDir;

use exchange_node::entry::LogEntry;
use exchange_node::recovery;
use exchange_node::sequencer::{Handle, Pipeline, PipelineConfig};

pub const SYMBOLS: [&str; 2] = ["BTC-USD", "ETH-USD"];
pub const DEADLINE: Duration = Duration::from_secs(30);

pub struct Node {
    pub pipeline: Pipeline,
    _dir: TempDir,
}

pub async fn submit(handle: &Handle, line: &str) {
    let entry = LogEntry::Core(exchange_codec::decode_command(line).expect(line));
    handle.submit(entry).await.expect("submitted");
}

/// A node listing both symbols, with four funded accounts.
pub async fn node(events_buffer: usize) -> Node {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = PipelineConfig {
        submit_queue: 4_096,
        core_queue: 256,
        events_buffer,
        snapshot_every: 0,
        snapshot_dir: dir.path().join("snapshots"),
        master_key: exchange_node::master_key::MasterKey::from_bytes([1; 32]),
    };
    let (pipeline, _) = recovery::start(dir.path(), config).expect("start a node");
    for symbol in SYMBOLS {
        let base = &symbol[..3];
        let listing = format!(
            concat!(
                r#"{{"cmd":"add_instrument","symbol":"{symbol}","base":"{base}","quote":"USD","#,
                r#""tick_size":"0.01","lot_size":"0.001","maker_fee_bps":0,"taker_fee_bps":0}}"#,
            ),
            symbol = symbol,
            base = base,
        );
        submit(&pipeline.handle, &listing).await;
    }
    for account in 1..=4 {
        for asset in ["USD", "BTC", "ETH"] {
            let deposit = format!(
                r#"{{"cmd":"deposit","account":{account},"asset":"{asset}","amount":"1000000000"}}"#
            );
            submit(&pipeline.handle, &deposit).await;
        }
    }
    Node {
        pipeline,
        _dir: dir,
    }
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Random places (some crossing, some market), cancels and mass cancels.
pub fn workload(count: usize, seed: u64) -> Vec<String> {
    let mut rng = Rng(seed);
    (0..count)
        .map(|n| {
            let account = 1 + rng.below(4);
            let symbol = SYMBOLS[rng.below(2) as usize];
            match rng.below(20) {
                0..=13 => {
                    let side = if rng.below(2) == 0 { "buy" } else { "sell" };
                    let qty = format!("0.0{:02}", 1 + rng.below(60));
                    if rng.below(10) == 0 {
                        format!(
                            concat!(
                                r#"{{"cmd":"place","account":{account},"client_order_id":"c{n}","#,
                                r#""symbol":"{symbol}","side":"{side}","type":"market","#,
                                r#""qty":"{qty}"}}"#,
                            ),
                            account = account,
                            n = n,
                            symbol = symbol,
                            side = side,
                            qty = qty,
                        )
                    } else {
                        let price = format!("{}.{:02}", 99 + rng.below(2), rng.below(100));
                        format!(
                            concat!(
                                r#"{{"cmd":"place","account":{account},"client_order_id":"c{n}","#,
                                r#""symbol":"{symbol}","side":"{side}","type":"limit","#,
                                r#""price":"{price}","qty":"{qty}","stp":"decrement"}}"#,
                            ),
                            account = account,
                            n = n,
                            symbol = symbol,
                            side = side,
                            price = price,
                            qty = qty,
                        )
                    }
                }
                14..=18 => {
                    let old = rng.below(n.max(1) as u64);
                    format!(r#"{{"cmd":"cancel","account":{account},"client_order_id":"c{old}"}}"#)
                }
                _ => format!(r#"{{"cmd":"mass_cancel","account":{account},"symbol":"{symbol}"}}"#),
            }
        })
        .collect()
}

/// Submits `lines` many at a time, so they share group commits.
pub async fn drive(handle: &Handle, lines: Vec<String>) {
    for chunk in lines.chunks(64) {
        let mut pending = Vec::new();
        for line in chunk {
            let entry =
                LogEntry::Core(exchange_codec::decode_command(line).expect("workload line"));
            pending.push(handle.enqueue_entry(entry).expect("queued"));
        }
        for reply in pending {
            reply.await.expect("applied");
        }
    }
}

fn units(value: &Value) -> u64 {
    Dec::parse(value.as_str().expect("decimal string"))
        .expect("decimal")
        .to_units_allow_zero()
        .expect("units")
}

/// A level2 client: (sequence, bids, asks) per symbol, checking that
/// every update follows the one before.
#[derive(Default)]
pub struct Level2Books(BTreeMap<String, (u64, Side, Side)>);

/// Quantity by price.
type Side = BTreeMap<u64, u64>;

impl Level2Books {
    pub fn apply(&mut self, msg: &Value) {
        let Some(symbol) = msg["symbol"].as_str().map(str::to_owned) else {
            return;
        };
        let sequence = msg["sequence"].as_u64().expect("sequence");
        let book = self.0.entry(symbol).or_default();
        match msg["type"].as_str() {
            Some("snapshot") => {
                book.1 = msg["bids"]
                    .as_array()
                    .expect("bids")
                    .iter()
                    .map(|l| (units(&l[0]), units(&l[1])))
                    .collect();
                book.2 = msg["asks"]
                    .as_array()
                    .expect("asks")
                    .iter()
                    .map(|l| (units(&l[0]), units(&l[1])))
                    .collect();
            }
            Some("update") => {
                assert_eq!(sequence, book.0 + 1, "gap before {msg}");
                for change in msg["changes"].as_array().expect("changes") {
                    let side = if change[0] == "buy" {
                        &mut book.1
                    } else {
                        &mut book.2
                    };
                    match units(&change[2]) {
                        0 => side.remove(&units(&change[1])),
                        qty => side.insert(units(&change[1]), qty),
                    };
                }
            }
            Some("heartbeat") => assert!(sequence >= book.0, "{msg}"),
            _ => return,
        }
        book.0 = sequence;
    }

    pub fn view(&self, symbol: &str) -> Option<(u64, BookView)> {
        let (seq, bids, asks) = self.0.get(symbol)?;
        let bids = bids.iter().rev().map(|(&p, &q)| (p, q)).collect();
        Some((
            *seq,
            BookView {
                bids,
                asks: asks.iter().map(|(&p, &q)| (p, q)).collect(),
            },
        ))
    }
}
