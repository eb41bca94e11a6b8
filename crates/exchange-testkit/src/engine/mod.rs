//! Builders for the core's integration tests: terse commands in the
//! replay format's vocabulary, an engine wrapper that numbers time, and
//! random command streams; [`suite`]'s helpers for the example-based
//! suites are re-exported here too.

use exchange_core::Engine;
use exchange_types::*;

mod admin;
mod stops;
mod suite;
pub use admin::*;
pub use stops::*;
pub use suite::*;

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
        maker_fee_bps: -1,
        taker_fee_bps: 5,
        ..AddInstrument::plain(
            sym("BTC-USD"),
            asset("BTC"),
            asset("USD"),
            dec("0.01"),
            dec("0.0001"),
        )
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
        ext: None,
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
    Command::Deposit(Transfer {
        account,
        asset: asset(code),
        amount: dec(amount),
    })
}

pub fn cancel_client(account: u64, id: &str) -> Command {
    Command::Cancel(Cancel {
        account,
        order: OrderRef::Client(coid(id)),
    })
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

impl Default for Harness {
    fn default() -> Self {
        Harness::new()
    }
}

impl Harness {
    pub fn new() -> Self {
        Harness {
            engine: Engine::new(),
            ts: 0,
        }
    }

    /// BTC-USD listed; accounts 1..=n funded with 1,000,000 USD and 100 BTC.
    pub fn funded(accounts: u64) -> Self {
        funded_with(btc_usd(), accounts)
    }

    pub fn run(&mut self, command: Command) -> Vec<Event> {
        self.ts += 1;
        let mut out = Vec::new();
        self.engine.apply(
            &Stamped {
                ts: self.ts,
                command,
            },
            &mut out,
        );
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
            EventKind::Trade(t) => Some((t.price, t.qty, t.maker_order_id, t.taker_order_id)),
            _ => None,
        })
        .collect()
}

pub fn reject_reason(events: &[Event]) -> Option<RejectReason> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::Rejected(r) => Some(r.reason),
        _ => None,
    })
}

pub fn order_id(events: &[Event]) -> Option<OrderId> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::Accepted(a) => Some(a.order_id),
        _ => None,
    })
}

pub fn names(events: &[Event]) -> Vec<&'static str> {
    events.iter().map(|e| e.kind.name()).collect()
}

// ---------------------------------------------------------------------------
// Random command streams for the property, differential and determinism
// tests. Commands are plain data (not resolved against a live engine) so a
// failing stream can be shrunk and replayed on its own.

use proptest::collection::vec as vec_of;
use proptest::prelude::{prop_oneof, BoxedStrategy, Just, Strategy};
use proptest::sample::select;

/// ETH-USD against the same USD: coarser tick and lot, and a maker fee that
/// is paid rather than rebated.
pub fn eth_usd() -> AddInstrument {
    AddInstrument {
        maker_fee_bps: 2,
        taker_fee_bps: 10,
        ..AddInstrument::plain(
            sym("ETH-USD"),
            asset("ETH"),
            asset("USD"),
            dec("0.05"),
            dec("0.001"),
        )
    }
}

/// How a random stream treats money.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// Deep pockets and no collar, so only the matching rules decide what
    /// happens: what a reference matcher without balances can follow.
    Generous,
    /// Random and sometimes tiny deposits and a collared ETH-USD, so the
    /// risk checks fire as well.
    Scarce,
}

/// An instrument's price and quantity grid as decimal mantissas, so that
/// strategies can write values on it (or just off it).
#[derive(Clone, Copy, Debug)]
pub struct Grid {
    pub symbol: &'static str,
    tick: i64,
    tick_scale: u8,
    lot: i64,
    lot_scale: u8,
    /// Middle of the narrow price band orders are drawn from, in ticks.
    center: i64,
}

