//! The ledger lists changes of a total, not holds: a hold moves only
//! `balances.available`, a trade's and a deposit's changes are ledger rows
//! with their exact deltas. Run on SQLite and on PostgreSQL.

use exchange_core::Engine;
use exchange_types::{Event, EventKind};

use crate::tests::{on_both, Entry};
use crate::{EntryRecord, Store};

/// What one `balance` event did to its account's total.
pub(crate) struct BalanceChange<'a> {
    pub entry: &'a Entry,
    pub event: &'a Event,
    pub account: u64,
    pub asset: exchange_types::AssetCode,
    pub total: u64,
    pub available: u64,
    /// The change of the total since the account's previous event in the
    /// asset (0: a hold or its release).
    pub delta: i64,
}

/// Every `balance` event of `entries`, in order, with its change of the
/// total, worked out from the events alone (independently of the writer).
pub(crate) fn balance_changes(entries: &[Entry]) -> Vec<BalanceChange<'_>> {
    let mut totals = std::collections::HashMap::new();
    let mut changes = Vec::new();
    for entry in entries {
        for event in &entry.events {
            if let EventKind::Balance(b) = &event.kind {
                let before = totals.insert((b.account, b.asset), b.total).unwrap_or(0);
                changes.push(BalanceChange {
                    entry,
                    event,
                    account: b.account,
                    asset: b.asset,
                    total: b.total,
                    available: b.available,
                    delta: b.total as i64 - before as i64,
                });
            }
        }
    }
    changes
}

impl BalanceChange<'_> {
    /// The ledger row a writer that also recorded holds would have written
    /// (columns as in the `ledger` table).
    pub(crate) fn ledger_row(&self) -> Vec<crate::Val> {
        use crate::Val::Int;
        vec![
            Int(self.event.seq as i64),
            Int(self.entry.index as i64),
            Int(self.event.ts as i64),
            Int(self.account as i64),
            self.asset.as_str().into(),
            Int(self.total as i64),
            Int(self.available as i64),
            Int(self.delta),
            self.entry.command.into(),
        ]
    }
}

/// One entry per command line, applied by a fresh engine in order.
fn entries_of(lines: &[&str]) -> Vec<Entry> {
    crate::tests::apply_lines(&mut Engine::new(), lines, 1)
}

