//! The reference price on the `status` channel against the real core: the
//! projection folds it from the events alone (the listing's, a new tick
//! size's rounding, the operator's, each trade's) and must hold the
//! core's value after every command; the operator's change is a status
//! message numbered in the status sequence the replicated state counts.

use exchange_core::Engine;
use exchange_marketdata::{json, MarketSequences, MarketStatus, Projection, StatusChange, Update};
use exchange_testkit::engine::{
    asset, btc_usd, cmd, dec, deposit, limit, rules, set_reference, set_rules, sym,
};
use exchange_types::{AddInstrument, Command, Place, SetInstrumentRules, Side, Stamped};
use serde_json::Value;

fn commands() -> Vec<Command> {
    let listing = AddInstrument {
        symbol: sym("SAP-EUR"),
        base: asset("SAP"),
        quote: asset("EUR"),
        lot_size: dec("1"),
        reference_price: Some(dec("100.07")),
        maker_fee_bps: 0,
        taker_fee_bps: 0,
        ..btc_usd()
    };
    let mut commands = vec![
        Command::AddInstrument(Box::new(listing)),
        // 100.07 on a 0.05 tick: the core keeps 100.05.
        set_rules(SetInstrumentRules {
            tick_size: Some(dec("0.05")),
            ..rules("SAP-EUR")
        }),
        set_reference("SAP-EUR", "90.10"),
    ];
    for account in 1..=2 {
        for code in ["SAP", "EUR"] {
            commands.push(deposit(account, code, "1000"));
        }
    }
    for (account, side) in [(1, Side::Buy), (2, Side::Sell)] {
        let id = format!("o{account}");
        commands.push(cmd(Place {
            symbol: sym("SAP-EUR"),
            ..limit(account, &id, side, "95", "1")
        }));
    }
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
