//! Trading status over FIX: SecurityStatusRequest (35=e) asks for an
//! instrument's phase once (263=0) or for every change (263=1, until
//! 263=2 or the connection ends); SecurityStatus (35=f) answers and
//! pushes it. docs/fix.md has the mapping tables.
//!
//! Each session keeps the phase, indicative uncrossing and reference
//! price of every listed instrument itself ([`MarketStatus`], the fold
//! market data uses), folded from the same applied entries that carry its
//! execution reports, so an answer needs no read of the core and a push
//! goes out in log order with the session's other messages. A session
//! that is slow to read only fills its own outbound queue: every session
//! has its own task and its own copy of the broadcast.
//!
//! FIX 4.4 has one SecurityTradingStatus (326) for every call phase, so
//! TradingSessionSubID (625) says which call it is (the values FIX 5.0
//! gives that field). It has no field for an indicative price either; the
//! venues that publish one over FIX put it in market data (Deutsche
//! Boerse T7: MDEntryType 269=Q, auction clearing price, a FIX 5.0 value).
//! This gateway stays within FIX 4.4's SecurityStatus and follows the
//! indication form that message was designed for (NYSE's pre-opening
//! indications): HighPx (332) and LowPx (333) both give the indicative
//! price, BuyVolume (330) and SellVolume (331) what each side would bring
//! to the uncrossing at it. The matched volume is the smaller, the
//! imbalance the difference, on the larger side. The reference price goes
//! in LastPx (31), the one other price that message has: the venue's
//! reference is its last price (the last trade's, or the one the listing
//! or the operator set since), and an operator's change is pushed.

use std::collections::BTreeMap;

use exchange_marketdata::status::{reference_symbol, status_symbol, StatusChange};
use exchange_marketdata::MarketStatus;
use exchange_types::{format_units, Event, EventKind, Phase, Side, Symbol};

use crate::message::{Message, Outgoing};
use crate::tags::{self, business_reject, msg};
use crate::time;

/// Most instruments one session may subscribe to at once.
pub const MAX_STATUS_SUBSCRIPTIONS: usize = 64;

/// SecurityTradingStatus (326) values used.
pub mod trading_status {
    pub const TRADING_HALT: u32 = 2;
    pub const RESUME: u32 = 3;
    pub const READY_TO_TRADE: u32 = 17;
    pub const NOT_AVAILABLE_FOR_TRADING: u32 = 18;
    pub const UNKNOWN_OR_INVALID: u32 = 20;
    pub const PRE_OPEN: u32 = 21;
}

/// SecurityTradingStatus (326) of a phase. `resumed`: the change that
/// ends a halt, told as a resume.
pub fn trading_status(phase: Phase, resumed: bool) -> u32 {
    use trading_status::*;
    match phase {
        Phase::Halted => TRADING_HALT,
        _ if resumed => RESUME,
        Phase::Continuous => READY_TO_TRADE,
        Phase::Closed | Phase::PostClose => NOT_AVAILABLE_FOR_TRADING,
        Phase::PreOpen
        | Phase::OpeningAuction
        | Phase::ClosingCall
        | Phase::ClosingAuction
        | Phase::VolatilityAuction => PRE_OPEN,
    }
}

/// TradingSessionSubID (625) of a phase: 2 opening (call or auction),
/// 3 continuous, 4 closing (call or auction), 5 post-trading, 6 intraday
/// auction; none while closed or halted.
pub fn trading_session_sub_id(phase: Phase) -> Option<u32> {
    match phase {
        Phase::PreOpen | Phase::OpeningAuction => Some(2),
        Phase::Continuous => Some(3),
        Phase::ClosingCall | Phase::ClosingAuction => Some(4),
        Phase::PostClose => Some(5),
        Phase::VolatilityAuction => Some(6),
        Phase::Closed | Phase::Halted => None,
    }
}

/// One session's view of every instrument's status and its subscriptions.
#[derive(Debug, Default)]
pub struct SecurityStatus {
    markets: BTreeMap<Symbol, MarketStatus>,
    /// Symbol → the SecurityStatusReqID (324) its pushes carry.
    subscriptions: BTreeMap<Symbol, String>,
    /// Entries up to this index are in `markets` already.
    seeded: u64,
}

impl SecurityStatus {
    /// Starts over from the markets as of entry `index`.
    pub fn seed<'a>(
        &mut self,
        index: u64,
        markets: impl IntoIterator<Item = (Symbol, &'a MarketStatus)>,
    ) {
        self.markets = markets
            .into_iter()
            .map(|(symbol, status)| (symbol, *status))
            .collect();
        self.seeded = index;
    }

    pub fn subscriptions(&self) -> usize {
        self.subscriptions.len()
    }

    /// Subscriptions end with the connection that made them.
    pub fn disconnected(&mut self) {
        self.subscriptions.clear();
    }

