//! The blocks of the events about orders and trades: the ones a gateway
//! sends back to its sessions, the commonest on the wire.

use std::num::NonZeroU64;

use exchange_types::event::{
    Accepted, AcceptedExt, Canceled, Expired, Rejected, Replaced, Trade, Triggered,
};
use exchange_types::{RejectReason, TrailingUnits};

use super::command::{code_of, ORDER_TYPES, SIDES, STPS, TEMPLATES, TIFS};
use super::event::{Fields, CANCEL_REASONS};
use super::wire::{Reader, Writer};
use super::BinaryError;

fn invalid(field: &'static str, problem: &'static str) -> BinaryError {
    BinaryError::Field { field, problem }
}

/// Account, client order id, order id, symbol, side, type, price
/// (optional), quantity, time in force, post-only, self-trade prevention.
/// The rarer part, when the header flags it: stop price, trailing (`u8`
/// kind 0 none, 1 amount, 2 basis points; a `u64` amount; a `u32`), display
/// quantity, funds, expire time, one-cancels-other id. The flag is set
/// exactly when the event has the part, empty or not, so the event reads
/// back as it was.
pub(super) fn write_accepted(w: &mut Writer<'_>, e: &Accepted) -> bool {
    w.u64(e.account);
    w.id(&e.client_order_id);
    w.u64(e.order_id);
    w.id(&e.symbol);
    w.u8(code_of(SIDES, &e.side));
    w.u8(code_of(ORDER_TYPES, &e.order_type));
    w.opt_u64(e.price);
    w.u64(e.qty);
    w.u8(code_of(TIFS, &e.tif));
    w.bool(e.post_only);
    w.u8(code_of(STPS, &e.stp));
    let Some(ext) = e.ext.as_deref() else {
        return false;
    };
    w.opt_u64(ext.stop_price);
    let (kind, amount, bps) = match ext.trailing {
        None => (0, 0, 0),
        Some(TrailingUnits::Amount(amount)) => (1, amount, 0),
        Some(TrailingUnits::Bps(bps)) => (2, 0, bps),
    };
    w.u8(kind);
    w.u64(amount);
    w.u32(bps);
    w.opt_u64(ext.display_qty);
    w.opt_u64(ext.funds);
    w.opt_u64(ext.expire_ts);
    w.opt_id(ext.oco_with.as_ref());
    // Appended, each only when it says something, so the part of every
    // other order keeps its bytes and an older part reads as displayed
    // and without a minimum: the hidden flag (0 only when a minimum
    // follows), then the minimum quantity.
    if ext.hidden || ext.min_qty.is_some() {
        w.u8(u8::from(ext.hidden));
    }
    if let Some(min_qty) = ext.min_qty {
        w.u64(min_qty);
    }
    true
}

pub(super) fn read_accepted(r: &mut Reader<'_>, ext: bool) -> Result<Accepted, BinaryError> {
    Ok(Accepted {
        account: r.u64()?,
        client_order_id: r.id("client_order_id")?,
        order_id: r.u64()?,
        symbol: r.id("symbol")?,
        side: r.code("side", SIDES)?,
        order_type: r.code("type", ORDER_TYPES)?,
        price: r.opt_u64("price")?,
        qty: r.u64()?,
        tif: r.code("tif", TIFS)?,
        post_only: r.bool("post_only")?,
        stp: r.code("stp", STPS)?,
        ext: if ext {
            Some(Box::new(read_accepted_ext(r)?))
        } else {
            None
        },
    })
}

fn read_accepted_ext(r: &mut Reader<'_>) -> Result<AcceptedExt, BinaryError> {
    let stop_price = r.opt_u64("stop_price")?;
    let trailing = match (r.u8()?, r.u64()?, r.u32()?) {
        (0, 0, 0) => None,
        (1, amount, 0) => Some(TrailingUnits::Amount(amount)),
        (2, 0, bps) => Some(TrailingUnits::Bps(bps)),
        _ => return Err(invalid("trailing", "does not match its kind")),
    };
    Ok(AcceptedExt {
        stop_price,
        trailing,
        display_qty: r.opt_u64("display_qty")?,
        funds: r.opt_u64("funds")?,
        expire_ts: r.opt_u64("expire_ts")?,
        oco_with: r.opt_id("oco_with")?,
        hidden: match r.remaining() {
            0 => false,
            _ => match (r.u8()?, r.remaining()) {
                (1, _) => true,
                (0, 1..) => false,
                _ => {
                    return Err(invalid(
                        "hidden",
                        "is written as 1 for a hidden order, or 0 before a minimum quantity",
                    ))
                }
            },
        },
        min_qty: match r.remaining() {
            0 => None,
            _ => Some(r.u64()?),
        },
    })
}

