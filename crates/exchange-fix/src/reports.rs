//! Outgoing application messages: ExecutionReport (8), OrderCancelReject
//! (9), OrderMassCancelReport (r) and BusinessMessageReject (j), and the
//! mapping of the core's reject reasons to FIX reason codes.
//!
//! Only fields that FIX 4.4 defines for each message are written, so a
//! counterparty validating against the standard dictionary accepts them.

use exchange_types::{
    format_signed_units, format_units, AccountId, CancelReason, OrderType, RejectReason, Side,
    TimeInForce,
};

use crate::message::Outgoing;
use crate::orders::{ord_status, OrderState, Report, ReportKind};
use crate::tags::{self, msg};
use crate::time;

/// OrdRejReason (103) for a refused order.
pub fn ord_rej_reason(reason: RejectReason) -> u32 {
    use RejectReason::*;
    match reason {
        UnknownInstrument => 1,
        InstrumentHalted => 2,
        InsufficientFunds | TooManyOpenOrders => 3,
        OrderQtyOverLimit | OrderNotionalOverLimit | OpenOrdersOverLimit => 3,
        UnknownOrder | OrderNotOpen => 5,
        DuplicateClientOrderId => 6,
        PostOnlyNotAllowed => 11,
        InvalidQuantity | QuantityNotOnLot | QuantityBelowMinimum | QuantityAboveMaximum => 13,
        InvalidMinQty => 13,
        UnknownAccount | FeeAccountCannotTrade => 15,
        // Exchange rules on the price: "broker / exchange option".
        PriceOutsideCollar | PostOnlyWouldTake => 0,
        PriceOutsideBand | AccountSuspended | MmpTripped => 0,
        _ => 99,
    }
}

/// CxlRejReason (102) for a refused cancel or replace.
pub fn cxl_rej_reason(reason: RejectReason) -> u32 {
    use RejectReason::*;
    match reason {
        OrderNotOpen => 0,
        UnknownOrder | UnknownAccount => 1,
        InstrumentHalted | PriceOutsideCollar | PostOnlyWouldTake => 2,
        OrderQtyOverLimit | OrderNotionalOverLimit | PriceOutsideBand => 2,
        AccountSuspended | MmpTripped => 2,
        DuplicateClientOrderId => 6,
        _ => 99,
    }
}

/// Text (58) for a core refusal: the reason's wire name, code and sentence.
pub fn reject_text(reason: RejectReason) -> String {
    format!(
        "{} ({}): {}",
        reason.as_str(),
        reason.code(),
        reason.message()
    )
}

pub fn side_char(side: Side) -> char {
    match side {
        Side::Buy => '1',
        Side::Sell => '2',
    }
}

fn ord_type_char(ord_type: OrderType) -> char {
    match ord_type {
        OrderType::Market => '1',
        OrderType::Limit => '2',
        OrderType::Stop => '3',
        OrderType::StopLimit => '4',
        OrderType::MarketToLimit => 'K',
        // FIX 4.4 has one if-touched type; a limit-if-touched order is J
        // with a Price (44), as it was entered (`docs/fix.md`).
        OrderType::MarketIfTouched | OrderType::LimitIfTouched => 'J',
        OrderType::Midpoint => 'P',
    }
}

/// OrdType (40), and for a midpoint order the peg it is: ExecInst (18) M,
/// mid-price peg, as Nasdaq's FIX names it.
fn push_ord_type(out: &mut Outgoing, ord_type: OrderType) {
    out.push(tags::ORD_TYPE, ord_type_char(ord_type));
    if ord_type == OrderType::Midpoint {
        out.push(tags::EXEC_INST, 'M');
    }
}

fn tif_char(tif: TimeInForce) -> char {
    match tif {
        TimeInForce::Day => '0',
        TimeInForce::Gtc => '1',
        TimeInForce::AtOpen => '2',
        TimeInForce::Ioc => '3',
        TimeInForce::Fok => '4',
        TimeInForce::Gtd => '6',
        TimeInForce::AtClose => '7',
    }
}

