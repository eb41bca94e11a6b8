//! Stop, if-touched and one-cancels-other orders for the core's tests,
//! and the last price they trigger on.

use exchange_types::*;

use super::{coid, dec, exec, limit, place_ok, trades, Harness};

/// The order with its rarer fields changed by `f`.
pub fn with_ext(place: Place, f: impl FnOnce(&mut PlaceExt)) -> Place {
    let mut e = place.ext.clone().map(|b| *b).unwrap_or_default();
    f(&mut e);
    Place {
        ext: Some(Box::new(e)),
        ..place
    }
}

/// An order of `order_type` waiting for `stop`, limited at `price` or,
/// with `None`, a market order once triggered.
fn triggered_order(order_type: OrderType, base: Place, price: bool, stop: &str) -> Place {
    with_ext(
        Place {
            order_type,
            price: if price { base.price } else { None },
            ..base
        },
        |e| e.stop_price = Some(dec(stop)),
    )
}

pub fn stop_limit(account: u64, id: &str, side: Side, stop: &str, price: &str, qty: &str) -> Place {
    let base = limit(account, id, side, price, qty);
    triggered_order(OrderType::StopLimit, base, true, stop)
}

pub fn stop_market(account: u64, id: &str, side: Side, stop: &str, qty: &str) -> Place {
    let base = limit(account, id, side, "1", qty);
    triggered_order(OrderType::Stop, base, false, stop)
}

/// A take-profit limit order: a limit order at `price` once the last
/// price reaches `stop` from the other side than a stop's.
pub fn limit_if_touched(
    account: u64,
    id: &str,
    side: Side,
    stop: &str,
    price: &str,
    qty: &str,
) -> Place {
    let base = limit(account, id, side, price, qty);
    triggered_order(OrderType::LimitIfTouched, base, true, stop)
}

/// A take-profit market order.
pub fn market_if_touched(account: u64, id: &str, side: Side, stop: &str, qty: &str) -> Place {
    let base = limit(account, id, side, "1", qty);
    triggered_order(OrderType::MarketIfTouched, base, false, stop)
}

/// The order paired one-cancels-other with the open order `with`.
pub fn oco(place: Place, with: &str) -> Place {
    with_ext(place, |e| e.oco_with = Some(coid(with)))
}

/// Accounts 1 and 2 trade `qty` at `price`, setting the last price.
pub fn print(h: &mut Harness, price: &str, qty: &str) -> Vec<Event> {
    place_ok(h, limit(1, &format!("s{}", h.ts), Side::Sell, price, qty));
    let events = exec(h, limit(2, &format!("b{}", h.ts), Side::Buy, price, qty));
    assert!(!trades(&events).is_empty(), "no print at {price}");
    events
}

/// The `triggered` events: order id, stop price, last price.
pub fn triggered(events: &[Event]) -> Vec<(OrderId, u64, u64)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Triggered(t) => Some((t.order_id, t.stop_price, t.last_price)),
            _ => None,
        })
        .collect()
}