pub const GRIDS: [Grid; 2] = [
    Grid {
        symbol: "BTC-USD",
        tick: 1,
        tick_scale: 2,
        lot: 1,
        lot_scale: 4,
        center: 10_000,
    },
    Grid {
        symbol: "ETH-USD",
        tick: 5,
        tick_scale: 2,
        lot: 1,
        lot_scale: 3,
        center: 40_000,
    },
];

/// A number as a strategy draws it, before it is put on an instrument's
/// grid: mostly a valid offset, sometimes each way of being invalid.
#[derive(Clone, Copy, Debug)]
pub enum RawNum {
    On(i64),
    OffGrid,
    Zero,
    Negative,
    TooPrecise,
}

impl Grid {
    fn num(&self, raw: RawNum, base: i64, step: i64, scale: u8) -> Dec {
        match raw {
            RawNum::On(n) => Dec::new((base + n) * step, scale),
            RawNum::OffGrid => Dec::new((base + 1) * step * 10 + 1, scale + 1),
            RawNum::Zero => Dec::new(0, scale),
            RawNum::Negative => Dec::new(-(base + 1) * step, scale),
            RawNum::TooPrecise => Dec::new(1, 9),
        }
    }

    /// `On(n)` is `n` ticks from the band's center.
    pub fn price(&self, raw: RawNum) -> Dec {
        self.num(raw, self.center, self.tick, self.tick_scale)
    }

    /// `On(n)` is `n` lots.
    pub fn qty(&self, raw: RawNum) -> Dec {
        self.num(raw, 0, self.lot, self.lot_scale)
    }
}

/// The grid of the instrument `symbol` names (BTC-USD's for another).
fn grid_of(symbol: &Symbol) -> Grid {
    GRIDS
        .into_iter()
        .find(|g| sym(g.symbol) == *symbol)
        .unwrap_or(GRIDS[0])
}

fn raw_num(valid: impl Strategy<Value = i64> + 'static) -> impl Strategy<Value = RawNum> {
    prop_oneof![
        240 => valid.prop_map(RawNum::On),
        1 => Just(RawNum::OffGrid),
        1 => Just(RawNum::Zero),
        1 => Just(RawNum::Negative),
        1 => Just(RawNum::TooPrecise),
    ]
}

fn assets_for(instruments: usize) -> Vec<&'static str> {
    ["USD", "BTC", "ETH"][..instruments + 1].to_vec()
}

fn setup_amount(profile: Profile, code: &str) -> BoxedStrategy<Option<&'static str>> {
    let choices: &'static [&'static str] = match (profile, code) {
        (Profile::Generous, "USD") => &["1000000000"],
        (Profile::Generous, _) => &["1000000"],
        (Profile::Scarce, "USD") => &["0.02", "1", "50", "100000", "100000"],
        (Profile::Scarce, "BTC") => &["0.0002", "0.002", "10", "10"],
        (Profile::Scarce, _) => &["0.001", "0.01", "100", "100"],
    };
    match profile {
        Profile::Generous => select(choices).prop_map(Some).boxed(),
        // An account without some asset is refused for funds whatever the
        // amount.
        Profile::Scarce => {
            prop_oneof![9 => select(choices).prop_map(Some), 1 => Just(None)].boxed()
        }
    }
}

fn account(accounts: u64) -> impl Strategy<Value = AccountId> {
    // The fee account and a never-funded one are refused in their own ways.
    prop_oneof![
        80 => 1..=accounts,
        1 => Just(exchange_core::FEE_ACCOUNT),
        1 => Just(UNFUNDED_ACCOUNT),
    ]
}

/// An account that streams use but never fund.
pub const UNFUNDED_ACCOUNT: AccountId = 99;

fn client_id() -> impl Strategy<Value = ClientOrderId> {
    // A small pool, so that duplicates and reuse after close happen.
    (0u8..6).prop_map(|i| coid(&format!("c{i}")))
}

/// A midpoint order's client id: a pool of its own, which no
/// `oco_with` names.
fn midpoint_client_id() -> impl Strategy<Value = ClientOrderId> {
    (0u8..3).prop_map(|i| coid(&format!("m{i}")))
}

