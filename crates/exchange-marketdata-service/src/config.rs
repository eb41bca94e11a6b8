//! The `[marketdata]` section of the configuration file: this crate's
//! settings (docs/marketdata.md, docs/server.md).

use std::net::{Ipv4Addr, SocketAddr};

use serde::{Deserialize, Serialize};

/// The top-level key of the file this crate owns.
pub const SECTION: &str = "marketdata";

/// The `[marketdata]` section (docs/marketdata.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MarketDataConfig {
    /// UDP receivers of the binary feed (unicast, where multicast is not
    /// available).
    pub feed_targets: Vec<SocketAddr>,
    /// Multicast group and port to publish the binary feed to.
    pub multicast_group: Option<SocketAddr>,
    /// Local interface address multicast leaves by (default: the system's).
    pub multicast_interface: Option<Ipv4Addr>,
    /// Multicast TTL: 1 keeps the feed on the local network.
    pub multicast_ttl: u32,
    /// TCP address of the retransmission and snapshot service; none
    /// disables it.
    pub retransmit_listen: Option<SocketAddr>,
    /// Feed messages kept for retransmission.
    pub retransmit_buffer: usize,
    /// Largest UDP payload (one MoldUDP64 packet), in bytes.
    pub max_packet_bytes: usize,
    /// Messages queued for one WebSocket subscriber; one that falls
    /// further behind is disconnected (`slow_consumer`).
    pub subscriber_queue: usize,
    /// Heartbeat interval of the channels and the feed, in milliseconds.
    pub heartbeat_ms: u64,
}

impl Default for MarketDataConfig {
    fn default() -> Self {
        MarketDataConfig {
            feed_targets: Vec::new(),
            multicast_group: None,
            multicast_interface: None,
            multicast_ttl: 1,
            retransmit_listen: None,
            retransmit_buffer: 262_144,
            max_packet_bytes: 1_400,
            subscriber_queue: 4_096,
            heartbeat_ms: 1_000,
        }
    }
}

impl MarketDataConfig {
    /// Whether the binary feed is published: to UDP receivers, to a
    /// multicast group, or through the retransmission service alone.
    pub fn publishes_feed(&self) -> bool {
        !self.feed_targets.is_empty()
            || self.multicast_group.is_some()
            || self.retransmit_listen.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The section as it sits in the file.
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Sections {
        marketdata: MarketDataConfig,
    }

    #[test]
    fn marketdata_section_parses() {
        let text = concat!(
            "[marketdata]\nfeed_targets = [\"127.0.0.1:30001\"]\n",
            "retransmit_listen = \"127.0.0.1:30002\"\nheartbeat_ms = 50\n",
        );
        let parsed: Sections = toml::from_str(text).unwrap();
        assert_eq!(parsed.marketdata.feed_targets.len(), 1);
        assert_eq!(parsed.marketdata.heartbeat_ms, 50);
        assert_eq!(
            parsed.marketdata.subscriber_queue,
            MarketDataConfig::default().subscriber_queue
        );
        assert!(toml::from_str::<Sections>("[marketdata]\nheartbeat = 5\n").is_err());
    }

    #[test]
    fn the_feed_is_published_when_any_of_its_ways_out_is_set() {
        let none = MarketDataConfig::default();
        assert!(!none.publishes_feed());
        let address = "127.0.0.1:30001".parse().ok();
        let with = |set: fn(&mut MarketDataConfig, SocketAddr)| {
            let mut config = MarketDataConfig::default();
            set(&mut config, address.expect("an address"));
            config.publishes_feed()
        };
        assert!(with(|c, a| c.feed_targets.push(a)));
        assert!(with(|c, a| c.multicast_group = Some(a)));
        assert!(with(|c, a| c.retransmit_listen = Some(a)));
    }
}
