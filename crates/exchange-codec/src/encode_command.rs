//! Commands back to JSON Lines, in the same vocabulary `decode_command`
//! reads: the server's journal stores commands this way, and benchmarks
//! write their streams this way. `decode_command(encode_command(c)) == c`
//! up to decimal normalisation (`"1.50"` is written `"1.5"`: same value).

use exchange_types::{Command, Dec, OrderRef, Stamped};
use serde_json::{Map, Value};

fn dec(value: &Dec) -> Value {
    Value::String(value.to_string())
}

fn order_ref(object: &mut Map<String, Value>, reference: &OrderRef) {
    match reference {
        OrderRef::Id(id) => object.insert("order_id".into(), (*id).into()),
        OrderRef::Client(coid) => object.insert("client_order_id".into(), coid.as_str().into()),
    };
}

/// One command as one JSON object (no trailing newline).
pub fn encode_command(stamped: &Stamped) -> String {
    let mut o = Map::new();
    o.insert("cmd".into(), stamped.command.name().into());
    match &stamped.command {
        Command::AddInstrument(spec) => {
            o.insert("symbol".into(), spec.symbol.as_str().into());
            o.insert("base".into(), spec.base.as_str().into());
            o.insert("quote".into(), spec.quote.as_str().into());
            o.insert("tick_size".into(), dec(&spec.tick_size));
            o.insert("lot_size".into(), dec(&spec.lot_size));
            if let Some(v) = &spec.min_qty {
                o.insert("min_qty".into(), dec(v));
            }
            if let Some(v) = &spec.max_qty {
                o.insert("max_qty".into(), dec(v));
            }
            if let Some(bps) = spec.collar_bps {
                o.insert(
                    "price_collar_pct".into(),
                    dec(&Dec::new(i128::from(bps), 2)),
                );
            }
            if let Some(v) = &spec.reference_price {
                o.insert("reference_price".into(), dec(v));
            }
            o.insert("maker_fee_bps".into(), spec.maker_fee_bps.into());
            o.insert("taker_fee_bps".into(), spec.taker_fee_bps.into());
        }
        Command::Deposit(t) | Command::Withdraw(t) => {
            o.insert("account".into(), t.account.into());
            o.insert("asset".into(), t.asset.as_str().into());
            o.insert("amount".into(), dec(&t.amount));
        }
        Command::Place(p) => {
            o.insert("account".into(), p.account.into());
            o.insert("client_order_id".into(), p.client_order_id.as_str().into());
            o.insert("symbol".into(), p.symbol.as_str().into());
            o.insert("side".into(), p.side.as_str().into());
            o.insert("type".into(), p.order_type.as_str().into());
            if let Some(price) = &p.price {
                o.insert("price".into(), dec(price));
            }
            o.insert("qty".into(), dec(&p.qty));
            o.insert("tif".into(), p.tif.as_str().into());
            if p.post_only {
                o.insert("post_only".into(), true.into());
            }
            o.insert("stp".into(), p.stp.as_str().into());
        }
        Command::Cancel(c) => {
            o.insert("account".into(), c.account.into());
            order_ref(&mut o, &c.order);
        }
        Command::Replace(r) => {
            o.insert("account".into(), r.account.into());
            order_ref(&mut o, &r.order);
            if let Some(coid) = &r.new_client_order_id {
                o.insert("new_client_order_id".into(), coid.as_str().into());
            }
            if let Some(price) = &r.price {
                o.insert("price".into(), dec(price));
            }
            if let Some(qty) = &r.qty {
                o.insert("qty".into(), dec(qty));
            }
        }
        Command::MassCancel(m) => {
            o.insert("account".into(), m.account.into());
            if let Some(symbol) = &m.symbol {
                o.insert("symbol".into(), symbol.as_str().into());
            }
        }
        Command::Halt { symbol } | Command::Resume { symbol } => {
            o.insert("symbol".into(), symbol.as_str().into());
        }
    }
    o.insert("ts".into(), stamped.ts.into());
    Value::Object(o).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode_command;

    #[test]
    fn every_command_round_trips() {
        let lines = [
            r#"{"cmd":"add_instrument","symbol":"BTC-USD","base":"BTC","quote":"USD","tick_size":"0.01","lot_size":"0.0001","min_qty":"0.001","max_qty":"100","price_collar_pct":"2.5","reference_price":"100","maker_fee_bps":-1,"taker_fee_bps":5,"ts":1}"#,
            r#"{"cmd":"deposit","account":1,"asset":"USD","amount":"100000","ts":2}"#,
            r#"{"cmd":"withdraw","account":1,"asset":"USD","amount":"0.5","ts":3}"#,
            r#"{"cmd":"place","account":1,"client_order_id":"c1","symbol":"BTC-USD","side":"buy","type":"limit","price":"100.5","qty":"1.5","tif":"gtc","post_only":true,"stp":"decrement","ts":4}"#,
            r#"{"cmd":"place","account":1,"client_order_id":"m1","symbol":"BTC-USD","side":"sell","type":"market","qty":"1","tif":"fok","stp":"cancel_both","ts":5}"#,
            r#"{"cmd":"cancel","account":1,"order_id":42,"ts":6}"#,
            r#"{"cmd":"replace","account":1,"client_order_id":"c1","new_client_order_id":"c2","price":"101","qty":"1","ts":7}"#,
            r#"{"cmd":"mass_cancel","account":1,"symbol":"BTC-USD","ts":8}"#,
            r#"{"cmd":"halt","symbol":"BTC-USD","ts":9}"#,
            r#"{"cmd":"resume","symbol":"BTC-USD","ts":10}"#,
        ];
        for line in lines {
            let command = decode_command(line).unwrap();
            let encoded = encode_command(&command);
            assert_eq!(decode_command(&encoded).unwrap(), command, "{encoded}");
        }
    }
}
