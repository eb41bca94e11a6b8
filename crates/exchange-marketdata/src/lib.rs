//! Public market data, derived from the core's committed events.
//!
//! Everything here is pure (no clock, no tasks) except [`client`], the
//! blocking receiver of the binary feed. The server owns the sockets and
//! the subscribers; this crate owns what is said on them:
//!
//! - [`sequences`]: the per-instrument sequence numbers, kept in the
//!   replicated state so REST, WebSocket and the binary feed agree and the
//!   numbers survive restarts.
//! - [`projection`]: L2 books, trades, tickers and candles ([`candles`])
//!   per instrument, advanced one log entry at a time into [`Update`]s.
//! - [`status`]: each instrument's phase, indicative price, last auction
//!   and reference price, folded from the core's events.
//! - [`json`]: the WebSocket channel messages, serialized once per update.
//! - [`wire`] and [`mold`]: the fixed-layout binary messages and their
//!   MoldUDP64 packets, the TCP retransmission and snapshot requests;
//!   [`publisher`] numbers, packs and keeps them for retransmission.
//! - [`rebuild`] and [`client`]: books rebuilt from the binary feed.
//!
//! docs/marketdata.md describes the channels and the binary format.

pub mod book;
pub mod candles;
pub mod client;
pub mod json;
pub mod mold;
pub mod projection;
pub mod publisher;
pub mod rebuild;
pub mod sequences;
pub mod status;
pub mod wire;

pub use book::L2Book;
pub use candles::{Candle, Interval};
pub use projection::{
    BookUpdate, Everyone, InstrumentSnapshot, LevelChange, Listeners, MarketSnapshot, Projection,
    SnapshotTrade, StatusUpdate, Ticker, TradeUpdate, Update,
};
pub use sequences::{InstrumentSequences, MarketSequences};
pub use status::{IndicativeView, LastAuction, MarketStatus, StatusChange};

/// A public WebSocket channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Channel {
    Level2,
    Trades,
    Ticker,
    Candles(Interval),
    /// Phase, indicative price and last auction.
    Status,
}

impl Channel {
    pub fn name(self) -> &'static str {
        match self {
            Channel::Level2 => "level2",
            Channel::Trades => "trades",
            Channel::Ticker => "ticker",
            Channel::Candles(_) => "candles",
            Channel::Status => "status",
        }
    }

    /// The channel named `name`; candles take an interval (1m if absent).
    pub fn parse(name: &str, interval: Option<Interval>) -> Option<Channel> {
        match name {
            "level2" => Some(Channel::Level2),
            "trades" => Some(Channel::Trades),
            "ticker" => Some(Channel::Ticker),
            "candles" => Some(Channel::Candles(interval.unwrap_or(Interval::M1))),
            "status" => Some(Channel::Status),
            _ => None,
        }
    }
}
