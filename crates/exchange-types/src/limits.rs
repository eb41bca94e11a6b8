//! Every limit of the exchange, in one place.
//!
//! Nothing in the core grows without bound: each collection has a ceiling
//! here, and reaching it is a reject with its own reason, never an
//! allocation failure or a slowdown for everybody else.

/// Longest client order id, in bytes (a UUID with dashes fits).
pub const MAX_CLIENT_ORDER_ID_LEN: usize = 36;
/// Longest instrument symbol, in bytes.
pub const MAX_SYMBOL_LEN: usize = 16;
/// Longest asset code, in bytes.
pub const MAX_ASSET_LEN: usize = 12;

/// Instruments the exchange lists at once.
pub const MAX_INSTRUMENTS: usize = 1_024;
/// Distinct assets across all instruments.
pub const MAX_ASSETS: usize = 2_048;
/// Accounts that may hold balances.
pub const MAX_ACCOUNTS: usize = 1_000_000;
/// Open orders one account may have across all instruments.
pub const MAX_OPEN_ORDERS_PER_ACCOUNT: u32 = 10_000;
/// Open orders across the whole exchange.
pub const MAX_OPEN_ORDERS: usize = 10_000_000;
/// Price levels on one side of one book.
pub const MAX_PRICE_LEVELS_PER_SIDE: usize = 100_000;
/// Bytes of one encoded command at the edge (a JSON line, a request body).
pub const MAX_COMMAND_BYTES: usize = 4_096;
/// Recently closed client order ids remembered, so that a late cancel gets
/// "order not open" rather than "unknown order".
pub const RECENTLY_CLOSED_CAPACITY: usize = 65_536;
/// Largest fee magnitude, in basis points (100%).
pub const MAX_FEE_BPS: i32 = 10_000;
/// Largest price collar, in basis points (a collar of 100% or more is none).
pub const MAX_COLLAR_BPS: u32 = 10_000;
