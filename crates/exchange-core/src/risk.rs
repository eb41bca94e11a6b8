//! Member risk controls: per-account pre-trade limits, the kill switch
//! (suspension) and market-maker protection (MMP).
//!
//! All of an account's controls live in one `Option<Box<AccountRisk>>`
//! on the account, `None` for an account without any, so an order from
//! such an account pays one test of that option on entry and one per
//! fill, nothing more. The box is dropped again as soon as it holds
//! nothing, which also keeps the snapshot canonical.
//!
//! MMP counts an account's fills on one instrument in a window of log
//! time that opens at the first fill after the previous window ended (or
//! after a reset) and lasts `window_ns`. A fill that takes the window's
//! quantity or count above its threshold trips the protection. The order
//! being matched runs to its end (a fill-or-kill stays all or nothing);
//! then, still within the same command, every open order of each tripped
//! account on that instrument is canceled, and its new orders and
//! replaces there are refused until a reset.

use exchange_types::event;
use exchange_types::limits::{
    MAX_MMP_CONFIGS, MAX_MMP_COUNT, MAX_PRICE_BAND_BPS, MAX_RISK_OPEN_ORDERS,
};
use exchange_types::{
    AccountId, CancelReason, Dec, Event, EventKind, MmpState, RejectReason, SetMmp, SetRiskLimits,
    Symbol,
};

use crate::controls::{AccountRisk, Limits, Mmp};
use crate::engine::{Engine, Subject, FEE_ACCOUNT};
use crate::orders::NIL;

fn mmp_state_set(set: &SetMmp, max_qty: Option<u64>) -> MmpState {
    MmpState::Set {
        window_ns: set.window_ns,
        max_qty,
        max_count: set.max_count,
    }
}

/// A limit amount in units: greater than zero and representable.
fn limit_units(value: Option<Dec>) -> Result<Option<u64>, RejectReason> {
    use exchange_types::decimal::UnitsError;
    value
        .map(|v| {
            v.to_units().map_err(|e| match e {
                UnitsError::Negative | UnitsError::Zero => RejectReason::InvalidRiskLimits,
                UnitsError::TooManyDecimals => RejectReason::TooManyDecimals,
                UnitsError::Overflow => RejectReason::AmountOverflow,
            })
        })
        .transpose()
}

impl Engine {
    fn risk_subject(account: AccountId, symbol: Option<Symbol>) -> Subject {
        Subject {
            account: Some(account),
            symbol,
            ..Subject::default()
        }
    }

    /// The account's risk controls, created empty if it has none.
    fn risk_mut(&mut self, account: u32) -> &mut AccountRisk {
        self.accounts
            .controls_mut(account)
            .get_or_insert_with(Box::default)
    }

    /// Drops an account's risk controls once they hold nothing.
    fn tidy_risk(&mut self, account: u32) {
        let slot = self.accounts.controls_mut(account);
        if slot.as_deref().is_some_and(AccountRisk::is_empty) {
            *slot = None;
        }
    }

    pub(crate) fn set_risk_limits(&mut self, set: &SetRiskLimits, out: &mut Vec<Event>) {
        let checked = (|| {
            if set.account == FEE_ACCOUNT {
                return Err(RejectReason::FeeAccountCannotTrade);
            }
            let limits = Limits {
                max_qty: limit_units(set.max_order_qty)?,
                max_notional: limit_units(set.max_order_notional)?,
                max_open_orders: set.max_open_orders,
                band_bps: set.price_band_bps,
            };
            if limits
                .max_open_orders
                .is_some_and(|n| n == 0 || n > MAX_RISK_OPEN_ORDERS)
                || limits
                    .band_bps
                    .is_some_and(|b| b == 0 || b > MAX_PRICE_BAND_BPS)
            {
                return Err(RejectReason::InvalidRiskLimits);
            }
            let account = self.accounts.get_or_create(set.account)?;
            Ok((account, limits))
        })();
        let (account, limits) = match checked {
            Ok(checked) => checked,
            Err(reason) => {
                let subject = Self::risk_subject(set.account, None);
                return self.reject(out, "set_risk_limits", subject, reason);
            }
        };
        self.risk_mut(account).limits = limits;
        self.tidy_risk(account);
        self.emit(
            out,
            EventKind::RiskLimits(event::RiskLimits {
                account: set.account,
                max_order_qty: limits.max_qty,
                max_order_notional: limits.max_notional,
                max_open_orders: limits.max_open_orders,
                price_band_bps: limits.band_bps,
            }),
        );
    }

