//! Determinism and snapshots: the same stream gives the same events and
//! state; a snapshot restored anywhere continues exactly like the engine
//! it was taken from; and restore refuses damaged bytes with an error,
//! never a panic and never an engine that breaks its own invariants.

use std::sync::OnceLock;

use exchange_core::{Engine, SnapshotError};
use exchange_testkit::engine::*;
use exchange_types::*;
use proptest::collection::vec as vec_of;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

fn apply(engine: &mut Engine, commands: &[Command], first_index: usize) -> Vec<Vec<Event>> {
    apply_hinted(engine, commands, first_index, false)
}

/// With `hinted`, each command's successor is given to
/// `Engine::prefetch` first, as the server's core thread does.
fn apply_hinted(
    engine: &mut Engine,
    commands: &[Command],
    first_index: usize,
    hinted: bool,
) -> Vec<Vec<Event>> {
    let stamp = |offset: usize, command: &Command| Stamped {
        ts: (first_index + offset) as u64 + 1,
        command: command.clone(),
    };
    (0..commands.len())
        .map(|offset| {
            if let (true, Some(next)) = (hinted, commands.get(offset + 1)) {
                engine.prefetch(&stamp(offset + 1, next));
            }
            let mut out = Vec::new();
            engine.apply(&stamp(offset, &commands[offset]), &mut out);
            out
        })
        .collect()
}

proptest! {
    #![proptest_config(proptest_config(64))]

    /// The second engine is also given the prefetch hints, which must
    /// change nothing.
    #[test]
    fn the_same_stream_gives_the_same_events_and_state(
        commands in command_stream(Profile::Scarce)
    ) {
        let (mut a, mut b) = (Engine::new(), Engine::new());
        let events_a = apply(&mut a, &commands, 0);
        let events_b = apply_hinted(&mut b, &commands, 0, true);
        prop_assert_eq!(&events_a, &events_b);
        prop_assert_eq!(format!("{events_a:?}"), format!("{events_b:?}"));
        prop_assert_eq!(a.snapshot(), b.snapshot());
        prop_assert_eq!(a.state_hash(), b.state_hash());
    }

    #[test]
    fn a_restored_snapshot_continues_like_the_original(
        commands in command_stream(Profile::Scarce),
        cut in any::<Index>(),
    ) {
        let cut = cut.index(commands.len() + 1);
        let mut whole = Engine::new();
        let uninterrupted = apply(&mut whole, &commands, 0);

        let mut before = Engine::new();
        apply(&mut before, &commands[..cut], 0);
        let bytes = before.snapshot();
        let mut restored = match Engine::restore(&bytes) {
            Ok(engine) => engine,
            Err(e) => {
                return Err(TestCaseError::fail(format!("own snapshot refused at {cut}: {e}")))
            }
        };
        prop_assert_eq!(restored.audit(), Ok(()));
        prop_assert_eq!(restored.snapshot(), bytes);
        prop_assert_eq!(restored.state_hash(), before.state_hash());

        let continued = apply(&mut restored, &commands[cut..], cut);
        prop_assert_eq!(&continued[..], &uninterrupted[cut..]);
        prop_assert_eq!(format!("{continued:?}"), format!("{:?}", &uninterrupted[cut..]));
        prop_assert_eq!(restored.state_hash(), whole.state_hash());
    }
}

/// Snapshots of a few random streams' final states: instruments, balances,
/// resting orders and recently closed ids all present.
fn sample_snapshots() -> &'static [Vec<u8>] {
    static SNAPSHOTS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SNAPSHOTS.get_or_init(|| {
        let mut runner = TestRunner::deterministic();
        let strategy = command_stream(Profile::Generous);
        (0..4)
            .map(|_| {
                let commands = strategy.new_tree(&mut runner).expect("stream").current();
                let mut engine = Engine::new();
                apply(&mut engine, &commands, 0);
                assert!(
                    engine.open_order_count() > 0,
                    "sample state has no resting orders"
                );
                engine.snapshot()
            })
            .collect()
    })
}

/// The one acceptable outcome of restoring arbitrary bytes: an error, or an
/// engine that passes its own audit.
fn restore_is_safe(bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(engine) = Engine::restore(bytes) {
        if let Err(violation) = engine.audit() {
            return Err(TestCaseError::fail(format!(
                "restore accepted a broken state: {violation}"
            )));
        }
    }
    Ok(())
}

fn magic() -> Vec<u8> {
    Engine::new().snapshot()[..8].to_vec()
}

