//! The final state of a replay as JSON: every book's levels, every
//! instrument's phase and reference prices, every balance and the state
//! hash. Maps are `BTreeMap`s so the key order, and hence the
//! bytes, depend on the state alone.

use std::collections::BTreeMap;

use exchange_core::Engine;
use exchange_types::format_units;
use serde::{Deserialize, Serialize};

/// Books, balances and state hash after the last command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinalState {
    /// Every listed instrument by symbol, empty books included.
    pub books: BTreeMap<String, BookState>,
    /// Every listed instrument by symbol: where it is in its trading day
    /// and the prices its bands, collar and auctions are referred to.
    /// Defaulted so that a file written before it existed still reads.
    #[serde(default)]
    pub instruments: BTreeMap<String, InstrumentState>,
    /// Account id, then asset code; only non-zero balances, the fee
    /// account (0) included.
    pub balances: BTreeMap<u64, BTreeMap<String, BalanceState>>,
    /// The core's `state_hash()`: equal states, equal hashes.
    pub state_hash: String,
}

/// Aggregated price levels, best first, as `[price, qty]` decimal strings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BookState {
    pub bids: Vec<[String; 2]>,
    pub asks: Vec<[String; 2]>,
}

/// An instrument's trading status and phase, and its reference prices as
/// decimal strings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstrumentState {
    /// `trading`, `halted` or `delisted`.
    pub status: String,
    /// The phase of its trading day (`continuous`, `pre_open`, ...).
    pub phase: String,
    /// The last price the collar, the dynamic band and the auction price
    /// use: the last trade, or the reference the listing or the operator
    /// set after it; `null` before any.
    pub reference_price: Option<String>,
    /// The static band's centre; `null` without a static band.
    pub static_reference_price: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BalanceState {
    pub total: String,
    pub available: String,
}

