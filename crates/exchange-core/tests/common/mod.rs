//! Builders shared by the core's integration tests: terse commands in the
//! replay format's vocabulary, and an engine wrapper that numbers time.
#![allow(dead_code)]

use exchange_core::Engine;
use exchange_types::*;

pub fn dec(text: &str) -> Dec {
    Dec::parse(text).expect("test decimal")
}

pub fn units(text: &str) -> u64 {
    dec(text).to_units_allow_zero().expect("test units")
}

pub fn sym(text: &str) -> Symbol {
    Symbol::new(text).expect("test symbol")
}

pub fn asset(text: &str) -> AssetCode {
    AssetCode::new(text).expect("test asset")
}

pub fn coid(text: &str) -> ClientOrderId {
    ClientOrderId::new(text).expect("test client order id")
}

/// BTC-USD, tick 0.01, lot 0.0001, maker -1 bps, taker 5 bps, no collar.
pub fn btc_usd() -> AddInstrument {
    AddInstrument {
        symbol: sym("BTC-USD"),
        base: asset("BTC"),
        quote: asset("USD"),
        tick_size: dec("0.01"),
        lot_size: dec("0.0001"),
        min_qty: None,
        max_qty: None,
        collar_bps: None,
        reference_price: None,
        maker_fee_bps: -1,
        taker_fee_bps: 5,
    }
}

/// A limit GTC order with cancel-newest self-trade prevention.
pub fn limit(account: u64, id: &str, side: Side, price: &str, qty: &str) -> Place {
    Place {
        account,
        client_order_id: coid(id),
        symbol: sym("BTC-USD"),
        side,
        order_type: OrderType::Limit,
        price: Some(dec(price)),
        qty: dec(qty),
        tif: TimeInForce::Gtc,
        post_only: false,
        stp: SelfTradePrevention::CancelNewest,
    }
}

pub fn market(account: u64, id: &str, side: Side, qty: &str) -> Place {
    Place {
        order_type: OrderType::Market,
        price: None,
        tif: TimeInForce::Ioc,
        ..limit(account, id, side, "1", qty)
    }
}

pub fn deposit(account: u64, code: &str, amount: &str) -> Command {
    Command::Deposit(Transfer { account, asset: asset(code), amount: dec(amount) })
}

pub fn cancel_client(account: u64, id: &str) -> Command {
    Command::Cancel(Cancel { account, order: OrderRef::Client(coid(id)) })
}

pub fn replace(account: u64, id: &str, price: Option<&str>, qty: Option<&str>) -> Command {
    Command::Replace(Replace {
        account,
        order: OrderRef::Client(coid(id)),
        new_client_order_id: None,
        price: price.map(dec),
        qty: qty.map(dec),
    })
}

/// An engine with a clock that ticks once per command.
pub struct Harness {
    pub engine: Engine,
    pub ts: u64,
}

impl Harness {
    pub fn new() -> Self {
        Harness { engine: Engine::new(), ts: 0 }
    }

    /// BTC-USD listed; accounts 1..=n funded with 1,000,000 USD and 100 BTC.
    pub fn funded(accounts: u64) -> Self {
        let mut h = Harness::new();
        h.run(Command::AddInstrument(btc_usd()));
        for account in 1..=accounts {
            h.run(deposit(account, "USD", "1000000"));
            h.run(deposit(account, "BTC", "100"));
        }
        h
    }

    pub fn run(&mut self, command: Command) -> Vec<Event> {
        self.ts += 1;
        let mut out = Vec::new();
        self.engine.apply(&Stamped { ts: self.ts, command }, &mut out);
        out
    }

    pub fn place(&mut self, place: Place) -> Vec<Event> {
        self.run(Command::Place(place))
    }

    /// Runs a command and asserts the engine's invariants afterwards.
    pub fn run_checked(&mut self, command: Command) -> Vec<Event> {
        let events = self.run(command);
        if let Err(violation) = self.engine.audit() {
            panic!("invariant broken: {violation}");
        }
        events
    }
}

pub fn trades(events: &[Event]) -> Vec<(u64, u64, OrderId, OrderId)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Trade { price, qty, maker_order_id, taker_order_id, .. } => {
                Some((*price, *qty, *maker_order_id, *taker_order_id))
            }
            _ => None,
        })
        .collect()
}

pub fn reject_reason(events: &[Event]) -> Option<RejectReason> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::Rejected { reason, .. } => Some(*reason),
        _ => None,
    })
}

pub fn order_id(events: &[Event]) -> Option<OrderId> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::Accepted { order_id, .. } => Some(*order_id),
        _ => None,
    })
}

pub fn names(events: &[Event]) -> Vec<&'static str> {
    events.iter().map(|e| e.kind.name()).collect()
}
