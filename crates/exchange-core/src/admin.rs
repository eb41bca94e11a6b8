//! Operator commands: listing instruments, moving money in and out,
//! halting and resuming trading.

use exchange_types::event;
use exchange_types::limits::{MAX_ASSETS, MAX_INSTRUMENTS};
use exchange_types::{
    AddInstrument, AssetCode, Event, EventKind, RejectReason, Symbol, TradingStatus, Transfer,
};

use crate::book::Book;
use crate::engine::{Engine, Subject};
use crate::instrument::Instrument;

/// No asset's supply, and so no balance, may exceed this; it keeps every
/// signed fee and balance computation inside `i64`.
pub(crate) const MAX_ASSET_SUPPLY: u64 = i64::MAX as u64;

impl Engine {
    fn asset_index_or_create(&mut self, code: AssetCode) -> Result<u32, RejectReason> {
        if let Some(&index) = self.asset_by_code.get(&code) {
            return Ok(index);
        }
        if self.assets.len() >= MAX_ASSETS {
            return Err(RejectReason::TooManyAssets);
        }
        let index = self.assets.len() as u32;
        self.assets.push(code);
        self.asset_supply.push(0);
        self.asset_by_code.insert(code, index);
        Ok(index)
    }

    pub(crate) fn add_instrument(&mut self, spec: &AddInstrument, out: &mut Vec<Event>) {
        let reject = |engine: &mut Engine, out: &mut Vec<Event>, reason| {
            engine.reject(
                out,
                "add_instrument",
                Subject {
                    symbol: Some(spec.symbol),
                    ..Subject::default()
                },
                reason,
            )
        };
        if self.instrument_by_symbol.contains_key(&spec.symbol) {
            return reject(self, out, RejectReason::InstrumentExists);
        }
        if self.instruments.len() >= MAX_INSTRUMENTS {
            return reject(self, out, RejectReason::TooManyInstruments);
        }
        let new_assets = [spec.base, spec.quote]
            .iter()
            .filter(|code| !self.asset_by_code.contains_key(*code))
            .count();
        if self.assets.len() + new_assets > MAX_ASSETS {
            return reject(self, out, RejectReason::TooManyAssets);
        }
        // Validate before creating assets so a refused listing changes nothing.
        if let Err(reason) = Instrument::from_spec(spec, 0, 1) {
            return reject(self, out, reason);
        }
        if spec.base == spec.quote {
            return reject(self, out, RejectReason::InvalidInstrument);
        }
        let (Ok(base), Ok(quote)) = (
            self.asset_index_or_create(spec.base),
            self.asset_index_or_create(spec.quote),
        ) else {
            return reject(self, out, RejectReason::TooManyAssets);
        };
        let instrument = match Instrument::from_spec(spec, base, quote) {
            Ok(instrument) => instrument,
            Err(reason) => return reject(self, out, reason),
        };
        let index = self.instruments.len() as u32;
        self.instruments.push(instrument);
        self.books.push(Book::new());
        self.instrument_by_symbol.insert(spec.symbol, index);
        if spec.static_band_bps.unwrap_or(0) != 0 || spec.dynamic_band_bps.unwrap_or(0) != 0 {
            self.set_bands(
                index,
                spec.static_band_bps.unwrap_or(0),
                spec.dynamic_band_bps.unwrap_or(0),
                spec.volatility_auction_ns.unwrap_or(0),
            );
        }
        let inst = &self.instruments[index as usize];
        let reference_price = inst.reference_ticks.map(|t| inst.price_units(t));
        self.emit(
            out,
            EventKind::InstrumentAdded(event::InstrumentAdded {
                symbol: spec.symbol,
                base: spec.base,
                quote: spec.quote,
                reference_price,
            }),
        );
        // Before the rules, so that their status is the listing's.
        if let Some(phase) = spec.phase {
            self.enter_listing_phase(index, phase, out);
        }
        self.emit_instrument_rules(index, out);
    }

    /// The asset and amount of a transfer, or why it cannot be one.
    fn check_transfer(&self, transfer: &Transfer) -> Result<(u32, u64), RejectReason> {
        let &asset = self
            .asset_by_code
            .get(&transfer.asset)
            .ok_or(RejectReason::UnknownAsset)?;
        let amount = transfer.amount.to_units().map_err(amount_reason)?;
        Ok((asset, amount))
    }