fn order_ref() -> impl Strategy<Value = OrderRef> {
    prop_oneof![
        4 => client_id().prop_map(OrderRef::Client),
        1 => (0u64..=120).prop_map(OrderRef::Id),
    ]
}

fn symbol_of(instrument: usize) -> Symbol {
    sym(GRIDS[instrument].symbol)
}

fn place_command(instruments: usize, accounts: u64) -> impl Strategy<Value = Command> {
    let shape = (
        0..instruments,
        account(accounts),
        select(&[Side::Buy, Side::Sell][..]),
        prop_oneof![5 => Just(OrderType::Limit), 1 => Just(OrderType::Market)],
        prop_oneof![
            7 => Just(TimeInForce::Gtc),
            2 => Just(TimeInForce::Ioc),
            2 => Just(TimeInForce::Fok),
        ],
        prop_oneof![9 => Just(false), 1 => Just(true)],
        select(
            &[
                SelfTradePrevention::CancelNewest,
                SelfTradePrevention::CancelOldest,
                SelfTradePrevention::CancelBoth,
                SelfTradePrevention::Decrement,
            ][..],
        ),
        client_id(),
    );
    // Rarely a limit order without a price or a market order with one.
    let values = (
        raw_num(-2i64..=4),
        raw_num(1i64..=6),
        prop_oneof![80 => Just(false), 1 => Just(true)],
    );
    (shape, values).prop_map(
        |((inst, account, side, order_type, tif, post_only, stp, coid), (price, qty, odd))| {
            let grid = GRIDS[inst];
            // The offset is how far the order stands back from the center on
            // its own side, so books build some depth and still cross often.
            let price = match (side, price) {
                (Side::Buy, RawNum::On(back)) => RawNum::On(-back),
                (_, other) => other,
            };
            let priced = (order_type == OrderType::Limit) != odd;
            Command::Place(Place {
                account,
                client_order_id: coid,
                symbol: symbol_of(inst),
                side,
                order_type,
                price: priced.then(|| grid.price(price)),
                qty: grid.qty(qty),
                tif,
                post_only,
                stp,
                ext: None,
            })
        },
    )
}

/// An iceberg limit order (display drawn like a quantity, sometimes too
/// large or off the lot), a market buy sized by funds (now and then a
/// sell, a limit or one with a quantity too, which are refused), or a
/// hidden order.
fn iceberg_or_funds_command(instruments: usize, accounts: u64) -> impl Strategy<Value = Command> {
    let iceberg =
        (place_command(instruments, accounts), raw_num(1i64..=3)).prop_map(|(command, display)| {
            let Command::Place(mut place) = command else {
                return command;
            };
            let grid = grid_of(&place.symbol);
            place.order_type = OrderType::Limit;
            if place.price.is_none() {
                place.price = Some(grid.price(RawNum::On(0)));
            }
            place.ext = Some(Box::new(PlaceExt {
                display_qty: Some(grid.qty(display)),
                ..PlaceExt::default()
            }));
            Command::Place(place)
        });
    let funds = (
        place_command(instruments, accounts),
        select(&["0.5", "37.25", "150", "2500", "0", "0.000000001"][..]),
        prop_oneof![12 => Just(None), 1 => Just(Some(Side::Sell)), 1 => Just(Some(Side::Buy))],
    )
        .prop_map(|(command, funds, odd)| {
            let Command::Place(mut place) = command else {
                return command;
            };
            place.order_type = OrderType::Market;
            place.price = None;
            place.side = odd.unwrap_or(Side::Buy);
            if odd != Some(Side::Buy) {
                place.qty = Dec::new(0, 0);
            }
            place.ext = Some(Box::new(PlaceExt {
                funds: Some(dec(funds)),
                ..PlaceExt::default()
            }));
            Command::Place(place)
        });
    let hidden = (
        place_command(instruments, accounts),
        prop_oneof![3 => Just(true), 1 => Just(false)],
    )
        .prop_map(|(command, limit)| {
            let Command::Place(mut place) = command else {
                return command;
            };
            // Mostly a limit order that may rest; otherwise as drawn, which
            // is refused unless it happens to be one.
            if limit {
                place.order_type = OrderType::Limit;
                if place.price.is_none() {
                    place.price = Some(grid_of(&place.symbol).price(RawNum::On(0)));
                }
            }
            place.ext = Some(Box::new(PlaceExt {
                hidden: true,
                ..PlaceExt::default()
            }));
            Command::Place(place)
        });
    prop_oneof![2 => iceberg, 1 => funds, 2 => hidden]
}

