//! The limits of the protocol, the core and the log's commands, in one
//! place, with the relations between them checked at compile time.
//!
//! Nothing in the core grows without bound: each collection has a ceiling
//! here, and reaching it is a reject with its own reason, never an
//! allocation failure or a slowdown for everybody else.
//!
//! Two limits live elsewhere because their crates stand alone: the
//! journal's largest record (`exchange_journal::MAX_PAYLOAD_BYTES`) and
//! the server's group-commit batch (`exchange_node::limits`), where the
//! relations across crates are checked (a full batch of the longest
//! commands fits one record).

/// Longest client order id, in bytes (a UUID with dashes fits).
pub const MAX_CLIENT_ORDER_ID_LEN: usize = 36;
/// Longest instrument symbol, in bytes.
pub const MAX_SYMBOL_LEN: usize = 16;
/// Longest asset code, in bytes.
pub const MAX_ASSET_LEN: usize = 12;

/// Longest decimal string accepted, in characters: a sign, the most digits
/// and a point.
pub const MAX_DECIMAL_LEN: usize = 40;
/// Most digits in a decimal string at the JSON edge, leading and trailing
/// zeros included: no amount the core can represent needs more than 28.
pub const MAX_DECIMAL_DIGITS: usize = 38;
/// Most decimal places of a value, trailing zeros aside: its written form
/// (`0.` and the places) then has no more digits than the edge accepts,
/// so every replica can read back what the log stores.
pub const MAX_DECIMAL_PLACES: usize = MAX_DECIMAL_DIGITS - 1;

/// Instruments the exchange lists at once.
pub const MAX_INSTRUMENTS: usize = 1_024;
/// Distinct assets across all instruments: two per instrument, so that no
/// listing is refused for its assets before the instruments run out.
pub const MAX_ASSETS: usize = 2 * MAX_INSTRUMENTS;
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
/// Bytes of one command as the log stores it (`exchange_codec::
/// encode_command`), at most: the longest, an `add_instrument` with every
/// field at its widest, takes 528 (exchange-codec's tests check it); the
/// rest is room for new fields, while a full batch still fits a record.
pub const MAX_ENCODED_COMMAND_BYTES: usize = 1_000;
/// Recently closed client order ids remembered, so that a late cancel gets
/// "order not open" rather than "unknown order".
pub const RECENTLY_CLOSED_CAPACITY: usize = 65_536;
/// Market-maker protection settings (account and instrument pairs)
/// across the exchange.
pub const MAX_MMP_CONFIGS: usize = 65_536;
/// Largest fat-finger band, in basis points (100%).
pub const MAX_PRICE_BAND_BPS: u32 = 10_000;
/// Largest risk limit of open orders: above the core's own per-account
/// ceiling it would limit nothing.
pub const MAX_RISK_OPEN_ORDERS: u32 = MAX_OPEN_ORDERS_PER_ACCOUNT;
/// Largest fill count a market-maker protection may allow per window.
pub const MAX_MMP_COUNT: u32 = 1_000_000;
/// Sub-accounts one owner may have.
pub const MAX_SUB_ACCOUNTS: u32 = 1_024;
/// Untriggered stop orders on one side of one instrument: like the price
/// levels of a book side, a bound on the side table a trade searches.
pub const MAX_STOP_ORDERS_PER_SIDE: usize = 100_000;
/// Trailing stops on one instrument: each trade that moves the last price
/// visits every one of them, so they are bounded much lower than stops.
pub const MAX_TRAILING_STOPS_PER_INSTRUMENT: usize = 1_000;
/// Stops one command may trigger, cascade included (triggered orders
/// trading and reaching further stops). Stops still reached past it stay
/// untriggered and trigger, in the same order, after the next command
/// that carries a trade, so no command does unbounded work.
pub const MAX_TRIGGERS_PER_COMMAND: usize = 1_000;
/// Orders resting in one instrument's midpoint book, both sides together:
/// matching there looks at pairs of orders, so the book is kept small.
pub const MAX_MIDPOINT_ORDERS_PER_INSTRUMENT: usize = 1_000;
/// Largest fee magnitude, in basis points (100%).
pub const MAX_FEE_BPS: i32 = 10_000;
/// Largest price collar, in basis points (a collar of 100% or more is none).
pub const MAX_COLLAR_BPS: u32 = 10_000;

// What `Dec::text` writes for any decimal `Dec::parse` accepted must parse
// again and pass the edge's digit limit: a fraction is `0.` and at most
// MAX_DECIMAL_PLACES places, anything else at most the 20 digits of a u64.
const U64_DIGITS: usize = u64::MAX.ilog10() as usize + 1;
const _: () = assert!(MAX_DECIMAL_PLACES < MAX_DECIMAL_DIGITS);
const _: () = assert!(U64_DIGITS <= MAX_DECIMAL_DIGITS);
const _: () = assert!(MAX_DECIMAL_DIGITS + 2 <= MAX_DECIMAL_LEN);

// Replicas and replays read the log's commands with the edge's decoder,
// which refuses longer lines.
const _: () = assert!(MAX_ENCODED_COMMAND_BYTES <= MAX_COMMAND_BYTES);

// The core numbers orders, accounts, instruments and assets with `u32`
// indexes, `u32::MAX` meaning none.
const _: () = assert!(MAX_OPEN_ORDERS < u32::MAX as usize);
const _: () = assert!(MAX_ACCOUNTS < u32::MAX as usize);
const _: () = assert!(MAX_INSTRUMENTS < u32::MAX as usize);
const _: () = assert!(MAX_ASSETS < u32::MAX as usize);
