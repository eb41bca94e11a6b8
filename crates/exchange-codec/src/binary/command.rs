//! Each command's block: its template number and its fields in order.
//! Enums are one byte, their index in the tables below; a table may gain
//! entries at its end, never change one.

use exchange_types::{
    AddInstrument, Cancel, Command, InternalTransfer, MassCancel, OrderRef, OrderType, Phase,
    Place, PlaceExt, ReferencePriceRule, Replace, ReplaceStop, SelfTradePrevention,
    SetInstrumentRules, SetMmp, SetRiskLimits, Side, TimeInForce, Trailing, Transfer,
};

use super::wire::{Reader, Writer};
use super::BinaryError;

/// Every template, numbered from 1 in this order, by the command's wire
/// name; `replace` covers both replaces (a moved stop price is a field).
pub const TEMPLATES: &[&str] = &[
    "add_instrument",
    "deposit",
    "withdraw",
    "place",
    "cancel",
    "replace",
    "mass_cancel",
    "halt",
    "resume",
    "set_risk_limits",
    "suspend",
    "reinstate",
    "set_mmp",
    "reset_mmp",
    "link_sub_account",
    "internal_transfer",
    "set_phase",
    "set_instrument_rules",
    "delist",
    "tick",
    "set_reference_price",
];

// The codes are the values' positions in the types' own lists, which only
// ever grow at their end.
pub(super) const SIDES: &[Side] = Side::ALL;
pub(super) const ORDER_TYPES: &[OrderType] = OrderType::ALL;
pub(super) const TIFS: &[TimeInForce] = TimeInForce::ALL;
pub(super) const STPS: &[SelfTradePrevention] = SelfTradePrevention::ALL;

/// A value's code: its index in its table. Every value is in its table
/// (the tests read each one back), so the fallback is never taken.
pub(super) fn code_of<T: PartialEq>(table: &[T], value: &T) -> u8 {
    table
        .iter()
        .position(|v| v == value)
        .and_then(|at| u8::try_from(at).ok())
        .unwrap_or(u8::MAX)
}

/// The command's template: its position in [`TEMPLATES`], from 1.
pub(crate) fn template_of(command: &Command) -> u16 {
    match command {
        Command::AddInstrument(_) => 1,
        Command::Deposit(_) => 2,
        Command::Withdraw(_) => 3,
        Command::Place(_) => 4,
        Command::Cancel(_) => 5,
        Command::Replace(_) | Command::ReplaceStop(_) => 6,
        Command::MassCancel(_) => 7,
        Command::Halt { .. } => 8,
        Command::Resume { .. } => 9,
        Command::SetRiskLimits(_) => 10,
        Command::Suspend { .. } => 11,
        Command::Reinstate { .. } => 12,
        Command::SetMmp(_) => 13,
        Command::ResetMmp { .. } => 14,
        Command::LinkSubAccount { .. } => 15,
        Command::InternalTransfer(_) => 16,
        Command::SetPhase { .. } => 17,
        Command::SetInstrumentRules(_) => 18,
        Command::Delist { .. } => 19,
        Command::Tick => 20,
        Command::SetReferencePrice { .. } => 21,
    }
}

/// Writes the command's block; true when a `place` wrote its rarer part.
pub(crate) fn write_block(command: &Command, out: &mut Vec<u8>) -> bool {
    let w = &mut Writer { out };
    match command {
        Command::AddInstrument(spec) => write_add_instrument(w, spec),
        Command::Deposit(t) | Command::Withdraw(t) => write_transfer(w, t),
        Command::Place(p) => return write_place(w, p),
        Command::Cancel(c) => {
            w.u64(c.account);
            write_order_ref(w, &c.order);
        }
        Command::Replace(r) => write_replace(w, r, None),
        Command::ReplaceStop(r) => write_replace(w, &r.replace, Some(r.stop_price)),
        Command::MassCancel(m) => {
            w.u64(m.account);
            w.opt_id(m.symbol.as_ref());
        }
        Command::Halt { symbol } | Command::Resume { symbol } | Command::Delist { symbol } => {
            w.id(symbol)
        }
        Command::SetPhase { symbol, phase } => {
            w.id(symbol);
            w.u8(code_of(Phase::ALL, phase));
        }
        Command::Tick => {}
        Command::SetRiskLimits(l) => write_risk_limits(w, l),
        Command::Suspend { account } | Command::Reinstate { account } => w.u64(*account),
        Command::SetMmp(m) => write_mmp(w, m),
        Command::ResetMmp { account, symbol } => {
            w.u64(*account);
            w.id(symbol);
        }
        Command::LinkSubAccount { owner, sub } => {
            w.u64(*owner);
            w.u64(*sub);
        }
        Command::InternalTransfer(t) => {
            w.u64(t.from);
            w.u64(t.to);
            w.id(&t.asset);
            w.dec(t.amount);
        }
        Command::SetInstrumentRules(r) => write_rules(w, r),
        Command::SetReferencePrice { symbol, price } => {
            w.id(symbol);
            w.dec(*price);
        }
    }
    false
}

