//! The stop section of a snapshot (tag 7): untriggered stop orders and
//! one-cancels-other pairs.

use super::wire::{read_order, write_order, Reader, Writer};
use super::SnapshotError;
use crate::engine::Engine;
use crate::stops::book::{StopInfo, TrailingTicks};
use exchange_types::OrderId;

/// The stop section: untriggered stops by order id (each order's fields,
/// then its stop price, kind and trailing distance), then the pairs, each
/// once as (lower id, higher id). The kind is 0 stop-limit, 1 stop market,
/// 2 limit-if-touched, 3 market-if-touched: a snapshot from before
/// if-touched orders existed reads the same.
pub(crate) fn write_section(w: &mut Writer, e: &Engine) {
    w.u64(e.stops.untriggered_count() as u64);
    for info in e.stops.untriggered() {
        write_order(w, e.orders.get(info.slot), false);
        w.u64(info.stop);
        w.u8(u8::from(info.market) | (u8::from(info.touched) << 1));
        match info.trailing {
            None => {
                w.u8(0);
                w.u64(0);
            }
            Some(TrailingTicks::Amount(ticks)) => {
                w.u8(1);
                w.u64(ticks);
            }
            Some(TrailingTicks::Bps(bps)) => {
                w.u8(2);
                w.u64(u64::from(bps));
            }
        }
    }
    let pairs: Vec<(OrderId, OrderId)> = e.stops.pairs().collect();
    w.u64(pairs.len() as u64);
    for (a, b) in pairs {
        w.u64(a);
        w.u64(b);
    }
}

/// Reads the stop section; refuses what the engine could not have made
/// (the audit that follows checks reservations and counts).
pub(crate) fn read_section(r: &mut Reader, e: &mut Engine) -> Result<(), SnapshotError> {
    use exchange_types::limits::MAX_OPEN_ORDERS;
    use SnapshotError::Invalid;
    for _ in 0..r.count(MAX_OPEN_ORDERS)? {
        let (order, iceberg) = read_order(r)?;
        if iceberg {
            return Err(Invalid("stop marked as an iceberg"));
        }
        let stop = r.u64()?;
        let kind = r.u8()?;
        if kind > 3 {
            return Err(Invalid("stop kind"));
        }
        let (market, touched) = (kind & 1 == 1, kind & 2 == 2);
        let trailing = match (r.u8()?, r.u64()?) {
            (0, 0) => None,
            (1, ticks) if ticks > 0 => Some(TrailingTicks::Amount(ticks)),
            (2, bps) if (1..10_000).contains(&bps) => Some(TrailingTicks::Bps(bps as u32)),
            _ => return Err(Invalid("trailing stop")),
        };
        let (id, account, instrument, side) =
            (order.id, order.account, order.instrument, order.side);
        if account as usize >= e.accounts.len()
            || instrument as usize >= e.instruments.len()
            || order.filled != 0
            || order.qty == 0
            || stop == 0
            || (touched && trailing.is_some())
            || e.order_by_id.contains_key(&id)
            || e.by_client_id
                .contains_key(&(account, order.client_order_id))
        {
            return Err(Invalid("stop order"));
        }
        let slot = e.orders.insert(order);
        e.index_order(slot);
        e.orders.get_mut(slot).stop = true;
        e.file_stop(
            id,
            StopInfo {
                slot,
                instrument,
                side,
                stop,
                market,
                touched,
                trailing,
            },
        );
    }
    for _ in 0..r.count(MAX_OPEN_ORDERS)? {
        let (a, b) = (r.u64()?, r.u64()?);
        let (Some(&sa), Some(&sb)) = (e.order_by_id.get(&a), e.order_by_id.get(&b)) else {
            return Err(Invalid("one-cancels-other pair"));
        };
        let (oa, ob) = (e.orders.get(sa), e.orders.get(sb));
        if a >= b || oa.oco || ob.oco || oa.account != ob.account || oa.instrument != ob.instrument
        {
            return Err(Invalid("one-cancels-other pair"));
        }
        e.link_oco(sa, sb);
    }
    Ok(())
}