/// Reads the final state out of an engine.
pub fn final_state(engine: &Engine) -> FinalState {
    let levels = |side: &[(u64, u64)]| -> Vec<[String; 2]> {
        side.iter()
            .map(|&(price, qty)| [format_units(price), format_units(qty)])
            .collect()
    };
    let views = engine.instruments();
    let instruments = views
        .iter()
        .map(|inst| {
            let state = InstrumentState {
                status: inst.status.as_str().to_owned(),
                phase: inst.phase.as_str().to_owned(),
                reference_price: inst.reference_price.map(format_units),
                static_reference_price: inst.static_reference_price.map(format_units),
            };
            (inst.symbol.to_string(), state)
        })
        .collect();
    let books = views
        .iter()
        .map(|inst| {
            let view = engine.book(&inst.symbol, usize::MAX).unwrap_or_default();
            let book = BookState {
                bids: levels(&view.bids),
                asks: levels(&view.asks),
            };
            (inst.symbol.to_string(), book)
        })
        .collect();
    let mut balances: BTreeMap<u64, BTreeMap<String, BalanceState>> = BTreeMap::new();
    for b in engine.balances() {
        balances.entry(b.account).or_default().insert(
            b.asset.to_string(),
            BalanceState {
                total: format_units(b.total),
                available: format_units(b.available),
            },
        );
    }
    FinalState {
        books,
        instruments,
        balances,
        state_hash: engine.state_hash(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode_command;
    use exchange_types::Event;

    fn run(lines: &[&str]) -> Engine {
        let mut engine = Engine::new();
        let mut events: Vec<Event> = Vec::new();
        for line in lines {
            engine.apply(&decode_command(line).expect("test command"), &mut events);
        }
        engine
    }

    const LIST: &str = concat!(
        r#"{"cmd":"add_instrument","symbol":"BTC-USD","base":"BTC","quote":"USD","#,
        r#""tick_size":"0.01","lot_size":"0.0001","maker_fee_bps":-1,"taker_fee_bps":5}"#,
    );
    const LIST_ETH: &str = concat!(
        r#"{"cmd":"add_instrument","symbol":"ETH-USD","base":"ETH","quote":"USD","#,
        r#""tick_size":"0.01","lot_size":"0.001","maker_fee_bps":0,"taker_fee_bps":0}"#,
    );

    #[test]
    fn books_best_first_balances_by_account_and_empty_books_listed() {
        let engine = run(&[
            LIST,
            LIST_ETH,
            r#"{"cmd":"deposit","account":1,"asset":"USD","amount":"1000"}"#,
            r#"{"cmd":"deposit","account":10,"asset":"BTC","amount":"2"}"#,
            concat!(
                r#"{"cmd":"place","account":1,"client_order_id":"b1","symbol":"BTC-USD","#,
                r#""side":"buy","price":"99.5","qty":"1"}"#,
            ),
            concat!(
                r#"{"cmd":"place","account":1,"client_order_id":"b2","symbol":"BTC-USD","#,
                r#""side":"buy","price":"100","qty":"1.5"}"#,
            ),
            concat!(
                r#"{"cmd":"place","account":10,"client_order_id":"a1","symbol":"BTC-USD","#,
                r#""side":"sell","price":"101","qty":"0.25"}"#,
            ),
            concat!(
                r#"{"cmd":"place","account":10,"client_order_id":"a2","symbol":"BTC-USD","#,
                r#""side":"sell","price":"100.5","qty":"0.5"}"#,
            ),
        ]);
        let state = final_state(&engine);
        let btc = &state.books["BTC-USD"];
        let pair = |p: &str, q: &str| [p.to_string(), q.to_string()];
        assert_eq!(btc.bids, vec![pair("100", "1.5"), pair("99.5", "1")]);
        assert_eq!(btc.asks, vec![pair("100.5", "0.5"), pair("101", "0.25")]);
        assert_eq!(state.books["ETH-USD"], BookState::default());
        assert_eq!(
            state.balances.keys().copied().collect::<Vec<_>>(),
            vec![1, 10]
        );
        assert_eq!(state.balances[&10]["BTC"].total, "2");
        assert_eq!(state.balances[&10]["BTC"].available, "1.25");
        assert_eq!(state.state_hash, engine.state_hash());

        let json = serde_json::to_string(&state).expect("serializes");
        assert!(json.find("\"1\":").unwrap() < json.find("\"10\":").unwrap());
        let back: FinalState = serde_json::from_str(&json).expect("parses back");
        assert_eq!(back, state);
    }

    #[test]
    fn instruments_show_their_phase_and_reference_prices() {
        let engine = run(&[
            LIST,
            concat!(
                r#"{"cmd":"add_instrument","symbol":"ETH-USD","base":"ETH","quote":"USD","#,
                r#""tick_size":"0.01","lot_size":"0.001","maker_fee_bps":0,"taker_fee_bps":0,"#,
                r#""static_band_pct":"10","volatility_auction_ns":5,"phase":"pre_open"}"#,
            ),
            r#"{"cmd":"set_reference_price","symbol":"ETH-USD","price":"2500.5"}"#,
        ]);
        let state = final_state(&engine);
        let btc = &state.instruments["BTC-USD"];
        assert_eq!(
            (btc.status.as_str(), btc.phase.as_str()),
            ("trading", "continuous")
        );
        assert_eq!(btc.reference_price, None);
        let eth = &state.instruments["ETH-USD"];
        assert_eq!(eth.phase, "pre_open");
        assert_eq!(eth.reference_price.as_deref(), Some("2500.5"));
        assert_eq!(eth.static_reference_price.as_deref(), Some("2500.5"));
        let json = serde_json::to_string(&state).expect("serializes");
        assert!(json.contains(r#""phase":"pre_open""#), "{json}");
        let before: FinalState =
            serde_json::from_str(r#"{"books":{},"balances":{},"state_hash":"x"}"#)
                .expect("a file from before the instruments were shown reads");
        assert!(before.instruments.is_empty());
    }

    #[test]
    fn fee_account_appears_once_it_earns() {
        let engine = run(&[
            LIST,
            r#"{"cmd":"deposit","account":1,"asset":"USD","amount":"1000"}"#,
            r#"{"cmd":"deposit","account":2,"asset":"BTC","amount":"1"}"#,
            concat!(
                r#"{"cmd":"place","account":2,"client_order_id":"a","symbol":"BTC-USD","#,
                r#""side":"sell","price":"100","qty":"1"}"#,
            ),
            concat!(
                r#"{"cmd":"place","account":1,"client_order_id":"b","symbol":"BTC-USD","#,
                r#""side":"buy","price":"100","qty":"1"}"#,
            ),
        ]);
        let state = final_state(&engine);
        // Taker pays 5 bps of 100 = 0.05, maker earns 1 bp = 0.01 back.
        assert_eq!(state.balances[&0]["USD"].total, "0.04");
        assert_eq!(state.balances[&1]["USD"].total, "899.95");
        assert_eq!(state.balances[&2]["USD"].total, "100.01");
        assert!(state.books["BTC-USD"].bids.is_empty());
    }
}