const PLACE: u16 = 4;

/// Reads a block of `template`; `ext`: the header says a `place` carries
/// its rarer part.
pub(crate) fn read_block(template: u16, ext: bool, block: &[u8]) -> Result<Command, BinaryError> {
    let r = &mut Reader::new(block);
    if ext && template != PLACE {
        return Err(BinaryError::Flags(super::FLAG_EXT));
    }
    let command = read_template(template, ext, r)?;
    match r.remaining() {
        0 => Ok(command),
        extra => Err(BinaryError::BlockLength {
            expected: block.len() - extra,
            found: block.len(),
        }),
    }
}

fn read_template(template: u16, ext: bool, r: &mut Reader<'_>) -> Result<Command, BinaryError> {
    Ok(match template {
        1 => Command::AddInstrument(Box::new(read_add_instrument(r)?)),
        2 => Command::Deposit(read_transfer(r)?),
        3 => Command::Withdraw(read_transfer(r)?),
        PLACE => Command::Place(read_place(r, ext)?),
        5 => Command::Cancel(Cancel {
            account: r.u64()?,
            order: read_order_ref(r)?,
        }),
        6 => read_replace(r)?,
        7 => Command::MassCancel(MassCancel {
            account: r.u64()?,
            symbol: r.opt_id("symbol")?,
        }),
        8 => Command::Halt {
            symbol: r.id("symbol")?,
        },
        9 => Command::Resume {
            symbol: r.id("symbol")?,
        },
        10 => Command::SetRiskLimits(Box::new(read_risk_limits(r)?)),
        11 => Command::Suspend { account: r.u64()? },
        12 => Command::Reinstate { account: r.u64()? },
        13 => Command::SetMmp(Box::new(read_mmp(r)?)),
        14 => Command::ResetMmp {
            account: r.u64()?,
            symbol: r.id("symbol")?,
        },
        15 => Command::LinkSubAccount {
            owner: r.u64()?,
            sub: r.u64()?,
        },
        16 => Command::InternalTransfer(InternalTransfer {
            from: r.u64()?,
            to: r.u64()?,
            asset: r.id("asset")?,
            amount: r.dec("amount")?,
        }),
        17 => Command::SetPhase {
            symbol: r.id("symbol")?,
            phase: r.code("phase", Phase::ALL)?,
        },
        18 => Command::SetInstrumentRules(Box::new(read_rules(r)?)),
        19 => Command::Delist {
            symbol: r.id("symbol")?,
        },
        20 => Command::Tick,
        21 => Command::SetReferencePrice {
            symbol: r.id("symbol")?,
            price: r.dec("price")?,
        },
        _ => return Err(BinaryError::UnknownTemplate(template)),
    })
}

fn write_transfer(w: &mut Writer<'_>, t: &Transfer) {
    w.u64(t.account);
    w.id(&t.asset);
    w.dec(t.amount);
}

fn read_transfer(r: &mut Reader<'_>) -> Result<Transfer, BinaryError> {
    Ok(Transfer {
        account: r.u64()?,
        asset: r.id("asset")?,
        amount: r.dec("amount")?,
    })
}

/// `u8` kind (0: the exchange's id, 1: the client's), `u64` id (zero
/// for a client's), client order id (empty for an exchange id).
fn write_order_ref(w: &mut Writer<'_>, order: &OrderRef) {
    match order {
        OrderRef::Id(id) => {
            w.u8(0);
            w.u64(*id);
            w.opt_id::<{ exchange_types::limits::MAX_CLIENT_ORDER_ID_LEN }>(None);
        }
        OrderRef::Client(coid) => {
            w.u8(1);
            w.u64(0);
            w.id(coid);
        }
    }
}