proptest! {
    #![proptest_config(proptest_config(512))]

    #[test]
    fn random_bytes_are_refused(bytes in vec_of(any::<u8>(), 0..256)) {
        prop_assert!(Engine::restore(&bytes).is_err());
    }

    #[test]
    fn random_bytes_after_the_magic_are_safe(tail in vec_of(any::<u8>(), 0..512)) {
        let mut bytes = magic();
        bytes.extend(tail);
        restore_is_safe(&bytes)?;
    }

    #[test]
    fn a_truncated_snapshot_is_refused(which in any::<Index>(), cut in any::<Index>()) {
        let snapshot = which.get(sample_snapshots());
        let cut = cut.index(snapshot.len());
        prop_assert!(Engine::restore(&snapshot[..cut]).is_err());
    }

    #[test]
    fn a_snapshot_with_flipped_bits_is_safe(
        which in any::<Index>(),
        flips in vec_of((any::<Index>(), 0u8..8), 1..4),
    ) {
        let mut bytes = which.get(sample_snapshots()).clone();
        for (at, bit) in flips {
            let at = at.index(bytes.len());
            bytes[at] ^= 1 << bit;
        }
        restore_is_safe(&bytes)?;
    }

    #[test]
    fn a_snapshot_with_overwritten_bytes_is_safe(
        which in any::<Index>(),
        writes in vec_of((any::<Index>(), any::<u8>()), 1..4),
    ) {
        let mut bytes = which.get(sample_snapshots()).clone();
        for (at, value) in writes {
            let at = at.index(bytes.len());
            bytes[at] = value;
        }
        restore_is_safe(&bytes)?;
    }
}

#[test]
fn every_prefix_of_a_snapshot_is_refused_and_so_is_a_longer_one() {
    let snapshot = &sample_snapshots()[0];
    for cut in 0..snapshot.len() {
        assert!(
            Engine::restore(&snapshot[..cut]).is_err(),
            "prefix of {cut} bytes accepted"
        );
    }
    let mut longer = snapshot.clone();
    longer.push(0);
    assert!(Engine::restore(&longer).is_err());
    assert!(Engine::restore(snapshot).is_ok());
}

#[test]
fn garbage_is_refused() {
    for bytes in [&b""[..], b"garbage", b"EXSNAP0", &[0xff; 64][..]] {
        assert!(Engine::restore(bytes).is_err(), "{bytes:?} accepted");
    }
    let mut magic_only = magic();
    assert!(Engine::restore(&magic_only).is_err());
    magic_only.extend([0xff; 64]);
    assert!(Engine::restore(&magic_only).is_err());
}

/// The smallest form of what the flipped-bit properties find: a snapshot
/// whose account holds back funds that no order reserves is restored
/// without complaint, and the engine's own audit then fails.
#[test]
fn restore_refuses_held_funds_that_no_order_explains() {
    let engine = Harness::funded(1).engine;
    let mut bytes = engine.snapshot();
    let usd = units("1000000").to_le_bytes();
    let total_then_available = [usd, usd].concat();
    let at = bytes
        .windows(16)
        .position(|w| w == total_then_available.as_slice())
        .expect("account 1's USD balance in the snapshot")
        + 8;
    bytes[at..at + 8].copy_from_slice(&units("999999").to_le_bytes());
    match Engine::restore(&bytes) {
        Err(SnapshotError::Inconsistent(why)) => assert!(
            why.contains("account 1 asset USD") && why.contains("orders reserve 0"),
            "refused for another reason: {why}"
        ),
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(restored) => panic!(
            "restore accepted total 1000000 USD, available 999999 and no open order: \
             audit says {:?}",
            restored.audit()
        ),
    }
}

/// A balance entry beyond the last listed asset: every field is well formed
/// and the extra balance is zero, so only restore's own checks stand
/// between these bytes and an engine.
#[test]
fn restore_refuses_a_balance_in_an_asset_that_does_not_exist() {
    let engine = Harness::funded(1).engine;
    let bytes = engine.snapshot();
    // Account 1 holds BTC (asset 0) and USD (asset 1): id, count, then
    // (total, available) per asset.
    let btc = units("100").to_le_bytes();
    let usd = units("1000000").to_le_bytes();
    let account = [
        &1u64.to_le_bytes()[..],
        &2u64.to_le_bytes(),
        &btc,
        &btc,
        &usd,
        &usd,
    ]
    .concat();
    let at = bytes
        .windows(account.len())
        .position(|w| w == account.as_slice())
        .expect("account 1 in the snapshot");
    let mut forged = bytes[..at].to_vec();
    forged.extend_from_slice(&1u64.to_le_bytes());
    forged.extend_from_slice(&3u64.to_le_bytes());
    forged.extend_from_slice(&account[16..]);
    forged.extend_from_slice(&[0; 16]);
    forged.extend_from_slice(&bytes[at + account.len()..]);
    let outcome = std::panic::catch_unwind(|| Engine::restore(&forged).map(|e| e.state_hash()));
    match outcome {
        Ok(result) => assert!(
            matches!(result, Err(SnapshotError::Invalid("count"))),
            "a third asset's balance: {result:?}"
        ),
        Err(_) => panic!("restore panicked on a balance in an asset that does not exist"),
    }
}

