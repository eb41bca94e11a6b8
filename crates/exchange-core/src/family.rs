//! Sub-accounts and internal transfers.
//!
//! An owner may have sub-accounts (one level: a sub-account has no
//! sub-accounts, an owner no owner). Funds move between an owner and its
//! sub-accounts, or between two sub-accounts of one owner, by
//! `internal_transfer`: available balance from one, total and available to
//! the other, each reported by a `balance` event; the asset's supply does
//! not change.

use exchange_types::event;
use exchange_types::limits::{MAX_ACCOUNTS, MAX_SUB_ACCOUNTS};
use exchange_types::{AccountId, Event, EventKind, InternalTransfer, RejectReason};

use crate::engine::{Engine, Subject, FEE_ACCOUNT};
use crate::orders::NIL;

impl Engine {
    /// The account at the top of `account`'s family (itself if it has no
    /// owner).
    fn family_root(&self, account: u32) -> u32 {
        match self.accounts.get(account).owner() {
            NIL => account,
            owner => owner,
        }
    }

    pub(crate) fn link_sub_account(
        &mut self,
        owner: AccountId,
        sub: AccountId,
        out: &mut Vec<Event>,
    ) {
        let checked = (|| {
            if owner == sub || owner == FEE_ACCOUNT || sub == FEE_ACCOUNT {
                return Err(RejectReason::InvalidSubAccount);
            }
            let (o, s) = (self.accounts.index(owner), self.accounts.index(sub));
            if let Some(o) = o {
                let o = &self.accounts.get(o);
                if o.owner() != NIL {
                    return Err(RejectReason::InvalidSubAccount);
                }
                if o.sub_accounts() >= MAX_SUB_ACCOUNTS {
                    return Err(RejectReason::TooManySubAccounts);
                }
            }
            if let Some(s) = s {
                let s = &self.accounts.get(s);
                if s.owner() != NIL || s.sub_accounts() > 0 {
                    return Err(RejectReason::InvalidSubAccount);
                }
            }
            // Both accounts are created if new; refuse before creating
            // either, so a refusal changes nothing.
            let new = usize::from(o.is_none()) + usize::from(s.is_none());
            if self.accounts.len() + new > MAX_ACCOUNTS {
                return Err(RejectReason::TooManyAccounts);
            }
            Ok(())
        })();
        if let Err(reason) = checked {
            let subject = Subject {
                account: Some(owner),
                ..Subject::default()
            };
            return self.reject(out, "link_sub_account", subject, reason);
        }
        // Capacity was checked above, so neither creation fails.
        let created = self
            .accounts
            .get_or_create(owner)
            .and_then(|o| Ok((o, self.accounts.get_or_create(sub)?)));
        let (o, s) = match created {
            Ok(pair) => pair,
            Err(reason) => {
                let subject = Subject {
                    account: Some(owner),
                    ..Subject::default()
                };
                return self.reject(out, "link_sub_account", subject, reason);
            }
        };
        self.accounts.link_sub(s, o);
        self.emit(
            out,
            EventKind::SubAccountLinked(event::SubAccountLinked { owner, sub }),
        );
    }

    pub(crate) fn internal_transfer(&mut self, t: &InternalTransfer, out: &mut Vec<Event>) {
        let checked = (|| {
            let &asset = self
                .asset_by_code
                .get(&t.asset)
                .ok_or(RejectReason::UnknownAsset)?;
            let amount = t.amount.to_units().map_err(crate::admin::amount_reason)?;
            let from = self
                .accounts
                .index(t.from)
                .ok_or(RejectReason::UnknownAccount)?;
            let to = self
                .accounts
                .index(t.to)
                .ok_or(RejectReason::AccountsNotRelated)?;
            if from == to || self.family_root(from) != self.family_root(to) {
                return Err(RejectReason::AccountsNotRelated);
            }
            // Otherwise a suspended account's funds would trade on from a
            // sub-account or sibling, around the kill switch.
            if self.is_suspended(from) {
                return Err(RejectReason::TransferFromSuspended);
            }
            if self.accounts.balance(from, asset).available < amount {
                return Err(RejectReason::InsufficientFunds);
            }
            Ok((asset, amount, from, to))
        })();
        let (asset, amount, from, to) = match checked {
            Ok(checked) => checked,
            Err(reason) => {
                let subject = Subject {
                    account: Some(t.from),
                    ..Subject::default()
                };
                return self.reject(out, "internal_transfer", subject, reason);
            }
        };
        // Available was checked. The supply cap bounds every total, so the
        // receiver cannot overflow: both balances are part of the same
        // supply.
        self.accounts.debit(from, asset, amount);
        self.accounts.credit(to, asset, amount);
        self.emit_balance(out, from, asset);
        self.emit_balance(out, to, asset);
    }
}