fn read_order_ref(r: &mut Reader<'_>) -> Result<OrderRef, BinaryError> {
    let kind = r.u8()?;
    let id = r.u64()?;
    let coid = r.opt_id("client_order_id")?;
    match (kind, coid) {
        (0, None) => Ok(OrderRef::Id(id)),
        (1, Some(coid)) if id == 0 => Ok(OrderRef::Client(coid)),
        _ => Err(BinaryError::Field {
            field: "order_id",
            problem: "names an order neither by one id nor by the other",
        }),
    }
}

/// The common part: account, client order id, symbol, side, type, time in
/// force, post-only, self-trade prevention, price, quantity. The rarer
/// part, when the header flags it: stop price, trailing (`u8` kind 0 none,
/// 1 amount, 2 basis points; a decimal; a `u32`), display quantity, funds,
/// expire time, one-cancels-other id, minimum acceptable quantity, and a
/// hidden order's `u8` 1. The last two were appended after the others: a
/// rarer part written before the minimum ends at the one-cancels-other id
/// and reads as having neither, one written before hidden orders ends at
/// the minimum and reads as displayed; a displayed order is still written
/// so, which keeps one encoding per order.
fn write_place(w: &mut Writer<'_>, p: &Place) -> bool {
    w.u64(p.account);
    w.id(&p.client_order_id);
    w.id(&p.symbol);
    w.u8(code_of(SIDES, &p.side));
    w.u8(code_of(ORDER_TYPES, &p.order_type));
    w.u8(code_of(TIFS, &p.tif));
    w.bool(p.post_only);
    w.u8(code_of(STPS, &p.stp));
    w.opt_dec(p.price);
    w.dec(p.qty);
    // An order whose rarer fields are all absent is the same order as one
    // without them, and is written without the part.
    let Some(ext) = p.ext.as_deref().filter(|ext| **ext != PlaceExt::default()) else {
        return false;
    };
    w.opt_dec(ext.stop_price);
    let (kind, amount, bps) = match ext.trailing {
        None => (0, None, 0),
        Some(Trailing::Amount(amount)) => (1, Some(amount), 0),
        Some(Trailing::Bps(bps)) => (2, None, bps),
    };
    w.u8(kind);
    w.opt_dec(amount);
    w.u32(bps);
    w.opt_dec(ext.display_qty);
    w.opt_dec(ext.funds);
    w.opt_u64(ext.expire_ts);
    w.opt_id(ext.oco_with.as_ref());
    w.opt_dec(ext.min_qty);
    if ext.hidden {
        w.u8(1);
    }
    true
}

fn read_place(r: &mut Reader<'_>, ext: bool) -> Result<Place, BinaryError> {
    Ok(Place {
        account: r.u64()?,
        client_order_id: r.id("client_order_id")?,
        symbol: r.id("symbol")?,
        side: r.code("side", SIDES)?,
        order_type: r.code("type", ORDER_TYPES)?,
        tif: r.code("tif", TIFS)?,
        post_only: r.bool("post_only")?,
        stp: r.code("stp", STPS)?,
        price: r.opt_dec("price")?,
        qty: r.dec("qty")?,
        ext: if ext {
            Some(Box::new(read_place_ext(r)?))
        } else {
            None
        },
    })
}

fn read_place_ext(r: &mut Reader<'_>) -> Result<PlaceExt, BinaryError> {
    let stop_price = r.opt_dec("stop_price")?;
    let trailing = match (r.u8()?, r.opt_dec("trailing_amount")?, r.u32()?) {
        (0, None, 0) => None,
        (1, Some(amount), 0) => Some(Trailing::Amount(amount)),
        (2, None, bps) => Some(Trailing::Bps(bps)),
        _ => {
            return Err(BinaryError::Field {
                field: "trailing_bps",
                problem: "does not match its kind",
            })
        }
    };
    let ext = PlaceExt {
        stop_price,
        trailing,
        display_qty: r.opt_dec("display_qty")?,
        funds: r.opt_dec("funds")?,
        expire_ts: r.opt_u64("expire_ts")?,
        oco_with: r.opt_id("oco_with")?,
        // The block's older, shorter form, as SBE reads a field appended
        // after a message was written: the field's default.
        min_qty: match r.remaining() {
            0 => None,
            _ => r.opt_dec("min_qty")?,
        },
        hidden: match r.remaining() {
            0 => false,
            _ => match r.u8()? {
                1 => true,
                _ => {
                    return Err(BinaryError::Field {
                        field: "hidden",
                        problem: "is written only as 1, for a hidden order",
                    })
                }
            },
        },
    };
    // An order without rarer fields is written without the part, so each
    // order has one encoding.
    if ext == PlaceExt::default() {
        return Err(BinaryError::Field {
            field: "ext",
            problem: "is flagged but empty",
        });
    }
    Ok(ext)
}

