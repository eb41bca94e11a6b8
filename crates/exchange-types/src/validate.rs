//! The first stage of an order's way through the venue: its shape, judged
//! from the command alone.
//!
//! [`place`] needs no state (no instrument, account, book or clock), so the
//! REST, WebSocket and FIX edges call it before a command reaches the log,
//! and the core calls it again first when it applies the command: a log
//! written by any other path (a replay file, an older gateway) is held to
//! the same rules. Whatever depends on state (an instrument's tick and lot,
//! the phase, balances, the expire time against the log's clock) is judged
//! by the core's later stages.
//!
//! Each rule is its own function. [`place`] runs them all, for the edges.
//! The core runs each at the point of admission where the venue has always
//! checked it, between the checks that need state, so that a command with
//! several faults is refused for the same reason on every replica and in
//! every replay, as it always was. Whatever [`place`] refuses, the core
//! refuses too (possibly naming another of the command's faults).

use crate::decimal::UnitsError;
use crate::{OrderType, Place, PlaceExt, RejectReason, Side, TimeInForce, Trailing};

/// Whether an order with this time in force may rest after matching.
#[inline]
pub fn rests(tif: TimeInForce) -> bool {
    !matches!(tif, TimeInForce::Ioc | TimeInForce::Fok)
}

/// Judges a place command's shape. Pure: the same command always gets the
/// same answer, on every edge and every replica.
pub fn place(place: &Place) -> Result<(), RejectReason> {
    let ext = place.ext();
    expire_shape(place.tif, ext.expire_ts)?;
    stop_shape(place.order_type, ext)?;
    price_shape(place.order_type, place.price.is_some())?;
    funds_shape(place)?;
    post_only_shape(place)?;
    display_shape(place)?;
    min_qty_shape(place)?;
    hidden_shape(place)?;
    midpoint_shape(place)?;
    Ok(())
}

/// A good-till-date order needs its expire time, and only it may carry one.
#[inline]
pub fn expire_shape(tif: TimeInForce, expire_ts: Option<u64>) -> Result<(), RejectReason> {
    match (tif, expire_ts) {
        (TimeInForce::Gtd, None) => Err(RejectReason::ExpireTsRequired),
        (TimeInForce::Gtd, Some(_)) | (_, None) => Ok(()),
        (_, Some(_)) => Err(RejectReason::ExpireTsNotAllowed),
    }
}

/// Stops carry exactly one of a stop price and a trailing distance;
/// if-touched orders a stop price and no trailing distance (a take-profit
/// waits for a price, it does not follow one); other orders neither.
#[inline]
pub fn stop_shape(order_type: OrderType, ext: &PlaceExt) -> Result<(), RejectReason> {
    match (order_type, ext.stop_price.is_some(), ext.trailing) {
        (
            OrderType::Limit | OrderType::Market | OrderType::MarketToLimit | OrderType::Midpoint,
            false,
            None,
        ) => Ok(()),
        (
            OrderType::Limit | OrderType::Market | OrderType::MarketToLimit | OrderType::Midpoint,
            _,
            _,
        ) => Err(RejectReason::StopPriceNotAllowed),
        (OrderType::MarketIfTouched | OrderType::LimitIfTouched, _, Some(_)) => {
            Err(RejectReason::TrailingNotAllowed)
        }
        (OrderType::MarketIfTouched | OrderType::LimitIfTouched, has_stop, None) => {
            if has_stop {
                Ok(())
            } else {
                Err(RejectReason::StopPriceRequired)
            }
        }
        (OrderType::Stop | OrderType::StopLimit, false, None) => {
            Err(RejectReason::StopPriceRequired)
        }
        (OrderType::Stop | OrderType::StopLimit, true, Some(_)) => {
            Err(RejectReason::InvalidTrailing)
        }
        (OrderType::Stop | OrderType::StopLimit, _, Some(Trailing::Bps(bps)))
            if !(1..10_000).contains(&bps) =>
        {
            Err(RejectReason::InvalidTrailing)
        }
        (OrderType::Stop | OrderType::StopLimit, _, _) => Ok(()),
    }
}

