//! Helpers for the example-based suites (orders, self-trade prevention,
//! replace, fees, rejects, mass cancel, events), layered on the builders.

use exchange_core::{BalanceView, BookView, Engine, InstrumentView, OrderView};
use exchange_types::*;

use super::{asset, btc_usd, coid, dec, deposit, order_id, reject_reason, sym, Harness};

pub fn cmd(place: Place) -> Command {
    Command::Place(place)
}

pub fn ioc(place: Place) -> Place {
    Place {
        tif: TimeInForce::Ioc,
        ..place
    }
}

pub fn fok(place: Place) -> Place {
    Place {
        tif: TimeInForce::Fok,
        ..place
    }
}

pub fn post_only(place: Place) -> Place {
    Place {
        post_only: true,
        ..place
    }
}

/// A market-to-limit order (good till canceled): it takes the best price
/// on the other side as its limit.
pub fn market_to_limit(account: u64, id: &str, side: Side, qty: &str) -> Place {
    Place {
        order_type: OrderType::MarketToLimit,
        price: None,
        ..super::limit(account, id, side, "1", qty)
    }
}

/// The order with a minimum acceptable quantity.
pub fn with_min_qty(place: Place, min_qty: &str) -> Place {
    Place {
        ext: Some(Box::new(PlaceExt {
            min_qty: Some(dec(min_qty)),
            ..place.ext().clone()
        })),
        ..place
    }
}

/// The order entered hidden.
pub fn hidden(place: Place) -> Place {
    Place {
        ext: Some(Box::new(PlaceExt {
            hidden: true,
            ..place.ext().clone()
        })),
        ..place
    }
}

/// BTC-USD taking hidden orders worth at least `minimum` USD.
pub fn with_hidden_minimum(minimum: &str) -> AddInstrument {
    AddInstrument {
        hidden_min_notional: Some(dec(minimum)),
        ..btc_usd()
    }
}

pub fn with_stp(place: Place, stp: SelfTradePrevention) -> Place {
    Place { stp, ..place }
}

pub fn on(symbol: &str, place: Place) -> Place {
    Place {
        symbol: sym(symbol),
        ..place
    }
}

pub fn withdraw(account: u64, code: &str, amount: &str) -> Command {
    Command::Withdraw(Transfer {
        account,
        asset: asset(code),
        amount: dec(amount),
    })
}

pub fn cancel_id(account: u64, id: OrderId) -> Command {
    Command::Cancel(Cancel {
        account,
        order: OrderRef::Id(id),
    })
}

pub fn replace_id(account: u64, id: OrderId, price: Option<&str>, qty: Option<&str>) -> Command {
    Command::Replace(Replace {
        account,
        order: OrderRef::Id(id),
        new_client_order_id: None,
        price: price.map(dec),
        qty: qty.map(dec),
    })
}

/// A replace that only moves an untriggered stop's stop price.
pub fn replace_stop(account: u64, id: &str, stop_price: &str) -> Command {
    Command::replace(
        Replace {
            account,
            order: OrderRef::Client(coid(id)),
            new_client_order_id: None,
            price: None,
            qty: None,
        },
        Some(dec(stop_price)),
    )
}

/// A replace that only gives the order a new client order id.
pub fn rename(account: u64, id: &str, new_id: &str) -> Command {
    Command::Replace(Replace {
        account,
        order: OrderRef::Client(coid(id)),
        new_client_order_id: Some(coid(new_id)),
        price: None,
        qty: None,
    })
}

pub fn mass_cancel(account: u64, symbol: Option<&str>) -> Command {
    Command::MassCancel(MassCancel {
        account,
        symbol: symbol.map(sym),
    })
}

pub fn halt(symbol: &str) -> Command {
    Command::Halt {
        symbol: sym(symbol),
    }
}

pub fn resume(symbol: &str) -> Command {
    Command::Resume {
        symbol: sym(symbol),
    }
}

/// Pre-trade limits for `account`: quantity, notional, open orders, band.
pub fn set_limits(
    account: u64,
    max_qty: Option<&str>,
    max_notional: Option<&str>,
    max_open_orders: Option<u32>,
    band_bps: Option<u32>,
) -> Command {
    Command::SetRiskLimits(Box::new(SetRiskLimits {
        account,
        max_order_qty: max_qty.map(dec),
        max_order_notional: max_notional.map(dec),
        max_open_orders,
        price_band_bps: band_bps,
    }))
}

pub fn suspend(account: u64) -> Command {
    Command::Suspend { account }
}

pub fn reinstate(account: u64) -> Command {
    Command::Reinstate { account }
}

