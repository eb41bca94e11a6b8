//! The workload is what docs/benchmarking.md says it is: reproducible from its
//! seed, in the published mix, with a book that stays put, and writable
//! in the format the codec reads.

use exchange_core::Engine;
use exchange_types::Command;

use super::generator::{
    generate, Spec, Workload, CANCEL_PPM, GTC_PPM, HIDDEN_PPM, ICEBERG_PPM, IF_TOUCHED_PPM,
    IOC_PPM, MARKET_TO_LIMIT_PPM, MIDPOINT_PPM, MIN_QTY_PPM, RACE_PPM, STOP_PPM,
};
#[cfg(feature = "peer-books")]
use super::peer::lobster::Lobster;
#[cfg(feature = "peer-books")]
use super::peer::orderbook_rs::OrderbookRs;
#[cfg(feature = "peer-books")]
use super::peer::PeerOp;
use super::stream::Prepared;
#[cfg(feature = "peer-books")]
use super::timing::run_setup;
use exchange_codec::encode_command_into as encode_command;

fn small(seed: u64) -> Prepared {
    let spec = Spec {
        ops: 40_000,
        seed,
        accounts: 100,
        levels: 100,
        workload: Workload::Standard,
    };
    generate(&spec, true, false).expect("generate")
}

#[test]
fn the_mixed_workload_adds_stops_icebergs_new_order_types_and_requests_racing_fills() {
    let spec = Spec {
        ops: 40_000,
        seed: 3,
        accounts: 100,
        levels: 100,
        workload: Workload::Mix,
    };
    let p = generate(&spec, true, false).expect("generate");
    let stops = p
        .timed
        .iter()
        .filter(|s| {
            matches!(&s.command, Command::Place(p)
                if p.ext().stop_price.is_some() && !p.order_type.is_if_touched())
        })
        .count();
    let icebergs = p
        .timed
        .iter()
        .filter(|s| matches!(&s.command, Command::Place(p) if p.ext().display_qty.is_some()))
        .count();
    let count = |pick: &dyn Fn(&exchange_types::Place) -> bool| {
        p.timed
            .iter()
            .filter(|s| matches!(&s.command, Command::Place(p) if pick(p)))
            .count()
    };
    let to_limit = count(&|p| p.order_type == exchange_types::OrderType::MarketToLimit);
    let is_midpoint =
        |p: &exchange_types::Place| p.order_type == exchange_types::OrderType::Midpoint;
    let min_qty = count(&|p| p.ext().min_qty.is_some() && !is_midpoint(p));
    let midpoint = count(&is_midpoint);
    let hidden = count(&|p| p.ext().hidden);
    let if_touched = count(&|p| p.order_type.is_if_touched());
    let share = |n: usize| n as f64 / 40_000.0;
    let shares = [
        (to_limit, MARKET_TO_LIMIT_PPM),
        (min_qty, MIN_QTY_PPM),
        (hidden, HIDDEN_PPM),
        (if_touched, IF_TOUCHED_PPM),
        (midpoint, MIDPOINT_PPM),
    ];
    for (n, ppm) in shares {
        assert!(
            (share(n) - ppm as f64 / 1e6).abs() < 0.004,
            "{n} of {ppm} ppm"
        );
    }
    assert!(
        (share(stops) - STOP_PPM as f64 / 1e6).abs() < 0.006,
        "{stops}"
    );
    assert!(
        (share(icebergs) - ICEBERG_PPM as f64 / 1e6).abs() < 0.006,
        "{icebergs}"
    );
    // Hidden orders are worth the listing's minimum: few are refused.
    let too_small = p.stats.rejected.get("hidden_below_minimum").copied();
    let too_small = too_small.unwrap_or(0);
    assert!(too_small < hidden as u64 / 10, "{too_small} of {hidden}");
    assert_eq!(p.stats.rejected.get("hidden_not_offered"), None);
    // Requests naming a filled order are refused as too late.
    let too_late = p.stats.rejected.get("order_not_open").copied().unwrap_or(0);
    assert!(
        share(too_late as usize) > RACE_PPM as f64 / 1e6 / 2.0,
        "{too_late}"
    );
    // The same seed gives the same stream, and the standard one is not it.
    let again = generate(&spec, true, false).expect("generate");
    assert_eq!(p.timed, again.timed);
    assert_ne!(p.timed, small(3).timed);
}

#[test]
fn bench_generator_is_deterministic_for_a_seed() {
    let a = small(7);
    let b = small(7);
    assert_eq!(a.setup, b.setup);
    assert_eq!(a.timed, b.timed);
    assert_eq!(a.timed_peer, b.timed_peer);
    assert_eq!(a.final_hash, b.final_hash);
    assert_eq!(a.stats, b.stats);
    let c = small(8);
    assert_ne!(a.timed, c.timed, "another seed gives another stream");
}