    /// Folds entry `index`'s events; the pushes its changes call for.
    pub fn on_applied(&mut self, index: u64, events: &[Event], now: u64) -> Vec<Outgoing> {
        let mut out = Vec::new();
        if index <= self.seeded {
            return out;
        }
        self.seeded = index;
        for event in events {
            let kind = &event.kind;
            let Some(symbol) = status_symbol(kind).or_else(|| reference_symbol(kind)) else {
                continue;
            };
            let market = self.markets.entry(symbol).or_default();
            let resumed = matches!(kind, EventKind::Phase(e)
                if market.phase == Phase::Halted && e.phase != Phase::Halted);
            // An auction's news is its trades, which execution reports
            // and market data carry; it changes nothing 35=f tells.
            let told = matches!(
                market.apply(kind, event.ts),
                Some(StatusChange::Phase | StatusChange::Indicative | StatusChange::ReferencePrice)
            );
            if let (true, Some(req_id)) = (told, self.subscriptions.get(&symbol)) {
                out.push(status_message(req_id, symbol, market, resumed, true, now));
            }
        }
        out
    }

    /// Answers a SecurityStatusRequest (already validated, 263 one of
    /// 0, 1, 2).
    pub fn request(&mut self, request: &Message, now: u64) -> Option<Outgoing> {
        let req_id = request
            .text(tags::SECURITY_STATUS_REQ_ID)
            .unwrap_or_default();
        let symbol_text = request.text(tags::SYMBOL).unwrap_or_default();
        let kind = request
            .get(tags::SUBSCRIPTION_REQUEST_TYPE)
            .and_then(|v| v.first().copied())
            .unwrap_or(b'0');
        let found = Symbol::new(symbol_text)
            .ok()
            .and_then(|s| self.markets.get(&s).map(|m| (s, *m)));
        let Some((symbol, market)) = found else {
            // 263=2 for a symbol nobody lists has nothing to stop.
            return (kind != b'2').then(|| unknown_symbol(req_id, symbol_text, now));
        };
        match kind {
            b'2' => {
                self.subscriptions.remove(&symbol);
                None
            }
            b'1' => {
                if !self.subscriptions.contains_key(&symbol)
                    && self.subscriptions.len() >= MAX_STATUS_SUBSCRIPTIONS
                {
                    return Some(crate::reports::business_reject(
                        request.seq_num().unwrap_or(0),
                        msg::SECURITY_STATUS_REQUEST,
                        Some(req_id),
                        business_reject::OTHER,
                        &format!(
                            "a session may subscribe to the status of at most \
                             {MAX_STATUS_SUBSCRIPTIONS} instruments; \
                             unsubscribe (263=2) from one first"
                        ),
                    ));
                }
                self.subscriptions.insert(symbol, req_id.to_string());
                Some(status_message(req_id, symbol, &market, false, false, now))
            }
            _ => Some(status_message(req_id, symbol, &market, false, false, now)),
        }
    }
}

fn status_message(
    req_id: &str,
    symbol: Symbol,
    market: &MarketStatus,
    resumed: bool,
    unsolicited: bool,
    now: u64,
) -> Outgoing {
    let mut out = Outgoing::new(msg::SECURITY_STATUS)
        .field(tags::SECURITY_STATUS_REQ_ID, req_id)
        .field(tags::SYMBOL, symbol.as_str());
    out.push_opt(
        tags::TRADING_SESSION_SUB_ID,
        trading_session_sub_id(market.phase),
    );
    out.push(
        tags::UNSOLICITED_INDICATOR,
        if unsolicited { 'Y' } else { 'N' },
    );
    out.push(
        tags::SECURITY_TRADING_STATUS,
        trading_status(market.phase, resumed),
    );
    if let Some(i) = market.indicative {
        let imbalance = |side| {
            if i.imbalance_side == Some(side) {
                i.imbalance_qty
            } else {
                0
            }
        };
        out.push(
            tags::BUY_VOLUME,
            format_units(i.volume.saturating_add(imbalance(Side::Buy))),
        );
        out.push(
            tags::SELL_VOLUME,
            format_units(i.volume.saturating_add(imbalance(Side::Sell))),
        );
        out.push(tags::HIGH_PX, format_units(i.price));
        out.push(tags::LOW_PX, format_units(i.price));
    }
    // FIX 4.4's SecurityStatus has no reference-price field; the venue's
    // reference is its last price (docs/fix.md), so LastPx carries it.
    out.push_opt(tags::LAST_PX, market.reference_price.map(format_units));
    out.field(tags::TRANSACT_TIME, time::format(now))
}

fn unknown_symbol(req_id: &str, symbol: &str, now: u64) -> Outgoing {
    Outgoing::new(msg::SECURITY_STATUS)
        .field(tags::SECURITY_STATUS_REQ_ID, req_id)
        .field(tags::SYMBOL, symbol)
        .field(tags::UNSOLICITED_INDICATOR, 'N')
        .field(
            tags::SECURITY_TRADING_STATUS,
            trading_status::UNKNOWN_OR_INVALID,
        )
        .field(tags::TRANSACT_TIME, time::format(now))
        .field(
            tags::TEXT,
            "unknown_instrument: no instrument has this Symbol (55)",
        )
}

#[cfg(test)]
#[path = "security_status_tests.rs"]
mod tests;