/// A market-to-limit order (now and then with a price, which is refused),
/// or an order of the common shapes with a minimum acceptable quantity
/// (drawn like a quantity: sometimes above it, zero or off the lot).
fn to_limit_or_min_qty_command(
    instruments: usize,
    accounts: u64,
) -> impl Strategy<Value = Command> {
    (
        place_command(instruments, accounts),
        prop_oneof![1 => Just(None), 2 => raw_num(1i64..=4).prop_map(Some)],
        prop_oneof![1 => Just(false), 1 => Just(true)],
    )
        .prop_map(|(command, min_qty, to_limit)| {
            let Command::Place(mut place) = command else {
                return command;
            };
            let grid = grid_of(&place.symbol);
            if to_limit {
                place.order_type = OrderType::MarketToLimit;
                place.price = place.price.filter(|_| place.post_only);
            }
            place.ext = min_qty.map(|raw| {
                Box::new(PlaceExt {
                    min_qty: Some(grid.qty(raw)),
                    ..PlaceExt::default()
                })
            });
            Command::Place(place)
        })
}

/// A midpoint order: with a limit near the band's center (a buy's at or
/// above it, a sell's at or below, so that most reach the midpoint) or
/// without; with a minimum acceptable quantity or without; mostly `gtc`,
/// sometimes `ioc`, now and then `fok` (refused); its client id from a
/// pool of its own, so that no stop pairs with it (the pairing of a
/// midpoint order has its own test). An unlimited buy that
/// rests holds its account's whole available quote (its bound, without a
/// collar or band), which a generous stream's balance-free reference model
/// cannot follow: in those streams it is immediate-or-cancel.
fn midpoint_command(
    instruments: usize,
    accounts: u64,
    profile: Profile,
) -> impl Strategy<Value = Command> {
    (
        place_command(instruments, accounts),
        prop_oneof![1 => Just(None), 2 => raw_num(-1i64..=4).prop_map(Some)],
        prop_oneof![2 => Just(None), 1 => raw_num(1i64..=4).prop_map(Some)],
        prop_oneof![
            7 => Just(TimeInForce::Gtc),
            2 => Just(TimeInForce::Ioc),
            1 => Just(TimeInForce::Fok),
        ],
        midpoint_client_id(),
    )
        .prop_map(move |(command, limit, min_qty, tif, coid)| {
            let Command::Place(mut place) = command else {
                return command;
            };
            place.client_order_id = coid;
            let grid = grid_of(&place.symbol);
            place.order_type = OrderType::Midpoint;
            let limit = match (place.side, limit) {
                (Side::Sell, Some(RawNum::On(n))) => Some(RawNum::On(-n)),
                (_, other) => other,
            };
            place.price = limit.map(|raw| grid.price(raw));
            let unlimited_buy = place.price.is_none() && place.side == Side::Buy;
            place.tif = match tif {
                TimeInForce::Gtc if unlimited_buy && profile == Profile::Generous => {
                    TimeInForce::Ioc
                }
                other => other,
            };
            place.ext = min_qty.map(|raw| {
                Box::new(PlaceExt {
                    min_qty: Some(grid.qty(raw)),
                    ..PlaceExt::default()
                })
            });
            Command::Place(place)
        })
}

