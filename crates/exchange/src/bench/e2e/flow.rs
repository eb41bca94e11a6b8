//! The order mix of `bench e2e`, one stream per connection: a market
//! maker's flow around a fixed mid price.
//!
//! - Most messages are resting limit orders 1 to 10 ticks from the mid
//!   (buys below, sells above, so they never cross each other), and
//!   cancels of the connection's oldest resting order once it has
//!   [`OPEN_PER_STREAM`] of them: the book stays the same size however
//!   long the run.
//! - One message in ten crosses: an IOC 20 ticks through the mid, which
//!   trades with the best resting orders (of other accounts; against its
//!   own the core's self-trade prevention cancels it).
//!
//! In the steady state that is about 45% places, 45% cancels and 10% IOCs.
//! A cancel can find its order already filled by someone's IOC: the core
//! refuses it (`order_not_open`), which is an answer like any other.

use std::collections::VecDeque;
use std::fmt::Write;

use anyhow::{bail, Context};

use crate::bench::rng::SplitMix64;

/// Resting orders each stream keeps before it cancels its oldest.
pub const OPEN_PER_STREAM: usize = 16;
/// Share of IOC orders, in percent.
const CROSS_PERCENT: u64 = 10;
/// Resting orders rest this many ticks from the mid at most.
const PASSIVE_TICKS: i64 = 10;
/// IOCs are priced this many ticks through the mid.
const CROSS_TICKS: i64 = 20;

/// A decimal as an integer at a fixed number of decimals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fixed {
    pub units: i64,
    pub scale: u32,
}

impl Fixed {
    pub fn parse(text: &str) -> anyhow::Result<Fixed> {
        let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
        if whole.is_empty()
            || !whole
                .bytes()
                .chain(frac.bytes())
                .all(|b| b.is_ascii_digit())
            || frac.len() > 12
        {
            bail!("not a plain decimal: {text:?}");
        }
        let units = format!("{whole}{frac}")
            .parse::<i64>()
            .with_context(|| format!("decimal {text:?}"))?;
        Ok(Fixed {
            units,
            scale: frac.len() as u32,
        })
    }

    /// The same value with `scale` decimals (`scale >= self.scale`).
    pub fn rescale(self, scale: u32) -> Fixed {
        Fixed {
            units: self.units * 10i64.pow(scale - self.scale),
            scale,
        }
    }
}

/// Writes `units` at `scale` decimals.
fn write_fixed(out: &mut String, units: i64, scale: u32) {
    let one = 10i64.pow(scale);
    if scale == 0 {
        let _ = write!(out, "{units}");
    } else {
        let _ = write!(
            out,
            "{}.{:0width$}",
            units / one,
            units % one,
            width = scale as usize
        );
    }
}

/// The instrument the flow trades, from `GET /v1/instruments`.
#[derive(Clone, Debug)]
pub struct Market {
    pub symbol: String,
    /// Mid price, tick and lot, each as an integer at the price's and
    /// the quantity's scale.
    pub mid: i64,
    pub tick: i64,
    pub price_scale: u32,
    pub lot: i64,
    pub qty_scale: u32,
}

