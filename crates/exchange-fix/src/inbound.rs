//! Incoming order entry: a validated application message becomes a core
//! [`Command`], or an immediate answer when it cannot become one.
//!
//! As in the REST and WebSocket gateways, only the shape is decided here:
//! whether a price is on the tick, funds suffice or a symbol exists is the
//! core's decision. Enumerated values are split three ways:
//! - not a FIX 4.4 value at all: session-level Reject, "value is
//!   incorrect", naming the tag (the message is meaningless);
//! - a FIX value the exchange does not offer (a pegged order, GTX):
//!   the order is refused with OrdRejReason 11, "unsupported order
//!   characteristic", and a Text saying what is offered;
//! - a supported value: used.

use exchange_types::ids::InlineStr;
use exchange_types::limits::{MAX_CLIENT_ORDER_ID_LEN, MAX_SYMBOL_LEN};
use exchange_types::{
    AccountId, Cancel, ClientOrderId, Command, Dec, MassCancel, OrderRef, OrderType, Place,
    PlaceExt, Replace, SelfTradePrevention, Side, Symbol, TimeInForce,
};

use crate::message::{Message, Outgoing, Problem};
use crate::place_ext;
use crate::reports::{self, CancelEcho, MassCancelEcho, PlaceEcho, ResponseTo};
use crate::tags::{self, business_reject, session_reject};

/// What a session may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// Order entry for one account.
    Trading { account: AccountId },
    /// Execution reports of these accounts; no order entry.
    DropCopy { accounts: Vec<AccountId> },
}

impl Role {
    pub fn covers(&self, account: AccountId) -> bool {
        match self {
            Role::Trading { account: own } => *own == account,
            Role::DropCopy { accounts } => accounts.contains(&account),
        }
    }
}

/// What a submitted command answers to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    Place(PlaceEcho),
    Cancel(CancelEcho),
    Replace(CancelEcho),
    MassCancel(MassCancelEcho),
}

/// A command to sequence, and what its outcome answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submission {
    pub command: Command,
    pub request: Request,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Inbound {
    /// Sequence this command; answer it once applied.
    Submit(Box<Submission>),
    /// Answer at once with this message.
    Reply(Outgoing),
    /// A session-level Reject of the message.
    Reject(Problem),
    /// Answer with the order's current state, from the session's order
    /// cache, once every earlier request is answered.
    Status,
    /// A SecurityStatusRequest (35=e) with a valid 263: answered from the
    /// session's own view of the markets
    /// ([`crate::security_status::SecurityStatus`]).
    SecurityStatus,
}

/// Valid FIX 4.4 values of the enumerated fields the gateway reads.
const SIDES: &[u8] = b"123456789ABCDEFG";
const ORD_TYPES: &[u8] = b"12346789DEGIJKLMP";
const TIFS: &[u8] = b"01234567";
const HANDL_INSTS: &[u8] = b"123";
const EXEC_INSTS: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSUVWXYZabcde";
const MASS_CANCEL_TYPES: &[u8] = b"1234567";

fn out_of_range(tag: u32, value: &str) -> Inbound {
    Inbound::Reject(Problem::new(
        Some(tag),
        session_reject::VALUE_INCORRECT,
        format!("{value:?} is not a valid value for tag {tag}"),
    ))
}

/// One character of `valid`, or the Reject for it.
fn enum_char(message: &Message, tag: u32, valid: &[u8]) -> Result<Option<u8>, Inbound> {
    match message.get(tag) {
        None => Ok(None),
        Some([c]) if valid.contains(c) => Ok(Some(*c)),
        Some(other) => Err(out_of_range(tag, &String::from_utf8_lossy(other))),
    }
}

fn text(message: &Message, tag: u32) -> String {
    String::from_utf8_lossy(message.get(tag).unwrap_or_default()).into_owned()
}

const CL_ORD_ID_INVALID: &str = "ClOrdID (11) must be 1 to 36 printable characters without spaces";
const QTY_UNREADABLE: &str = "OrderQty (38) is not a number the exchange can read";
const PRICE_UNREADABLE: &str = "Price (44) is not a number the exchange can read";