/// A stop-limit or stop market order (its stop a few ticks beyond the
/// band's center, where the last price gets now and then; rarely off the
/// grid), an if-touched order (its stop as far on the other side), or a
/// limit order; now and then in a one-cancels-other pair with an order
/// the pool of client ids names.
fn stop_command(instruments: usize, accounts: u64) -> impl Strategy<Value = Command> {
    (
        place_command(instruments, accounts),
        raw_num(0i64..=4),
        prop_oneof![
            4 => Just(OrderType::StopLimit),
            2 => Just(OrderType::Stop),
            2 => Just(OrderType::LimitIfTouched),
            1 => Just(OrderType::MarketIfTouched),
            1 => Just(OrderType::Limit),
        ],
        prop_oneof![3 => Just(None), 1 => client_id().prop_map(Some)],
    )
        .prop_map(|(command, stop, order_type, oco_with)| {
            let Command::Place(mut place) = command else {
                return command;
            };
            let grid = grid_of(&place.symbol);
            // A buy stop waits above the center, a sell stop below it; an
            // if-touched order the other way round.
            let below = (place.side == Side::Sell) != order_type.is_if_touched();
            let stop = match (below, stop) {
                (true, RawNum::On(n)) => RawNum::On(-n),
                (_, other) => other,
            };
            place.order_type = order_type;
            match order_type {
                OrderType::Stop | OrderType::MarketIfTouched => place.price = None,
                _ if place.price.is_none() => place.price = Some(grid.price(RawNum::On(0))),
                _ => {}
            }
            let stop_price = (order_type != OrderType::Limit).then(|| grid.price(stop));
            place.ext = Some(Box::new(PlaceExt {
                stop_price,
                oco_with,
                ..PlaceExt::default()
            }));
            Command::Place(place)
        })
}

fn replace_command(instruments: usize, accounts: u64) -> impl Strategy<Value = Command> {
    // The target's instrument is unknown when the stream is drawn; a value
    // on the other instrument's grid is just one more way to be refused.
    (
        0..instruments,
        account(accounts),
        order_ref(),
        prop_oneof![2 => Just(None), 1 => client_id().prop_map(Some)],
        prop_oneof![1 => Just(None), 1 => raw_num(-3i64..=3).prop_map(Some)],
        prop_oneof![1 => Just(None), 2 => raw_num(1i64..=8).prop_map(Some)],
        prop_oneof![7 => Just(None), 1 => raw_num(-4i64..=4).prop_map(Some)],
    )
        .prop_map(
            |(inst, account, order, new_client_order_id, price, qty, stop_price)| {
                let grid = GRIDS[inst];
                Command::replace(
                    Replace {
                        account,
                        order,
                        new_client_order_id,
                        price: price.map(|p| grid.price(p)),
                        qty: qty.map(|q| grid.qty(q)),
                    },
                    stop_price.map(|p| grid.price(p)),
                )
            },
        )
}

fn transfer(
    instruments: usize,
    accounts: u64,
    profile: Profile,
    amounts: &'static [&'static str],
) -> impl Strategy<Value = Transfer> {
    let code = select(assets_for(instruments)).prop_map(asset);
    // An asset no instrument uses is refused as unknown.
    let code = prop_oneof![20 => code, 1 => Just(asset("XRP"))];
    // A generous stream must not fund a new account with only some assets.
    let account = match profile {
        Profile::Generous => (1..=accounts).boxed(),
        Profile::Scarce => account(accounts).boxed(),
    };
    (account, code, select(amounts)).prop_map(|(account, asset, amount)| Transfer {
        account,
        asset,
        amount: dec(amount),
    })
}

