//! Accounts in opening order with their balances; the first is always the
//! fee account.

use exchange_types::limits::MAX_ACCOUNTS;

use super::{Reader, SnapshotError, Writer};
use crate::accounts::{Account, Balance};
use crate::engine::Engine;

pub(super) fn write_accounts(w: &mut Writer, e: &Engine) {
    w.u64(e.accounts.len() as u64);
    for acct in e.accounts.iter() {
        w.u64(acct.id());
        w.u64(acct.balances().len() as u64);
        for b in acct.balances() {
            w.u64(b.total);
            w.u64(b.available);
        }
    }
}

pub(super) fn read_accounts(r: &mut Reader, e: &mut Engine) -> Result<(), SnapshotError> {
    for _ in 0..r.count(MAX_ACCOUNTS)? {
        let id = r.u64()?;
        let mut balances = Vec::new();
        for _ in 0..r.count(e.assets.len())? {
            let total = r.u64()?;
            let available = r.u64()?;
            if available > total {
                return Err(SnapshotError::Invalid("balance"));
            }
            balances.push(Balance { total, available });
        }
        if e.accounts.index(id).is_some() {
            return Err(SnapshotError::Invalid("duplicate account"));
        }
        e.accounts.push_restored(Account::restored(id, balances));
    }
    if e.accounts.iter().next().map(|a| a.id()) != Some(crate::engine::FEE_ACCOUNT) {
        return Err(SnapshotError::Invalid("fee account"));
    }
    Ok(())
}
