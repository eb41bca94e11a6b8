//! Listing the configured instruments at start-up, through the log like any
//! other command.

use thiserror::Error;

use crate::config::InstrumentConfig;
use crate::entry::LogEntry;
use crate::reads::MarketQuery;
use crate::sequencer::{Handle, SubmitError};

#[derive(Debug, Error)]
pub enum InstrumentError {
    #[error("configured instrument {symbol}: {message}")]
    Invalid { symbol: String, message: String },
    #[error("the sequencer stopped: {0}")]
    Submit(#[from] SubmitError),
}

/// The log entry that lists `spec` (the replay format's `add_instrument`).
pub fn instrument_entry(spec: &InstrumentConfig) -> Result<LogEntry, InstrumentError> {
    let invalid = |message: String| InstrumentError::Invalid {
        symbol: spec.symbol.clone(),
        message,
    };
    let mut json = serde_json::to_value(spec).map_err(|e| invalid(e.to_string()))?;
    if let Some(object) = json.as_object_mut() {
        object.insert("cmd".into(), "add_instrument".into());
        object.retain(|_, v| !v.is_null());
    }
    let stamped =
        exchange_codec::decode_command(&json.to_string()).map_err(|e| invalid(e.to_string()))?;
    Ok(LogEntry::Core(stamped))
}

/// Lists every configured instrument the state does not have yet.
pub async fn ensure_instruments(
    handle: &Handle,
    instruments: &[InstrumentConfig],
) -> Result<(), InstrumentError> {
    let listed = handle.markets(MarketQuery::default()).await?.markets;
    for spec in instruments.iter().filter(|spec| {
        !listed
            .iter()
            .any(|m| m.instrument.symbol.as_str() == spec.symbol)
    }) {
        let applied = handle.submit(instrument_entry(spec)?).await?;
        if let Some(exchange_types::EventKind::Rejected(rejected)) =
            applied.events.first().map(|e| &e.kind)
        {
            return Err(InstrumentError::Invalid {
                symbol: spec.symbol.clone(),
                message: rejected.reason.message().into(),
            });
        }
    }
    Ok(())
}