/// Market-maker protection for `account` on `symbol`.
pub fn set_mmp(
    account: u64,
    symbol: &str,
    window_ns: u64,
    max_qty: Option<&str>,
    max_count: Option<u32>,
) -> Command {
    Command::SetMmp(Box::new(SetMmp {
        account,
        symbol: sym(symbol),
        window_ns,
        max_qty: max_qty.map(dec),
        max_count,
    }))
}

pub fn reset_mmp(account: u64, symbol: &str) -> Command {
    Command::ResetMmp {
        account,
        symbol: sym(symbol),
    }
}

pub fn link_sub(owner: u64, sub: u64) -> Command {
    Command::LinkSubAccount { owner, sub }
}

pub fn internal_transfer(from: u64, to: u64, code: &str, amount: &str) -> Command {
    Command::InternalTransfer(InternalTransfer {
        from,
        to,
        asset: asset(code),
        amount: dec(amount),
    })
}

pub fn add(spec: AddInstrument) -> Command {
    Command::AddInstrument(Box::new(spec))
}

/// BTC-USD with a collar of `bps` around `reference`.
pub fn collared(bps: u32, reference: &str) -> AddInstrument {
    AddInstrument {
        collar_bps: Some(bps),
        reference_price: Some(dec(reference)),
        ..btc_usd()
    }
}

/// A harness whose only instrument is `spec`, with accounts 1..=n funded
/// with 1,000,000 USD and 100 BTC like `Harness::funded`.
pub fn funded_with(spec: AddInstrument, accounts: u64) -> Harness {
    let mut h = Harness::new();
    assert_eq!(reject_reason(&h.run(add(spec))), None);
    for account in 1..=accounts {
        h.run(deposit(account, "USD", "1000000"));
        h.run(deposit(account, "BTC", "100"));
    }
    h
}

/// Places an order with the invariants checked.
pub fn exec(h: &mut Harness, place: Place) -> Vec<Event> {
    h.run_checked(cmd(place))
}

/// Places an order that must be accepted and returns its id.
pub fn place_ok(h: &mut Harness, place: Place) -> OrderId {
    let events = exec(h, place);
    assert_eq!(
        reject_reason(&events),
        None,
        "unexpected reject: {events:?}"
    );
    order_id(&events).expect("accepted order")
}

/// (total, available) of `account` in `code`; zero if never touched.
pub fn bal(h: &Harness, account: u64, code: &str) -> (u64, u64) {
    h.engine.balance(account, &asset(code)).unwrap_or((0, 0))
}

pub fn book(h: &Harness) -> BookView {
    h.engine
        .book(&sym("BTC-USD"), usize::MAX)
        .expect("BTC-USD is listed")
}

pub fn open_ids(h: &Harness) -> Vec<OrderId> {
    h.engine.open_orders().iter().map(|o| o.order_id).collect()
}

pub fn open_order(h: &Harness, id: OrderId) -> Option<OrderView> {
    h.engine
        .open_orders()
        .into_iter()
        .find(|o| o.order_id == id)
}

/// The `Trade` events among `events`.
pub fn trade_fields(events: &[Event]) -> Vec<Trade> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Trade(trade) => Some(trade.clone()),
            _ => None,
        })
        .collect()
}

/// `(order id, reason, canceled, filled, leaves)` of each `Canceled`.
pub fn cancels(events: &[Event]) -> Vec<(OrderId, CancelReason, u64, u64, u64)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Canceled(c) => Some((
                c.order_id,
                c.reason,
                c.canceled_qty,
                c.filled_qty,
                c.leaves_qty,
            )),
            _ => None,
        })
        .collect()
}

/// `(order id, expired, filled)` of each `Expired`.
pub fn expiries(events: &[Event]) -> Vec<(OrderId, u64, u64)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Expired(x) => Some((x.order_id, x.expired_qty, x.filled_qty)),
            _ => None,
        })
        .collect()
}

/// `(side, price, new level qty)` of each `Book` event.
pub fn book_updates(events: &[Event]) -> Vec<(Side, u64, u64)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Book(b) => Some((b.side, b.price, b.qty)),
            _ => None,
        })
        .collect()
}

/// `(account, asset, total, available)` of each `Balance` event.
pub fn balance_updates(events: &[Event]) -> Vec<(AccountId, String, u64, u64)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Balance(b) => Some((b.account, b.asset.to_string(), b.total, b.available)),
            _ => None,
        })
        .collect()
}

/// `(order id, old client id, new client id, price, qty, leaves)` of the
/// `Replaced` event, if any.
pub fn replaced(events: &[Event]) -> Option<(OrderId, String, String, u64, u64, u64)> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::Replaced(r) => Some((
            r.order_id,
            r.old_client_order_id.to_string(),
            r.client_order_id.to_string(),
            r.price,
            r.qty,
            r.leaves_qty,
        )),
        _ => None,
    })
}

