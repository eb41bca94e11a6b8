//! The reference price on the `status` channel against the real core: the
//! projection folds it from the events alone (the listing's, a new tick
//! size's rounding, the operator's, each trade's) and must hold the
//! core's value after every command; the operator's change is a status
//! message numbered in the status sequence the replicated state counts.

use exchange_core::Engine;
use exchange_marketdata::{json, MarketSequences, MarketStatus, Projection, StatusChange, Update};
use exchange_types::{
    AddInstrument, AssetCode, ClientOrderId, Command, Dec, OrderType, Place, SelfTradePrevention,
    SetInstrumentRules, Side, Stamped, Symbol, TimeInForce, Transfer,
};
use serde_json::Value;

fn sym() -> Symbol {
    Symbol::new("SAP-EUR").unwrap()
}

fn listing() -> Command {
    Command::AddInstrument(Box::new(AddInstrument {
        symbol: sym(),
        base: AssetCode::new("SAP").unwrap(),
        quote: AssetCode::new("EUR").unwrap(),
        tick_size: Dec::new(1, 2),
        lot_size: Dec::new(1, 0),
        min_qty: None,
        max_qty: None,
        collar_bps: None,
        reference_price: Some(Dec::new(10_007, 2)),
        maker_fee_bps: 0,
        taker_fee_bps: 0,
        min_notional: None,
        static_band_bps: None,
        dynamic_band_bps: None,
        volatility_auction_ns: None,
        reference_price_rule: exchange_types::ReferencePriceRule::FOR_NEW_LISTINGS,
        phase: None,
        hidden_min_notional: None,
    }))
}

fn place(n: u64, account: u64, side: Side, price: i64) -> Command {
    Command::Place(Place {
        account,
        client_order_id: ClientOrderId::new(&format!("o{n}")).unwrap(),
        symbol: sym(),
        side,
        order_type: OrderType::Limit,
        price: Some(Dec::new(price, 0)),
        qty: Dec::new(1, 0),
        tif: TimeInForce::Gtc,
        post_only: false,
        stp: SelfTradePrevention::Decrement,
        ext: None,
    })
}

fn commands() -> Vec<Command> {
    let mut commands = vec![
        listing(),
        // 100.07 on a 0.05 tick: the core keeps 100.05.
        Command::SetInstrumentRules(Box::new(SetInstrumentRules {
            symbol: sym(),
            tick_size: Some(Dec::new(5, 2)),
            lot_size: None,
            min_qty: None,
            max_qty: None,
            min_notional: None,
            maker_fee_bps: None,
            taker_fee_bps: None,
            collar_bps: None,
            static_band_bps: None,
            dynamic_band_bps: None,
            volatility_auction_ns: None,
            hidden_min_notional: None,
        })),
        Command::SetReferencePrice {
            symbol: sym(),
            price: Dec::new(9_010, 2),
        },
    ];
    for account in 1..=2 {
        for asset in ["SAP", "EUR"] {
            commands.push(Command::Deposit(Transfer {
                account,
                asset: AssetCode::new(asset).unwrap(),
                amount: Dec::new(1_000, 0),
            }));
        }
    }
    commands.extend([place(1, 1, Side::Buy, 95), place(2, 2, Side::Sell, 95)]);
    commands
}

fn status_of(projection: &Projection) -> MarketStatus {
    projection.instrument(0).unwrap().status
}

#[test]
fn the_projection_holds_the_cores_reference_after_every_command() {
    let mut engine = Engine::new();
    let mut sequences = MarketSequences::default();
    let mut projection = Projection::default();
    let mut told = Vec::new();
    for (index, command) in (1u64..).zip(commands()) {
        let mut events = Vec::new();
        engine.apply(&Stamped { ts: index, command }, &mut events);
        sequences.record(index, &events);
        let mut out = Vec::new();
        projection.apply(index, &events, &mut out);
        told.extend(out.into_iter().filter_map(|u| match u {
            Update::MarketStatus(s) => Some(s),
            _ => None,
        }));
        let core = engine.instruments()[0].reference_price;
        assert_eq!(
            status_of(&projection).reference_price,
            core,
            "entry {index}"
        );
    }
    // The trade at 95 is the reference now.
    assert_eq!(status_of(&projection).reference_price, Some(9_500_000_000));

    // The operator's change, alone among these, is a status message.
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0].change, StatusChange::ReferencePrice);
    assert_eq!(told[0].sequence, sequences.get("SAP-EUR").status);
    assert_eq!(told[0].sequence, 1);
    let message: Value = serde_json::from_str(&json::status(&told[0])).unwrap();
    assert_eq!(message["reference_price"], "90.1");
    assert_eq!(message["phase"], "continuous");
}
