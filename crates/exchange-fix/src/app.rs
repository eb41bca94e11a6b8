//! The application layer of one session: the core's applied entries in,
//! FIX messages out.
//!
//! Every entry the sequencer applies passes through here in log order. Its
//! events advance the session's order cache; every change to an order of
//! the session's accounts becomes an ExecutionReport. When the entry was
//! the session's own request, the answer is shaped by the request: a
//! refused order becomes a rejected ExecutionReport, a refused cancel or
//! replace an OrderCancelReject, a mass cancel an OrderMassCancelReport,
//! and a cancel's report carries the cancel request's ClOrdID.

use exchange_types::{
    AccountId, CancelReason, ClientOrderId, Event, EventKind, OrderRef, RejectReason,
};

use std::collections::{HashSet, VecDeque};

use exchange_node::limits::FIX_CLOSED_REMEMBERED;

use crate::inbound::{Request, Role};
use crate::message::{Message, Outgoing};
use crate::orders::{OrderCache, OrderState, Report, ReportKind};
use crate::reports::{self, ResponseTo, StatusEcho};
use crate::tags;

/// The refusal among an entry's events, with the order it names (a refused
/// command emits only that event).
fn rejection(events: &[Event]) -> Option<(&Event, RejectReason, Option<OrderRef>)> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::Rejected(rejected) => {
            let order = rejected
                .order_id
                .map(OrderRef::Id)
                .or(rejected.client_order_id.map(OrderRef::Client));
            Some((e, rejected.reason, order))
        }
        _ => None,
    })
}

fn execution_reports(reports: &[Report]) -> Vec<Outgoing> {
    reports
        .iter()
        .map(|r| reports::execution_report(r, None))
        .collect::<Vec<_>>()
}

/// The answer to the session's own request that the core applied: its
/// order reports, a requested cancel's carrying the cancel request's
/// ClOrdID, and a mass cancel's OrderMassCancelReport before them.
fn accepted_request(
    index: u64,
    request: &Request,
    events: &[Event],
    order_reports: &[Report],
    now: u64,
) -> Vec<Outgoing> {
    match request {
        Request::Cancel(echo) => order_reports
            .iter()
            .map(|r| match r.kind {
                ReportKind::Canceled {
                    reason: CancelReason::Requested,
                    ..
                } => {
                    let orig = r.order.client_order_id.as_str();
                    reports::execution_report(r, Some((&echo.cl_ord_id, orig)))
                }
                _ => reports::execution_report(r, None),
            })
            .collect(),
        Request::MassCancel(echo) => {
            let canceled: Vec<(String, u64)> = order_reports
                .iter()
                .filter(|r| {
                    matches!(
                        r.kind,
                        ReportKind::Canceled {
                            reason: CancelReason::MassCancel,
                            ..
                        }
                    )
                })
                .map(|r| (r.order.client_order_id.to_string(), r.order.order_id))
                .collect();
            let ts = events.first().map_or(now, |e| e.ts);
            let mut out = vec![reports::mass_cancel_report(
                echo,
                &format!("MC{index}"),
                Ok(&canceled),
                ts,
            )];
            out.extend(execution_reports(order_reports));
            out
        }
        Request::Place(_) | Request::Replace(_) => execution_reports(order_reports),
    }
}

pub struct App {
    pub role: Role,
    pub cache: OrderCache,
    /// ClOrdIDs of this session's orders the core refused, newest last: a
    /// copy resent with PossResend is answered, not submitted again.
    refused: RefusedIds,
}

/// The most recent [`FIX_CLOSED_REMEMBERED`] refused ClOrdIDs.
#[derive(Default)]
struct RefusedIds {
    order: VecDeque<String>,
    known: HashSet<String>,
}

impl RefusedIds {
    fn remember(&mut self, cl_ord_id: &str) {
        if !self.known.insert(cl_ord_id.to_string()) {
            return;
        }
        self.order.push_back(cl_ord_id.to_string());
        if self.order.len() > FIX_CLOSED_REMEMBERED {
            if let Some(oldest) = self.order.pop_front() {
                self.known.remove(&oldest);
            }
        }
    }
}

impl App {
    pub fn new(role: Role) -> App {
        App {
            role,
            cache: OrderCache::default(),
            refused: RefusedIds::default(),
        }
    }

    fn account(&self) -> AccountId {
        match &self.role {
            Role::Trading { account } => *account,
            Role::DropCopy { accounts } => accounts.first().copied().unwrap_or_default(),
        }
    }

    /// The messages one applied entry (log `index`) gives this session;
    /// `request` is set when the entry was this session's own.
    pub fn on_applied(
        &mut self,
        index: u64,
        events: &[Event],
        request: Option<&Request>,
        now: u64,
    ) -> Vec<Outgoing> {
        let mut order_reports = Vec::new();
        let role = &self.role;
        self.cache
            .apply(events, |account| role.covers(account), &mut order_reports);
        let Some(request) = request else {
            return execution_reports(&order_reports);
        };
        match rejection(events) {
            Some((event, reason, order)) => {
                self.refused_request(index, request, event, reason, order)
            }
            None => accepted_request(index, request, events, &order_reports, now),
        }
    }