fn body_command(
    instruments: usize,
    accounts: u64,
    profile: Profile,
    midpoint: bool,
) -> BoxedStrategy<Command> {
    let body = body_without_midpoint(instruments, accounts, profile);
    if !midpoint {
        return body.boxed();
    }
    // Midpoint orders, and cancels and replaces naming them by client id.
    let by_id = (
        account(accounts),
        midpoint_client_id().prop_map(OrderRef::Client),
    );
    prop_oneof![
        112 => body,
        12 => midpoint_command(instruments, accounts, profile),
        2 => by_id.prop_map(|(account, order)| Command::Cancel(Cancel { account, order })),
        4 => (replace_command(instruments, accounts), midpoint_client_id()).prop_map(
            |(mut command, id)| {
                match &mut command {
                    Command::Replace(r) => r.order = OrderRef::Client(id),
                    Command::ReplaceStop(r) => r.replace.order = OrderRef::Client(id),
                    _ => {}
                }
                command
            }
        ),
    ]
    .boxed()
}

fn body_without_midpoint(
    instruments: usize,
    accounts: u64,
    profile: Profile,
) -> impl Strategy<Value = Command> {
    let deposits: &'static [&'static str] = match profile {
        Profile::Generous => &["1000", "100000"],
        Profile::Scarce => &["0.001", "0.05", "3"],
    };
    prop_oneof![
        55 => place_command(instruments, accounts).boxed(),
        8 => iceberg_or_funds_command(instruments, accounts).boxed(),
        // Boxed: the deeper strategies' value trees overflow a test
        // thread's stack in a debug build when nested inline.
        8 => stop_command(instruments, accounts).boxed(),
        5 => to_limit_or_min_qty_command(instruments, accounts).boxed(),
        10 => (account(accounts), order_ref())
            .prop_map(|(account, order)| Command::Cancel(Cancel { account, order })),
        16 => replace_command(instruments, accounts).boxed(),
        3 => (
            account(accounts),
            prop_oneof![
                3 => Just(None),
                3 => (0..instruments).prop_map(|i| Some(symbol_of(i))),
                1 => Just(Some(sym("XRP-USD"))),
            ],
        )
            .prop_map(|(account, symbol)| Command::MassCancel(MassCancel { account, symbol })),
        4 => transfer(instruments, accounts, profile, &["0.0001", "0.001", "0.5", "20"])
            .prop_map(Command::Withdraw),
        2 => transfer(instruments, accounts, profile, deposits).prop_map(Command::Deposit),
        1 => reference_price_command(instruments).boxed(),
    ]
}

/// An operator's new reference price (after a corporate action): mostly
/// near where the streams trade, sometimes far off, zero (refused) or for
/// an instrument that is not listed (refused).
fn reference_price_command(instruments: usize) -> impl Strategy<Value = Command> {
    (
        prop_oneof![
            6 => (0..instruments).prop_map(symbol_of),
            1 => Just(sym("XRP-USD")),
        ],
        select(&["0", "1", "95", "100", "104.5", "2000", "30000"][..]),
    )
        .prop_map(|(symbol, price)| Command::SetReferencePrice {
            symbol,
            price: dec(price),
        })
}

/// Mostly one command; sometimes a short halt: commands that meet a halted
/// instrument, and now and then a halt or resume that changes nothing.
fn body_element(
    instruments: usize,
    accounts: u64,
    profile: Profile,
    midpoint: bool,
) -> impl Strategy<Value = Vec<Command>> {
    let halt = (
        (0..instruments).prop_map(symbol_of),
        prop_oneof![3 => Just(false), 1 => Just(true)],
        vec_of(body_command(instruments, accounts, profile, midpoint), 0..5),
        prop_oneof![3 => Just(false), 1 => Just(true)],
    )
        .prop_map(|(symbol, halt_twice, during, resume_twice)| {
            let mut commands = vec![Command::Halt { symbol }];
            if halt_twice {
                commands.push(Command::Halt { symbol });
            }
            commands.extend(during);
            commands.push(Command::Resume { symbol });
            if resume_twice {
                commands.push(Command::Resume { symbol });
            }
            commands
        });
    prop_oneof![
        97 => body_command(instruments, accounts, profile, midpoint).prop_map(|c| vec![c]),
        3 => halt,
    ]
}

