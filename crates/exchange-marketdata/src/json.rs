//! The WebSocket channel messages (docs/marketdata.md). Each is built once
//! per update and the same bytes go to every subscriber.
//!
//! Prices, quantities and volumes are decimal strings, times nanoseconds
//! since the Unix epoch, as everywhere else in the API.

use exchange_types::{Side, AMOUNT_SCALE, UNITS_PER_WHOLE};
use serde::Serialize;
use serde::Serializer;

use crate::book::L2Book;
use crate::candles::{Candle, Interval};
use crate::projection::{BookUpdate, StatusUpdate, Ticker, TradeUpdate};
use crate::status::MarketStatus;
use crate::Channel;

/// An amount in units, written as its exact decimal string.
struct Units(u128);

impl Serialize for Units {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Sums of u64 amounts (volumes) can pass u64::MAX, which is more
        // than a `Dec` holds, so the digits are written here.
        let per_whole = u128::from(UNITS_PER_WHOLE);
        let (whole, fraction) = (self.0 / per_whole, self.0 % per_whole);
        if fraction == 0 {
            return s.collect_str(&whole);
        }
        let digits = format!("{fraction:0width$}", width = AMOUNT_SCALE as usize);
        s.collect_str(&format_args!("{whole}.{}", digits.trim_end_matches('0')))
    }
}

fn units(value: u64) -> Units {
    Units(u128::from(value))
}

fn to_string<T: Serialize>(value: &T) -> String {
    // Serializing plain structs of strings and integers cannot fail.
    serde_json::to_string(value).unwrap_or_default()
}

#[derive(Serialize)]
struct SnapshotMsg<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    channel: &'static str,
    symbol: &'a str,
    sequence: u64,
    bids: Vec<(Units, Units)>,
    asks: Vec<(Units, Units)>,
}

/// `{"type":"snapshot","channel":"level2",...}` with every level.
pub fn level2_snapshot(symbol: &str, sequence: u64, book: &L2Book) -> String {
    let side = |side| {
        book.levels(side)
            .map(|(p, q)| (units(p), units(q)))
            .collect()
    };
    to_string(&SnapshotMsg {
        kind: "snapshot",
        channel: "level2",
        symbol,
        sequence,
        bids: side(Side::Buy),
        asks: side(Side::Sell),
    })
}

#[derive(Serialize)]
struct UpdateMsg<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    channel: &'static str,
    symbol: &'a str,
    sequence: u64,
    time: u64,
    changes: Vec<(&'static str, Units, Units)>,
}

pub fn level2_update(update: &BookUpdate) -> String {
    to_string(&UpdateMsg {
        kind: "update",
        channel: "level2",
        symbol: update.symbol.as_str(),
        sequence: update.sequence,
        time: update.ts,
        changes: update
            .changes
            .iter()
            .map(|c| (c.side.as_str(), units(c.price), units(c.qty)))
            .collect(),
    })
}

#[derive(Serialize)]
struct TradeMsg<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    channel: &'static str,
    symbol: &'a str,
    sequence: u64,
    trade_id: u64,
    price: Units,
    qty: Units,
    side: &'static str,
    time: u64,
    /// Absent for a trade of continuous trading.
    #[serde(skip_serializing_if = "Option::is_none")]
    auction: Option<&'static str>,
}

pub fn trade(trade: &TradeUpdate) -> String {
    to_string(&TradeMsg {
        kind: "trade",
        channel: "trades",
        symbol: trade.symbol.as_str(),
        sequence: trade.sequence,
        trade_id: trade.trade_id,
        price: units(trade.price),
        qty: units(trade.qty),
        side: trade.aggressor.as_str(),
        time: trade.ts,
        auction: trade.auction.map(|k| k.as_str()),
    })
}

#[derive(Serialize)]
struct IndicativeFields {
    price: Units,
    volume: Units,
    imbalance_side: Option<&'static str>,
    imbalance_qty: Units,
}

#[derive(Serialize)]
struct AuctionFields {
    kind: &'static str,
    price: Units,
    volume: Units,
    ts: u64,
}

#[derive(Serialize)]
struct StatusFields<'a> {
    symbol: &'a str,
    sequence: u64,
    ts: u64,
    phase: &'static str,
    indicative: Option<IndicativeFields>,
    last_auction: Option<AuctionFields>,
    reference_price: Option<Units>,
}