/// The order-entry fields of a NewOrderSingle as the client sent them, to
/// echo in a reject (the order never existed, so nothing else has them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlaceEcho {
    pub cl_ord_id: String,
    pub symbol: String,
    pub side: String,
    pub qty: String,
    pub ord_type: String,
    pub price: Option<String>,
}

/// The identifying fields of a cancel or cancel/replace request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CancelEcho {
    pub cl_ord_id: String,
    pub orig_cl_ord_id: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MassCancelEcho {
    pub cl_ord_id: String,
    pub request_type: String,
    pub symbol: Option<String>,
}

/// An ExecutionReport for one change to one order. `ids` overrides
/// ClOrdID and OrigClOrdID, for the answer to a cancel request (whose own
/// ClOrdID the core never sees).
pub fn execution_report(report: &Report, ids: Option<(&str, &str)>) -> Outgoing {
    let order = &report.order;
    let status = ord_status(order.progress.status);
    let (exec_type, exec_id) = exec_type_and_id(report);
    let mut out = Outgoing::new(msg::EXECUTION_REPORT).field(tags::ORDER_ID, order.order_id);
    push_cl_ord_ids(&mut out, report, ids);
    out.push(tags::EXEC_ID, exec_id);
    out.push(tags::EXEC_TYPE, exec_type);
    out.push(tags::ORD_STATUS, status);
    if exec_type == 'D' {
        out.push(tags::EXEC_RESTATEMENT_REASON, 99);
    }
    out.push(tags::ACCOUNT, order.account);
    out.push(tags::SYMBOL, order.symbol);
    out.push(tags::SIDE, side_char(order.side));
    out.push(tags::ORDER_QTY, format_units(order.progress.qty));
    push_ord_type(&mut out, order.order_type);
    out.push_opt(tags::PRICE, order.progress.price.map(format_units));
    let stop_px = match &report.kind {
        ReportKind::New { stop_price, .. } => *stop_price,
        ReportKind::Triggered { stop_price } => Some(*stop_price),
        ReportKind::Replaced { stop_price, .. } => *stop_price,
        _ => None,
    };
    out.push_opt(tags::STOP_PX, stop_px.map(format_units));
    if let ReportKind::New {
        display_qty,
        funds,
        hidden,
        min_qty,
        ..
    } = &report.kind
    {
        out.push_opt(tags::MAX_FLOOR, display_qty.map(format_units));
        out.push_opt(tags::CASH_ORDER_QTY, funds.map(format_units));
        out.push_opt(tags::MIN_QTY, min_qty.map(format_units));
        if *hidden {
            out.push(tags::DISPLAY_QTY, 0);
        }
    }
    out.push(tags::TIME_IN_FORCE, tif_char(order.tif));
    if let ReportKind::Fill {
        trade_id,
        price,
        qty,
        fee,
        maker,
    } = &report.kind
    {
        out.push(tags::SECONDARY_EXEC_ID, trade_id);
        out.push(tags::LAST_QTY, format_units(*qty));
        out.push(tags::LAST_PX, format_units(*price));
        out.push(tags::COMMISSION, format_signed_units(*fee));
        out.push(tags::COMM_TYPE, 3);
        out.push(tags::LAST_LIQUIDITY_IND, if *maker { 1 } else { 2 });
    }
    out.push(tags::LEAVES_QTY, format_units(order.leaves_qty()));
    out.push(tags::CUM_QTY, format_units(order.progress.filled_qty));
    out.push(tags::AVG_PX, format_units(order.progress.avg_price()));
    out.push(tags::TRANSACT_TIME, time::format(report.ts));
    if let ReportKind::Canceled { reason, .. } = &report.kind {
        let text = match reason {
            CancelReason::SelfTrade if exec_type == 'D' => {
                "self_trade_prevention: the order was reduced"
            }
            other => other.as_str(),
        };
        out.push(tags::TEXT, text);
    }
    out
}