/// Limit, stop-limit and limit-if-touched orders need a price; market,
/// stop, market-if-touched and market-to-limit orders take none (a
/// market-to-limit order's comes from the book); a midpoint order may
/// have one, as its limit.
#[inline]
pub fn price_shape(order_type: OrderType, has_price: bool) -> Result<(), RejectReason> {
    if order_type == OrderType::Midpoint {
        return Ok(());
    }
    let priced = matches!(
        order_type,
        OrderType::Limit | OrderType::StopLimit | OrderType::LimitIfTouched
    );
    match (priced, has_price) {
        (true, true) | (false, false) => Ok(()),
        (true, false) => Err(RejectReason::PriceRequired),
        (false, true) => Err(RejectReason::PriceNotAllowed),
    }
}

/// Post-only belongs to a limit order that may rest.
#[inline]
pub fn post_only_shape(place: &Place) -> Result<(), RejectReason> {
    if place.post_only && (place.order_type != OrderType::Limit || !rests(place.tif)) {
        return Err(RejectReason::PostOnlyNotAllowed);
    }
    Ok(())
}

/// Funds size only a market buy, which then gives no quantity; returns
/// them in quote units.
#[inline]
pub fn funds_shape(place: &Place) -> Result<Option<u64>, RejectReason> {
    let Some(funds) = place.ext().funds else {
        return Ok(None);
    };
    if place.order_type != OrderType::Market || place.side != Side::Buy {
        return Err(RejectReason::FundsNotAllowed);
    }
    if place.qty.to_units_allow_zero() != Ok(0) {
        return Err(RejectReason::FundsWithQty);
    }
    funds
        .to_units()
        .map(Some)
        .map_err(|e| amount_reason(e, RejectReason::InvalidFunds))
}

/// A display quantity belongs to a good-till-canceled limit order;
/// returns it in units (whole lots are the instrument's to judge).
#[inline]
pub fn display_shape(place: &Place) -> Result<Option<u64>, RejectReason> {
    let Some(display) = place.ext().display_qty else {
        return Ok(None);
    };
    if place.order_type != OrderType::Limit || place.tif != TimeInForce::Gtc {
        return Err(RejectReason::DisplayQtyNotAllowed);
    }
    display
        .to_units()
        .map(Some)
        .map_err(|e| amount_reason(e, RejectReason::InvalidDisplayQty))
}

/// A minimum acceptable quantity belongs to an order that may trade on
/// entry: a limit, market or market-to-limit order sized by quantity and
/// not post-only (a stop trades nothing on entry, a post-only order must
/// not). It is positive and at most the quantity; returns it in units
/// (whole lots are the instrument's to judge).
#[inline]
pub fn min_qty_shape(place: &Place) -> Result<Option<u64>, RejectReason> {
    let Some(min_qty) = place.ext().min_qty else {
        return Ok(None);
    };
    let typed = matches!(
        place.order_type,
        OrderType::Limit | OrderType::Market | OrderType::MarketToLimit | OrderType::Midpoint
    );
    if !typed || place.post_only || place.ext().funds.is_some() {
        return Err(RejectReason::MinQtyNotAllowed);
    }
    let units = min_qty
        .to_units()
        .map_err(|e| amount_reason(e, RejectReason::InvalidMinQty))?;
    match place.qty.to_units() {
        Ok(qty) if units > qty => Err(RejectReason::InvalidMinQty),
        _ => Ok(Some(units)),
    }
}

/// A hidden order is a limit order that may rest (it exists to rest
/// unseen; an immediate one would never be on the book), and not an
/// iceberg (which shows a slice: the two display rules contradict each
/// other). Stops are not limit orders, so they are refused too.
#[inline]
pub fn hidden_shape(place: &Place) -> Result<(), RejectReason> {
    let ext = place.ext();
    if ext.hidden
        && (place.order_type != OrderType::Limit || !rests(place.tif) || ext.display_qty.is_some())
    {
        return Err(RejectReason::HiddenNotAllowed);
    }
    Ok(())
}

/// A midpoint order rests in the midpoint book or trades there at once
/// and expires (immediate-or-cancel): not fill-or-kill, and not for an
/// auction. Nor is it one of a one-cancels-other pair. Post-only, display
/// quantities, hidden and funds belong to other order types and are
/// refused by their own rules.
#[inline]
pub fn midpoint_shape(place: &Place) -> Result<(), RejectReason> {
    if place.order_type != OrderType::Midpoint {
        return Ok(());
    }
    let tif_ok = matches!(
        place.tif,
        TimeInForce::Gtc | TimeInForce::Day | TimeInForce::Gtd | TimeInForce::Ioc
    );
    if !tif_ok || place.ext().oco_with.is_some() {
        return Err(RejectReason::MidpointNotAllowed);
    }
    Ok(())
}