    /// The answer to the session's own request that the core refused
    /// (`event`), naming `order` when the refusal does.
    fn refused_request(
        &mut self,
        index: u64,
        request: &Request,
        event: &Event,
        reason: RejectReason,
        order: Option<OrderRef>,
    ) -> Vec<Outgoing> {
        let account = self.account();
        match request {
            Request::Place(echo) => {
                self.refused.remember(&echo.cl_ord_id);
                let text = reports::reject_text(reason);
                let exec_id = event.seq.to_string();
                vec![reports::rejected_order(
                    echo,
                    account,
                    &exec_id,
                    reports::ord_rej_reason(reason),
                    &text,
                    event.ts,
                )]
            }
            Request::Cancel(echo) | Request::Replace(echo) => {
                let to = if matches!(request, Request::Cancel(_)) {
                    ResponseTo::Cancel
                } else {
                    ResponseTo::Replace
                };
                let known = order.and_then(|o| self.cache.find(account, &o));
                let text = reports::reject_text(reason);
                vec![reports::cancel_reject(
                    echo,
                    to,
                    known,
                    account,
                    reports::cxl_rej_reason(reason),
                    &text,
                    event.ts,
                )]
            }
            Request::MassCancel(echo) => {
                let outcome = match reason {
                    // An account that never held funds has no orders.
                    RejectReason::UnknownAccount => Ok(&[][..]),
                    RejectReason::UnknownInstrument => Err((1, reports::reject_text(reason))),
                    other => Err((99, reports::reject_text(other))),
                };
                let report_id = format!("MC{index}");
                let outcome = outcome
                    .as_ref()
                    .map(|ok| *ok)
                    .map_err(|(code, text)| (*code, text.as_str()));
                vec![reports::mass_cancel_report(
                    echo, &report_id, outcome, event.ts,
                )]
            }
        }
    }

    fn accounts(&self) -> &[AccountId] {
        match &self.role {
            Role::Trading { account } => std::slice::from_ref(account),
            Role::DropCopy { accounts } => accounts,
        }
    }

    /// The session's order `order`, of whichever of its accounts holds it.
    fn find(&self, order: &OrderRef) -> Option<&OrderState> {
        self.accounts()
            .iter()
            .find_map(|account| self.cache.find(*account, order))
    }

    /// Whether an order of the session already had this ClOrdID: open,
    /// recently closed, or recently refused.
    pub fn knows_cl_ord_id(&self, cl_ord_id: &str) -> bool {
        self.refused.known.contains(cl_ord_id)
            || ClientOrderId::new(cl_ord_id)
                .is_ok_and(|id| self.find(&OrderRef::Client(id)).is_some())
    }

    /// The answer to an OrderStatusRequest (or to an order resent with
    /// PossResend that the session already has): the order named by
    /// OrderID (37) when given, else by ClOrdID (11), as it stands.
    pub fn order_status(&self, request: &Message, now: u64) -> Outgoing {
        let req_id = request.text(tags::ORD_STATUS_REQ_ID);
        let by_id = request.uint(tags::ORDER_ID).map(OrderRef::Id);
        let by_client = request
            .text(tags::CL_ORD_ID)
            .and_then(|id| ClientOrderId::new(id).ok())
            .map(OrderRef::Client);
        let account_given = request.text(tags::ACCOUNT);
        let found = by_id
            .or(by_client)
            .and_then(|order| self.find(&order))
            .filter(|o| account_given.is_none_or(|a| a == o.account.to_string()));
        match found {
            Some(order) => reports::order_status(order, req_id, now),
            None => {
                let echo = StatusEcho {
                    order_id: request.text(tags::ORDER_ID).map(str::to_string),
                    cl_ord_id: request
                        .text(tags::CL_ORD_ID)
                        .unwrap_or_default()
                        .to_string(),
                    symbol: request.text(tags::SYMBOL).unwrap_or_default().to_string(),
                    side: request.text(tags::SIDE).unwrap_or_default().to_string(),
                    req_id: req_id.map(str::to_string),
                };
                reports::unknown_order_status(
                    &echo,
                    self.account(),
                    concat!(
                        "unknown_order (302): no order of this session has this OrderID (37) ",
                        "or ClOrdID (11)"
                    ),
                    now,
                )
            }
        }
    }

    /// The answer to an order refused at the edge by the core's own shape
    /// rules (`exchange_types::validate`): the report the core's refusal
    /// would give, with a gateway execution id, as nothing was logged.
    pub fn refused_at_edge(
        &mut self,
        request: &Request,
        reason: RejectReason,
        now: u64,
    ) -> Outgoing {
        let account = self.account();
        if let Request::Place(echo) = request {
            self.refused.remember(&echo.cl_ord_id);
            let text = reports::reject_text(reason);
            let code = reports::ord_rej_reason(reason);
            return reports::rejected_order(echo, account, &format!("G{now}"), code, &text, now);
        }
        self.unavailable(request, reason.message(), now)
    }

    /// The answer to a request the sequencer would not take (overloaded or
    /// stopping): nothing happened to any order.
    pub fn unavailable(&self, request: &Request, why: &str, now: u64) -> Outgoing {
        let account = self.account();
        match request {
            Request::Place(echo) => {
                reports::rejected_order(echo, account, &format!("G{now}"), 99, why, now)
            }
            Request::Cancel(echo) => {
                reports::cancel_reject(echo, ResponseTo::Cancel, None, account, 99, why, now)
            }
            Request::Replace(echo) => {
                reports::cancel_reject(echo, ResponseTo::Replace, None, account, 99, why, now)
            }
            Request::MassCancel(echo) => {
                reports::mass_cancel_report(echo, &format!("G{now}"), Err((99, why)), now)
            }
        }
    }
}

#[cfg(test)]
#[path = "app_tests.rs"]
mod tests;
