//! Commands back to JSON Lines, in the same vocabulary `decode_command`
//! reads: the server's journal stores commands this way, and benchmarks
//! write their streams this way. `decode_command(encode_command(c)) == c`
//! up to decimal normalisation (`"1.50"` is written `"1.5"`: same value).
//!
//! Written by hand rather than through `serde_json::Value`: the journal
//! writes one line per command and benchmarks write millions. Strings and
//! integers go through the event encoder's writers ([`crate::encode`]).

use exchange_types::{Command, Dec, OrderRef, Replace, Stamped, Trailing};

use crate::encode::{push_json_string, push_u64};

/// Appends one command as a JSON object (no newline) to `out` as UTF-8.
pub fn encode_command_into(stamped: &Stamped, out: &mut Vec<u8>) {
    let mut w = ObjectWriter::new(out);
    w.str("cmd", stamped.command.name());
    w.u64("ts", stamped.ts);
    match &stamped.command {
        Command::AddInstrument(spec) => {
            w.str("symbol", spec.symbol.as_str());
            w.str("base", spec.base.as_str());
            w.str("quote", spec.quote.as_str());
            w.dec("tick_size", spec.tick_size);
            w.dec("lot_size", spec.lot_size);
            w.opt_dec("min_qty", spec.min_qty);
            w.opt_dec("max_qty", spec.max_qty);
            // The wire carries the collar in percent with two decimals:
            // exactly the basis points.
            w.opt_dec(
                "price_collar_pct",
                spec.collar_bps.map(|bps| Dec::new(i64::from(bps), 2)),
            );
            w.opt_dec("reference_price", spec.reference_price);
            w.i64("maker_fee_bps", i64::from(spec.maker_fee_bps));
            w.i64("taker_fee_bps", i64::from(spec.taker_fee_bps));
            w.opt_dec("min_notional", spec.min_notional);
            w.opt_dec(
                "static_band_pct",
                spec.static_band_bps.map(|bps| Dec::new(i64::from(bps), 2)),
            );
            w.opt_dec(
                "dynamic_band_pct",
                spec.dynamic_band_bps.map(|bps| Dec::new(i64::from(bps), 2)),
            );
            if let Some(ns) = spec.volatility_auction_ns {
                w.u64("volatility_auction_ns", ns);
            }
        }
        Command::Deposit(t) | Command::Withdraw(t) => {
            w.u64("account", t.account);
            w.str("asset", t.asset.as_str());
            w.dec("amount", t.amount);
        }
        Command::Place(p) => {
            w.u64("account", p.account);
            w.str("client_order_id", p.client_order_id.as_str());
            w.str("symbol", p.symbol.as_str());
            w.str("side", p.side.as_str());
            w.str("type", p.order_type.as_str());
            w.opt_dec("price", p.price);
            w.dec("qty", p.qty);
            w.str("tif", p.tif.as_str());
            w.bool("post_only", p.post_only);
            w.str("stp", p.stp.as_str());
            if let Some(ext) = &p.ext {
                w.opt_dec("stop_price", ext.stop_price);
                match ext.trailing {
                    Some(Trailing::Amount(amount)) => w.dec("trailing_amount", amount),
                    Some(Trailing::Bps(bps)) => w.u64("trailing_bps", u64::from(bps)),
                    None => {}
                }
                w.opt_dec("display_qty", ext.display_qty);
                w.opt_dec("funds", ext.funds);
                if let Some(expire_ts) = ext.expire_ts {
                    w.u64("expire_ts", expire_ts);
                }
                if let Some(other) = &ext.oco_with {
                    w.str("oco_with", other.as_str());
                }
            }
        }
        Command::Cancel(c) => {
            w.u64("account", c.account);
            w.order_ref(&c.order);
        }
        Command::Replace(r) => replace(&mut w, r, None),
        Command::ReplaceStop(r) => replace(&mut w, &r.replace, Some(r.stop_price)),
        Command::MassCancel(m) => {
            w.u64("account", m.account);
            if let Some(symbol) = &m.symbol {
                w.str("symbol", symbol.as_str());
            }
        }
        Command::Halt { symbol } | Command::Resume { symbol } => w.str("symbol", symbol.as_str()),
        Command::SetPhase { symbol, phase } => {
            w.str("symbol", symbol.as_str());
            w.str("phase", phase.as_str());
        }
        Command::Tick => {}
        Command::Delist { symbol } => w.str("symbol", symbol.as_str()),
        Command::SetInstrumentRules(r) => {
            let pct = |bps: Option<u32>| bps.map(|bps| Dec::new(i64::from(bps), 2));
            w.str("symbol", r.symbol.as_str());
            w.opt_dec("tick_size", r.tick_size);
            w.opt_dec("lot_size", r.lot_size);
            w.opt_dec("min_qty", r.min_qty);
            w.opt_dec("max_qty", r.max_qty);
            w.opt_dec("min_notional", r.min_notional);
            if let Some(bps) = r.maker_fee_bps {
                w.i64("maker_fee_bps", i64::from(bps));
            }
            if let Some(bps) = r.taker_fee_bps {
                w.i64("taker_fee_bps", i64::from(bps));
            }
            w.opt_dec("price_collar_pct", pct(r.collar_bps));
            w.opt_dec("static_band_pct", pct(r.static_band_bps));
            w.opt_dec("dynamic_band_pct", pct(r.dynamic_band_bps));
            if let Some(ns) = r.volatility_auction_ns {
                w.u64("volatility_auction_ns", ns);
            }
        }
        Command::SetRiskLimits(l) => {
            w.u64("account", l.account);
            w.opt_dec("max_order_qty", l.max_order_qty);
            w.opt_dec("max_order_notional", l.max_order_notional);
            if let Some(n) = l.max_open_orders {
                w.u64("max_open_orders", u64::from(n));
            }
            w.opt_dec(
                "price_band_pct",
                l.price_band_bps.map(|bps| Dec::new(i64::from(bps), 2)),
            );
        }
        Command::Suspend { account } | Command::Reinstate { account } => w.u64("account", *account),
        Command::SetMmp(m) => {
            w.u64("account", m.account);
            w.str("symbol", m.symbol.as_str());
            w.u64("window_ns", m.window_ns);
            w.opt_dec("max_qty", m.max_qty);
            if let Some(n) = m.max_count {
                w.u64("max_count", u64::from(n));
            }
        }
        Command::ResetMmp { account, symbol } => {
            w.u64("account", *account);
            w.str("symbol", symbol.as_str());
        }
        Command::LinkSubAccount { owner, sub } => {
            w.u64("owner", *owner);
            w.u64("sub", *sub);
        }
        Command::InternalTransfer(t) => {
            w.u64("from", t.from);
            w.u64("to", t.to);
            w.str("asset", t.asset.as_str());
            w.dec("amount", t.amount);
        }
    }
    w.close();
}

