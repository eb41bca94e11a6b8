//! The extremes of every `u64` the log carries (ids a client named in a
//! refused command, accounts and balances up to 2^64 - 1) are written and
//! read back exactly, on both backends.

use exchange_core::Engine;

use crate::tests::{apply_lines, on_both, write_in_batches, DAY};
use crate::{OrderFilter, Store};

const TOP: u64 = u64::MAX;
const HALF: u64 = 1 << 63;
/// 2^63 - 1 units: the core's largest supply of an asset (a second
/// deposit is refused, `amount_overflow`).
const MAX_SUPPLY: &str = "92233720368.54775807";

fn lines() -> Vec<String> {
    let mut lines = vec![concat!(
        r#"{"cmd":"add_instrument","symbol":"BTC-USD","base":"BTC","quote":"USD","#,
        r#""tick_size":"0.01","lot_size":"0.0001","maker_fee_bps":0,"taker_fee_bps":0}"#,
    )
    .to_string()];
    for _ in 0..2 {
        lines.push(format!(
            r#"{{"cmd":"deposit","account":{TOP},"asset":"USD","amount":"{MAX_SUPPLY}"}}"#
        ));
    }
    lines.push(format!(
        r#"{{"cmd":"deposit","account":{HALF},"asset":"BTC","amount":"10"}}"#
    ));
    lines.push(format!(
        concat!(
            r#"{{"cmd":"place","account":{HALF},"client_order_id":"s","symbol":"BTC-USD","#,
            r#""side":"sell","price":"100","qty":"1"}}"#,
        ),
        HALF = HALF,
    ));
    lines.push(format!(
        concat!(
            r#"{{"cmd":"place","account":{TOP},"client_order_id":"b","symbol":"BTC-USD","#,
            r#""side":"buy","price":"100","qty":"1"}}"#,
        ),
        TOP = TOP,
    ));
    // Refused: order ids that name nothing, at both extremes.
    for order_id in [HALF, TOP, 0, HALF - 1] {
        lines.push(format!(
            r#"{{"cmd":"cancel","account":{TOP},"order_id":{order_id}}}"#
        ));
        lines.push(format!(
            r#"{{"cmd":"replace","account":{HALF},"order_id":{order_id},"qty":"1"}}"#
        ));
    }
    lines
}

#[test]
fn the_extremes_of_every_id_and_amount_round_trip() {
    on_both("the_extremes_round_trip", |target| {
        let mut engine = Engine::new();
        let entries = apply_lines(&mut engine, &lines(), DAY / 100);
        let mut store = Store::open(target).expect("open");
        let position = write_in_batches(&mut store, &entries, 3);
        assert_eq!(position.log_index, entries.len() as u64);

        let audit = store.audit(0, u64::MAX).expect("audit");
        let named: Vec<(Option<u64>, Option<u64>)> = audit
            .iter()
            .filter(|row| row.outcome != "accepted")
            .map(|row| (row.account, row.order_id))
            .collect();
        for order_id in [HALF, TOP, 0, HALF - 1] {
            assert!(named.contains(&(Some(TOP), Some(order_id))), "{named:?}");
            assert!(named.contains(&(Some(HALF), Some(order_id))), "{named:?}");
        }

        let bought = store
            .orders(TOP, OrderFilter::All, None, 10)
            .expect("orders");
        assert_eq!(bought.len(), 1, "{bought:?}");
        assert_eq!(
            (bought[0].account, bought[0].status.as_str()),
            (TOP, "filled")
        );
        let fills = store.recent_fills(HALF, None, 10).expect("fills");
        assert_eq!(fills.len(), 1, "{fills:?}");
        assert_eq!(fills[0].account, HALF);

        let balances = store.balances(Some(TOP)).expect("balances");
        let usd = balances.iter().find(|b| b.asset == "USD").expect("USD");
        // The whole supply deposited, 100 USD spent.
        assert_eq!(usd.total, (HALF - 1) - 100 * 100_000_000);
        let ledger = store.ledger(Some(TOP), 0, u64::MAX).expect("ledger");
        assert_eq!(ledger.first().map(|row| row.account), Some(TOP));

        // A second connection reads the same.
        drop(store);
        let mut again = Store::open(target).expect("reopen");
        assert_eq!(again.audit(0, u64::MAX).expect("audit"), audit);
    });
}

#[test]
fn a_dead_letter_skips_its_entry_and_is_kept() {
    on_both("a_dead_letter_skips_its_entry", |target| {
        let mut engine = Engine::new();
        let entries = apply_lines(&mut engine, &lines(), DAY / 100);
        let mut store = Store::open(target).expect("open");
        write_in_batches(&mut store, &entries[..2], 2);
        // Only the entry after the position can be skipped.
        let gap = store.dead_letter(&entries[3].record(), "not next");
        assert!(matches!(gap, Err(crate::StoreError::Gap { .. })), "{gap:?}");
        let skipped = store
            .dead_letter(&entries[2].record(), "refused by the test")
            .expect("dead letter");
        assert_eq!(skipped.log_index, entries[2].index);
        let position = write_in_batches(&mut store, &entries[3..], 4);
        assert_eq!(position.log_index, entries.len() as u64);

        drop(store);
        let mut again = Store::open(target).expect("reopen");
        assert_eq!(again.position(), position);
        assert_eq!(again.dead_letter_count().expect("count"), 1);
        let letters = again.dead_letters().expect("dead letters");
        assert_eq!(letters.len(), 1);
        assert_eq!(
            (letters[0].log_index, letters[0].command.as_str()),
            (entries[2].index, entries[2].command)
        );
        assert_eq!(letters[0].error, "refused by the test");
        // The skipped entry has no audit row; those around it have.
        let audit = again.audit(0, u64::MAX).expect("audit");
        assert_eq!(audit.len(), entries.len() - 1);
        assert!(audit.iter().all(|row| row.log_index != entries[2].index));
    });
}
