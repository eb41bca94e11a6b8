//! Commands back to JSON Lines, in the same vocabulary `decode_command`
//! reads: the server's journal stores commands this way, and benchmarks
//! write their streams this way. `decode_command(encode_command(c)) == c`
//! up to decimal normalisation (`"1.50"` is written `"1.5"`: same value).
//!
//! Written by hand rather than through `serde_json::Value`: the journal
//! writes one line per command and benchmarks write millions. Strings and
//! integers go through the event encoder's writers ([`crate::encode`]).

use exchange_types::{
    AddInstrument, Cancel, Command, Dec, InternalTransfer, MassCancel, OrderRef, Place, PlaceExt,
    ReferencePriceRule, Replace, ReplaceStop, SetInstrumentRules, SetMmp, SetRiskLimits, Stamped,
    Trailing, Transfer,
};

use crate::encode::{push_json_string, push_u64};

/// Appends one command as a JSON object (no newline) to `out` as UTF-8.
pub fn encode_command_into(stamped: &Stamped, out: &mut Vec<u8>) {
    let mut w = ObjectWriter::new(out);
    w.str("cmd", stamped.command.name());
    w.u64("ts", stamped.ts);
    stamped.command.write_fields(&mut w);
    w.close();
}

/// A command, or a command's payload, that writes its own members after
/// `cmd` and `ts`, named as `decode_command` reads them.
trait CommandFields {
    fn write_fields(&self, w: &mut ObjectWriter<'_>);
}

impl CommandFields for Command {
    #[inline]
    fn write_fields(&self, w: &mut ObjectWriter<'_>) {
        match self {
            Command::AddInstrument(spec) => spec.write_fields(w),
            Command::Deposit(t) | Command::Withdraw(t) => t.write_fields(w),
            Command::Place(p) => p.write_fields(w),
            Command::Cancel(c) => c.write_fields(w),
            Command::Replace(r) => r.write_fields(w),
            Command::ReplaceStop(r) => r.write_fields(w),
            Command::MassCancel(m) => m.write_fields(w),
            Command::Halt { symbol } | Command::Resume { symbol } => {
                w.str("symbol", symbol.as_str())
            }
            Command::SetPhase { symbol, phase } => {
                w.str("symbol", symbol.as_str());
                w.str("phase", phase.as_str());
            }
            Command::Tick => {}
            Command::Delist { symbol } => w.str("symbol", symbol.as_str()),
            Command::SetReferencePrice { symbol, price } => {
                w.str("symbol", symbol.as_str());
                w.dec("price", *price);
            }
            Command::SetInstrumentRules(r) => r.write_fields(w),
            Command::SetRiskLimits(l) => l.write_fields(w),
            Command::Suspend { account } | Command::Reinstate { account } => {
                w.u64("account", *account)
            }
            Command::SetMmp(m) => m.write_fields(w),
            Command::ResetMmp { account, symbol } => {
                w.u64("account", *account);
                w.str("symbol", symbol.as_str());
            }
            Command::LinkSubAccount { owner, sub } => {
                w.u64("owner", *owner);
                w.u64("sub", *sub);
            }
            Command::InternalTransfer(t) => t.write_fields(w),
        }
    }
}

/// The wire carries collars and bands in percent with two decimals:
/// exactly the basis points.
fn percent(bps: Option<u32>) -> Option<Dec> {
    bps.map(|bps| Dec::new(i64::from(bps), 2))
}

impl CommandFields for AddInstrument {
    fn write_fields(&self, w: &mut ObjectWriter<'_>) {
        w.str("symbol", self.symbol.as_str());
        w.str("base", self.base.as_str());
        w.str("quote", self.quote.as_str());
        w.dec("tick_size", self.tick_size);
        w.dec("lot_size", self.lot_size);
        w.opt_dec("min_qty", self.min_qty);
        w.opt_dec("max_qty", self.max_qty);
        w.opt_dec("price_collar_pct", percent(self.collar_bps));
        w.opt_dec("reference_price", self.reference_price);
        w.i64("maker_fee_bps", i64::from(self.maker_fee_bps));
        w.i64("taker_fee_bps", i64::from(self.taker_fee_bps));
        w.opt_dec("min_notional", self.min_notional);
        w.opt_dec("static_band_pct", percent(self.static_band_bps));
        w.opt_dec("dynamic_band_pct", percent(self.dynamic_band_bps));
        if let Some(ns) = self.volatility_auction_ns {
            w.u64("volatility_auction_ns", ns);
        }
        // The unnamed rule is left out, so a listing has one line and the
        // lines written before the setting existed are still its lines.
        if self.reference_price_rule != ReferencePriceRule::UNNAMED {
            w.str("reference_price_rule", self.reference_price_rule.as_str());
        }
        if let Some(phase) = self.phase {
            w.str("phase", phase.as_str());
        }
        w.opt_dec("hidden_min_notional", self.hidden_min_notional);
    }
}

impl CommandFields for Transfer {
    #[inline]
    fn write_fields(&self, w: &mut ObjectWriter<'_>) {
        w.u64("account", self.account);
        w.str("asset", self.asset.as_str());
        w.dec("amount", self.amount);
    }
}

impl CommandFields for Place {
    #[inline]
    fn write_fields(&self, w: &mut ObjectWriter<'_>) {
        w.u64("account", self.account);
        w.str("client_order_id", self.client_order_id.as_str());
        w.str("symbol", self.symbol.as_str());
        w.str("side", self.side.as_str());
        w.str("type", self.order_type.as_str());
        w.opt_dec("price", self.price);
        w.dec("qty", self.qty);
        w.str("tif", self.tif.as_str());
        w.bool("post_only", self.post_only);
        w.str("stp", self.stp.as_str());
        if let Some(ext) = &self.ext {
            ext.write_fields(w);
        }
    }
}

impl CommandFields for PlaceExt {
    fn write_fields(&self, w: &mut ObjectWriter<'_>) {
        w.opt_dec("stop_price", self.stop_price);
        match self.trailing {
            Some(Trailing::Amount(amount)) => w.dec("trailing_amount", amount),
            Some(Trailing::Bps(bps)) => w.u64("trailing_bps", u64::from(bps)),
            None => {}
        }
        w.opt_dec("display_qty", self.display_qty);
        w.opt_dec("funds", self.funds);
        if let Some(expire_ts) = self.expire_ts {
            w.u64("expire_ts", expire_ts);
        }
        if let Some(other) = &self.oco_with {
            w.str("oco_with", other.as_str());
        }
        w.opt_dec("min_qty", self.min_qty);
        // Written only when set, so displayed orders keep their lines.
        if self.hidden {
            w.bool("hidden", true);
        }
    }
}

impl CommandFields for Cancel {
    #[inline]
    fn write_fields(&self, w: &mut ObjectWriter<'_>) {
        w.u64("account", self.account);
        w.order_ref(&self.order);
    }
}

impl CommandFields for Replace {
    #[inline]
    fn write_fields(&self, w: &mut ObjectWriter<'_>) {
        w.u64("account", self.account);
        w.order_ref(&self.order);
        if let Some(id) = &self.new_client_order_id {
            w.str("new_client_order_id", id.as_str());
        }
        w.opt_dec("price", self.price);
        w.opt_dec("qty", self.qty);
    }
}

/// A `replace` like any other, with its stop price last.
impl CommandFields for ReplaceStop {
    fn write_fields(&self, w: &mut ObjectWriter<'_>) {
        self.replace.write_fields(w);
        w.dec("stop_price", self.stop_price);
    }
}

impl CommandFields for MassCancel {
    fn write_fields(&self, w: &mut ObjectWriter<'_>) {
        w.u64("account", self.account);
        if let Some(symbol) = &self.symbol {
            w.str("symbol", symbol.as_str());
        }
    }
}

impl CommandFields for SetInstrumentRules {
    fn write_fields(&self, w: &mut ObjectWriter<'_>) {
        w.str("symbol", self.symbol.as_str());
        w.opt_dec("tick_size", self.tick_size);
        w.opt_dec("lot_size", self.lot_size);
        w.opt_dec("min_qty", self.min_qty);
        w.opt_dec("max_qty", self.max_qty);
        w.opt_dec("min_notional", self.min_notional);
        if let Some(bps) = self.maker_fee_bps {
            w.i64("maker_fee_bps", i64::from(bps));
        }
        if let Some(bps) = self.taker_fee_bps {
            w.i64("taker_fee_bps", i64::from(bps));
        }
        w.opt_dec("price_collar_pct", percent(self.collar_bps));
        w.opt_dec("static_band_pct", percent(self.static_band_bps));
        w.opt_dec("dynamic_band_pct", percent(self.dynamic_band_bps));
        if let Some(ns) = self.volatility_auction_ns {
            w.u64("volatility_auction_ns", ns);
        }
        w.opt_dec("hidden_min_notional", self.hidden_min_notional);
    }
}

impl CommandFields for SetRiskLimits {
    fn write_fields(&self, w: &mut ObjectWriter<'_>) {
        w.u64("account", self.account);
        w.opt_dec("max_order_qty", self.max_order_qty);
        w.opt_dec("max_order_notional", self.max_order_notional);
        if let Some(n) = self.max_open_orders {
            w.u64("max_open_orders", u64::from(n));
        }
        w.opt_dec("price_band_pct", percent(self.price_band_bps));
    }
}

impl CommandFields for SetMmp {
    fn write_fields(&self, w: &mut ObjectWriter<'_>) {
        w.u64("account", self.account);
        w.str("symbol", self.symbol.as_str());
        w.u64("window_ns", self.window_ns);
        w.opt_dec("max_qty", self.max_qty);
        if let Some(n) = self.max_count {
            w.u64("max_count", u64::from(n));
        }
    }
}

impl CommandFields for InternalTransfer {
    fn write_fields(&self, w: &mut ObjectWriter<'_>) {
        w.u64("from", self.from);
        w.u64("to", self.to);
        w.str("asset", self.asset.as_str());
        w.dec("amount", self.amount);
    }
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
            concat!(
                r#"{"cmd":"add_instrument","symbol":"BTC-USD","base":"BTC","quote":"USD","#,
                r#""tick_size":"0.01","lot_size":"0.0001","min_qty":"0.001","#,
                r#""max_qty":"100","price_collar_pct":"2.5","reference_price":"100","#,
                r#""maker_fee_bps":-1,"taker_fee_bps":5,"ts":1}"#,
            ),
            concat!(
                r#"{"cmd":"add_instrument","symbol":"BTC-USD","base":"BTC","quote":"USD","#,
                r#""tick_size":"0.01","lot_size":"0.0001","maker_fee_bps":0,"#,
                r#""taker_fee_bps":5,"min_notional":"10","static_band_pct":"10","#,
                r#""dynamic_band_pct":"2.5","volatility_auction_ns":120000000000,"ts":1}"#,
            ),
            r#"{"cmd":"deposit","account":1,"asset":"USD","amount":"100000","ts":2}"#,
            r#"{"cmd":"withdraw","account":1,"asset":"USD","amount":"0.5","ts":3}"#,
            concat!(
                r#"{"cmd":"place","account":1,"client_order_id":"c1","symbol":"BTC-USD","#,
                r#""side":"buy","type":"limit","price":"100.5","qty":"1.5","tif":"gtc","#,
                r#""post_only":true,"stp":"decrement","ts":4}"#,
            ),
            concat!(
                r#"{"cmd":"place","account":1,"client_order_id":"m1","symbol":"BTC-USD","#,
                r#""side":"sell","type":"market","qty":"1","tif":"fok","#,
                r#""stp":"cancel_both","ts":5}"#,
            ),
            concat!(
                r#"{"cmd":"place","account":1,"client_order_id":"s1","symbol":"BTC-USD","#,
                r#""side":"sell","type":"stop_limit","price":"99","qty":"2","tif":"gtd","#,
                r#""post_only":false,"stp":"cancel_newest","stop_price":"99.5","#,
                r#""trailing_bps":25,"display_qty":"0.5","expire_ts":9000000000,"#,
                r#""oco_with":"tp1","ts":5}"#,
            ),
            concat!(
                r#"{"cmd":"place","account":1,"client_order_id":"f1","symbol":"BTC-USD","#,
                r#""side":"buy","type":"market","qty":"0","tif":"ioc","post_only":false,"#,
                r#""stp":"cancel_newest","funds":"1000","ts":5}"#,
            ),
            r#"{"cmd":"cancel","account":1,"order_id":42,"ts":6}"#,
            concat!(
                r#"{"cmd":"replace","account":1,"client_order_id":"c1","#,
                r#""new_client_order_id":"c2","price":"101","qty":"1","ts":7}"#,
            ),
            r#"{"cmd":"mass_cancel","account":1,"symbol":"BTC-USD","ts":8}"#,
            r#"{"cmd":"halt","symbol":"BTC-USD","ts":9}"#,
            r#"{"cmd":"resume","symbol":"BTC-USD","ts":10}"#,
            r#"{"cmd":"set_phase","symbol":"BTC-USD","phase":"volatility_auction","ts":10}"#,
            r#"{"cmd":"tick","ts":10}"#,
            concat!(
                r#"{"cmd":"set_risk_limits","account":1,"max_order_qty":"5","#,
                r#""max_order_notional":"100000","max_open_orders":50,"#,
                r#""price_band_pct":"2.5","ts":11}"#,
            ),
            r#"{"cmd":"set_risk_limits","account":1,"ts":12}"#,
            r#"{"cmd":"suspend","account":1,"ts":13}"#,
            r#"{"cmd":"reinstate","account":1,"ts":14}"#,
            concat!(
                r#"{"cmd":"set_mmp","account":1,"symbol":"BTC-USD","#,
                r#""window_ns":1000000000,"max_qty":"10","max_count":20,"ts":15}"#,
            ),
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
pub(crate) mod size_tests;