fn replace(w: &mut ObjectWriter<'_>, r: &Replace, stop_price: Option<Dec>) {
    w.u64("account", r.account);
    w.order_ref(&r.order);
    if let Some(id) = &r.new_client_order_id {
        w.str("new_client_order_id", id.as_str());
    }
    w.opt_dec("price", r.price);
    w.opt_dec("qty", r.qty);
    w.opt_dec("stop_price", stop_price);
}

/// One command as one JSON object (no trailing newline).
pub fn encode_command(stamped: &Stamped) -> String {
    let mut out = Vec::with_capacity(192);
    encode_command_into(stamped, &mut out);
    // Every byte written comes from a `&str` or is ASCII, so this is UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Writes `"key":value` pairs, comma-separated, inside braces.
struct ObjectWriter<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> ObjectWriter<'a> {
    fn new(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        ObjectWriter { out, first: true }
    }

    /// `key` is one of this file's literals: nothing in it needs escaping.
    fn key(&mut self, key: &str) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    fn str(&mut self, key: &str, value: &str) {
        self.key(key);
        push_json_string(self.out, value);
    }

    fn u64(&mut self, key: &str, value: u64) {
        self.key(key);
        push_u64(self.out, value);
    }

    fn i64(&mut self, key: &str, value: i64) {
        self.key(key);
        if value < 0 {
            self.out.push(b'-');
        }
        push_u64(self.out, value.unsigned_abs());
    }

    fn bool(&mut self, key: &str, value: bool) {
        self.key(key);
        self.out
            .extend_from_slice(if value { b"true" } else { b"false" });
    }

    /// Decimals travel as strings so that no JSON parser rounds them.
    fn dec(&mut self, key: &str, value: Dec) {
        self.key(key);
        self.out.push(b'"');
        self.out.extend_from_slice(value.text().as_bytes());
        self.out.push(b'"');
    }

    fn opt_dec(&mut self, key: &str, value: Option<Dec>) {
        if let Some(value) = value {
            self.dec(key, value);
        }
    }

    fn order_ref(&mut self, reference: &OrderRef) {
        match reference {
            OrderRef::Id(id) => self.u64("order_id", *id),
            OrderRef::Client(coid) => self.str("client_order_id", coid.as_str()),
        }
    }

    fn close(self) {
        self.out.push(b'}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode_command;

    #[test]
    fn every_command_round_trips() {
        let lines = [
            r#"{"cmd":"add_instrument","symbol":"BTC-USD","base":"BTC","quote":"USD","tick_size":"0.01","lot_size":"0.0001","min_qty":"0.001","max_qty":"100","price_collar_pct":"2.5","reference_price":"100","maker_fee_bps":-1,"taker_fee_bps":5,"ts":1}"#,
            r#"{"cmd":"add_instrument","symbol":"BTC-USD","base":"BTC","quote":"USD","tick_size":"0.01","lot_size":"0.0001","maker_fee_bps":0,"taker_fee_bps":5,"min_notional":"10","static_band_pct":"10","dynamic_band_pct":"2.5","volatility_auction_ns":120000000000,"ts":1}"#,
            r#"{"cmd":"deposit","account":1,"asset":"USD","amount":"100000","ts":2}"#,
            r#"{"cmd":"withdraw","account":1,"asset":"USD","amount":"0.5","ts":3}"#,
            r#"{"cmd":"place","account":1,"client_order_id":"c1","symbol":"BTC-USD","side":"buy","type":"limit","price":"100.5","qty":"1.5","tif":"gtc","post_only":true,"stp":"decrement","ts":4}"#,
            r#"{"cmd":"place","account":1,"client_order_id":"m1","symbol":"BTC-USD","side":"sell","type":"market","qty":"1","tif":"fok","stp":"cancel_both","ts":5}"#,
            r#"{"cmd":"place","account":1,"client_order_id":"s1","symbol":"BTC-USD","side":"sell","type":"stop_limit","price":"99","qty":"2","tif":"gtd","post_only":false,"stp":"cancel_newest","stop_price":"99.5","trailing_bps":25,"display_qty":"0.5","expire_ts":9000000000,"oco_with":"tp1","ts":5}"#,
            r#"{"cmd":"place","account":1,"client_order_id":"f1","symbol":"BTC-USD","side":"buy","type":"market","qty":"0","tif":"ioc","post_only":false,"stp":"cancel_newest","funds":"1000","ts":5}"#,
            r#"{"cmd":"cancel","account":1,"order_id":42,"ts":6}"#,
            r#"{"cmd":"replace","account":1,"client_order_id":"c1","new_client_order_id":"c2","price":"101","qty":"1","ts":7}"#,
            r#"{"cmd":"mass_cancel","account":1,"symbol":"BTC-USD","ts":8}"#,
            r#"{"cmd":"halt","symbol":"BTC-USD","ts":9}"#,
            r#"{"cmd":"resume","symbol":"BTC-USD","ts":10}"#,
            r#"{"cmd":"set_phase","symbol":"BTC-USD","phase":"volatility_auction","ts":10}"#,
            r#"{"cmd":"tick","ts":10}"#,
            r#"{"cmd":"set_risk_limits","account":1,"max_order_qty":"5","max_order_notional":"100000","max_open_orders":50,"price_band_pct":"2.5","ts":11}"#,
            r#"{"cmd":"set_risk_limits","account":1,"ts":12}"#,
            r#"{"cmd":"suspend","account":1,"ts":13}"#,
            r#"{"cmd":"reinstate","account":1,"ts":14}"#,
            r#"{"cmd":"set_mmp","account":1,"symbol":"BTC-USD","window_ns":1000000000,"max_qty":"10","max_count":20,"ts":15}"#,
            r#"{"cmd":"reset_mmp","account":1,"symbol":"BTC-USD","ts":16}"#,
            r#"{"cmd":"link_sub_account","owner":1,"sub":5,"ts":17}"#,
            r#"{"cmd":"internal_transfer","from":1,"to":5,"asset":"USD","amount":"250.5","ts":18}"#,
        ];
        for line in lines {
            let command = decode_command(line).unwrap();
            let encoded = encode_command(&command);
            assert_eq!(decode_command(&encoded).unwrap(), command, "{encoded}");
        }
    }
}

#[cfg(test)]
#[path = "command_size_tests.rs"]
mod size_tests;
