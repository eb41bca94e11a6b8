//! The trading core: order books, order management and pre-trade risk as
//! one deterministic state machine.
//!
//! Feed [`Engine::apply`] the commands of the log in order; it appends the
//! events each causes. The core does no I/O, reads no clock, draws no random
//! numbers, uses no floating point and never iterates a hash map, so every
//! replica that applies the same log emits the same events and reaches the
//! same [`Engine::state_hash`]. [`Engine::snapshot`] and [`Engine::restore`]
//! round-trip the whole state exactly.
//!
//! Layout: `place` (entry and risk) → `matching` (trades, fees, self-trade
//! prevention) → `oms` (cancel, replace, mass cancel), over `book` (levels),
//! `orders` (the pool), `accounts` (balances) and `instrument` (units).

mod accounts;
mod admin;
mod book;
mod closed;
mod engine;
mod instrument;
mod matching;
mod oms;
mod orders;
mod place;
mod snapshot;
mod views;

#[cfg(test)]
mod invariant_tests;

pub use engine::{Engine, FEE_ACCOUNT};
pub use snapshot::SnapshotError;
pub use views::{BalanceView, BookView, InstrumentView, OrderView};