#[test]
fn a_hold_updates_balances_only_and_a_trade_adds_its_changes_to_the_ledger() {
    on_both("a_hold_updates_balances_only", |target| {
        const UNIT: u64 = 100_000_000;
        let entries = entries_of(&[
            concat!(
                r#"{"cmd":"add_instrument","symbol":"BTC-USD","base":"BTC","quote":"USD","#,
                r#""tick_size":"0.01","lot_size":"0.0001","maker_fee_bps":-1,"taker_fee_bps":5}"#,
            ),
            r#"{"cmd":"deposit","account":1,"asset":"USD","amount":"1000"}"#,
            r#"{"cmd":"deposit","account":2,"asset":"BTC","amount":"10"}"#,
            concat!(
                r#"{"cmd":"place","account":1,"client_order_id":"a","symbol":"BTC-USD","#,
                r#""side":"buy","price":"100","qty":"2"}"#,
            ),
            r#"{"cmd":"cancel","account":1,"client_order_id":"a"}"#,
            concat!(
                r#"{"cmd":"place","account":1,"client_order_id":"b","symbol":"BTC-USD","#,
                r#""side":"buy","price":"100","qty":"2"}"#,
            ),
            concat!(
                r#"{"cmd":"place","account":2,"client_order_id":"c","symbol":"BTC-USD","#,
                r#""side":"sell","price":"100","qty":"2"}"#,
            ),
        ]);
        let mut store = Store::open(target).expect("open");
        let records: Vec<EntryRecord<'_>> = entries.iter().map(Entry::record).collect();
        let balance = |store: &mut Store, account: u64, asset: &str| {
            let rows = store.balances(Some(account)).expect("balances");
            let row = rows.iter().find(|b| b.asset == asset).expect("a balance");
            (row.total, row.available)
        };

        // The instrument and the deposits: a ledger row per deposit.
        store.write(&records[..3]).expect("write");
        assert_eq!(store.ledger(None, 0, u64::MAX).expect("ledger").len(), 2);
        assert_eq!(balance(&mut store, 1, "USD"), (1000 * UNIT, 1000 * UNIT));

        // A buy holds its notional and the largest fee (200 + 0.1 USD),
        // its cancel releases it: `balances` follows, the ledger does not.
        store.write(&records[3..4]).expect("write");
        assert_eq!(balance(&mut store, 1, "USD"), (1000 * UNIT, 79_990_000_000));
        store.write(&records[4..5]).expect("write");
        assert_eq!(balance(&mut store, 1, "USD"), (1000 * UNIT, 1000 * UNIT));
        assert_eq!(store.ledger(None, 0, u64::MAX).expect("ledger").len(), 2);

        // The buy rests again; the sell holds its 2 BTC and trades with it
        // at once: 200 USD for 2 BTC, the maker (buyer) gets a 0.02 USD
        // rebate, the taker (seller) pays 0.1 USD, the fee account keeps
        // the 0.08 between them. The sell's hold has no row.
        store.write(&records[5..]).expect("write");
        let trade: Vec<(u64, i64, u64, String)> = store
            .ledger(None, 0, u64::MAX)
            .expect("ledger")
            .into_iter()
            .skip(2)
            .map(|l| {
                assert_eq!((l.log_index, l.cause.as_str()), (7, "place"));
                (l.account, l.delta, l.total, l.asset)
            })
            .collect();
        let expected = [
            (1, -19_998_000_000, 80_002_000_000, "USD"),
            (1, 2 * UNIT as i64, 2 * UNIT, "BTC"),
            (2, -2 * UNIT as i64, 8 * UNIT, "BTC"),
            (2, 19_990_000_000, 19_990_000_000, "USD"),
            (0, 8_000_000, 8_000_000, "USD"),
        ]
        .map(|(account, delta, total, asset)| (account, delta, total, asset.to_string()));
        assert_eq!(trade, expected);
        assert_eq!(
            balance(&mut store, 1, "USD"),
            (80_002_000_000, 80_002_000_000)
        );
        assert_eq!(balance(&mut store, 2, "BTC"), (8 * UNIT, 8 * UNIT));
        // The account's own ledger: its deposit and its side of the trade.
        let one = store.ledger(Some(1), 0, u64::MAX).expect("ledger");
        let deltas: Vec<i64> = one.iter().map(|l| l.delta).collect();
        assert_eq!(
            deltas,
            [1000 * UNIT as i64, -19_998_000_000, 2 * UNIT as i64]
        );
    });
}

#[test]
fn an_internal_transfer_is_two_ledger_rows_that_sum_to_zero() {
    const UNIT: i64 = 100_000_000;
    let entries = entries_of(&[
        concat!(
            r#"{"cmd":"add_instrument","symbol":"BTC-USD","base":"BTC","quote":"USD","#,
            r#""tick_size":"0.01","lot_size":"0.0001","maker_fee_bps":-1,"taker_fee_bps":5}"#,
        ),
        r#"{"cmd":"deposit","account":1,"asset":"USD","amount":"1000"}"#,
        r#"{"cmd":"link_sub_account","owner":1,"sub":2}"#,
        r#"{"cmd":"internal_transfer","from":1,"to":2,"asset":"USD","amount":"250"}"#,
    ]);
    let dir = tempfile::tempdir().expect("temp dir");
    let target = crate::Target::Sqlite(dir.path().join("s.sqlite"));
    let mut store = Store::open(&target).expect("open");
    let records: Vec<EntryRecord<'_>> = entries.iter().map(Entry::record).collect();
    store.write(&records).expect("write");
    let moved: Vec<(u64, i64, String)> = store
        .ledger(None, 0, u64::MAX)
        .expect("ledger")
        .into_iter()
        .filter(|l| l.cause == "internal_transfer")
        .map(|l| (l.account, l.delta, l.asset))
        .collect();
    assert_eq!(
        moved,
        vec![
            (1, -250 * UNIT, "USD".to_string()),
            (2, 250 * UNIT, "USD".to_string())
        ]
    );
}