    fn reject_transfer(
        &mut self,
        out: &mut Vec<Event>,
        command: &'static str,
        transfer: &Transfer,
        reason: RejectReason,
    ) {
        let subject = Subject {
            account: Some(transfer.account),
            ..Subject::default()
        };
        self.reject(out, command, subject, reason);
    }

    pub(crate) fn deposit(&mut self, transfer: &Transfer, out: &mut Vec<Event>) {
        let checked = self.check_transfer(transfer).and_then(|(asset, amount)| {
            let supply = self.asset_supply[asset as usize];
            if supply
                .checked_add(amount)
                .is_none_or(|s| s > MAX_ASSET_SUPPLY)
            {
                return Err(RejectReason::AmountOverflow);
            }
            Ok((
                asset,
                amount,
                self.accounts.get_or_create(transfer.account)?,
            ))
        });
        let (asset, amount, account) = match checked {
            Ok(checked) => checked,
            Err(reason) => return self.reject_transfer(out, "deposit", transfer, reason),
        };
        self.asset_supply[asset as usize] += amount;
        self.accounts.credit(account, asset, amount);
        self.emit_balance(out, account, asset);
    }

    pub(crate) fn withdraw(&mut self, transfer: &Transfer, out: &mut Vec<Event>) {
        let checked = self.check_transfer(transfer).and_then(|(asset, amount)| {
            let account = self
                .accounts
                .index(transfer.account)
                .ok_or(RejectReason::UnknownAccount)?;
            // Read, don't touch: `balance_mut` would grow the account's
            // balance list, and a refused command must change nothing.
            if self.accounts.balance(account, asset).available < amount {
                return Err(RejectReason::InsufficientFunds);
            }
            Ok((asset, amount, account))
        });
        let (asset, amount, account) = match checked {
            Ok(checked) => checked,
            Err(reason) => return self.reject_transfer(out, "withdraw", transfer, reason),
        };
        // Available was checked above; total and the supply cover it by
        // the invariants `available <= total` and supply = sum of totals,
        // whose failure would wrap here in a release build.
        let total = self.accounts.balance(account, asset).total;
        assert!(
            total >= amount && self.asset_supply[asset as usize] >= amount,
            "withdrawing {amount} from a total of {total} (supply {})",
            self.asset_supply[asset as usize]
        );
        self.accounts.debit(account, asset, amount);
        self.asset_supply[asset as usize] -= amount;
        self.emit_balance(out, account, asset);
    }

    pub(crate) fn set_status(&mut self, symbol: &Symbol, halt: bool, out: &mut Vec<Event>) {
        let command = if halt { "halt" } else { "resume" };
        let status = if halt {
            TradingStatus::Halted
        } else {
            TradingStatus::Trading
        };
        let checked = match self.instrument_by_symbol.get(symbol) {
            None => Err(RejectReason::UnknownInstrument),
            Some(&index) => match self.instruments[index as usize].status {
                TradingStatus::Delisted => Err(RejectReason::InstrumentDelisted),
                current if current == status => Err(RejectReason::AlreadyInStatus),
                _ => Ok(index),
            },
        };
        let index = match checked {
            Ok(index) => index,
            Err(reason) => {
                return self.reject(
                    out,
                    command,
                    Subject {
                        symbol: Some(*symbol),
                        ..Subject::default()
                    },
                    reason,
                )
            }
        };
        self.emit(
            out,
            EventKind::Status(event::Status {
                symbol: *symbol,
                status,
            }),
        );
        // A halt is the halted phase; a resume reopens through an auction
        // (the book may have been crossed by a call the halt interrupted)
        // into continuous trading, whatever phase the halt interrupted.
        let phase = if halt {
            exchange_types::Phase::Halted
        } else {
            exchange_types::Phase::Continuous
        };
        self.enter_phase(index, phase, out);
    }
}

pub(crate) fn amount_reason(e: exchange_types::decimal::UnitsError) -> RejectReason {
    use exchange_types::decimal::UnitsError;
    match e {
        UnitsError::Negative | UnitsError::Zero => RejectReason::InvalidAmount,
        UnitsError::TooManyDecimals => RejectReason::TooManyDecimals,
        UnitsError::Overflow => RejectReason::AmountOverflow,
    }
}