    pub(crate) fn set_suspended(&mut self, id: AccountId, suspend: bool, out: &mut Vec<Event>) {
        let command = if suspend { "suspend" } else { "reinstate" };
        let checked = if suspend && id == FEE_ACCOUNT {
            // It cannot trade; a suspension would only say otherwise.
            Err(RejectReason::FeeAccountNotSuspendable)
        } else if suspend {
            self.accounts.get_or_create(id)
        } else {
            self.accounts.index(id).ok_or(RejectReason::UnknownAccount)
        };
        let account = match checked {
            Ok(account) => account,
            Err(reason) => {
                return self.reject(out, command, Self::risk_subject(id, None), reason);
            }
        };
        if self.is_suspended(account) == suspend {
            let subject = Self::risk_subject(id, None);
            return self.reject(out, command, subject, RejectReason::AccountAlreadyInStatus);
        }
        self.risk_mut(account).suspended = suspend;
        self.tidy_risk(account);
        let canceled = if suspend {
            self.cancel_account_orders(account, None, CancelReason::AccountSuspended, out)
        } else {
            0
        };
        self.emit(
            out,
            EventKind::AccountStatus(event::AccountStatus {
                account: id,
                suspended: suspend,
                canceled,
            }),
        );
    }

    /// Whether the account (an index) is suspended.
    pub(crate) fn is_suspended(&self, account: u32) -> bool {
        self.accounts
            .get(account)
            .risk()
            .is_some_and(|r| r.suspended)
    }

    /// Cancels the account's open orders (on one instrument, or all), in
    /// order-id order so every replica, restored or not, agrees.
    pub(crate) fn cancel_account_orders(
        &mut self,
        account: u32,
        instrument: Option<u32>,
        reason: CancelReason,
        out: &mut Vec<Event>,
    ) -> u32 {
        let mut victims = Vec::new();
        let mut slot = self.accounts.get(account).orders_head();
        while slot != NIL {
            let order = self.orders.get(slot);
            if instrument.is_none_or(|i| i == order.instrument) {
                victims.push((order.id, slot));
            }
            slot = order.account_next;
        }
        victims.sort_unstable();
        for &(_, slot) in &victims {
            self.cancel_resting(slot, reason, out);
        }
        victims.len() as u32
    }

    pub(crate) fn set_mmp(&mut self, set: &SetMmp, out: &mut Vec<Event>) {
        let subject = Self::risk_subject(set.account, Some(set.symbol));
        let checked = (|| {
            let &instrument = self
                .instrument_by_symbol
                .get(&set.symbol)
                .ok_or(RejectReason::UnknownInstrument)?;
            if set.account == FEE_ACCOUNT {
                return Err(RejectReason::FeeAccountCannotTrade);
            }
            let max_qty = limit_units(set.max_qty).map_err(|reason| match reason {
                RejectReason::InvalidRiskLimits => RejectReason::InvalidMmp,
                other => other,
            })?;
            if set.window_ns == 0 || set.max_count.is_some_and(|c| c == 0 || c > MAX_MMP_COUNT) {
                return Err(RejectReason::InvalidMmp);
            }
            let existing = self
                .accounts
                .index(set.account)
                .and_then(|a| self.accounts.get(a).risk())
                .is_some_and(|r| r.mmp(instrument).is_some());
            let removing = max_qty.is_none() && set.max_count.is_none();
            if removing && !existing {
                return Err(RejectReason::MmpNotConfigured);
            }
            if !removing && !existing && self.mmp_configs >= MAX_MMP_CONFIGS {
                return Err(RejectReason::TooManyMmpConfigs);
            }
            let account = self.accounts.get_or_create(set.account)?;
            Ok((account, instrument, max_qty, removing))
        })();
        let (account, instrument, max_qty, removing) = match checked {
            Ok(checked) => checked,
            Err(reason) => return self.reject(out, "set_mmp", subject, reason),
        };
        // The field, not `risk_mut`, so the config count stays reachable.
        let risk = self
            .accounts
            .controls_mut(account)
            .get_or_insert_with(Box::default);
        let at = risk.mmp.binary_search_by_key(&instrument, |m| m.instrument);
        let state = match (at, removing) {
            (Ok(i), true) => {
                risk.mmp.remove(i);
                self.mmp_configs -= 1;
                MmpState::Removed
            }
            (Ok(i), false) => {
                // A new setting restarts the window but does not lift a
                // trip: only a reset does.
                let entry = &mut risk.mmp[i];
                entry.window_ns = set.window_ns;
                entry.max_qty = max_qty;
                entry.max_count = set.max_count;
                entry.clear_window();
                mmp_state_set(set, max_qty)
            }
            (Err(i), _) => {
                let entry = Mmp::new(instrument, set.window_ns, max_qty, set.max_count);
                risk.mmp.insert(i, entry);
                self.mmp_configs += 1;
                mmp_state_set(set, max_qty)
            }
        };
        self.tidy_risk(account);
        self.emit(
            out,
            EventKind::Mmp(event::Mmp {
                account: set.account,
                symbol: set.symbol,
                state,
            }),
        );
    }

