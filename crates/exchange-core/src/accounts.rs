//! Accounts and their balances.
//!
//! Invariant, per account and asset: `available <= total`, and
//! `total - available` equals the sum of what that account's open orders
//! have reserved in that asset. Balances never go negative: every debit is
//! checked against a reservation made before the order could trade.

use exchange_types::limits::MAX_ACCOUNTS;
use exchange_types::{AccountId, RejectReason};

use crate::controls::AccountRisk;
use crate::lookup::Lookup;
use crate::orders::{Order, OrderPool, NIL};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Balance {
    pub total: u64,
    pub available: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Account {
    id: AccountId,
    /// Indexed by asset index; grows as the account touches new assets.
    /// Only `Accounts` moves them, which keeps `available <= total` and
    /// every debit covered.
    balances: Vec<Balance>,
    open_orders: u32,
    /// Head of the intrusive list of this account's resting orders.
    orders_head: u32,
    /// Limits, suspension and market-maker protection; `None` for the
    /// many accounts without any, which the hot path then skips.
    risk: Option<Box<AccountRisk>>,
    /// Index of the owning account, `NIL` for none.
    owner: u32,
    /// How many sub-accounts this account owns.
    sub_accounts: u32,
}

impl Account {
    fn new(id: AccountId) -> Self {
        Account {
            id,
            balances: Vec::new(),
            open_orders: 0,
            orders_head: NIL,
            risk: None,
            owner: NIL,
            sub_accounts: 0,
        }
    }

    /// An account as a snapshot holds it, before its orders, controls and
    /// family are restored.
    pub fn restored(id: AccountId, balances: Vec<Balance>) -> Self {
        Account {
            balances,
            ..Account::new(id)
        }
    }

    #[inline(always)]
    pub fn id(&self) -> AccountId {
        self.id
    }

    /// Open orders: resting, untriggered stops and market orders in a call.
    #[inline(always)]
    pub fn open_orders(&self) -> u32 {
        self.open_orders
    }

    /// The first of the account's open orders (`NIL` if none); the rest
    /// follow through each order's `account_next`.
    pub fn orders_head(&self) -> u32 {
        self.orders_head
    }

    /// Limits, suspension and market-maker protection, if any.
    #[inline(always)]
    pub fn risk(&self) -> Option<&AccountRisk> {
        self.risk.as_deref()
    }

    /// The owning account's index, `NIL` for none.
    pub fn owner(&self) -> u32 {
        self.owner
    }

    pub fn sub_accounts(&self) -> u32 {
        self.sub_accounts
    }

    /// The balances, by asset index (assets it never held may be missing
    /// at the end).
    pub fn balances(&self) -> &[Balance] {
        &self.balances
    }

    pub fn balance(&self, asset: u32) -> Balance {
        self.balances
            .get(asset as usize)
            .copied()
            .unwrap_or_default()
    }

    fn balance_mut(&mut self, asset: u32) -> &mut Balance {
        let index = asset as usize;
        if self.balances.len() <= index {
            self.balances.resize(index + 1, Balance::default());
        }
        &mut self.balances[index]
    }
}

/// Account ids below this are looked up in a plain array: every order
/// command resolves its account, and a probe of a hash map that the rest
/// of the work keeps evicting from the cache cost more than the array
/// (at most 256 KiB, grown to the largest small id seen).
const DENSE_IDS: AccountId = 1 << 16;

/// All accounts, in creation order, with a lookup by id. The map is a
/// [`Lookup`], probed and never iterated, so its order cannot leak into the
/// state.
#[derive(Clone, Debug, Default)]
pub(crate) struct Accounts {
    list: Vec<Account>,
    /// Index + 1 of the account with each id below [`DENSE_IDS`]; 0: none.
    dense: Vec<u32>,
    /// The accounts with larger ids.
    by_id: Lookup<AccountId, u32>,
}

impl Accounts {
    #[inline]
    pub fn index(&self, id: AccountId) -> Option<u32> {
        if id < DENSE_IDS {
            return self.dense.get(id as usize).and_then(|&i| i.checked_sub(1));
        }
        self.by_id.get(&id).copied()
    }

    fn link(&mut self, id: AccountId, index: u32) {
        if id < DENSE_IDS {
            let at = id as usize;
            if self.dense.len() <= at {
                self.dense.resize(at + 1, 0);
            }
            self.dense[at] = index + 1;
        } else {
            self.by_id.insert(id, index);
        }
    }

    pub fn get_or_create(&mut self, id: AccountId) -> Result<u32, RejectReason> {
        if let Some(index) = self.index(id) {
            return Ok(index);
        }
        if self.list.len() >= MAX_ACCOUNTS {
            return Err(RejectReason::TooManyAccounts);
        }
        let index = self.list.len() as u32;
        self.list.push(Account::new(id));
        self.link(id, index);
        Ok(index)
    }

    /// The account at `index`.
    #[inline(always)]
    pub fn get(&self, index: u32) -> &Account {
        &self.list[index as usize]
    }

    /// Every account, in opening order (the fee account first).
    pub fn iter(&self) -> impl Iterator<Item = &Account> + '_ {
        self.list.iter()
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// The account's risk controls, for the risk module to set, count and
    /// drop (`None` for an account without any).
    pub fn controls_mut(&mut self, index: u32) -> &mut Option<Box<AccountRisk>> {
        &mut self.list[index as usize].risk
    }

    /// Files `sub` under `owner`; the family rules were checked.
    pub fn link_sub(&mut self, sub: u32, owner: u32) {
        self.list[sub as usize].owner = owner;
        self.list[owner as usize].sub_accounts += 1;
    }

    /// Puts an open order at the head of its account's list of orders.
    #[inline(always)]
    pub fn link_order(&mut self, pool: &mut OrderPool, slot: u32) {
        let account = &mut self.list[pool.get(slot).account as usize];
        let old_head = account.orders_head;
        account.orders_head = slot;
        account.open_orders += 1;
        let order = pool.get_mut(slot);
        order.account_prev = NIL;
        order.account_next = old_head;
        if old_head != NIL {
            pool.get_mut(old_head).account_prev = slot;
        }
    }

    /// Takes a closed order (already out of the pool) off its account's
    /// list of orders.
    #[inline(always)]
    pub fn unlink_order(&mut self, pool: &mut OrderPool, order: &Order) {
        let account = &mut self.list[order.account as usize];
        account.open_orders -= 1;
        if order.account_prev == NIL {
            account.orders_head = order.account_next;
        } else {
            pool.get_mut(order.account_prev).account_next = order.account_next;
        }
        if order.account_next != NIL {
            pool.get_mut(order.account_next).account_prev = order.account_prev;
        }
    }

    /// A balance to change by hand: for tests that break the state on
    /// purpose.
    #[cfg(test)]
    pub fn balance_mut_for_test(&mut self, account: u32, asset: u32) -> &mut Balance {
        self.list[account as usize].balance_mut(asset)
    }

    /// An account's balance of `asset` (zero if it never held any).
    #[inline(always)]
    pub fn balance(&self, account: u32, asset: u32) -> Balance {
        self.list[account as usize].balance(asset)
    }

    /// Adds `amount` to an account's total and available `asset`: a
    /// deposit, a transfer in, a fill's proceeds, a fee or a rebate.
    #[inline(always)]
    pub fn credit(&mut self, account: u32, asset: u32, amount: u64) {
        let balance = self.list[account as usize].balance_mut(asset);
        balance.total += amount;
        balance.available += amount;
    }

    /// Takes `amount` of an account's available `asset` out of the venue:
    /// a withdrawal or a transfer out. The caller checked it is available;
    /// total covers it since available never exceeds total.
    #[inline(always)]
    pub fn debit(&mut self, account: u32, asset: u32, amount: u64) {
        let balance = self.list[account as usize].balance_mut(asset);
        assert!(
            balance.available >= amount && balance.total >= amount,
            "debiting {amount} from {} available of {}",
            balance.available,
            balance.total
        );
        balance.available -= amount;
        balance.total -= amount;
    }

    /// Holds `amount` of an account's available `asset` back for an
    /// order. The caller checked it is available; a release build would
    /// otherwise wrap available and invent funds.
    #[inline(always)]
    pub fn hold(&mut self, account: u32, asset: u32, amount: u64) {
        let balance = self.list[account as usize].balance_mut(asset);
        assert!(
            balance.available >= amount,
            "holding {amount} of {} available",
            balance.available
        );
        balance.available -= amount;
    }

    /// Makes `amount` an order held of `asset` available again.
    #[inline(always)]
    pub fn release(&mut self, account: u32, asset: u32, amount: u64) {
        let balance = self.list[account as usize].balance_mut(asset);
        balance.available += amount;
        assert!(
            balance.available <= balance.total,
            "a release made available {} exceed total {}",
            balance.available,
            balance.total
        );
    }

    /// A buyer's leg of a fill in the quote asset: pays `notional` and
    /// its `fee` out of what the order held; a negative fee is a rebate,
    /// paid to available.
    #[inline(always)]
    pub fn pay_for_fill(&mut self, account: u32, asset: u32, notional: u64, fee: i64) {
        let balance = self.list[account as usize].balance_mut(asset);
        balance.total = sub_signed(balance.total, notional, fee);
        balance.available += fee.min(0).unsigned_abs();
    }

    /// A seller's leg of a fill: delivers `units` of `asset` it held.
    #[inline(always)]
    pub fn deliver_held(&mut self, account: u32, asset: u32, units: u64) {
        let balance = self.list[account as usize].balance_mut(asset);
        // Covered by the seller's reservation, which is part of total.
        assert!(
            balance.total >= units,
            "a seller's base total went negative"
        );
        balance.total -= units;
    }

    pub fn push_restored(&mut self, account: Account) {
        self.link(account.id, self.list.len() as u32);
        self.list.push(account);
    }
}

/// `value - amount - fee` with a signed fee, in the range the supply cap
/// guarantees. Never negative from input: the buyer's total includes the
/// reservation checked against the notional and fee, and a fee is at most
/// the notional. A negative result is a bug; clamping it to zero would
/// destroy funds and let replicas go on from a state no rule produced.
pub(crate) fn sub_signed(value: u64, amount: u64, fee: i64) -> u64 {
    let result = i128::from(value) - i128::from(amount) - i128::from(fee);
    u64::try_from(result).unwrap_or_else(|_| {
        panic!("a balance would become {result}: {value} - {amount} - fee {fee}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large_ids_are_found_and_only_those() {
        let mut accounts = Accounts::default();
        for id in [7, 0, DENSE_IDS - 1, DENSE_IDS, u64::MAX] {
            let index = accounts.get_or_create(id);
            assert_eq!(index, Ok(accounts.list.len() as u32 - 1));
        }
        for (index, id) in [7, 0, DENSE_IDS - 1, DENSE_IDS, u64::MAX]
            .into_iter()
            .enumerate()
        {
            assert_eq!(accounts.index(id), Some(index as u32));
            assert_eq!(accounts.get_or_create(id), Ok(index as u32));
        }
        for id in [1, 6, 8, DENSE_IDS - 2, DENSE_IDS + 1, u64::MAX - 1] {
            assert_eq!(accounts.index(id), None, "id {id}");
        }
        assert_eq!(accounts.list.len(), 5);
    }
}