/// Account, order, new client order id, price, quantity, stop price.
fn write_replace(w: &mut Writer<'_>, r: &Replace, stop_price: Option<exchange_types::Dec>) {
    w.u64(r.account);
    write_order_ref(w, &r.order);
    w.opt_id(r.new_client_order_id.as_ref());
    w.opt_dec(r.price);
    w.opt_dec(r.qty);
    w.opt_dec(stop_price);
}

fn read_replace(r: &mut Reader<'_>) -> Result<Command, BinaryError> {
    let replace = Replace {
        account: r.u64()?,
        order: read_order_ref(r)?,
        new_client_order_id: r.opt_id("new_client_order_id")?,
        price: r.opt_dec("price")?,
        qty: r.opt_dec("qty")?,
    };
    Ok(match r.opt_dec("stop_price")? {
        None => Command::Replace(replace),
        Some(stop_price) => Command::ReplaceStop(Box::new(ReplaceStop {
            replace,
            stop_price,
        })),
    })
}

fn write_add_instrument(w: &mut Writer<'_>, s: &AddInstrument) {
    w.id(&s.symbol);
    w.id(&s.base);
    w.id(&s.quote);
    w.dec(s.tick_size);
    w.dec(s.lot_size);
    w.opt_dec(s.min_qty);
    w.opt_dec(s.max_qty);
    w.opt_u32(s.collar_bps);
    w.opt_dec(s.reference_price);
    w.i32(s.maker_fee_bps);
    w.i32(s.taker_fee_bps);
    w.opt_dec(s.min_notional);
    w.opt_u32(s.static_band_bps);
    w.opt_u32(s.dynamic_band_bps);
    w.opt_u64(s.volatility_auction_ns);
    // Appended in the way SBE lets a block grow: written only when not the
    // unnamed rule, so blocks written before the field existed read as the
    // rule they ran under and every listing keeps one encoding. The phase
    // grows it once more, after the rule, which a listing with a phase
    // therefore always writes. The minimum for hidden orders grows it a
    // third time, after the phase, which a listing with a minimum writes
    // as `NO_PHASE` when it has none.
    let hidden = s.hidden_min_notional.is_some();
    if s.reference_price_rule != ReferencePriceRule::UNNAMED || s.phase.is_some() || hidden {
        w.u8(code_of(ReferencePriceRule::ALL, &s.reference_price_rule));
    }
    match s.phase {
        Some(phase) => w.u8(code_of(Phase::ALL, &phase)),
        None if hidden => w.u8(NO_PHASE),
        None => {}
    }
    if let Some(minimum) = s.hidden_min_notional {
        w.dec(minimum);
    }
}

/// The phase byte of a listing that names no phase but a minimum for
/// hidden orders after it.
const NO_PHASE: u8 = u8::MAX;

/// The listing's optional phase; `NO_PHASE` only before a minimum for
/// hidden orders, so that each listing has one encoding.
fn read_listing_phase(r: &mut Reader<'_>) -> Result<Option<Phase>, BinaryError> {
    if r.remaining() == 0 {
        return Ok(None);
    }
    if r.remaining() > 1 && r.peek_u8() == Some(NO_PHASE) {
        r.u8()?;
        return Ok(None);
    }
    Ok(Some(r.code("phase", Phase::ALL)?))
}

fn read_add_instrument(r: &mut Reader<'_>) -> Result<AddInstrument, BinaryError> {
    Ok(AddInstrument {
        symbol: r.id("symbol")?,
        base: r.id("base")?,
        quote: r.id("quote")?,
        tick_size: r.dec("tick_size")?,
        lot_size: r.dec("lot_size")?,
        min_qty: r.opt_dec("min_qty")?,
        max_qty: r.opt_dec("max_qty")?,
        collar_bps: r.opt_u32("collar_bps")?,
        reference_price: r.opt_dec("reference_price")?,
        maker_fee_bps: r.i32()?,
        taker_fee_bps: r.i32()?,
        min_notional: r.opt_dec("min_notional")?,
        static_band_bps: r.opt_u32("static_band_bps")?,
        dynamic_band_bps: r.opt_u32("dynamic_band_bps")?,
        volatility_auction_ns: r.opt_u64("volatility_auction_ns")?,
        reference_price_rule: read_reference_price_rule(r)?,
        phase: read_listing_phase(r)?,
        hidden_min_notional: match r.remaining() {
            0 => None,
            _ => Some(r.dec("hidden_min_notional")?),
        },
    })
}

