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
        // A listing command that names no rule keeps the rule listings had
        // before the setting existed; a configured one gets today's.
        let rule = exchange_types::ReferencePriceRule::FOR_NEW_LISTINGS.as_str();
        object
            .entry("reference_price_rule")
            .or_insert_with(|| rule.into());
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

#[cfg(test)]
mod tests {
    use exchange_types::{Command, Dec, ReferencePriceRule};

    use super::*;

    fn listing(toml_table: &str) -> Command {
        let spec: InstrumentConfig = toml::from_str(toml_table).expect("an instrument table");
        match instrument_entry(&spec).expect("a listing") {
            LogEntry::Core(stamped) => stamped.command,
            other => panic!("not a core command: {other:?}"),
        }
    }

    const BASE: &str = r#"
symbol = "DAY-USD"
base = "DAY"
quote = "USD"
tick_size = "0.01"
lot_size = "0.01"
reference_price = "100"
maker_fee_bps = 0
taker_fee_bps = 0
"#;

    #[test]
    fn a_configured_instrument_takes_bands_and_a_minimum_notional() {
        let command = listing(&format!(
            "{BASE}min_notional = \"5\"\nstatic_band_pct = \"10\"\ndynamic_band_pct = \"2.5\"\n\
             volatility_auction_ns = 2000000000\n"
        ));
        let Command::AddInstrument(add) = command else {
            panic!("not a listing: {command:?}");
        };
        assert_eq!(
            (
                add.min_notional,
                add.static_band_bps,
                add.dynamic_band_bps,
                add.volatility_auction_ns
            ),
            (
                Some(Dec::new(5, 0)),
                Some(1_000),
                Some(250),
                Some(2_000_000_000)
            )
        );
    }

    #[test]
    fn a_configured_instrument_takes_its_reference_price_rule() {
        let rule_of = |table: &str| match listing(table) {
            Command::AddInstrument(add) => add.reference_price_rule,
            other => panic!("not a listing: {other:?}"),
        };
        assert_eq!(rule_of(BASE), ReferencePriceRule::LimitNearest);
        let euronext = format!("{BASE}reference_price_rule = \"reference\"\n");
        assert_eq!(rule_of(&euronext), ReferencePriceRule::Reference);
        let bad = format!("{BASE}reference_price_rule = \"midpoint\"\n");
        let spec: InstrumentConfig = toml::from_str(&bad).expect("an instrument table");
        let error = instrument_entry(&spec).expect_err("an unknown rule");
        assert!(
            error.to_string().contains("reference_price_rule"),
            "{error}"
        );
    }

    #[test]
    fn a_configured_instrument_is_listed_in_its_phase() {
        let phase_of = |table: &str| match listing(table) {
            Command::AddInstrument(add) => add.phase,
            other => panic!("not a listing: {other:?}"),
        };
        assert_eq!(phase_of(BASE), None);
        let pre_open = format!("{BASE}phase = \"pre_open\"\n");
        assert_eq!(phase_of(&pre_open), Some(exchange_types::Phase::PreOpen));
        let bad = format!("{BASE}phase = \"lunch\"\n");
        let spec: InstrumentConfig = toml::from_str(&bad).expect("an instrument table");
        let error = instrument_entry(&spec).expect_err("an unknown phase");
        assert!(error.to_string().contains("phase"), "{error}");
    }

    #[test]
    fn a_configured_instrument_takes_a_minimum_for_hidden_orders() {
        let minimum_of = |table: &str| match listing(table) {
            Command::AddInstrument(add) => add.hidden_min_notional,
            other => panic!("not a listing: {other:?}"),
        };
        assert_eq!(minimum_of(BASE), None);
        let with = format!("{BASE}hidden_min_notional = \"50000\"\n");
        assert_eq!(minimum_of(&with), Some(Dec::new(50_000, 0)));
    }

    #[test]
    fn an_unknown_field_in_an_instrument_table_is_refused() {
        let bad = format!("{BASE}static_band = \"10\"\n");
        let error = toml::from_str::<InstrumentConfig>(&bad).expect_err("unknown field");
        assert!(error.to_string().contains("static_band"), "{error}");
    }
}
