//! A real node (journal, core, pipeline) in a temporary directory, with
//! two accounts and a market, for the gateway's tests.

use tempfile::TempDir;

use exchange_node::entry::LogEntry;
use exchange_node::recovery;
use exchange_node::sequencer::{Pipeline, PipelineConfig};

pub const BTC_USD: &str = "BTC-USD";

/// The test nodes' master key.
pub const MASTER_KEY: [u8; 32] = [1; 32];

/// API key ids of accounts 1 and 2.
pub const KEY_IDS: [&str; 2] = ["key-1", "key-2"];

/// API keys and secrets of accounts 1 and 2.
pub fn keys() -> [(&'static str, String); 2] {
    let master = exchange_node::master_key::MasterKey::from_bytes(MASTER_KEY);
    KEY_IDS.map(|id| (id, master.derive_secret(id)))
}

/// Lists BTC-USD around 100, taking hidden orders worth 1,000 USD or more,
/// and funds account 1 with USD, 2 with BTC.
pub const SETUP: &[&str] = &[
    concat!(
        r#"{"cmd":"add_instrument","symbol":"BTC-USD","base":"BTC","quote":"USD","#,
        r#""tick_size":"0.01","lot_size":"0.0001","maker_fee_bps":-1,"taker_fee_bps":5,"#,
        r#""price_collar_pct":"10","reference_price":"100.00","hidden_min_notional":"1000"}"#
    ),
    r#"{"cmd":"deposit","account":1,"asset":"USD","amount":"100000"}"#,
    r#"{"cmd":"deposit","account":2,"asset":"BTC","amount":"10"}"#,
];

pub struct TestNode {
    pub pipeline: Pipeline,
    pub _dir: TempDir,
}

pub async fn funded_node() -> TestNode {
    funded_node_with(1_024).await
}

/// A node whose event broadcast holds `events_buffer` entries per
/// subscriber.
pub async fn funded_node_with(events_buffer: usize) -> TestNode {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = PipelineConfig {
        submit_queue: 1_024,
        core_queue: 64,
        events_buffer,
        snapshot_every: 0,
        snapshot_dir: dir.path().join("snapshots"),
        master_key: exchange_node::master_key::MasterKey::from_bytes(MASTER_KEY),
    };
    let (pipeline, _) = recovery::start(dir.path(), config).expect("start a node");
    for key in KEY_IDS {
        let entry = LogEntry::CreateAccount {
            ts: 0,
            api_key: key.into(),
            legacy_secret: None,
        };
        pipeline.handle.submit(entry).await.expect("create account");
    }
    for line in SETUP {
        let entry = LogEntry::Core(exchange_codec::decode_command(line).expect("setup line"));
        let applied = pipeline.handle.submit(entry).await.expect("setup");
        assert!(
            super::translate::rejection(&applied.events).is_none(),
            "{line}"
        );
    }
    TestNode {
        pipeline,
        _dir: dir,
    }
}
