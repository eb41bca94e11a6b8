//! An entry's audit row: what it was and what came of it.

use exchange_types::{order_updates, Change, ClientOrderId, Event, EventKind, Symbol};

use crate::batch::{Row, Table};
use crate::db::Param;
use crate::writer::{int, EntryRecord};
use crate::StoreError;

#[derive(Clone, Copy, Debug)]
pub(crate) struct NewAudit<'e> {
    pub log_index: i64,
    pub ts: i64,
    pub command: &'e str,
    pub account: Option<i64>,
    pub outcome: &'static str,
    pub reason: Option<&'static str>,
    pub reason_code: Option<i64>,
    pub order_id: Option<i64>,
    pub client_order_id: Option<ClientOrderId>,
    pub symbol: Option<Symbol>,
    pub trades: i64,
    pub first_seq: Option<i64>,
    pub last_seq: Option<i64>,
    pub events: i64,
}

impl Row for NewAudit<'_> {
    const TABLE: Table = Table {
        name: "audit",
        columns: &[
            "log_index",
            "ts",
            "command",
            "account",
            "outcome",
            "reason",
            "reason_code",
            "order_id",
            "client_order_id",
            "symbol",
            "trades",
            "first_seq",
            "last_seq",
            "events",
        ],
    };

    fn params<'a>(&'a self, out: &mut Vec<Param<'a>>) {
        out.extend([
            Param::Int(self.log_index),
            Param::Int(self.ts),
            Param::Text(self.command),
            self.account.into(),
            Param::Text(self.outcome),
            self.reason.into(),
            self.reason_code.into(),
            self.order_id.into(),
            self.client_order_id.as_ref().map(|c| c.as_str()).into(),
            self.symbol.as_ref().map(|s| s.as_str()).into(),
            Param::Int(self.trades),
            self.first_seq.into(),
            self.last_seq.into(),
            Param::Int(self.events),
        ]);
    }
}

impl<'e> NewAudit<'e> {
    /// The entry's audit row: what it was and what came of it.
    pub(crate) fn of(entry: &EntryRecord<'e>) -> Result<NewAudit<'e>, StoreError> {
        let mut outcome = "accepted";
        let (mut reason, mut reason_code) = (None, None);
        let (mut order_id, mut client_order_id, mut symbol) = (None, None, None);
        let mut trades = 0i64;
        for event in entry.events {
            match &event.kind {
                EventKind::Rejected(rejected) => {
                    outcome = "rejected";
                    reason = Some(rejected.reason.as_str());
                    reason_code = Some(i64::from(rejected.reason.code()));
                    order_id = order_id.or(rejected.order_id);
                    client_order_id = client_order_id.or(rejected.client_order_id);
                    symbol = symbol.or(rejected.symbol);
                }
                EventKind::Trade(_) => trades += 1,
                EventKind::InstrumentAdded(e) => symbol = symbol.or(Some(e.symbol)),
                EventKind::Status(e) => symbol = symbol.or(Some(e.symbol)),
                EventKind::MassCanceled(e) => symbol = symbol.or(e.symbol),
                EventKind::Mmp(e) => symbol = symbol.or(Some(e.symbol)),
                EventKind::InstrumentRules(e) => symbol = symbol.or(Some(e.symbol)),
                EventKind::ReferencePrice(e) => symbol = symbol.or(Some(e.symbol)),
                _ => {}
            }
            // The order the entry was about: the first one it placed,
            // canceled or replaced.
            let named = order_updates(&event.kind).find(|u| {
                matches!(
                    u.change,
                    Change::New(_) | Change::Canceled(_) | Change::Replaced(_)
                )
            });
            if let (None, Some(update)) = (order_id, named) {
                order_id = Some(update.order_id);
                client_order_id = update.client_order_id().copied();
                symbol = Some(*update.symbol());
            }
        }
        let seq = |event: Option<&Event>| event.map(|e| int(e.seq, "event sequence")).transpose();
        Ok(NewAudit {
            log_index: int(entry.index, "log index")?,
            ts: int(entry.ts, "timestamp")?,
            command: entry.command,
            account: entry.account.map(|a| int(a, "account")).transpose()?,
            outcome,
            reason,
            reason_code,
            order_id: order_id.map(|o| int(o, "order id")).transpose()?,
            client_order_id,
            symbol,
            trades,
            first_seq: seq(entry.events.first())?,
            last_seq: seq(entry.events.last())?,
            events: int(entry.events.len() as u64, "event count")?,
        })
    }
}