/// Command (`u16`, its command template; a name no command has is written
/// as 0, which no reader takes), account, client order id, order id and
/// symbol (each optional), reason (`u16`, its code: codes are stable where
/// the reasons' order is not). The reason's message is the reason's own,
/// so it is not sent.
impl Fields for Rejected {
    fn write(&self, w: &mut Writer<'_>) {
        let command = TEMPLATES
            .iter()
            .position(|name| *name == self.command)
            .and_then(|at| u16::try_from(at + 1).ok())
            .unwrap_or(0);
        w.u16(command);
        w.opt_u64(self.account);
        w.opt_id(self.client_order_id.as_ref());
        w.opt_u64(self.order_id);
        w.opt_id(self.symbol.as_ref());
        w.u16(self.reason.code());
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, BinaryError> {
        let command = usize::from(r.u16()?)
            .checked_sub(1)
            .and_then(|at| TEMPLATES.get(at))
            .copied()
            .ok_or_else(|| invalid("command", "is not a command's template"))?;
        let account = r.opt_u64("account")?;
        let client_order_id = r.opt_id("client_order_id")?;
        let order_id = r.opt_u64("order_id")?;
        let symbol = r.opt_id("symbol")?;
        let code = r.u16()?;
        let reason = RejectReason::ALL
            .iter()
            .copied()
            .find(|reason| reason.code() == code)
            .ok_or_else(|| invalid("code", "is not a known reject code"))?;
        Ok(Rejected {
            command,
            account,
            client_order_id,
            order_id,
            symbol,
            reason,
        })
    }
}

/// Trade id, symbol, price, quantity, maker and taker order ids, maker and
/// taker accounts, aggressor side, maker and taker fees (`i64`), maker
/// and taker leaves quantities.
impl Fields for Trade {
    fn write(&self, w: &mut Writer<'_>) {
        w.u64(self.trade_id);
        w.id(&self.symbol);
        w.u64(self.price);
        w.u64(self.qty);
        w.u64(self.maker_order_id);
        w.u64(self.taker_order_id);
        w.u64(self.maker_account);
        w.u64(self.taker_account);
        w.u8(code_of(SIDES, &self.aggressor_side));
        w.i64(self.maker_fee);
        w.i64(self.taker_fee);
        w.u64(self.maker_leaves_qty);
        w.u64(self.taker_leaves_qty);
        w.bool(self.midpoint);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, BinaryError> {
        Ok(Trade {
            trade_id: r.u64()?,
            symbol: r.id("symbol")?,
            price: r.u64()?,
            qty: r.u64()?,
            maker_order_id: r.u64()?,
            taker_order_id: r.u64()?,
            maker_account: r.u64()?,
            taker_account: r.u64()?,
            aggressor_side: r.code("aggressor_side", SIDES)?,
            maker_fee: r.i64()?,
            taker_fee: r.i64()?,
            maker_leaves_qty: r.u64()?,
            taker_leaves_qty: r.u64()?,
            midpoint: r.bool("midpoint")?,
        })
    }
}

/// Account, order id, client order id, symbol, reason, canceled, filled
/// and leaves quantities.
impl Fields for Canceled {
    fn write(&self, w: &mut Writer<'_>) {
        w.u64(self.account);
        w.u64(self.order_id);
        w.id(&self.client_order_id);
        w.id(&self.symbol);
        w.u8(code_of(CANCEL_REASONS, &self.reason));
        w.u64(self.canceled_qty);
        w.u64(self.filled_qty);
        w.u64(self.leaves_qty);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, BinaryError> {
        Ok(Canceled {
            account: r.u64()?,
            order_id: r.u64()?,
            client_order_id: r.id("client_order_id")?,
            symbol: r.id("symbol")?,
            reason: r.code("reason", CANCEL_REASONS)?,
            canceled_qty: r.u64()?,
            filled_qty: r.u64()?,
            leaves_qty: r.u64()?,
        })
    }
}

/// Account, order id, old and new client order ids, symbol, price,
/// quantity, leaves quantity, stop price (`u64`, zero when absent: the
/// field is non-zero by type, so zero is free to mean none).
impl Fields for Replaced {
    fn write(&self, w: &mut Writer<'_>) {
        w.u64(self.account);
        w.u64(self.order_id);
        w.id(&self.old_client_order_id);
        w.id(&self.client_order_id);
        w.id(&self.symbol);
        w.u64(self.price);
        w.u64(self.qty);
        w.u64(self.leaves_qty);
        w.u64(self.stop_price.map_or(0, NonZeroU64::get));
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, BinaryError> {
        Ok(Replaced {
            account: r.u64()?,
            order_id: r.u64()?,
            old_client_order_id: r.id("old_client_order_id")?,
            client_order_id: r.id("client_order_id")?,
            symbol: r.id("symbol")?,
            price: r.u64()?,
            qty: r.u64()?,
            leaves_qty: r.u64()?,
            stop_price: NonZeroU64::new(r.u64()?),
        })
    }
}

/// Account, order id, client order id, symbol, expired and filled
/// quantities.
impl Fields for Expired {
    fn write(&self, w: &mut Writer<'_>) {
        w.u64(self.account);
        w.u64(self.order_id);
        w.id(&self.client_order_id);
        w.id(&self.symbol);
        w.u64(self.expired_qty);
        w.u64(self.filled_qty);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, BinaryError> {
        Ok(Expired {
            account: r.u64()?,
            order_id: r.u64()?,
            client_order_id: r.id("client_order_id")?,
            symbol: r.id("symbol")?,
            expired_qty: r.u64()?,
            filled_qty: r.u64()?,
        })
    }
}

/// Account, order id, client order id, symbol, stop price, last price,
/// quantity.
impl Fields for Triggered {
    fn write(&self, w: &mut Writer<'_>) {
        w.u64(self.account);
        w.u64(self.order_id);
        w.id(&self.client_order_id);
        w.id(&self.symbol);
        w.u64(self.stop_price);
        w.u64(self.last_price);
        w.u64(self.qty);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, BinaryError> {
        Ok(Triggered {
            account: r.u64()?,
            order_id: r.u64()?,
            client_order_id: r.id("client_order_id")?,
            symbol: r.id("symbol")?,
            stop_price: r.u64()?,
            last_price: r.u64()?,
            qty: r.u64()?,
        })
    }
}