    pub(crate) fn reset_mmp(&mut self, id: AccountId, symbol: &Symbol, out: &mut Vec<Event>) {
        let subject = Self::risk_subject(id, Some(*symbol));
        let Some(&instrument) = self.instrument_by_symbol.get(symbol) else {
            return self.reject(out, "reset_mmp", subject, RejectReason::UnknownInstrument);
        };
        let entry = self.accounts.index(id).and_then(|a| {
            let risk = self.accounts.controls_mut(a).as_deref_mut()?;
            let i = risk
                .mmp
                .binary_search_by_key(&instrument, |m| m.instrument)
                .ok()?;
            Some(&mut risk.mmp[i])
        });
        let Some(entry) = entry else {
            return self.reject(out, "reset_mmp", subject, RejectReason::MmpNotConfigured);
        };
        entry.tripped = false;
        entry.clear_window();
        self.emit(
            out,
            EventKind::Mmp(event::Mmp {
                account: id,
                symbol: *symbol,
                state: MmpState::Reset,
            }),
        );
    }

    /// Counts a fill of `lots` on `instrument` against the account's
    /// protection, if it has one there.
    #[inline]
    pub(crate) fn count_fill(
        &mut self,
        account: u32,
        instrument: u32,
        lots: u64,
        out: &mut Vec<Event>,
    ) {
        let Some(risk) = self.accounts.controls_mut(account).as_deref_mut() else {
            return;
        };
        let Ok(i) = risk.mmp.binary_search_by_key(&instrument, |m| m.instrument) else {
            return;
        };
        let units = lots.saturating_mul(self.instruments[instrument as usize].lot_units);
        let entry = &mut risk.mmp[i];
        if !entry.count(self.now, units) {
            return;
        }
        let (filled, fills) = (entry.filled, entry.fills);
        self.mmp_tripped.push((account, instrument));
        self.emit_with(out, |e| {
            let inst = &e.instruments[instrument as usize];
            EventKind::Mmp(event::Mmp {
                account: e.accounts.get(account).id(),
                symbol: inst.symbol,
                state: MmpState::Tripped {
                    filled_qty: filled,
                    fills,
                },
            })
        });
    }

    /// Cancels what the accounts whose protection tripped during this
    /// command still have open on the instrument.
    pub(crate) fn sweep_tripped(&mut self, out: &mut Vec<Event>) {
        let tripped = std::mem::take(&mut self.mmp_tripped);
        for &(account, instrument) in &tripped {
            self.cancel_account_orders(account, Some(instrument), CancelReason::Mmp, out);
        }
        // Keep the allocation for the next trip.
        self.mmp_tripped = tripped;
        self.mmp_tripped.clear();
    }
}
