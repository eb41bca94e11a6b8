//! Snapshots: the whole state as canonical bytes, and back.
//!
//! The encoding is canonical: two engines in the same logical state give
//! the same bytes, whatever their history, because only logical content is
//! written (orders in book order, never pool slots or hash-map order). The
//! state hash is BLAKE3 over these bytes, so replicas compare state by
//! comparing 32 bytes, and `restore(snapshot(e))` continues exactly as `e`.
//!
//! The bytes are a sequence of sections, one per owner of state, each
//! written and read by a pair of functions in its own module. The first
//! sections are always present; the later ones are optional, each behind a
//! tag and absent while its owner holds nothing, so that a state without a
//! feature keeps the bytes (and the hash) it had before the feature
//! existed.

use thiserror::Error;

use crate::engine::Engine;

mod accounts;
mod assets;
mod books;
mod call_markets;
mod closed;
mod counters;
mod family;
mod hidden;
mod icebergs;
mod instruments;
mod midpoint;
mod phase;
mod risk;
mod rules;
mod stops;
mod wire;

pub(crate) use wire::{read_order, write_order, Reader, Writer};

const MAGIC: &[u8; 8] = b"EXSNAP01";
/// Tags the optional section of accounts' risk controls, after the
/// recently closed orders.
const RISK_SECTION: u8 = 1;
/// Tags the optional section of sub-account links, after the risk one.
const FAMILY_SECTION: u8 = 2;
/// Tags the optional section of untriggered stops and one-cancels-other
/// pairs, after the sub-account one.
const STOP_SECTION: u8 = 7;
/// Tags the optional section of icebergs (display size and hidden lots by
/// order id), after the stop one.
const ICEBERG_SECTION: u8 = 9;
/// Tags the optional section of instruments' minimum notionals, after the
/// icebergs one.
const RULES_SECTION: u8 = 10;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum SnapshotError {
    #[error("not a snapshot (bad magic)")]
    BadMagic,
    #[error("snapshot ends early at byte {0}")]
    Truncated(usize),
    #[error("snapshot has {0} trailing bytes")]
    TrailingBytes(usize),
    #[error("snapshot is inconsistent: {0}")]
    Invalid(&'static str),
    #[error("snapshot breaks an invariant: {0}")]
    Inconsistent(String),
}

type ReadSection = fn(&mut Reader, &mut Engine) -> Result<(), SnapshotError>;

/// Reads an optional section with `read` if its `tag` is next.
fn read_tagged(
    r: &mut Reader,
    e: &mut Engine,
    tag: u8,
    read: ReadSection,
) -> Result<(), SnapshotError> {
    if r.next_is(tag) {
        read(r, e)?;
    }
    Ok(())
}

/// Untriggered stops and one-cancels-other pairs, in the stop book's own
/// encoding; absent while there are none.
fn write_stops(w: &mut Writer, e: &Engine) {
    if e.stops.has_any() {
        w.u8(STOP_SECTION);
        stops::write_section(w, e);
    }
}

impl Engine {
    /// The whole state as canonical bytes.
    pub fn snapshot(&self) -> Vec<u8> {
        let mut w = Writer(Vec::with_capacity(4096 + self.orders.len() * 96));
        w.0.extend_from_slice(MAGIC);
        counters::write_counters(&mut w, self);
        assets::write_assets(&mut w, self);
        instruments::write_instruments(&mut w, self);
        accounts::write_accounts(&mut w, self);
        books::write_books(&mut w, self);
        closed::write_closed(&mut w, self);
        risk::write_risk(&mut w, self);
        family::write_family(&mut w, self);
        write_stops(&mut w, self);
        icebergs::write_icebergs(&mut w, self);
        rules::write_rules(&mut w, self);
        phase::write(&mut w, self);
        phase::write_volatility(&mut w, self);
        call_markets::write_section(&mut w, self);
        hidden::write_section(&mut w, self);
        call_markets::write_to_limit_section(&mut w, self);
        midpoint::write_section(&mut w, self);
        w.0
    }

    /// BLAKE3 of the canonical snapshot, as lowercase hex.
    pub fn state_hash(&self) -> String {
        blake3::hash(&self.snapshot()).to_hex().to_string()
    }

    /// Rebuilds an engine from [`Engine::snapshot`] bytes.
    pub fn restore(bytes: &[u8]) -> Result<Engine, SnapshotError> {
        let mut r = Reader { bytes, at: 0 };
        if r.take(MAGIC.len())? != MAGIC {
            return Err(SnapshotError::BadMagic);
        }
        let mut e = Engine::new();
        e.accounts = Default::default();
        counters::read_counters(&mut r, &mut e)?;
        assets::read_assets(&mut r, &mut e)?;
        let hidden_marked = instruments::read_instruments(&mut r, &mut e)?;
        accounts::read_accounts(&mut r, &mut e)?;
        let icebergs_marked = books::read_books(&mut r, &mut e)?;
        closed::read_closed(&mut r, &mut e)?;
        read_tagged(&mut r, &mut e, RISK_SECTION, risk::read_risk)?;
        read_tagged(&mut r, &mut e, FAMILY_SECTION, family::read_family)?;
        read_tagged(&mut r, &mut e, STOP_SECTION, stops::read_section)?;
        read_tagged(&mut r, &mut e, ICEBERG_SECTION, icebergs::read_icebergs)?;
        read_tagged(&mut r, &mut e, RULES_SECTION, rules::read_rules)?;
        phase::read(&mut r, &mut e)?;
        phase::read_volatility(&mut r, &mut e)?;
        let call_markets = call_markets::CALL_MARKET_SECTION;
        read_tagged(&mut r, &mut e, call_markets, call_markets::read_section)?;
        read_tagged(&mut r, &mut e, hidden::HIDDEN_SECTION, hidden::read_section)?;
        let to_limit = call_markets::CALL_TO_LIMIT_SECTION;
        read_tagged(
            &mut r,
            &mut e,
            to_limit,
            call_markets::read_to_limit_section,
        )?;
        let midpoints = midpoint::MIDPOINT_SECTION;
        read_tagged(&mut r, &mut e, midpoints, midpoint::read_section)?;
        if r.at != bytes.len() {
            return Err(SnapshotError::TrailingBytes(bytes.len() - r.at));
        }
        icebergs::check_marked(icebergs_marked, &e)?;
        hidden::check_marked(&hidden_marked, &e)?;
        // Every field parsed, but the whole must also be a state the engine
        // could have reached; a damaged snapshot must not become a replica.
        e.audit().map_err(SnapshotError::Inconsistent)?;
        Ok(e)
    }
}