/// Everything a client can see of the state, plus the canonical snapshot
/// without its clock (event sequence and time), which a reject advances.
#[derive(Debug, PartialEq, Eq)]
pub struct Observed {
    pub books: Vec<(Symbol, BookView)>,
    pub balances: Vec<BalanceView>,
    pub orders: Vec<OrderView>,
    pub instruments: Vec<InstrumentView>,
    pub state: Vec<u8>,
}

/// Bytes of the snapshot header that hold the clock: magic, seq, now.
const SNAPSHOT_CLOCK_END: usize = 8 + 8 + 8;

pub fn observe(engine: &Engine) -> Observed {
    let instruments = engine.instruments();
    let books = instruments
        .iter()
        .map(|i| {
            (
                i.symbol,
                engine.book(&i.symbol, usize::MAX).unwrap_or_default(),
            )
        })
        .collect();
    let snapshot = engine.snapshot();
    // If the snapshot layout moves the clock, this helper must follow.
    assert_eq!(&snapshot[..8], b"EXSNAP01", "snapshot layout changed");
    Observed {
        books,
        balances: engine.balances(),
        orders: engine.open_orders(),
        instruments,
        state: snapshot[SNAPSHOT_CLOCK_END..].to_vec(),
    }
}

/// Asserts that nothing but the clock differs, reporting views first so a
/// failure names what moved.
pub fn assert_same_state(before: &Observed, after: &Observed) {
    assert_eq!(before.books, after.books, "books changed");
    assert_eq!(before.balances, after.balances, "balances changed");
    assert_eq!(before.orders, after.orders, "open orders changed");
    assert_eq!(before.instruments, after.instruments, "instruments changed");
    assert!(
        before.state == after.state,
        "state outside the views changed: snapshot went from {} to {} bytes",
        before.state.len(),
        after.state.len()
    );
}

/// Runs `command`, asserts it is refused with `reason` as exactly one
/// `Rejected` event numbered next, and that it changed nothing else.
/// Returns the event.
pub fn assert_rejected(h: &mut Harness, command: Command, reason: RejectReason) -> Event {
    let before = observe(&h.engine);
    let seq = h.engine.last_seq();
    let name = command.name();
    let mut events = h.run_checked(command);
    assert_eq!(events.len(), 1, "a reject is exactly one event: {events:?}");
    let event = events.remove(0);
    assert_eq!(event.seq, seq + 1);
    match &event.kind {
        EventKind::Rejected(rejected) => {
            assert_eq!(rejected.reason, reason, "wrong reason");
            assert_eq!(rejected.command, name, "reject names another command");
        }
        other => panic!("expected a reject ({reason}), got {other:?}"),
    }
    assert_same_state(&before, &observe(&h.engine));
    event
}

/// `place` as an iceberg showing `display` at a time.
pub fn iceberg(place: Place, display: &str) -> Place {
    let mut ext = place.ext.clone().unwrap_or_default();
    ext.display_qty = Some(dec(display));
    Place {
        ext: Some(ext),
        ..place
    }
}

/// A market buy of account `account` sized by `funds` quote units.
pub fn funds_buy(account: u64, id: &str, funds: &str) -> Place {
    Place {
        ext: Some(Box::new(PlaceExt {
            funds: Some(dec(funds)),
            ..PlaceExt::default()
        })),
        ..super::market(account, id, Side::Buy, "0")
    }
}

/// A midpoint order (good till canceled) with `limit` as its limit, or
/// none.
pub fn midpoint(account: u64, id: &str, side: Side, limit: Option<&str>, qty: &str) -> Place {
    Place {
        order_type: OrderType::Midpoint,
        price: limit.map(dec),
        ..super::limit(account, id, side, "1", qty)
    }
}

/// What the account holds aside in USD: its total less what is available.
pub fn held_usd(h: &Harness, account: u64) -> u64 {
    let (total, available) = h.engine.balance(account, &asset("USD")).expect("funded");
    total - available
}

/// The `replaced` events as (order id, price, leaves).
pub fn replaced_prices(events: &[Event]) -> Vec<(OrderId, u64, u64)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Replaced(r) => Some((r.order_id, r.price, r.leaves_qty)),
            _ => None,
        })
        .collect()
}

/// The ids of the orders the events report expired.
pub fn expired_ids(events: &[Event]) -> Vec<OrderId> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Expired(x) => Some(x.order_id),
            _ => None,
        })
        .collect()
}