fn status_fields<'a>(
    symbol: &'a str,
    sequence: u64,
    ts: u64,
    status: &MarketStatus,
) -> StatusFields<'a> {
    StatusFields {
        symbol,
        sequence,
        ts,
        phase: status.phase.as_str(),
        indicative: status.indicative.map(|i| IndicativeFields {
            price: units(i.price),
            volume: units(i.volume),
            imbalance_side: i.imbalance_side.map(Side::as_str),
            imbalance_qty: units(i.imbalance_qty),
        }),
        last_auction: status.last_auction.map(|a| AuctionFields {
            kind: a.kind.as_str(),
            price: units(a.price),
            volume: units(a.volume),
            ts: a.ts,
        }),
        reference_price: status.reference_price.map(units),
    }
}

/// An instrument's status as `GET /v1/markets/{symbol}/status` answers it:
/// the `status` message without `type` and `channel`.
pub fn status_value(
    symbol: &str,
    sequence: u64,
    ts: u64,
    status: &MarketStatus,
) -> serde_json::Value {
    serde_json::to_value(status_fields(symbol, sequence, ts, status)).unwrap_or_default()
}

#[derive(Serialize)]
struct StatusMsg<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    channel: &'static str,
    #[serde(flatten)]
    fields: StatusFields<'a>,
}

/// `{"type":"status","channel":"status",...}`: the instrument's status
/// after a change (or on subscribing).
pub fn status(update: &StatusUpdate) -> String {
    to_string(&StatusMsg {
        kind: "status",
        channel: "status",
        fields: status_fields(
            update.symbol.as_str(),
            update.sequence,
            update.ts,
            &update.status,
        ),
    })
}

#[derive(Serialize)]
struct TickerMsg<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    channel: &'static str,
    symbol: &'a str,
    sequence: u64,
    best_bid: Option<Units>,
    best_bid_qty: Option<Units>,
    best_ask: Option<Units>,
    best_ask_qty: Option<Units>,
    last_price: Option<Units>,
    volume_24h: Units,
    time: u64,
}

pub fn ticker(ticker: &Ticker) -> String {
    to_string(&TickerMsg {
        kind: "ticker",
        channel: "ticker",
        symbol: ticker.symbol.as_str(),
        sequence: ticker.sequence,
        best_bid: ticker.best_bid.map(|(p, _)| units(p)),
        best_bid_qty: ticker.best_bid.map(|(_, q)| units(q)),
        best_ask: ticker.best_ask.map(|(p, _)| units(p)),
        best_ask_qty: ticker.best_ask.map(|(_, q)| units(q)),
        last_price: ticker.last_price.map(units),
        volume_24h: Units(ticker.volume_24h),
        time: ticker.ts,
    })
}

#[derive(Serialize)]
struct CandleFields {
    start: u64,
    open: Units,
    high: Units,
    low: Units,
    close: Units,
    volume: Units,
    trades: u64,
}

fn candle_fields(candle: &Candle) -> CandleFields {
    CandleFields {
        start: candle.start,
        open: units(candle.open),
        high: units(candle.high),
        low: units(candle.low),
        close: units(candle.close),
        volume: Units(candle.volume),
        trades: candle.trades,
    }
}

/// A candle as the REST candles route lists it.
pub fn candle_value(candle: &Candle) -> serde_json::Value {
    serde_json::to_value(candle_fields(candle)).unwrap_or_default()
}

#[derive(Serialize)]
struct CandleMsg<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    channel: &'static str,
    symbol: &'a str,
    interval: &'static str,
    sequence: u64,
    #[serde(flatten)]
    candle: CandleFields,
}

pub fn candle(symbol: &str, interval: Interval, sequence: u64, candle: &Candle) -> String {
    to_string(&CandleMsg {
        kind: "candle",
        channel: "candles",
        symbol,
        interval: interval.as_str(),
        sequence,
        candle: candle_fields(candle),
    })
}

#[derive(Serialize)]
struct HeartbeatMsg<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    channel: &'static str,
    symbol: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    interval: Option<&'static str>,
    sequence: u64,
}