/// ExecType (150) and ExecID (17) of a report: event reports are named by
/// the event, a status by when it was asked.
fn exec_type_and_id(report: &Report) -> (char, String) {
    let order = &report.order;
    match &report.kind {
        ReportKind::New { .. } => ('0', format!("{}-{}", report.seq, order.order_id)),
        ReportKind::Triggered { .. } => ('L', format!("{}-{}", report.seq, order.order_id)),
        ReportKind::Fill { .. } => ('F', format!("{}-{}", report.seq, order.order_id)),
        ReportKind::Canceled { leaves_qty, .. } if *leaves_qty > 0 => {
            ('D', format!("{}-{}", report.seq, order.order_id))
        }
        ReportKind::Canceled { .. } => ('4', format!("{}-{}", report.seq, order.order_id)),
        ReportKind::Replaced { .. } => ('5', format!("{}-{}", report.seq, order.order_id)),
        ReportKind::Expired => ('C', format!("{}-{}", report.seq, order.order_id)),
        // Not an event: named by when it was asked, apart from event ids.
        ReportKind::Status => ('I', format!("S{}-{}", report.ts, order.order_id)),
    }
}

/// ClOrdID (11), and OrigClOrdID (41) for a replace or when `ids` names
/// the cancel request's.
fn push_cl_ord_ids(out: &mut Outgoing, report: &Report, ids: Option<(&str, &str)>) {
    let order = &report.order;
    match (&report.kind, ids) {
        (_, Some((cl_ord_id, orig))) => {
            out.push(tags::CL_ORD_ID, cl_ord_id);
            out.push(tags::ORIG_CL_ORD_ID, orig);
        }
        (ReportKind::Replaced { old_cl_ord_id, .. }, None) => {
            out.push(tags::CL_ORD_ID, order.client_order_id);
            out.push(tags::ORIG_CL_ORD_ID, old_cl_ord_id);
        }
        (_, None) => out.push(tags::CL_ORD_ID, order.client_order_id),
    }
}

/// The answer to an OrderStatusRequest for an order the session knows:
/// an ExecutionReport with ExecType I (order status).
pub fn order_status(order: &OrderState, req_id: Option<&str>, now: u64) -> Outgoing {
    let report = Report {
        seq: 0,
        ts: now,
        order: *order,
        kind: ReportKind::Status,
    };
    let mut out = execution_report(&report, None);
    out.push_opt(tags::ORD_STATUS_REQ_ID, req_id);
    out
}

/// What an OrderStatusRequest said, echoed when the order is unknown.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatusEcho {
    pub order_id: Option<String>,
    pub cl_ord_id: String,
    pub symbol: String,
    pub side: String,
    pub req_id: Option<String>,
}

/// The answer to an OrderStatusRequest for an order the session does not
/// know: ExecType I with OrdStatus 8 (rejected).
pub fn unknown_order_status(
    echo: &StatusEcho,
    account: AccountId,
    text: &str,
    now: u64,
) -> Outgoing {
    let mut out = Outgoing::new(msg::EXECUTION_REPORT)
        .field(tags::ORDER_ID, echo.order_id.as_deref().unwrap_or("NONE"))
        .field(tags::CL_ORD_ID, &echo.cl_ord_id)
        .field(tags::EXEC_ID, format!("S{now}"))
        .field(tags::EXEC_TYPE, 'I')
        .field(tags::ORD_STATUS, '8')
        .field(tags::ACCOUNT, account)
        .field(tags::SYMBOL, &echo.symbol)
        .field(tags::SIDE, &echo.side)
        .field(tags::LEAVES_QTY, 0)
        .field(tags::CUM_QTY, 0)
        .field(tags::AVG_PX, 0)
        .field(tags::TRANSACT_TIME, time::format(now))
        .field(tags::TEXT, text);
    out.push_opt(tags::ORD_STATUS_REQ_ID, echo.req_id.as_ref());
    out
}

