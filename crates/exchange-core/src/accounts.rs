//! Accounts and their balances.
//!
//! Invariant, per account and asset: `available <= total`, and
//! `total - available` equals the sum of what that account's open orders
//! have reserved in that asset. Balances never go negative: every debit is
//! checked against a reservation made before the order could trade.

use exchange_types::limits::MAX_ACCOUNTS;
use exchange_types::{AccountId, RejectReason};
use rustc_hash::FxHashMap;

use crate::orders::NIL;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Balance {
    pub total: u64,
    pub available: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Account {
    pub id: AccountId,
    /// Indexed by asset index; grows as the account touches new assets.
    pub balances: Vec<Balance>,
    pub open_orders: u32,
    /// Head of the intrusive list of this account's resting orders.
    pub orders_head: u32,
}

impl Account {
    fn new(id: AccountId) -> Self {
        Account {
            id,
            balances: Vec::new(),
            open_orders: 0,
            orders_head: NIL,
        }
    }

    pub fn balance(&self, asset: u32) -> Balance {
        self.balances
            .get(asset as usize)
            .copied()
            .unwrap_or_default()
    }

    pub fn balance_mut(&mut self, asset: u32) -> &mut Balance {
        let index = asset as usize;
        if self.balances.len() <= index {
            self.balances.resize(index + 1, Balance::default());
        }
        &mut self.balances[index]
    }
}

/// All accounts, in creation order, with a lookup by id. The map is only
/// ever probed, never iterated, so its order cannot leak into the state.
#[derive(Clone, Debug, Default)]
pub(crate) struct Accounts {
    pub list: Vec<Account>,
    by_id: FxHashMap<AccountId, u32>,
}

impl Accounts {
    pub fn index(&self, id: AccountId) -> Option<u32> {
        self.by_id.get(&id).copied()
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
        self.by_id.insert(id, index);
        Ok(index)
    }

    pub fn push_restored(&mut self, account: Account) {
        self.by_id.insert(account.id, self.list.len() as u32);
        self.list.push(account);
    }
}