impl Market {
    pub fn new(symbol: &str, mid: &str, tick: &str, lot: &str) -> anyhow::Result<Market> {
        let (mid, tick, lot) = (Fixed::parse(mid)?, Fixed::parse(tick)?, Fixed::parse(lot)?);
        let price_scale = mid.scale.max(tick.scale);
        let (mid, tick) = (mid.rescale(price_scale), tick.rescale(price_scale));
        if tick.units <= 0 || lot.units <= 0 || mid.units <= (CROSS_TICKS + 1) * tick.units {
            bail!("{symbol}: the mid price must be positive and well above the tick");
        }
        // Keep the mid on the tick so every price is.
        let mid = mid.units - mid.units % tick.units;
        Ok(Market {
            symbol: symbol.to_owned(),
            mid,
            tick: tick.units,
            price_scale,
            lot: lot.units,
            qty_scale: lot.scale,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// `ticks` from the mid: negative below. `ioc` orders cross.
    Place {
        buy: bool,
        ticks: i64,
        lots: i64,
        ioc: bool,
        id: u64,
    },
    Cancel {
        id: u64,
    },
}

/// One connection's stream of actions; client order ids are `PREFIX-N`.
pub struct Flow {
    rng: SplitMix64,
    prefix: String,
    next_id: u64,
    resting: VecDeque<u64>,
}

impl Flow {
    pub fn new(seed: u64, prefix: String) -> Flow {
        Flow {
            rng: SplitMix64::new(seed),
            prefix,
            next_id: 0,
            resting: VecDeque::new(),
        }
    }

    pub fn next_action(&mut self) -> Action {
        let buy = self.rng.below(2) == 0;
        if self.rng.below(100) < CROSS_PERCENT {
            let ticks = if buy { CROSS_TICKS } else { -CROSS_TICKS };
            let lots = self.rng.range(50, 200) as i64;
            return Action::Place {
                buy,
                ticks,
                lots,
                ioc: true,
                id: self.take_id(),
            };
        }
        if self.resting.len() >= OPEN_PER_STREAM {
            if let Some(id) = self.resting.pop_front() {
                return Action::Cancel { id };
            }
        }
        let away = self.rng.range(1, PASSIVE_TICKS as u64) as i64;
        let ticks = if buy { -away } else { away };
        let lots = self.rng.range(100, 500) as i64;
        let id = self.take_id();
        self.resting.push_back(id);
        Action::Place {
            buy,
            ticks,
            lots,
            ioc: false,
            id,
        }
    }

    fn take_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    pub fn is_place(action: &Action) -> bool {
        matches!(action, Action::Place { .. })
    }

    /// The WebSocket message for `action`.
    pub fn ws_message(&self, market: &Market, action: &Action, request_id: u64, out: &mut String) {
        out.clear();
        match *action {
            Action::Place {
                buy,
                ticks,
                lots,
                ioc,
                id,
            } => {
                let _ = write!(
                    out,
                    concat!(
                        r#"{{"type":"place","request_id":{request_id},"symbol":"{}","side":"{}","#,
                        r#""order_type":"limit","price":""#
                    ),
                    market.symbol,
                    if buy { "buy" } else { "sell" },
                    request_id = request_id
                );
                self.order_fields(market, ticks, lots, ioc, id, out);
            }
            Action::Cancel { id } => {
                let _ = write!(
                    out,
                    r#"{{"type":"cancel","request_id":{request_id},"client_order_id":"{}-{id}"}}"#,
                    self.prefix
                );
            }
        }
    }

    /// `(method, path, body)` of the REST request for `action`.
    pub fn rest_request(
        &self,
        market: &Market,
        action: &Action,
        body: &mut String,
    ) -> (&'static str, String) {
        body.clear();
        match *action {
            Action::Place {
                buy,
                ticks,
                lots,
                ioc,
                id,
            } => {
                let _ = write!(
                    body,
                    r#"{{"symbol":"{}","side":"{}","type":"limit","price":""#,
                    market.symbol,
                    if buy { "buy" } else { "sell" }
                );
                self.order_fields(market, ticks, lots, ioc, id, body);
                ("POST", "/v1/orders".to_owned())
            }
            Action::Cancel { id } => (
                "DELETE",
                format!("/v1/orders/by-client-id/{}-{id}", self.prefix),
            ),
        }
    }

    /// The rest of a place, after `"price":"`.
    fn order_fields(
        &self,
        market: &Market,
        ticks: i64,
        lots: i64,
        ioc: bool,
        id: u64,
        out: &mut String,
    ) {
        write_fixed(out, market.mid + ticks * market.tick, market.price_scale);
        out.push_str(r#"","qty":""#);
        write_fixed(out, lots * market.lot, market.qty_scale);
        let _ = write!(out, r#"","client_order_id":"{}-{id}""#, self.prefix);
        if ioc {
            out.push_str(r#","tif":"ioc""#);
        }
        out.push('}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn btc() -> Market {
        Market::new("BTC-USD", "60000.005", "0.01", "0.0001").expect("a valid market")
    }

    #[test]
    fn decimals_parse_and_print_exactly() {
        assert_eq!(
            Fixed::parse("60000.5").unwrap(),
            Fixed {
                units: 600_005,
                scale: 1
            }
        );
        assert_eq!(
            Fixed::parse("7").unwrap().rescale(2),
            Fixed {
                units: 700,
                scale: 2
            }
        );
        assert!(
            Fixed::parse("-1").is_err()
                && Fixed::parse("1e5").is_err()
                && Fixed::parse(".5").is_err()
        );
        let mut out = String::new();
        write_fixed(&mut out, 123, 4);
        assert_eq!(out, "0.0123");
        let market = btc();
        assert_eq!(
            (market.mid, market.tick, market.price_scale),
            (60_000_000, 10, 3)
        );
    }

    #[test]
    fn messages_are_what_the_server_expects() {
        let market = btc();
        let flow = Flow::new(1, "c7".into());
        let mut out = String::new();
        let place = Action::Place {
            buy: true,
            ticks: -3,
            lots: 150,
            ioc: false,
            id: 9,
        };
        flow.ws_message(&market, &place, 42, &mut out);
        let value: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        assert_eq!(value["price"], "59999.970");
        assert_eq!(value["qty"], "0.0150");
        assert_eq!(value["client_order_id"], "c7-9");
        assert_eq!(value["request_id"], 42);
        assert!(value.get("tif").is_none());
        let (method, path) = flow.rest_request(&market, &Action::Cancel { id: 9 }, &mut out);
        assert_eq!(
            (method, path.as_str(), out.as_str()),
            ("DELETE", "/v1/orders/by-client-id/c7-9", "")
        );
        let ioc = Action::Place {
            buy: false,
            ticks: -20,
            lots: 50,
            ioc: true,
            id: 10,
        };
        flow.rest_request(&market, &ioc, &mut out);
        let value: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        assert_eq!(
            (value["side"].as_str(), value["tif"].as_str()),
            (Some("sell"), Some("ioc"))
        );
        assert_eq!(value["price"], "59999.800");
    }

    #[test]
    fn the_mix_keeps_the_book_bounded_and_mostly_passive() {
        let mut flow = Flow::new(3, "x".into());
        let (mut places, mut cancels, mut iocs) = (0, 0, 0);
        for _ in 0..10_000 {
            match flow.next_action() {
                Action::Place {
                    ioc: true,
                    buy,
                    ticks,
                    ..
                } => {
                    assert_eq!(ticks, if buy { CROSS_TICKS } else { -CROSS_TICKS });
                    iocs += 1;
                }
                Action::Place { buy, ticks, .. } => {
                    assert!(if buy {
                        (-PASSIVE_TICKS..0).contains(&ticks)
                    } else {
                        (1..=PASSIVE_TICKS).contains(&ticks)
                    });
                    places += 1;
                }
                Action::Cancel { .. } => cancels += 1,
            }
            assert!(flow.resting.len() <= OPEN_PER_STREAM);
        }
        assert!((800..1200).contains(&iocs), "{iocs}");
        assert!(
            places - cancels <= OPEN_PER_STREAM as i32,
            "{places} {cancels}"
        );
    }
}