/// The listing's optional rule: absent is the unnamed rule, and that rule
/// written out without a phase after it is a second encoding, so it is
/// refused.
fn read_reference_price_rule(r: &mut Reader<'_>) -> Result<ReferencePriceRule, BinaryError> {
    if r.remaining() == 0 {
        return Ok(ReferencePriceRule::UNNAMED);
    }
    let rule = r.code("reference_price_rule", ReferencePriceRule::ALL)?;
    if rule == ReferencePriceRule::UNNAMED && r.remaining() == 0 {
        return Err(BinaryError::Field {
            field: "reference_price_rule",
            problem: "is the unnamed rule, which is written by leaving it out",
        });
    }
    Ok(rule)
}

fn write_rules(w: &mut Writer<'_>, s: &SetInstrumentRules) {
    w.id(&s.symbol);
    w.opt_dec(s.tick_size);
    w.opt_dec(s.lot_size);
    w.opt_dec(s.min_qty);
    w.opt_dec(s.max_qty);
    w.opt_dec(s.min_notional);
    w.opt_i32(s.maker_fee_bps);
    w.opt_i32(s.taker_fee_bps);
    w.opt_u32(s.collar_bps);
    w.opt_u32(s.static_band_bps);
    w.opt_u32(s.dynamic_band_bps);
    w.opt_u64(s.volatility_auction_ns);
    // Appended, written only when set, so a change logged before the
    // field existed keeps its bytes and reads as leaving the minimum.
    if let Some(minimum) = s.hidden_min_notional {
        w.dec(minimum);
    }
}

fn read_rules(r: &mut Reader<'_>) -> Result<SetInstrumentRules, BinaryError> {
    Ok(SetInstrumentRules {
        symbol: r.id("symbol")?,
        tick_size: r.opt_dec("tick_size")?,
        lot_size: r.opt_dec("lot_size")?,
        min_qty: r.opt_dec("min_qty")?,
        max_qty: r.opt_dec("max_qty")?,
        min_notional: r.opt_dec("min_notional")?,
        maker_fee_bps: r.opt_i32("maker_fee_bps")?,
        taker_fee_bps: r.opt_i32("taker_fee_bps")?,
        collar_bps: r.opt_u32("collar_bps")?,
        static_band_bps: r.opt_u32("static_band_bps")?,
        dynamic_band_bps: r.opt_u32("dynamic_band_bps")?,
        volatility_auction_ns: r.opt_u64("volatility_auction_ns")?,
        hidden_min_notional: match r.remaining() {
            0 => None,
            _ => Some(r.dec("hidden_min_notional")?),
        },
    })
}

fn write_risk_limits(w: &mut Writer<'_>, l: &SetRiskLimits) {
    w.u64(l.account);
    w.opt_dec(l.max_order_qty);
    w.opt_dec(l.max_order_notional);
    w.opt_u32(l.max_open_orders);
    w.opt_u32(l.price_band_bps);
}

fn read_risk_limits(r: &mut Reader<'_>) -> Result<SetRiskLimits, BinaryError> {
    Ok(SetRiskLimits {
        account: r.u64()?,
        max_order_qty: r.opt_dec("max_order_qty")?,
        max_order_notional: r.opt_dec("max_order_notional")?,
        max_open_orders: r.opt_u32("max_open_orders")?,
        price_band_bps: r.opt_u32("price_band_bps")?,
    })
}

fn write_mmp(w: &mut Writer<'_>, m: &SetMmp) {
    w.u64(m.account);
    w.id(&m.symbol);
    w.u64(m.window_ns);
    w.opt_dec(m.max_qty);
    w.opt_u32(m.max_count);
}

fn read_mmp(r: &mut Reader<'_>) -> Result<SetMmp, BinaryError> {
    Ok(SetMmp {
        account: r.u64()?,
        symbol: r.id("symbol")?,
        window_ns: r.u64()?,
        max_qty: r.opt_dec("max_qty")?,
        max_count: r.opt_u32("max_count")?,
    })
}
