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
//! Layout: an order's stages are `exchange_types::validate` (shape) →
//! `admit` (instrument, phase, account, member controls, capacity) →
//! `reserve` (funds) → `place` (acceptance) → `matching` (continuous) or
//! `uncrossing` (a call) → `settle` (each fill's orders, balances, fees and
//! levels); `oms` runs cancel, replace (through the same stages) and mass
//! cancel. They work over `book` (levels), `orders` (the pool), `accounts`
//! (balances) and `instrument` (units); `risk` holds the member risk
//! controls, `stops` untriggered stop orders and one-cancels-other pairs,
//! `audit` one check per invariant. docs/architecture.md has the table.
//!
//! # Determinism
//!
//! Clippy enforces the rules above in this crate, `exchange-types` and
//! `exchange-codec`. Each has the same `clippy.toml` beside its
//! `Cargo.toml`, which lists what is banned and why:
//!
//! - clocks (`Instant`, `SystemTime`): time is the command's `ts`;
//! - threads, the process environment, files, sockets and subprocesses;
//! - randomly seeded or release-dependent hashers (`RandomState`,
//!   `DefaultHasher`);
//! - hash map and set types, except inside `Lookup` (`src/lookup.rs`),
//!   which can be probed but not iterated, so hash order never reaches
//!   events, snapshots or the state hash;
//! - `f32` and `f64`, and through `clippy::float_arithmetic` arithmetic
//!   on float literals whose type is never written.
//!
//! The `[lints.clippy]` table of each crate's `Cargo.toml` makes a hit an
//! error. A justified exception is an `#[allow(..., reason = "...")]` on
//! the one item, saying why the result cannot vary between replicas.

mod accounts;
mod admin;
mod admit;
mod auction;
mod audit;
mod book;
mod call_market;
mod closed;
mod controls;
mod engine;
mod family;
mod funds;
mod iceberg;
mod instrument;
mod lookup;
mod matching;
mod midpoint;
mod oms;
mod operator;
mod orders;
mod phase;
mod place;
mod reserve;
mod risk;
mod rules;
mod sessions;
mod settle;
mod snapshot;
mod stops;
mod uncrossing;
mod views;
mod volatility;

#[cfg(test)]
mod invariant_tests;

pub use engine::{Engine, FEE_ACCOUNT};
pub use snapshot::SnapshotError;
pub use views::{BalanceView, BookView, IcebergView, InstrumentView, OrderView};