/// An ExecutionReport refusing a NewOrderSingle.
pub fn rejected_order(
    echo: &PlaceEcho,
    account: AccountId,
    exec_id: &str,
    ord_rej: u32,
    text: &str,
    now: u64,
) -> Outgoing {
    let mut out = Outgoing::new(msg::EXECUTION_REPORT)
        .field(tags::ORDER_ID, "NONE")
        .field(tags::CL_ORD_ID, &echo.cl_ord_id)
        .field(tags::EXEC_ID, exec_id)
        .field(tags::EXEC_TYPE, '8')
        .field(tags::ORD_STATUS, '8')
        .field(tags::ORD_REJ_REASON, ord_rej)
        .field(tags::ACCOUNT, account)
        .field(tags::SYMBOL, &echo.symbol)
        .field(tags::SIDE, &echo.side);
    // An order refused for having no OrderQty echoes none: an empty
    // field is not valid FIX.
    out.push_opt(tags::ORDER_QTY, Some(&echo.qty).filter(|q| !q.is_empty()));
    out.push(tags::ORD_TYPE, &echo.ord_type);
    out.push_opt(tags::PRICE, echo.price.as_ref());
    out.field(tags::LEAVES_QTY, 0)
        .field(tags::CUM_QTY, 0)
        .field(tags::AVG_PX, 0)
        .field(tags::TRANSACT_TIME, time::format(now))
        .field(tags::TEXT, text)
}

/// CxlRejResponseTo (434).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResponseTo {
    Cancel,
    Replace,
}

/// An OrderCancelReject; `order` is the order as the session knows it,
/// if it knows it.
pub fn cancel_reject(
    echo: &CancelEcho,
    to: ResponseTo,
    order: Option<&OrderState>,
    account: AccountId,
    cxl_rej: u32,
    text: &str,
    now: u64,
) -> Outgoing {
    let order_id = order.map_or_else(|| "NONE".to_string(), |o| o.order_id.to_string());
    // An order the exchange cannot find is reported as rejected.
    let status = order.map_or('8', |o| ord_status(o.progress.status));
    Outgoing::new(msg::ORDER_CANCEL_REJECT)
        .field(tags::ORDER_ID, order_id)
        .field(tags::CL_ORD_ID, &echo.cl_ord_id)
        .field(tags::ORIG_CL_ORD_ID, &echo.orig_cl_ord_id)
        .field(tags::ORD_STATUS, status)
        .field(tags::ACCOUNT, account)
        .field(tags::TRANSACT_TIME, time::format(now))
        .field(
            tags::CXL_REJ_RESPONSE_TO,
            if to == ResponseTo::Cancel { 1 } else { 2 },
        )
        .field(tags::CXL_REJ_REASON, cxl_rej)
        .field(tags::TEXT, text)
}

/// An OrderMassCancelReport: the orders canceled (client id, order id), or
/// the MassCancelRejectReason (532) and why.
pub fn mass_cancel_report(
    echo: &MassCancelEcho,
    report_id: &str,
    outcome: Result<&[(String, u64)], (u32, &str)>,
    now: u64,
) -> Outgoing {
    let mut out = Outgoing::new(msg::ORDER_MASS_CANCEL_REPORT)
        .field(tags::CL_ORD_ID, &echo.cl_ord_id)
        .field(tags::ORDER_ID, report_id)
        .field(tags::MASS_CANCEL_REQUEST_TYPE, &echo.request_type);
    match outcome {
        Ok(canceled) => {
            out.push(tags::MASS_CANCEL_RESPONSE, &echo.request_type);
            out.push(tags::TOTAL_AFFECTED_ORDERS, canceled.len());
            if !canceled.is_empty() {
                out.push(tags::NO_AFFECTED_ORDERS, canceled.len());
                for (cl_ord_id, order_id) in canceled {
                    out.push(tags::ORIG_CL_ORD_ID, cl_ord_id);
                    out.push(tags::AFFECTED_ORDER_ID, order_id);
                }
            }
            out.push_opt(tags::SYMBOL, echo.symbol.as_ref());
            out.push(tags::TRANSACT_TIME, time::format(now));
        }
        Err((reason, text)) => {
            out.push(tags::MASS_CANCEL_RESPONSE, 0);
            out.push(tags::MASS_CANCEL_REJECT_REASON, reason);
            out.push(tags::TOTAL_AFFECTED_ORDERS, 0);
            out.push_opt(tags::SYMBOL, echo.symbol.as_ref());
            out.push(tags::TRANSACT_TIME, time::format(now));
            out.push(tags::TEXT, text);
        }
    }
    out
}