/// A decimal field that must be present and readable.
fn decimal(message: &Message, tag: u32) -> Option<Dec> {
    message.text(tag).and_then(|t| Dec::parse_fix_float(t).ok())
}

/// A decimal field that may be absent but, if present, must be readable:
/// `Err` when it is there and unreadable.
fn optional_decimal(message: &Message, tag: u32) -> Result<Option<Dec>, ()> {
    message
        .text(tag)
        .map(|t| Dec::parse_fix_float(t).map_err(|_| ()))
        .transpose()
}

fn identifier<const N: usize>(message: &Message, tag: u32) -> Option<InlineStr<N>> {
    // Printable ASCII without spaces, within the exchange's length limit.
    message.text(tag).and_then(|t| InlineStr::new(t).ok())
}

/// Translates one application message of a logged-on session.
pub fn translate(message: &Message, role: &Role, now: u64) -> Inbound {
    let msg_type = message.text(tags::MSG_TYPE).unwrap_or_default();
    let seq = message.seq_num().unwrap_or(0);
    if msg_type == tags::msg::ORDER_STATUS_REQUEST {
        // Any session may ask about the orders it is told about.
        return Inbound::Status;
    }
    if msg_type == tags::msg::SECURITY_STATUS_REQUEST {
        // Public information: drop-copy sessions may ask too.
        return match enum_char(message, tags::SUBSCRIPTION_REQUEST_TYPE, b"012") {
            Ok(_) => Inbound::SecurityStatus,
            Err(reject) => reject,
        };
    }
    let account = match role {
        Role::Trading { account } => *account,
        Role::DropCopy { .. } => {
            let reason = if matches!(msg_type, "D" | "F" | "G" | "q") {
                (
                    business_reject::NOT_AUTHORIZED,
                    "a drop-copy session cannot enter orders",
                )
            } else {
                (
                    business_reject::UNSUPPORTED_MESSAGE_TYPE,
                    "the exchange does not take this message type",
                )
            };
            let ref_id = message.text(tags::CL_ORD_ID);
            return Inbound::Reply(reports::business_reject(
                seq, msg_type, ref_id, reason.0, reason.1,
            ));
        }
    };
    let result = match msg_type {
        "D" => place(message, account, now),
        "F" => cancel(message, account, now),
        "G" => replace(message, account, now),
        "q" => mass_cancel(message, account, now),
        other => Err(Inbound::Reply(reports::business_reject(
            seq,
            other,
            None,
            business_reject::UNSUPPORTED_MESSAGE_TYPE,
            "the exchange does not take this message type",
        ))),
    };
    result.unwrap_or_else(|answer| answer)
}

/// Account (1), when given, must be the session's own.
fn account_matches(message: &Message, account: AccountId) -> bool {
    message
        .get(tags::ACCOUNT)
        .is_none_or(|given| given == account.to_string().as_bytes())
}

/// The enumerated fields of a NewOrderSingle, each a FIX 4.4 value or
/// absent, before the exchange decides which it offers.
struct PlaceEnums {
    side: Option<u8>,
    ord_type: Option<u8>,
    tif: Option<u8>,
    stp: Option<u8>,
    exec_inst: String,
}