/// Two resting orders whose quantities add up past `u64::MAX` at one level.
#[test]
fn restore_refuses_a_level_whose_orders_overflow() {
    let mut h = Harness::funded(2);
    h.place(limit(1, "a", Side::Sell, "100", "0.0001"));
    h.place(limit(2, "b", Side::Sell, "100", "0.0001"));
    let mut bytes = h.engine.snapshot();
    // Each order is written as ... price (ticks), qty (lots), filled, ...
    let one_lot_at_100 = [
        10_000u64.to_le_bytes(),
        1u64.to_le_bytes(),
        0u64.to_le_bytes(),
    ]
    .concat();
    let starts: Vec<usize> = (0..bytes.len() - one_lot_at_100.len())
        .filter(|&i| bytes[i..].starts_with(&one_lot_at_100))
        .collect();
    assert_eq!(starts.len(), 2, "both orders in the snapshot");
    for at in starts {
        bytes[at + 8..at + 16].copy_from_slice(&(1u64 << 63).to_le_bytes());
    }
    let outcome = std::panic::catch_unwind(|| Engine::restore(&bytes).map(|e| e.state_hash()));
    match outcome {
        Ok(result) => assert!(
            matches!(result, Err(SnapshotError::Invalid("level overflows"))),
            "2^64 lots at one level: {result:?}"
        ),
        Err(_) => panic!("restore panicked on a level whose quantity overflows"),
    }
}

/// The determinism lints are configured per crate (Clippy reads the
/// clippy.toml beside each crate's manifest), so the three core crates
/// each carry a copy; a ban added to one must reach the others.
#[test]
fn the_core_crates_share_one_lint_configuration() {
    let core = include_str!("../clippy.toml");
    assert!(core.contains("std::time::Instant::now"));
    for (copy, text) in [
        (
            "exchange-types",
            include_str!("../../exchange-types/clippy.toml"),
        ),
        (
            "exchange-codec",
            include_str!("../../exchange-codec/clippy.toml"),
        ),
    ] {
        assert!(
            text == core,
            "crates/{copy}/clippy.toml differs from crates/exchange-core/clippy.toml"
        );
    }
}

/// Two open orders of one account under the same client order id: indexing
/// them would trip the engine's own check that the key is free (a bug when
/// the engine does it), so restore must refuse the bytes first.
#[test]
fn restore_refuses_two_open_orders_with_one_client_id() {
    let mut h = Harness::funded(1);
    h.place(limit(1, "dup-a", Side::Sell, "100", "0.0001"));
    h.place(limit(1, "dup-b", Side::Sell, "101", "0.0001"));
    let mut bytes = h.engine.snapshot();
    let at = bytes
        .windows(5)
        .position(|w| w == b"dup-b")
        .expect("the second client id in the snapshot");
    bytes[at..at + 5].copy_from_slice(b"dup-a");
    let outcome = std::panic::catch_unwind(|| Engine::restore(&bytes).map(|e| e.state_hash()));
    match outcome {
        Ok(result) => assert_eq!(
            result.err(),
            Some(SnapshotError::Invalid("duplicate client order id"))
        ),
        Err(_) => panic!("restore panicked on a client id open twice"),
    }
}

/// A flipped bit that once made a snapshot name an iceberg with no level
/// at its price: restore panicked instead of refusing it (found by
/// `a_snapshot_with_flipped_bits_is_safe`; the byte is the one its
/// `Index(6537200194513357319)` picks).
#[test]
fn an_iceberg_without_its_level_is_refused() {
    let mut bytes = sample_snapshots()[0].clone();
    let at = ((bytes.len() as u128 * 6_537_200_194_513_357_319u128) >> 64) as usize;
    bytes[at] ^= 1 << 2;
    assert!(restore_is_safe(&bytes).is_ok());
}
