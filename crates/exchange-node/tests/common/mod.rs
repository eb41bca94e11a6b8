//! A day's commands the node tests feed a pipeline.

use exchange_node::LogEntry;

pub fn command(line: &str) -> LogEntry {
    LogEntry::Core(exchange_codec::decode_command(line).expect("command"))
}

/// The `n`-th of a day's commands: accounts (`account(n)` for the first
/// four), a listing and deposits, then orders on both sides that trade;
/// with `cancels`, every seventh after those a cancel of an earlier order.
pub fn nth_command(n: u64, account: impl Fn(u64) -> LogEntry, cancels: bool) -> LogEntry {
    match n {
        0..=3 => account(n),
        4 => command(concat!(
            r#"{"cmd":"add_instrument","symbol":"BTC-USD","base":"BTC","quote":"USD","#,
            r#""tick_size":"1","lot_size":"1","maker_fee_bps":1,"taker_fee_bps":2,"#,
            r#""price_collar_pct":"50","reference_price":"100"}"#,
        )),
        5..=8 => {
            let account = n - 4;
            let asset = if account.is_multiple_of(2) {
                "USD"
            } else {
                "BTC"
            };
            command(&format!(
                r#"{{"cmd":"deposit","account":{account},"asset":"{asset}","amount":"1000000"}}"#
            ))
        }
        _ if cancels && n.is_multiple_of(7) => command(&format!(
            r#"{{"cmd":"cancel","account":{},"order_id":{}}}"#,
            n % 4 + 1,
            n / 2
        )),
        _ => {
            let account = n % 4 + 1;
            let side = if account.is_multiple_of(2) {
                "buy"
            } else {
                "sell"
            };
            command(&format!(
                concat!(
                    r#"{{"cmd":"place","account":{},"client_order_id":"o{}","symbol":"BTC-USD","#,
                    r#""side":"{}","type":"limit","price":"{}","qty":"{}","tif":"gtc"}}"#
                ),
                account,
                n,
                side,
                95 + n % 11,
                n % 5 + 1
            ))
        }
    }
}