/// A BusinessMessageReject for an application message the gateway will not
/// act on.
pub fn business_reject(
    ref_seq: u64,
    ref_msg_type: &str,
    ref_id: Option<&str>,
    reason: u32,
    text: &str,
) -> Outgoing {
    let mut out = Outgoing::new(msg::BUSINESS_MESSAGE_REJECT)
        .field(tags::REF_SEQ_NUM, ref_seq)
        .field(tags::REF_MSG_TYPE, ref_msg_type);
    out.push_opt(tags::BUSINESS_REJECT_REF_ID, ref_id);
    out.field(tags::BUSINESS_REJECT_REASON, reason)
        .field(tags::TEXT, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_core_reason_maps_to_a_fix_4_4_value() {
        // The values FIX 4.4 defines for OrdRejReason and CxlRejReason: a
        // counterparty validating against the dictionary refuses others.
        let ord_rej = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 99];
        let cxl_rej = [0, 1, 2, 3, 4, 5, 6, 99];
        for reason in RejectReason::ALL {
            assert!(ord_rej.contains(&ord_rej_reason(*reason)), "{reason}");
            assert!(cxl_rej.contains(&cxl_rej_reason(*reason)), "{reason}");
            assert!(reject_text(*reason).starts_with(reason.as_str()));
        }
        assert_eq!(ord_rej_reason(RejectReason::InsufficientFunds), 3);
        assert_eq!(ord_rej_reason(RejectReason::UnknownInstrument), 1);
        assert_eq!(cxl_rej_reason(RejectReason::OrderNotOpen), 0);
        assert_eq!(cxl_rej_reason(RejectReason::UnknownOrder), 1);
    }

    #[test]
    fn if_touched_orders_report_ord_type_j() {
        // Limit-if-touched is told apart by its Price (44), as entered.
        assert_eq!(ord_type_char(OrderType::MarketIfTouched), 'J');
        assert_eq!(ord_type_char(OrderType::LimitIfTouched), 'J');
        assert_eq!(ord_type_char(OrderType::MarketToLimit), 'K');
    }

    #[test]
    fn docs_table_matches_the_mapping() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/fix.md");
        let docs = std::fs::read_to_string(path).expect("docs/fix.md");
        for reason in RejectReason::ALL.iter().filter(|r| r.code() < 500) {
            let row = format!(
                "| `{}` | {} | {} | {} |",
                reason.as_str(),
                reason.code(),
                ord_rej_reason(*reason),
                cxl_rej_reason(*reason)
            );
            assert!(
                docs.contains(&row),
                "docs/fix.md lacks or contradicts: {row}"
            );
        }
    }

    #[test]
    fn mass_cancel_report_lists_the_orders() {
        let echo = MassCancelEcho {
            cl_ord_id: "m1".into(),
            request_type: "7".into(),
            symbol: None,
        };
        let canceled = vec![("a".to_string(), 4u64), ("b".to_string(), 9)];
        let out = mass_cancel_report(&echo, "MC1", Ok(&canceled), 0);
        let fields = out.fields();
        let tail: Vec<(u32, &str)> = fields
            .iter()
            .map(|(t, v)| (*t, v.as_str()))
            .skip(3)
            .take(8)
            .collect();
        assert_eq!(
            tail,
            vec![
                (531, "7"),
                (533, "2"),
                (534, "2"),
                (41, "a"),
                (535, "4"),
                (41, "b"),
                (535, "9"),
                (60, "19700101-00:00:00.000")
            ]
        );
        let refused = mass_cancel_report(&echo, "MC2", Err((1, "unknown symbol")), 0);
        assert_eq!(
            (refused.get(531).as_deref(), refused.get(532).as_deref()),
            (Some("0"), Some("1"))
        );
    }
}