/// A random stream: listings and deposits, then 200-400 trading commands.
pub fn command_stream(profile: Profile) -> impl Strategy<Value = Vec<Command>> {
    stream(profile, false)
}

/// A random stream as [`command_stream`] draws it, with midpoint orders
/// among its commands, for the tests that follow them.
pub fn command_stream_with_midpoint(profile: Profile) -> impl Strategy<Value = Vec<Command>> {
    stream(profile, true)
}

fn stream(profile: Profile, midpoint: bool) -> impl Strategy<Value = Vec<Command>> {
    (1usize..=2, 3u64..=6)
        .prop_flat_map(move |(instruments, accounts)| {
            let amounts: Vec<_> = (0..accounts)
                .flat_map(|_| assets_for(instruments))
                .map(|code| setup_amount(profile, code))
                .collect();
            let body = vec_of(
                body_element(instruments, accounts, profile, midpoint),
                190..=380,
            );
            (Just(instruments), Just(accounts), amounts, body)
        })
        .prop_map(move |(instruments, accounts, amounts, body)| {
            // BTC-USD takes hidden orders of three lots at the band's
            // center or more (ETH-USD none): both refusals come up.
            let btc = AddInstrument {
                hidden_min_notional: Some(dec("0.03")),
                ..btc_usd()
            };
            let mut commands = vec![Command::AddInstrument(Box::new(btc))];
            if instruments == 2 {
                let mut eth = eth_usd();
                if profile == Profile::Scarce {
                    eth.collar_bps = Some(1);
                    eth.reference_price = Some(dec("2000"));
                }
                commands.push(Command::AddInstrument(Box::new(eth)));
            }
            let codes = assets_for(instruments);
            let funded = (1..=accounts).flat_map(|a| codes.iter().map(move |code| (a, *code)));
            for ((account, code), amount) in funded.zip(amounts) {
                if let Some(amount) = amount {
                    commands.push(deposit(account, code, amount));
                }
            }
            commands.extend(body.into_iter().flatten());
            commands
        })
}

/// Settings for the stream properties: `cases` runs (PROPTEST_CASES
/// overrides it for a longer soak), and no regression files written beside
/// the tests (a failure is turned into a named test instead).
#[allow(
    clippy::disallowed_methods,
    reason = "sets how long the test runs, never what the engine sees"
)]
pub fn proptest_config(cases: u32) -> proptest::prelude::ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    proptest::prelude::ProptestConfig {
        cases,
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    }
}

/// Applies `commands` with timestamps 1, 2, ... and returns each command's
/// events.
pub fn run_all(engine: &mut Engine, commands: &[Command]) -> Vec<Vec<Event>> {
    commands
        .iter()
        .enumerate()
        .map(|(index, command)| {
            let mut out = Vec::new();
            engine.apply(
                &Stamped {
                    ts: index as u64 + 1,
                    command: command.clone(),
                },
                &mut out,
            );
            out
        })
        .collect()
}

