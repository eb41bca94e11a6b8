//! Sub-account links, (sub, owner) by increasing sub. Absent while no
//! account has an owner.

use exchange_types::limits::{MAX_ACCOUNTS, MAX_SUB_ACCOUNTS};

use super::{Reader, SnapshotError, Writer, FAMILY_SECTION};
use crate::engine::Engine;
use crate::orders::NIL;

pub(super) fn write_family(w: &mut Writer, e: &Engine) {
    let owned: Vec<(u32, u32)> = (0u32..)
        .zip(e.accounts.iter())
        .filter(|(_, a)| a.owner() != NIL)
        .map(|(index, a)| (index, a.owner()))
        .collect();
    if owned.is_empty() {
        return;
    }
    w.u8(FAMILY_SECTION);
    w.u64(owned.len() as u64);
    for (sub, owner) in owned {
        w.u32(sub);
        w.u32(owner);
    }
}

/// Reads the section after its tag: one level deep, each owner within its
/// limit.
pub(super) fn read_family(r: &mut Reader, e: &mut Engine) -> Result<(), SnapshotError> {
    let invalid = Err(SnapshotError::Invalid("sub-account"));
    let count = r.count(MAX_ACCOUNTS)?;
    if count == 0 {
        return invalid;
    }
    let len = e.accounts.len() as u32;
    let mut last = None;
    for _ in 0..count {
        let (sub, owner) = (r.u32()?, r.u32()?);
        if sub >= len || owner >= len || sub == owner || sub == 0 || owner == 0 {
            return invalid;
        }
        if last.is_some_and(|l| l >= sub) {
            return invalid;
        }
        last = Some(sub);
        e.accounts.link_sub(sub, owner);
    }
    for account in e.accounts.iter() {
        let nested = account.owner() != NIL
            && (account.sub_accounts() > 0 || e.accounts.get(account.owner()).owner() != NIL);
        if nested || account.sub_accounts() > MAX_SUB_ACCOUNTS {
            return invalid;
        }
    }
    Ok(())
}
