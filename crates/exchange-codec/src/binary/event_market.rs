//! The blocks of the events about instruments, the book, auctions,
//! balances and accounts: what market-data gateways and back offices read.

use exchange_types::event::{
    AccountStatus, Auction, Balance, Book, Indicative, InstrumentAdded, InstrumentRules,
    MassCanceled, Mmp, PhaseChanged, ReferencePrice, RiskLimits, Status, SubAccountLinked,
};
use exchange_types::{MmpState, Phase};

use super::command::{code_of, SIDES};
use super::event::{Fields, AUCTION_KINDS, IMBALANCE_SIDES, STATUSES};
use super::wire::{Reader, Writer};
use super::BinaryError;

/// Symbol, base, quote, then the reference price (`u64`) only when the
/// listing names one, so a listing without one keeps its 40-byte block.
impl Fields for InstrumentAdded {
    fn write(&self, w: &mut Writer<'_>) {
        w.id(&self.symbol);
        w.id(&self.base);
        w.id(&self.quote);
        if let Some(price) = self.reference_price {
            w.u64(price);
        }
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, BinaryError> {
        Ok(InstrumentAdded {
            symbol: r.id("symbol")?,
            base: r.id("base")?,
            quote: r.id("quote")?,
            reference_price: if r.remaining() == 0 {
                None
            } else {
                Some(r.u64()?)
            },
        })
    }
}

/// Symbol, trading status.
impl Fields for Status {
    fn write(&self, w: &mut Writer<'_>) {
        w.id(&self.symbol);
        w.u8(code_of(STATUSES, &self.status));
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, BinaryError> {
        Ok(Status {
            symbol: r.id("symbol")?,
            status: r.code("status", STATUSES)?,
        })
    }
}

/// Account, asset, total, available.
impl Fields for Balance {
    fn write(&self, w: &mut Writer<'_>) {
        w.u64(self.account);
        w.id(&self.asset);
        w.u64(self.total);
        w.u64(self.available);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, BinaryError> {
        Ok(Balance {
            account: r.u64()?,
            asset: r.id("asset")?,
            total: r.u64()?,
            available: r.u64()?,
        })
    }
}

/// Symbol, side, price, quantity.
impl Fields for Book {
    fn write(&self, w: &mut Writer<'_>) {
        w.id(&self.symbol);
        w.u8(code_of(SIDES, &self.side));
        w.u64(self.price);
        w.u64(self.qty);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, BinaryError> {
        Ok(Book {
            symbol: r.id("symbol")?,
            side: r.code("side", SIDES)?,
            price: r.u64()?,
            qty: r.u64()?,
        })
    }
}

/// Account, symbol (optional), count canceled.
impl Fields for MassCanceled {
    fn write(&self, w: &mut Writer<'_>) {
        w.u64(self.account);
        w.opt_id(self.symbol.as_ref());
        w.u32(self.canceled);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, BinaryError> {
        Ok(MassCanceled {
            account: r.u64()?,
            symbol: r.opt_id("symbol")?,
            canceled: r.u32()?,
        })
    }
}

/// Account, then each limit optional: order quantity, order notional, open
/// orders, price band.
impl Fields for RiskLimits {
    fn write(&self, w: &mut Writer<'_>) {
        w.u64(self.account);
        w.opt_u64(self.max_order_qty);
        w.opt_u64(self.max_order_notional);
        w.opt_u32(self.max_open_orders);
        w.opt_u32(self.price_band_bps);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, BinaryError> {
        Ok(RiskLimits {
            account: r.u64()?,
            max_order_qty: r.opt_u64("max_order_qty")?,
            max_order_notional: r.opt_u64("max_order_notional")?,
            max_open_orders: r.opt_u32("max_open_orders")?,
            price_band_bps: r.opt_u32("price_band_bps")?,
        })
    }
}

/// Account, suspended (`bool`), count canceled.
impl Fields for AccountStatus {
    fn write(&self, w: &mut Writer<'_>) {
        w.u64(self.account);
        w.bool(self.suspended);
        w.u32(self.canceled);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, BinaryError> {
        Ok(AccountStatus {
            account: r.u64()?,
            suspended: r.bool("suspended")?,
            canceled: r.u32()?,
        })
    }
}

/// Account, symbol, state (`u8`: 0 set, 1 removed, 2 tripped, 3 reset),
/// then every state's fields, zero where the state has none: window,
/// maximum quantity and count (both optional), filled quantity, fills.
impl Fields for Mmp {
    fn write(&self, w: &mut Writer<'_>) {
        w.u64(self.account);
        w.id(&self.symbol);
        let (kind, set, tripped) = match self.state {
            MmpState::Set {
                window_ns,
                max_qty,
                max_count,
            } => (0, (window_ns, max_qty, max_count), (0, 0)),
            MmpState::Removed => (1, (0, None, None), (0, 0)),
            MmpState::Tripped { filled_qty, fills } => (2, (0, None, None), (filled_qty, fills)),
            MmpState::Reset => (3, (0, None, None), (0, 0)),
        };
        w.u8(kind);
        w.u64(set.0);
        w.opt_u64(set.1);
        w.opt_u32(set.2);
        w.u64(tripped.0);
        w.u32(tripped.1);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, BinaryError> {
        let account = r.u64()?;
        let symbol = r.id("symbol")?;
        let kind = r.u8()?;
        let set = (r.u64()?, r.opt_u64("max_qty")?, r.opt_u32("max_count")?);
        let tripped = (r.u64()?, r.u32()?);
        let unset = set == (0, None, None);
        let untripped = tripped == (0, 0);
        let state = match kind {
            0 if untripped => MmpState::Set {
                window_ns: set.0,
                max_qty: set.1,
                max_count: set.2,
            },
            1 if unset && untripped => MmpState::Removed,
            2 if unset => MmpState::Tripped {
                filled_qty: tripped.0,
                fills: tripped.1,
            },
            3 if unset && untripped => MmpState::Reset,
            _ => {
                return Err(BinaryError::Field {
                    field: "state",
                    problem: "is unknown or has another state's fields",
                })
            }
        };
        Ok(Mmp {
            account,
            symbol,
            state,
        })
    }
}

/// Owner, sub-account.
impl Fields for SubAccountLinked {
    fn write(&self, w: &mut Writer<'_>) {
        w.u64(self.owner);
        w.u64(self.sub);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, BinaryError> {
        Ok(SubAccountLinked {
            owner: r.u64()?,
            sub: r.u64()?,
        })
    }
}

/// Symbol, phase.
impl Fields for PhaseChanged {
    fn write(&self, w: &mut Writer<'_>) {
        w.id(&self.symbol);
        w.u8(code_of(Phase::ALL, &self.phase));
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, BinaryError> {
        Ok(PhaseChanged {
            symbol: r.id("symbol")?,
            phase: r.code("phase", Phase::ALL)?,
        })
    }
}

/// Symbol, price.
impl Fields for ReferencePrice {
    fn write(&self, w: &mut Writer<'_>) {
        w.id(&self.symbol);
        w.u64(self.price);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, BinaryError> {
        Ok(ReferencePrice {
            symbol: r.id("symbol")?,
            price: r.u64()?,
        })
    }
}

/// Symbol, price (optional), volume, imbalance side (`u8`: 0 none, 1 buy,
/// 2 sell), imbalance quantity.
impl Fields for Indicative {
    fn write(&self, w: &mut Writer<'_>) {
        w.id(&self.symbol);
        w.opt_u64(self.price);
        w.u64(self.volume);
        w.u8(code_of(IMBALANCE_SIDES, &self.imbalance_side));
        w.u64(self.imbalance_qty);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, BinaryError> {
        Ok(Indicative {
            symbol: r.id("symbol")?,
            price: r.opt_u64("price")?,
            volume: r.u64()?,
            imbalance_side: r.code("imbalance_side", IMBALANCE_SIDES)?,
            imbalance_qty: r.u64()?,
        })
    }
}

/// Symbol, kind (open, close, volatility, reopen), price, volume.
impl Fields for Auction {
    fn write(&self, w: &mut Writer<'_>) {
        w.id(&self.symbol);
        w.u8(code_of(AUCTION_KINDS, &self.kind));
        w.u64(self.price);
        w.u64(self.volume);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, BinaryError> {
        Ok(Auction {
            symbol: r.id("symbol")?,
            kind: r.code("kind", AUCTION_KINDS)?,
            price: r.u64()?,
            volume: r.u64()?,
        })
    }
}

/// Symbol, base, quote, tick, lot, minimum and maximum quantities, minimum
/// notional, maker and taker fees (`i32`), collar, static and dynamic
/// bands (`u32`), volatility auction length, trading status.
impl Fields for InstrumentRules {
    fn write(&self, w: &mut Writer<'_>) {
        w.id(&self.symbol);
        w.id(&self.base);
        w.id(&self.quote);
        w.u64(self.tick_size);
        w.u64(self.lot_size);
        w.u64(self.min_qty);
        w.u64(self.max_qty);
        w.u64(self.min_notional);
        w.i32(self.maker_fee_bps);
        w.i32(self.taker_fee_bps);
        w.u32(self.collar_bps);
        w.u32(self.static_band_bps);
        w.u32(self.dynamic_band_bps);
        w.u64(self.volatility_auction_ns);
        w.u8(code_of(STATUSES, &self.status));
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, BinaryError> {
        Ok(InstrumentRules {
            symbol: r.id("symbol")?,
            base: r.id("base")?,
            quote: r.id("quote")?,
            tick_size: r.u64()?,
            lot_size: r.u64()?,
            min_qty: r.u64()?,
            max_qty: r.u64()?,
            min_notional: r.u64()?,
            maker_fee_bps: r.i32()?,
            taker_fee_bps: r.i32()?,
            collar_bps: r.u32()?,
            static_band_bps: r.u32()?,
            dynamic_band_bps: r.u32()?,
            volatility_auction_ns: r.u64()?,
            status: r.code("status", STATUSES)?,
        })
    }
}