/// One line per command in the replay format's vocabulary, for failure
/// messages that a person can turn into a regression test.
pub fn describe(command: &Command) -> String {
    let opt = |d: &Option<Dec>| d.map_or("-".to_string(), |d| d.to_string());
    match command {
        Command::AddInstrument(a) => format!("add_instrument {}", a.symbol),
        Command::Deposit(t) => format!("deposit a{} {} {}", t.account, t.asset, t.amount),
        Command::Withdraw(t) => format!("withdraw a{} {} {}", t.account, t.asset, t.amount),
        Command::Place(p) => describe_place(p),
        Command::Cancel(c) => format!("cancel a{} {}", c.account, describe_order(&c.order)),
        Command::Replace(r) => describe_replace(r, None),
        Command::ReplaceStop(r) => describe_replace(&r.replace, Some(r.stop_price)),
        Command::MassCancel(m) => format!(
            "mass_cancel a{} {}",
            m.account,
            m.symbol.map_or("*".to_string(), |s| s.to_string())
        ),
        Command::Halt { symbol } => format!("halt {symbol}"),
        Command::Resume { symbol } => format!("resume {symbol}"),
        Command::SetPhase { symbol, phase } => format!("set_phase {symbol} {}", phase.as_str()),
        Command::Tick => "tick".to_string(),
        Command::SetInstrumentRules(r) => format!("set_instrument_rules {r:?}"),
        Command::Delist { symbol } => format!("delist {symbol}"),
        Command::SetReferencePrice { symbol, price } => {
            format!("set_reference_price {symbol} {price}")
        }
        Command::SetRiskLimits(l) => format!(
            "set_risk_limits a{} qty={} notional={} open={} band={}",
            l.account,
            opt(&l.max_order_qty),
            opt(&l.max_order_notional),
            l.max_open_orders.map_or("-".to_string(), |n| n.to_string()),
            l.price_band_bps.map_or("-".to_string(), |n| n.to_string())
        ),
        Command::Suspend { account } => format!("suspend a{account}"),
        Command::Reinstate { account } => format!("reinstate a{account}"),
        Command::SetMmp(m) => format!(
            "set_mmp a{} {} window={} qty={} count={}",
            m.account,
            m.symbol,
            m.window_ns,
            opt(&m.max_qty),
            m.max_count.map_or("-".to_string(), |n| n.to_string())
        ),
        Command::ResetMmp { account, symbol } => format!("reset_mmp a{account} {symbol}"),
        Command::LinkSubAccount { owner, sub } => format!("link_sub_account a{owner} a{sub}"),
        Command::InternalTransfer(t) => format!(
            "internal_transfer a{} a{} {} {}",
            t.from, t.to, t.asset, t.amount
        ),
    }
}

fn describe_place(p: &Place) -> String {
    let opt = |d: &Option<Dec>| d.map_or("-".to_string(), |d| d.to_string());
    let ext = p.ext();
    let mut line = format!(
        "place a{} {} {} {} {} {} x {} {}{} stp={}",
        p.account,
        p.client_order_id,
        p.symbol,
        p.side.as_str(),
        p.order_type.as_str(),
        opt(&p.price),
        p.qty,
        p.tif.as_str(),
        if p.post_only { " post_only" } else { "" },
        p.stp.as_str()
    );
    for (name, value) in [
        ("stop", ext.stop_price),
        ("display", ext.display_qty),
        ("funds", ext.funds),
    ] {
        if let Some(value) = value {
            line += &format!(" {name}={value}");
        }
    }
    if let Some(t) = ext.trailing {
        line += &format!(" trailing={t:?}");
    }
    if let Some(with) = ext.oco_with {
        line += &format!(" oco={with}");
    }
    if ext.hidden {
        line += " hidden";
    }
    if let Some(min_qty) = ext.min_qty {
        line += &format!(" min_qty={min_qty}");
    }
    line
}

/// `describe` for a whole stream, numbered from zero.
fn describe_order(order: &OrderRef) -> String {
    match order {
        OrderRef::Id(id) => format!("#{id}"),
        OrderRef::Client(c) => c.to_string(),
    }
}

fn describe_replace(r: &Replace, stop_price: Option<Dec>) -> String {
    let opt = |d: Option<Dec>| d.map_or("-".to_string(), |d| d.to_string());
    format!(
        "replace a{} {} new_id={} price={} qty={} stop={}",
        r.account,
        describe_order(&r.order),
        r.new_client_order_id
            .map_or("-".to_string(), |c| c.to_string()),
        opt(r.price),
        opt(r.qty),
        opt(stop_price)
    )
}

pub fn describe_all(commands: &[Command]) -> String {
    commands
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{i:4}: {}\n", describe(c)))
        .collect()
}