/// `{"type":"heartbeat",...}` carrying the channel's last sequence.
pub fn heartbeat(channel: Channel, symbol: &str, sequence: u64) -> String {
    let interval = match channel {
        Channel::Candles(interval) => Some(interval.as_str()),
        _ => None,
    };
    to_string(&HeartbeatMsg {
        kind: "heartbeat",
        channel: channel.name(),
        symbol,
        interval,
        sequence,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projection::LevelChange;
    use exchange_types::Symbol;
    use serde_json::{json, Value};

    fn parse(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn level2_messages_have_the_documented_shape() {
        let mut book = L2Book::default();
        book.set(Side::Buy, 10_000_000_000, 150_000_000);
        book.set(Side::Sell, 10_100_000_000, 1);
        assert_eq!(
            parse(&level2_snapshot("BTC-USD", 7, &book)),
            json!({"type":"snapshot","channel":"level2","symbol":"BTC-USD","sequence":7,
                   "bids":[["100","1.5"]],"asks":[["101","0.00000001"]]})
        );
        let update = BookUpdate {
            locate: 0,
            symbol: Symbol::new("A\"B").unwrap(),
            sequence: 8,
            ts: 5,
            changes: vec![LevelChange {
                side: Side::Sell,
                price: 10_100_000_000,
                qty: 0,
            }],
        };
        assert_eq!(
            parse(&level2_update(&update)),
            json!({"type":"update","channel":"level2","symbol":"A\"B","sequence":8,"time":5,
                   "changes":[["sell","101","0"]]})
        );
    }

    #[test]
    fn status_and_auction_trade_shapes() {
        use crate::status::{IndicativeView, LastAuction, StatusChange};
        use exchange_types::event::AuctionKind;
        use exchange_types::Phase;
        let update = StatusUpdate {
            locate: 0,
            symbol: Symbol::new("BTC-USD").unwrap(),
            sequence: 4,
            ts: 7,
            status: MarketStatus {
                phase: Phase::PreOpen,
                indicative: Some(IndicativeView {
                    price: 10_150_000_000,
                    volume: 300_000_000,
                    imbalance_side: Some(Side::Buy),
                    imbalance_qty: 200_000_000,
                }),
                last_auction: Some(LastAuction {
                    kind: AuctionKind::Close,
                    price: 10_000_000_000,
                    volume: 100_000_000,
                    ts: 3,
                }),
                reference_price: Some(10_000_000_000),
            },
            change: StatusChange::Indicative,
        };
        assert_eq!(
            parse(&status(&update)),
            json!({"type":"status","channel":"status","symbol":"BTC-USD","sequence":4,"ts":7,
                   "phase":"pre_open",
                   "indicative":{"price":"101.5","volume":"3","imbalance_side":"buy",
                                 "imbalance_qty":"2"},
                   "last_auction":{"kind":"close","price":"100","volume":"1","ts":3},
                   "reference_price":"100"})
        );
        let plain = status_value("X", 0, 1, &MarketStatus::default());
        assert_eq!(
            plain,
            json!({"symbol":"X","sequence":0,"ts":1,"phase":"continuous",
                   "indicative":null,"last_auction":null,"reference_price":null})
        );
        let mut t = TradeUpdate {
            locate: 0,
            symbol: Symbol::new("X").unwrap(),
            sequence: 1,
            trade_id: 2,
            price: 100_000_000,
            qty: 100_000_000,
            aggressor: Side::Sell,
            ts: 3,
            auction: None,
        };
        assert_eq!(parse(&trade(&t)).get("auction"), None);
        t.auction = Some(AuctionKind::Open);
        assert_eq!(parse(&trade(&t))["auction"], "open");
    }

    #[test]
    fn ticker_candle_and_heartbeat_shapes() {
        let ticker_msg = ticker(&Ticker {
            locate: 0,
            symbol: Symbol::new("X").unwrap(),
            sequence: 3,
            best_bid: Some((100_000_000, 2)),
            best_ask: None,
            last_price: None,
            volume_24h: 250_000_000,
            ts: 9,
        });
        let value = parse(&ticker_msg);
        assert_eq!(value["best_bid"], "1");
        assert_eq!(value["best_ask"], Value::Null);
        assert_eq!(value["volume_24h"], "2.5");
        let candle_msg = candle("X", Interval::H1, 4, &Candle::new(0, 100_000_000, 1));
        let value = parse(&candle_msg);
        assert_eq!(
            (value["interval"].as_str(), value["open"].as_str()),
            (Some("1h"), Some("1"))
        );
        assert_eq!(
            parse(&heartbeat(Channel::Candles(Interval::M5), "X", 4)),
            json!({"type":"heartbeat","channel":"candles","symbol":"X","interval":"5m",
                   "sequence":4})
        );
    }
}