/// The reason an amount that is not a positive number of units is
/// refused for; `not_positive` names the field.
fn amount_reason(error: UnitsError, not_positive: RejectReason) -> RejectReason {
    match error {
        UnitsError::TooManyDecimals => RejectReason::TooManyDecimals,
        UnitsError::Overflow => RejectReason::AmountOverflow,
        UnitsError::Negative | UnitsError::Zero => not_positive,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ClientOrderId, Dec, SelfTradePrevention, Symbol};

    fn dec(text: &str) -> Dec {
        Dec::parse(text).unwrap()
    }

    fn limit() -> Place {
        Place {
            account: 1,
            client_order_id: ClientOrderId::new("c1").unwrap(),
            symbol: Symbol::new("BTC-USD").unwrap(),
            side: Side::Buy,
            order_type: OrderType::Limit,
            price: Some(dec("100")),
            qty: dec("1"),
            tif: TimeInForce::Gtc,
            post_only: false,
            stp: SelfTradePrevention::CancelNewest,
            ext: None,
        }
    }

    fn post_only_gtc() -> Place {
        Place {
            post_only: true,
            ..limit()
        }
    }

    fn with_ext(mut place: Place, ext: PlaceExt) -> Place {
        place.ext = Some(Box::new(ext));
        place
    }

    #[test]
    fn a_plain_limit_order_passes() {
        assert_eq!(place(&limit()), Ok(()));
    }

    #[test]
    fn each_rule_names_its_fault() {
        let mut no_price = limit();
        no_price.price = None;
        let mut priced_market = limit();
        priced_market.order_type = OrderType::Market;
        let mut gtd = limit();
        gtd.tif = TimeInForce::Gtd;
        let mut post_only_ioc = limit();
        (post_only_ioc.post_only, post_only_ioc.tif) = (true, TimeInForce::Ioc);
        let stop_on_limit = with_ext(
            limit(),
            PlaceExt {
                stop_price: Some(dec("90")),
                ..PlaceExt::default()
            },
        );
        let funds_on_sell = {
            let mut p = with_ext(
                limit(),
                PlaceExt {
                    funds: Some(dec("10")),
                    ..PlaceExt::default()
                },
            );
            (p.order_type, p.price, p.side, p.qty) =
                (OrderType::Market, None, Side::Sell, dec("0"));
            p
        };
        let display_on_day = {
            let mut p = with_ext(
                limit(),
                PlaceExt {
                    display_qty: Some(dec("0.1")),
                    ..PlaceExt::default()
                },
            );
            p.tif = TimeInForce::Day;
            p
        };
        let min_qty = |qty: &str| PlaceExt {
            min_qty: Some(dec(qty)),
            ..PlaceExt::default()
        };
        let min_over_qty = with_ext(limit(), min_qty("1.5"));
        let min_on_post_only = with_ext(post_only_gtc(), min_qty("0.5"));
        let mut priced_to_limit = limit();
        priced_to_limit.order_type = OrderType::MarketToLimit;
        let cases = [
            (min_over_qty, RejectReason::InvalidMinQty),
            (min_on_post_only, RejectReason::MinQtyNotAllowed),
            (priced_to_limit, RejectReason::PriceNotAllowed),
            (no_price, RejectReason::PriceRequired),
            (priced_market, RejectReason::PriceNotAllowed),
            (gtd, RejectReason::ExpireTsRequired),
            (post_only_ioc, RejectReason::PostOnlyNotAllowed),
            (stop_on_limit, RejectReason::StopPriceNotAllowed),
            (funds_on_sell, RejectReason::FundsNotAllowed),
            (display_on_day, RejectReason::DisplayQtyNotAllowed),
        ];
        for (command, reason) in cases {
            assert_eq!(place(&command), Err(reason), "{command:?}");
        }
    }

    #[test]
    fn an_if_touched_order_takes_a_stop_price_and_no_trailing_distance() {
        let touched = |order_type, price: Option<&str>, ext: PlaceExt| {
            let mut p = with_ext(limit(), ext);
            (p.order_type, p.price) = (order_type, price.map(dec));
            p
        };
        let stop = || PlaceExt {
            stop_price: Some(dec("90")),
            ..PlaceExt::default()
        };
        let trailing = PlaceExt {
            trailing: Some(Trailing::Bps(100)),
            ..PlaceExt::default()
        };
        let (mit, lit) = (OrderType::MarketIfTouched, OrderType::LimitIfTouched);
        assert_eq!(place(&touched(mit, None, stop())), Ok(()));
        assert_eq!(place(&touched(lit, Some("91"), stop())), Ok(()));
        let cases = [
            (
                touched(mit, None, trailing.clone()),
                RejectReason::TrailingNotAllowed,
            ),
            (
                touched(lit, Some("91"), trailing),
                RejectReason::TrailingNotAllowed,
            ),
            (
                touched(mit, None, PlaceExt::default()),
                RejectReason::StopPriceRequired,
            ),
            (
                touched(mit, Some("91"), stop()),
                RejectReason::PriceNotAllowed,
            ),
            (touched(lit, None, stop()), RejectReason::PriceRequired),
        ];
        for (command, reason) in cases {
            assert_eq!(place(&command), Err(reason), "{command:?}");
        }
    }

    #[test]
    fn a_hidden_order_is_a_resting_limit_order_and_no_iceberg() {
        let hidden = PlaceExt {
            hidden: true,
            ..PlaceExt::default()
        };
        assert_eq!(place(&with_ext(limit(), hidden.clone())), Ok(()));
        assert_eq!(place(&with_ext(post_only_gtc(), hidden.clone())), Ok(()));
        let mut ioc = limit();
        ioc.tif = TimeInForce::Ioc;
        let mut market = limit();
        (market.order_type, market.price) = (OrderType::Market, None);
        let iceberg = PlaceExt {
            display_qty: Some(dec("0.1")),
            ..hidden.clone()
        };
        for refused in [
            with_ext(ioc, hidden.clone()),
            with_ext(market, hidden.clone()),
            with_ext(limit(), iceberg),
        ] {
            assert_eq!(place(&refused), Err(RejectReason::HiddenNotAllowed));
        }
    }

    #[test]
    fn stops_need_exactly_one_trigger_in_range() {
        let mut stop = limit();
        stop.order_type = OrderType::StopLimit;
        assert_eq!(place(&stop), Err(RejectReason::StopPriceRequired));
        let both = with_ext(
            stop.clone(),
            PlaceExt {
                stop_price: Some(dec("90")),
                trailing: Some(Trailing::Bps(100)),
                ..PlaceExt::default()
            },
        );
        assert_eq!(place(&both), Err(RejectReason::InvalidTrailing));
        for (bps, verdict) in [
            (0, Err(RejectReason::InvalidTrailing)),
            (1, Ok(())),
            (9_999, Ok(())),
            (10_000, Err(RejectReason::InvalidTrailing)),
        ] {
            let trailing = with_ext(
                stop.clone(),
                PlaceExt {
                    trailing: Some(Trailing::Bps(bps)),
                    ..PlaceExt::default()
                },
            );
            assert_eq!(place(&trailing), verdict, "{bps} bps");
        }
    }

    #[test]
    fn midpoint_orders_take_an_optional_limit_and_rest_or_end_at_once() {
        let mut mid = limit();
        mid.order_type = OrderType::Midpoint;
        assert_eq!(place(&mid), Ok(()));
        mid.price = None;
        assert_eq!(place(&mid), Ok(()));
        for tif in [TimeInForce::Day, TimeInForce::Ioc] {
            assert_eq!(place(&Place { tif, ..mid.clone() }), Ok(()));
        }
        for tif in [TimeInForce::Fok, TimeInForce::AtOpen, TimeInForce::AtClose] {
            let refused = Place { tif, ..mid.clone() };
            assert_eq!(place(&refused), Err(RejectReason::MidpointNotAllowed));
        }
        let with_min = with_ext(
            mid.clone(),
            PlaceExt {
                min_qty: Some(dec("1")),
                ..PlaceExt::default()
            },
        );
        assert_eq!(place(&with_min), Ok(()));
        let hidden = with_ext(
            mid.clone(),
            PlaceExt {
                hidden: true,
                ..PlaceExt::default()
            },
        );
        assert_eq!(place(&hidden), Err(RejectReason::HiddenNotAllowed));
        let posted = Place {
            post_only: true,
            ..mid
        };
        assert_eq!(place(&posted), Err(RejectReason::PostOnlyNotAllowed));
    }
}