/// Why an order is refused: its OrdRejReason (103) and Text.
type OrderRefusal = (u32, &'static str);

fn place(message: &Message, account: AccountId, now: u64) -> Result<Inbound, Inbound> {
    let enums = place_enums(message)?;
    let echo = PlaceEcho {
        cl_ord_id: text(message, tags::CL_ORD_ID),
        symbol: text(message, tags::SYMBOL),
        side: text(message, tags::SIDE),
        qty: text(message, tags::ORDER_QTY),
        ord_type: text(message, tags::ORD_TYPE),
        price: message.text(tags::PRICE).map(str::to_string),
    };
    match place_command(message, account, &enums) {
        Ok(command) => Ok(Inbound::Submit(Box::new(Submission {
            command,
            request: Request::Place(echo),
        }))),
        Err((ord_rej, why)) => Err(Inbound::Reply(reports::rejected_order(
            &echo,
            account,
            &format!("G{now}"),
            ord_rej,
            why,
            now,
        ))),
    }
}

/// Reads the enumerated fields, or the session-level Reject of one that is
/// not a FIX 4.4 value at all.
fn place_enums(message: &Message) -> Result<PlaceEnums, Inbound> {
    let side = enum_char(message, tags::SIDE, SIDES)?;
    let ord_type = enum_char(message, tags::ORD_TYPE, ORD_TYPES)?;
    let tif = enum_char(message, tags::TIME_IN_FORCE, TIFS)?;
    enum_char(message, tags::HANDL_INST, HANDL_INSTS)?;
    let stp = enum_char(message, tags::SELF_TRADE_PREVENTION, b"NOBD")?;
    let exec_inst = text(message, tags::EXEC_INST);
    if let Some(bad) = exec_inst
        .split(' ')
        .filter(|v| !v.is_empty())
        .find(|v| v.len() != 1 || !EXEC_INSTS.contains(&v.as_bytes()[0]))
    {
        return Err(out_of_range(tags::EXEC_INST, bad));
    }
    Ok(PlaceEnums {
        side,
        ord_type,
        tif,
        stp,
        exec_inst,
    })
}

/// The core's Place for a NewOrderSingle, or why the exchange refuses it.
/// The checks run in a fixed order, so the first problem is the one named.
fn place_command(
    message: &Message,
    account: AccountId,
    enums: &PlaceEnums,
) -> Result<Command, OrderRefusal> {
    if !account_matches(message, account) {
        return Err((15, "Account (1) must be the session's account or absent"));
    }
    let side = order_side(enums.side)?;
    let order_type = order_type_of(enums.ord_type, message.get(tags::PRICE).is_some())?;
    let tif = time_in_force(enums.tif, order_type)?;
    // The core says which time in force takes an expire time and which
    // needs one.
    let expire_ts = match message.get(tags::EXPIRE_TIME) {
        None => None,
        Some(value) => {
            Some(crate::time::parse(value).ok_or((99, "ExpireTime (126) is not a UTCTimestamp"))?)
        }
    };
    let (post_only, trailing_peg, mid_peg) = exec_instructions(&enums.exec_inst)?;
    if mid_peg != (order_type == OrderType::Midpoint) {
        return Err((
            11,
            "OrdType (40) P (pegged) goes with ExecInst (18) M (mid-price peg)",
        ));
    }
    let stp = self_trade_prevention(enums.stp);
    let Some(client_order_id): Option<ClientOrderId> = identifier(message, tags::CL_ORD_ID) else {
        return Err((99, CL_ORD_ID_INVALID));
    };
    let Some(symbol): Option<Symbol> = identifier(message, tags::SYMBOL) else {
        return Err((1, "Symbol (55) is not a symbol of this exchange"));
    };
    let (qty, funds) = order_qty(message)?;
    let price = optional_decimal(message, tags::PRICE).map_err(|()| (99, PRICE_UNREADABLE))?;
    let ext = place_extension(message, expire_ts, trailing_peg, funds)?;
    Ok(Command::Place(Place {
        account,
        client_order_id,
        symbol,
        side,
        order_type,
        price,
        qty,
        tif,
        post_only,
        stp,
        ext,
    }))
}

fn order_side(side: Option<u8>) -> Result<Side, OrderRefusal> {
    match side {
        Some(b'1') => Ok(Side::Buy),
        Some(b'2') => Ok(Side::Sell),
        _ => Err((11, "Side (54) must be 1 (buy) or 2 (sell)")),
    }
}

/// The order type of OrdType (40). FIX 4.4 has no limit-if-touched type:
/// market-if-touched (J) with a Price (44) is one, as several venues map
/// it.
fn order_type_of(ord_type: Option<u8>, priced: bool) -> Result<OrderType, OrderRefusal> {
    match ord_type {
        Some(b'J') if priced => Ok(OrderType::LimitIfTouched),
        Some(b'J') => Ok(OrderType::MarketIfTouched),
        Some(b'1') => Ok(OrderType::Market),
        Some(b'2') => Ok(OrderType::Limit),
        Some(b'3') => Ok(OrderType::Stop),
        Some(b'4') => Ok(OrderType::StopLimit),
        Some(b'K') => Ok(OrderType::MarketToLimit),
        // Pegged; the only peg taken is to the midpoint (ExecInst M).
        Some(b'P') => Ok(OrderType::Midpoint),
        _ => Err((
            11,
            concat!(
                "OrdType (40) must be 1 (market), 2 (limit), 3 (stop), 4 (stop limit), ",
                "J (if touched; limit if touched with Price (44)), K (market with leftover ",
                "as limit) or P (pegged, with ExecInst M)"
            ),
        )),
    }
}

/// TimeInForce (59); when absent, GTC for orders that rest and IOC for a
/// market order.
fn time_in_force(tif: Option<u8>, order_type: OrderType) -> Result<TimeInForce, OrderRefusal> {
    match (tif, order_type) {
        (Some(b'1'), _)
        | (
            None,
            OrderType::Limit
            | OrderType::Stop
            | OrderType::StopLimit
            | OrderType::MarketToLimit
            | OrderType::MarketIfTouched
            | OrderType::LimitIfTouched
            | OrderType::Midpoint,
        ) => Ok(TimeInForce::Gtc),
        (Some(b'3'), _) | (None, OrderType::Market) => Ok(TimeInForce::Ioc),
        (Some(b'4'), _) => Ok(TimeInForce::Fok),
        (Some(b'0'), _) => Ok(TimeInForce::Day),
        (Some(b'2'), _) => Ok(TimeInForce::AtOpen),
        (Some(b'6'), _) => Ok(TimeInForce::Gtd),
        (Some(b'7'), _) => Ok(TimeInForce::AtClose),
        _ => Err((
            11,
            concat!(
                "TimeInForce (59) must be 0 (day), 1 (GTC), 2 (at the opening), 3 (IOC), ",
                "4 (FOK), 6 (GTD) or 7 (at the close)"
            ),
        )),
    }
}

/// The ExecInst (18) values the exchange offers: post-only, a trailing
/// stop peg and a mid-price peg. Returns whether each is given.
fn exec_instructions(exec_inst: &str) -> Result<(bool, bool, bool), OrderRefusal> {
    let (mut post_only, mut trailing_peg, mut mid_peg) = (false, false, false);
    for instruction in exec_inst.split(' ').filter(|v| !v.is_empty()) {
        match instruction {
            "6" => post_only = true,
            "a" => trailing_peg = true,
            "M" => mid_peg = true,
            _ => {
                return Err((
                    11,
                    concat!(
                        "ExecInst (18) may only be 6 (participate, do not initiate: post-only), ",
                        "a (trailing stop peg) and M (mid-price peg)"
                    ),
                ))
            }
        }
    }
    Ok((post_only, trailing_peg, mid_peg))
}

fn self_trade_prevention(stp: Option<u8>) -> SelfTradePrevention {
    match stp {
        Some(b'O') => SelfTradePrevention::CancelOldest,
        Some(b'B') => SelfTradePrevention::CancelBoth,
        Some(b'D') => SelfTradePrevention::Decrement,
        _ => SelfTradePrevention::CancelNewest,
    }
}

/// The order's rarer fields, boxed only when any is given.
fn place_extension(
    message: &Message,
    expire_ts: Option<u64>,
    trailing_peg: bool,
    funds: Option<Dec>,
) -> Result<Option<Box<PlaceExt>>, OrderRefusal> {
    // The core says which order types take a stop price and which need one.
    let stop_price = optional_decimal(message, tags::STOP_PX)
        .map_err(|()| (99, "StopPx (99) is not a decimal number"))?;
    let display_qty = optional_decimal(message, tags::MAX_FLOOR)
        .map_err(|()| (13, "MaxFloor (111) is not a decimal"))?;
    let trailing = place_ext::trailing(message, trailing_peg)?;
    let oco_with = place_ext::oco_with(message)?;
    let min_qty = optional_decimal(message, tags::MIN_QTY)
        .map_err(|()| (13, "MinQty (110) is not a decimal"))?;
    let hidden = place_ext::hidden(message)?;
    let ext = PlaceExt {
        stop_price,
        expire_ts,
        trailing,
        oco_with,
        display_qty,
        funds,
        min_qty,
        hidden,
    };
    Ok((ext != PlaceExt::default()).then(|| Box::new(ext)))
}

/// The quantity of an order (OrderQtyData): FIX 4.4 lets it be given as
/// OrderQty (38), CashOrderQty (152) or OrderPercent (516). The exchange
/// takes OrderQty, or CashOrderQty for a market buy sized by funds (the
/// quantity is then zero and the amount is the funds; OrderQty beside it
/// is passed on for the core to refuse), never OrderPercent. Returns the
/// quantity and the funds, or an OrdRejReason and why.
fn order_qty(message: &Message) -> Result<(Dec, Option<Dec>), (u32, &'static str)> {
    if message.get(tags::ORDER_PERCENT).is_some() {
        return Err((
            11,
            "OrderPercent (516) is not supported: give the quantity in OrderQty (38)",
        ));
    }
    let funds = match message.get(tags::CASH_ORDER_QTY) {
        None => None,
        Some(_) => Some(
            decimal(message, tags::CASH_ORDER_QTY)
                .ok_or((13, "CashOrderQty (152) is not a decimal"))?,
        ),
    };
    if message.get(tags::ORDER_QTY).is_none() {
        if funds.is_some() {
            return Ok((Dec::new(0, 0), funds));
        }
        return Err((
            13,
            concat!(
                "OrderQty (38) is missing: an order needs OrderQty (38), ",
                "or CashOrderQty (152) for a market buy sized by funds"
            ),
        ));
    }
    let qty = decimal(message, tags::ORDER_QTY).ok_or((13, QTY_UNREADABLE))?;
    Ok((qty, funds))
}

/// Why a cancel or replace names no order: its CxlRejReason (102) and
/// text.
type NoOrder = (u32, &'static str);

const ORDER_ID_OUT_OF_RANGE: NoOrder = (
    99,
    "OrderID (37) must be an order id from 1 to 9223372036854775807",
);
const NO_ORIG_CL_ORD_ID: NoOrder = (1, "no order has this OrigClOrdID (41)");

/// The order a cancel or replace names: OrderID (37) when given, else
/// OrigClOrdID (41). An OrderID of digits beyond the ids the exchange
/// assigns is refused here, so it never reaches the log; 0 and text
/// (engines send them for "unknown") fall back to OrigClOrdID as before.
fn order_ref(message: &Message) -> Result<OrderRef, NoOrder> {
    if let Some(raw) = message.get(tags::ORDER_ID) {
        let digits = !raw.is_empty() && raw.iter().all(u8::is_ascii_digit);
        // Not `Message::uint`, which stops at 18 digits: 19-digit ids are
        // in range up to 2^63 - 1.
        let id = std::str::from_utf8(raw)
            .ok()
            .and_then(|t| t.parse::<u64>().ok());
        match id.filter(|_| digits) {
            Some(id) if exchange_types::order_id_in_range(id) => return Ok(OrderRef::Id(id)),
            Some(0) => {}
            _ if digits => return Err(ORDER_ID_OUT_OF_RANGE),
            _ => {}
        }
    }
    identifier::<MAX_CLIENT_ORDER_ID_LEN>(message, tags::ORIG_CL_ORD_ID)
        .map(OrderRef::Client)
        .ok_or(NO_ORIG_CL_ORD_ID)
}

fn cancel_echo(message: &Message) -> CancelEcho {
    CancelEcho {
        cl_ord_id: text(message, tags::CL_ORD_ID),
        orig_cl_ord_id: text(message, tags::ORIG_CL_ORD_ID),
    }
}

fn cancel(message: &Message, account: AccountId, now: u64) -> Result<Inbound, Inbound> {
    enum_char(message, tags::SIDE, SIDES)?;
    let echo = cancel_echo(message);
    let refuse = |cxl_rej: u32, why: &str| {
        Inbound::Reply(reports::cancel_reject(
            &echo,
            ResponseTo::Cancel,
            None,
            account,
            cxl_rej,
            why,
            now,
        ))
    };
    if !account_matches(message, account) {
        return Err(refuse(
            99,
            "Account (1) must be the session's account or absent",
        ));
    }
    let order = order_ref(message).map_err(|(reason, why)| refuse(reason, why))?;
    let command = Command::Cancel(Cancel { account, order });
    Ok(Inbound::Submit(Box::new(Submission {
        command,
        request: Request::Cancel(echo),
    })))
}

fn replace(message: &Message, account: AccountId, now: u64) -> Result<Inbound, Inbound> {
    enum_char(message, tags::SIDE, SIDES)?;
    let ord_type = enum_char(message, tags::ORD_TYPE, ORD_TYPES)?;
    enum_char(message, tags::HANDL_INST, HANDL_INSTS)?;
    let echo = cancel_echo(message);
    let refuse = |cxl_rej: u32, why: &str| {
        Inbound::Reply(reports::cancel_reject(
            &echo,
            ResponseTo::Replace,
            None,
            account,
            cxl_rej,
            why,
            now,
        ))
    };
    if !account_matches(message, account) {
        return Err(refuse(
            99,
            "Account (1) must be the session's account or absent",
        ));
    }
    // An untriggered stop or if-touched order (OrdType 3, 4 or J) waits
    // like a resting order and may be replaced too; whether the order
    // really is one is the core's call. What a market-to-limit order (K)
    // rests is a limit order, named by either type.
    if !matches!(ord_type, Some(b'2' | b'3' | b'4' | b'J' | b'K')) {
        return Err(refuse(
            2,
            concat!(
                "only limit orders (OrdType 2, or K once resting) and untriggered stops ",
                "(OrdType 3, 4, J) can be replaced"
            ),
        ));
    }
    let order = order_ref(message).map_err(|(reason, why)| refuse(reason, why))?;
    let Some(new_id): Option<ClientOrderId> = identifier(message, tags::CL_ORD_ID) else {
        return Err(refuse(99, CL_ORD_ID_INVALID));
    };
    // A replace changes a quantity: an amount of funds has nothing to
    // change.
    if message.get(tags::CASH_ORDER_QTY).is_some() {
        return Err(refuse(
            99,
            "CashOrderQty (152) is not supported on a replace: give the quantity in OrderQty (38)",
        ));
    }
    let (qty, _) = order_qty(message).map_err(|(_, why)| refuse(99, why))?;
    let price =
        optional_decimal(message, tags::PRICE).map_err(|()| refuse(99, PRICE_UNREADABLE))?;
    let stop_price = optional_decimal(message, tags::STOP_PX)
        .map_err(|()| refuse(99, "StopPx (99) is not a decimal number"))?;
    let command = Command::replace(
        Replace {
            account,
            order,
            new_client_order_id: Some(new_id),
            price,
            qty: Some(qty),
        },
        stop_price,
    );
    Ok(Inbound::Submit(Box::new(Submission {
        command,
        request: Request::Replace(echo),
    })))
}

fn mass_cancel(message: &Message, account: AccountId, now: u64) -> Result<Inbound, Inbound> {
    let kind = enum_char(message, tags::MASS_CANCEL_REQUEST_TYPE, MASS_CANCEL_TYPES)?;
    let echo = MassCancelEcho {
        cl_ord_id: text(message, tags::CL_ORD_ID),
        request_type: text(message, tags::MASS_CANCEL_REQUEST_TYPE),
        symbol: message.text(tags::SYMBOL).map(str::to_string),
    };
    let refuse = |reason: u32, why: &str| {
        Inbound::Reply(reports::mass_cancel_report(
            &echo,
            &format!("G{now}"),
            Err((reason, why)),
            now,
        ))
    };
    if !account_matches(message, account) {
        return Err(refuse(
            99,
            "Account (1) must be the session's account or absent",
        ));
    }
    let symbol = match kind {
        Some(b'7') => None,
        Some(b'1') => match identifier::<MAX_SYMBOL_LEN>(message, tags::SYMBOL) {
            Some(symbol) => Some(symbol),
            None => {
                return Err(refuse(
                    1,
                    "MassCancelRequestType 1 needs a valid Symbol (55)",
                ))
            }
        },
        _ => {
            return Err(refuse(
                0,
                "MassCancelRequestType (530) must be 1 (by symbol) or 7 (all orders)",
            ))
        }
    };
    let command = Command::MassCancel(MassCancel { account, symbol });
    Ok(Inbound::Submit(Box::new(Submission {
        command,
        request: Request::MassCancel(echo),
    })))
}

#[cfg(test)]
#[path = "inbound_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "inbound_float_tests.rs"]
mod float_tests;