#[test]
fn bench_generator_produces_the_published_mix() {
    let p = small(11);
    let s = &p.stats;
    assert_eq!(s.total(), 40_000);
    let near = |count: u64, ppm: u64, tolerance: f64| {
        let share = s.share(count);
        let want = ppm as f64 / 1e6;
        assert!(
            (share - want).abs() <= tolerance,
            "share {share:.4}, want {want:.4} ± {tolerance}"
        );
    };
    near(s.gtc, GTC_PPM, 0.01);
    near(s.ioc, IOC_PPM, 0.006);
    near(s.cancel, CANCEL_PPM, 0.008);
    near(s.replace, 1_000_000 - GTC_PPM - IOC_PPM - CANCEL_PPM, 0.015);
    assert_eq!(s.fok + s.market + s.other, 0);
    let traded = s.share(s.traded);
    assert!(
        (0.04..=0.08).contains(&traded),
        "traded fraction {traded:.4}"
    );
    assert!(
        s.share(s.rejected_total()) < 0.005,
        "rejects {:?}",
        s.rejected
    );
    let (bids, asks, open) = s.mean_depth();
    for levels in [bids, asks] {
        assert!(
            (70.0..=130.0).contains(&levels),
            "mean levels per side {levels}"
        );
    }
    assert!(open > 200.0, "mean open orders {open}");
}

#[test]
fn bench_timed_run_from_the_base_reaches_the_scratch_state() {
    let p = small(3);
    let mut engine: Engine = p.base.clone();
    let mut events = Vec::new();
    for stamped in &p.timed {
        engine.apply(stamped, &mut events);
        events.clear();
    }
    assert_eq!(engine.state_hash(), p.final_hash);
    assert!(p
        .setup
        .iter()
        .any(|s| matches!(s.command, Command::AddInstrument(_))));
}

#[test]
fn bench_written_commands_decode_to_the_same_commands() {
    let p = small(5);
    let mut line = Vec::new();
    for stamped in p
        .setup
        .iter()
        .take(3_000)
        .chain(p.timed.iter().take(20_000))
    {
        line.clear();
        encode_command(stamped, &mut line);
        let text = std::str::from_utf8(&line).expect("UTF-8");
        let decoded = exchange_codec::decode_command(text).expect("decodes");
        assert_eq!(&decoded, stamped, "line {text}");
    }
}

/// The same commands give the same events and state hash whether the log
/// held them as JSON lines (what `exchange replay` reads) or binary: the
/// mixed workload's stops, icebergs, funds orders and racing replaces
/// included.
#[test]
fn a_binary_log_and_a_json_replay_give_the_same_events_and_state() {
    let spec = Spec {
        ops: 40_000,
        seed: 11,
        accounts: 100,
        levels: 100,
        workload: Workload::Mix,
    };
    let p = generate(&spec, false, false).expect("generate");
    let (mut from_json, mut from_binary) = (Engine::new(), Engine::new());
    let (mut json_events, mut binary_events) = (Vec::new(), Vec::new());
    let (mut line, mut message) = (Vec::new(), Vec::new());
    for stamped in p.setup.iter().chain(&p.timed) {
        line.clear();
        encode_command(stamped, &mut line);
        let text = std::str::from_utf8(&line).expect("UTF-8");
        from_json.apply(
            &exchange_codec::decode_command(text).expect("a JSON line"),
            &mut json_events,
        );
        message.clear();
        exchange_codec::binary::encode_command_into(stamped, &mut message);
        from_binary.apply(
            &exchange_codec::binary::decode_command(&message).expect("a binary message"),
            &mut binary_events,
        );
        assert_eq!(json_events, binary_events, "{text}");
        json_events.clear();
        binary_events.clear();
    }
    assert_eq!(from_json.state_hash(), from_binary.state_hash());
    assert_eq!(from_binary.state_hash(), p.final_hash);
}

#[cfg(feature = "peer-books")]
#[test]
fn bench_peers_follow_the_core_book() {
    let p = small(9);
    assert_eq!(p.timed_peer.len(), p.timed.len());
    let noops = p
        .timed_peer
        .iter()
        .filter(|op| **op == PeerOp::Noop)
        .count() as u64;
    assert_eq!(
        noops,
        p.stats.rejected_total(),
        "only rejected commands do nothing"
    );
    assert!(p.timed_peer.iter().any(|op| matches!(
        op,
        PeerOp::Replace {
            keeps_priority: true,
            ..
        }
    )));

    let mut lobster = Lobster::new();
    run_setup(&mut lobster, &p.setup_peer);
    run_setup(&mut lobster, &p.timed_peer);
    let summary = lobster.finish();
    let close = |theirs: u64| theirs.abs_diff(p.stats.traded) * 20 <= p.stats.traded;
    assert!(
        close(summary.traded_ops),
        "lobster traded {} vs ours {}",
        summary.traded_ops,
        p.stats.traded
    );

    let mut book = OrderbookRs::new();
    run_setup(&mut book, &p.setup_peer);
    run_setup(&mut book, &p.timed_peer);
    let summary = book.finish();
    assert_eq!(summary.errors, 0);
    assert!(
        close(summary.traded_ops),
        "orderbook-rs traded {} vs ours {}",
        summary.traded_ops,
        p.stats.traded
    );
}
