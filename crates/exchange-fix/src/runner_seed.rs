//! What a session's task reads from the server's state when it starts
//! (and after it fell behind the event stream): its accounts' open orders
//! and every instrument's trading status.

use std::time::Duration;

use exchange_node::reads::Orders;
use exchange_node::{MarketQuery, OrderQuery, SubmitError};

use super::{accounts_of, Runner};

impl Runner {
    /// Fills the order cache from the server's live state: the session's
    /// accounts' open orders.
    pub(super) async fn seed(&mut self) {
        // Read before the orders, so that no entry falls between the two
        // reads unseen: entries after this index update the statuses.
        self.seed_markets().await;
        let accounts = accounts_of(&self.app.role);
        for attempt in 0..100u64 {
            let query = OrderQuery::Open {
                accounts: accounts.clone(),
                symbol: None,
            };
            match self.handle.orders(query).await {
                Ok(Orders {
                    applied_index: index,
                    orders,
                }) => {
                    self.app.cache = Default::default();
                    self.app.cache.seed(orders.iter().map(|o| &**o));
                    self.seeded = index;
                    tracing::debug!(
                        session = %self.name,
                        index,
                        open = self.app.cache.open_orders(),
                        "FIX session seeded"
                    );
                    return;
                }
                // Queries run on any node and are no gateway's commands;
                // `NotLeader` and `SessionExpired` cannot come back.
                Err(
                    SubmitError::Overloaded
                    | SubmitError::NotLeader { .. }
                    | SubmitError::NoSpace
                    | SubmitError::SessionExpired,
                ) => tokio::time::sleep(Duration::from_millis(10 * (attempt + 1))).await,
                Err(SubmitError::Stopped) => return,
            }
        }
        tracing::error!(
            session = %self.name,
            "FIX session could not read its orders; reports start empty"
        );
    }

    /// Fills the view of every instrument's status from the server's state.
    async fn seed_markets(&mut self) {
        let query = MarketQuery {
            symbol: None,
            depth: 0,
            trades: 0,
        };
        for attempt in 0..100u64 {
            match self.handle.markets(query.clone()).await {
                Ok(markets) => {
                    self.security.seed(
                        markets.applied_index,
                        markets
                            .markets
                            .iter()
                            .map(|m| (m.instrument.symbol, &m.status)),
                    );
                    return;
                }
                Err(
                    SubmitError::Overloaded
                    | SubmitError::NotLeader { .. }
                    | SubmitError::NoSpace
                    | SubmitError::SessionExpired,
                ) => tokio::time::sleep(Duration::from_millis(10 * (attempt + 1))).await,
                Err(SubmitError::Stopped) => return,
            }
        }
        tracing::error!(
            session = %self.name,
            "FIX session could not read the markets; trading status starts empty"
        );
    }
}
