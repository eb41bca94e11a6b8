//! The market-data projection: per instrument, the L2 book, the last
//! trade, the ticker and the candles, advanced one committed log entry at
//! a time.
//!
//! [`Projection::apply`] turns an entry's events into [`Update`]s in the
//! order subscribers see them: the entry's trades (one each, followed by
//! a reference update where one moved the reference price), then one
//! book update per instrument that aggregates every level the entry
//! changed (the last quantity of each level, absolute), then the ticker
//! and the candles of each instrument the entry touched. Instruments are
//! numbered (`locate`) in the order they were listed, as the core lists
//! them, which is what the binary feed calls them.
//!
//! A projection starts from a [`MarketSnapshot`] of the replicated state
//! and, if it ever misses entries, resynchronises from a fresh one
//! ([`Projection::resync`]): each book is replaced whole and announced as
//! [`Update::Snapshot`], and the trades it missed are replayed from the
//! node's recent trades where those still reach back far enough.
//!
//! [`Projection::apply_heard`] builds only the book updates, tickers and
//! candles someone hears ([`Listeners`]); the state (books, sequences,
//! candles, last prices) advances the same either way, so a subscriber who
//! joins later is sent a snapshot of it. A server whose clients follow no
//! instrument then spends per entry only what keeping that state costs.

use exchange_core::BookView;
use exchange_types::event::AuctionKind;
use exchange_types::{EventKind, Side, Symbol, TradeId, TradingStatus};
use rustc_hash::FxHashMap;

use crate::book::L2Book;
use crate::candles::{Candle, Candles, Interval};
use crate::sequences::{InstrumentSequences, MarketSequences};
use crate::status::{MarketStatus, StatusChange};
use crate::Channel;
use exchange_types::AuctionTrades;

/// Who hears a projection's updates, by channel and instrument: the book
/// updates, tickers and candles nobody hears are not built. Trades,
/// statuses and listings are always built: they are few.
pub trait Listeners {
    fn hears(&self, channel: Channel, locate: u16) -> bool;
}

/// Every update built: what [`Projection::apply`] appends.
pub struct Everyone;

impl Listeners for Everyone {
    fn hears(&self, _: Channel, _: u16) -> bool {
        true
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelChange {
    pub side: Side,
    pub price: u64,
    /// Absolute quantity at the level afterwards; zero removes it.
    pub qty: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BookUpdate {
    pub locate: u16,
    pub symbol: Symbol,
    pub sequence: u64,
    pub ts: u64,
    pub changes: Vec<LevelChange>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TradeUpdate {
    pub locate: u16,
    pub symbol: Symbol,
    /// The instrument's trade sequence.
    pub sequence: u64,
    pub trade_id: TradeId,
    pub price: u64,
    pub qty: u64,
    pub aggressor: Side,
    pub ts: u64,
    /// The auction the trade executed in; `None` in continuous trading.
    pub auction: Option<AuctionKind>,
}

/// An instrument's status after one change (the `status` channel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatusUpdate {
    pub locate: u16,
    pub symbol: Symbol,
    /// The instrument's status sequence.
    pub sequence: u64,
    pub ts: u64,
    pub status: MarketStatus,
    pub change: StatusChange,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticker {
    pub locate: u16,
    pub symbol: Symbol,
    /// The book sequence the best bid and ask are from.
    pub sequence: u64,
    pub best_bid: Option<(u64, u64)>,
    pub best_ask: Option<(u64, u64)>,
    pub last_price: Option<u64>,
    pub volume_24h: u128,
    pub ts: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Update {
    Listed {
        locate: u16,
        symbol: Symbol,
    },
    Status {
        locate: u16,
        symbol: Symbol,
        halted: bool,
        ts: u64,
    },
    Book(BookUpdate),
    /// The book was replaced whole at `sequence` (read it from the
    /// projection): subscribers must start over from it.
    Snapshot {
        locate: u16,
        symbol: Symbol,
        sequence: u64,
        ts: u64,
    },
    Trade(TradeUpdate),
    /// Phase, indicative price, last auction or reference price changed.
    MarketStatus(StatusUpdate),
    /// The reference price moved without a status event (a listing that
    /// names one, a trade at another price, a new tick size rounding it):
    /// the binary feed says so at once; the `status` channel's next
    /// message carries it.
    Reference {
        locate: u16,
        symbol: Symbol,
        ts: u64,
        price: Option<u64>,
    },
    Ticker(Ticker),
    Candle {
        locate: u16,
        symbol: Symbol,
        interval: Interval,
        /// Trade sequence of the latest trade in the candle.
        sequence: u64,
        candle: Candle,
    },
}

/// A trade the node still remembers, for seeding and resynchronising.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotTrade {
    pub trade_id: TradeId,
    pub price: u64,
    pub qty: u64,
    pub aggressor: Side,
    pub ts: u64,
    pub auction: Option<AuctionKind>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstrumentSnapshot {
    pub symbol: Symbol,
    pub halted: bool,
    /// Phase, indicative price and last auction.
    pub status: MarketStatus,
    /// Every level, best first.
    pub book: BookView,
    pub sequences: InstrumentSequences,
    /// The most recent trades, oldest first; the last one is trade
    /// number `sequences.trades`.
    pub recent_trades: Vec<SnapshotTrade>,
}

/// The replicated state's market data as of one log index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MarketSnapshot {
    pub applied_index: u64,
    /// The core's time at that index.
    pub now: u64,
    /// In listing order.
    pub instruments: Vec<InstrumentSnapshot>,
}

#[derive(Clone, Debug)]
struct Instrument {
    symbol: Symbol,
    halted: bool,
    book: L2Book,
    last_price: Option<u64>,
    candles: Candles,
    status: MarketStatus,
    auction_trades: AuctionTrades,
    /// Level changes of the entry being applied.
    changes: Vec<LevelChange>,
    traded: bool,
}

impl Instrument {
    fn new(symbol: Symbol) -> Instrument {
        Instrument {
            symbol,
            halted: false,
            book: L2Book::default(),
            last_price: None,
            candles: Candles::default(),
            status: MarketStatus::default(),
            auction_trades: AuctionTrades::default(),
            changes: Vec::new(),
            traded: false,
        }
    }

    fn record_change(&mut self, change: LevelChange) {
        let same = |c: &&mut LevelChange| c.side == change.side && c.price == change.price;
        // A sweep changes one level many times in a row: look at the last first.
        if let Some(last) = self.changes.last_mut().filter(same) {
            last.qty = change.qty;
        } else if let Some(found) = self.changes.iter_mut().find(|c| same(c)) {
            found.qty = change.qty;
        } else {
            self.changes.push(change);
        }
    }
}

/// What a caller needs to describe one instrument.
#[derive(Clone, Copy, Debug)]
pub struct InstrumentInfo<'a> {
    pub locate: u16,
    pub symbol: Symbol,
    pub halted: bool,
    pub status: MarketStatus,
    pub book: &'a L2Book,
    pub sequences: InstrumentSequences,
}

#[derive(Clone, Debug, Default)]
pub struct Projection {
    instruments: Vec<Instrument>,
    /// Fx, not SipHash: looked up for every event, and the symbols are
    /// the venue's own listings, never a client's choice.
    by_symbol: FxHashMap<Symbol, u16>,
    sequences: MarketSequences,
    applied_index: u64,
    now: u64,
    /// Instruments touched by the entry being applied, in first-touch order.
    touched: Vec<u16>,
}

impl Projection {
    /// A projection of the state in `snapshot`; its recent trades seed the
    /// candles and last prices.
    pub fn from_snapshot(snapshot: &MarketSnapshot) -> Projection {
        let mut projection = Projection::default();
        let mut ignored = Vec::new();
        projection.load(snapshot, false, &mut ignored);
        projection
    }

    /// Index of the last log entry applied.
    pub fn applied_index(&self) -> u64 {
        self.applied_index
    }

    /// Time of the newest event seen.
    pub fn now(&self) -> u64 {
        self.now
    }

    pub fn locate(&self, symbol: &Symbol) -> Option<u16> {
        self.by_symbol.get(symbol).copied()
    }

    pub fn instrument(&self, locate: u16) -> Option<InstrumentInfo<'_>> {
        let inst = self.instruments.get(usize::from(locate))?;
        Some(InstrumentInfo {
            locate,
            symbol: inst.symbol,
            halted: inst.halted,
            status: inst.status,
            book: &inst.book,
            sequences: self.sequences.get(inst.symbol.as_str()),
        })
    }

    /// Every instrument, in listing order.
    pub fn instruments(&self) -> impl Iterator<Item = InstrumentInfo<'_>> {
        (0..self.instruments.len()).filter_map(|i| self.instrument(i as u16))
    }

    pub fn ticker(&mut self, locate: u16) -> Option<Ticker> {
        let now = self.now;
        let sequence = self
            .sequences
            .get(self.instruments.get(usize::from(locate))?.symbol.as_str())
            .book;
        let inst = self.instruments.get_mut(usize::from(locate))?;
        Some(Ticker {
            locate,
            symbol: inst.symbol,
            sequence,
            best_bid: inst.book.best_bid(),
            best_ask: inst.book.best_ask(),
            last_price: inst.last_price,
            volume_24h: inst.candles.volume_24h(now),
            ts: now,
        })
    }

    pub fn candles(&self, locate: u16) -> Option<&Candles> {
        self.instruments
            .get(usize::from(locate))
            .map(|i| &i.candles)
    }

    fn list(&mut self, symbol: Symbol, out: &mut Vec<Update>) -> u16 {
        if let Some(&locate) = self.by_symbol.get(&symbol) {
            return locate;
        }
        // The core refuses more than MAX_INSTRUMENTS (1,024) listings.
        let locate = self.instruments.len() as u16;
        self.instruments.push(Instrument::new(symbol));
        self.by_symbol.insert(symbol, locate);
        out.push(Update::Listed { locate, symbol });
        locate
    }

    fn touch(&mut self, locate: u16) {
        if !self.touched.contains(&locate) {
            self.touched.push(locate);
        }
    }

    /// Applies log entry `index` and appends every update it makes.
    /// Entries at or before the applied index are ignored.
    pub fn apply(&mut self, index: u64, events: &[exchange_types::Event], out: &mut Vec<Update>) {
        self.apply_heard(index, events, &Everyone, out);
    }

    /// Applies log entry `index` as [`Projection::apply`] does, and
    /// appends only the updates `listeners` hear.
    pub fn apply_heard(
        &mut self,
        index: u64,
        events: &[exchange_types::Event],
        listeners: &impl Listeners,
        out: &mut Vec<Update>,
    ) {
        if index <= self.applied_index {
            return;
        }
        self.applied_index = index;
        for event in events {
            self.now = self.now.max(event.ts);
            match &event.kind {
                EventKind::InstrumentAdded(e) => {
                    let locate = self.list(e.symbol, out);
                    self.follow_reference(locate, event, out);
                }
                EventKind::InstrumentRules(e) => {
                    if let Some(&locate) = self.by_symbol.get(&e.symbol) {
                        self.follow_reference(locate, event, out);
                    }
                }
                EventKind::Status(e) => {
                    let locate = self.list(e.symbol, out);
                    let halted = e.status == TradingStatus::Halted;
                    self.instruments[usize::from(locate)].halted = halted;
                    out.push(Update::Status {
                        locate,
                        symbol: e.symbol,
                        halted,
                        ts: event.ts,
                    });
                }
                EventKind::Book(e) => {
                    let locate = self.list(e.symbol, out);
                    self.sequences.record_event(index, &event.kind);
                    let inst = &mut self.instruments[usize::from(locate)];
                    inst.book.set(e.side, e.price, e.qty);
                    inst.record_change(LevelChange {
                        side: e.side,
                        price: e.price,
                        qty: e.qty,
                    });
                    self.touch(locate);
                }
                EventKind::Trade(e) => self.apply_trade(index, event, e, out),
                kind @ (EventKind::Phase(_)
                | EventKind::Indicative(_)
                | EventKind::Auction(_)
                | EventKind::ReferencePrice(_)) => {
                    self.apply_market_status(index, kind, event.ts, out);
                }
                _ => {}
            }
        }
        self.flush_touched(listeners, out);
    }

    fn apply_trade(
        &mut self,
        index: u64,
        event: &exchange_types::Event,
        e: &exchange_types::event::Trade,
        out: &mut Vec<Update>,
    ) {
        let locate = self.list(e.symbol, out);
        let sequence = self.sequences.record_event(index, &event.kind).unwrap_or(0);
        let inst = &mut self.instruments[usize::from(locate)];
        inst.last_price = Some(e.price);
        inst.candles.record(event.ts, e.price, e.qty);
        inst.traded = true;
        let auction = inst.auction_trades.trade(e.qty);
        out.push(Update::Trade(TradeUpdate {
            locate,
            symbol: e.symbol,
            sequence,
            trade_id: e.trade_id,
            price: e.price,
            qty: e.qty,
            aggressor: e.aggressor_side,
            ts: event.ts,
            auction,
        }));
        self.follow_reference(locate, event, out);
        self.touch(locate);
    }

    /// Folds an event that moves the reference without a status event;
    /// an [`Update::Reference`] if it moved. Every gateway folds the same
    /// events from the same state, so each tells the same moves.
    fn follow_reference(
        &mut self,
        locate: u16,
        event: &exchange_types::Event,
        out: &mut Vec<Update>,
    ) {
        let inst = &mut self.instruments[usize::from(locate)];
        let before = inst.status.reference_price;
        inst.status.follow_reference(&event.kind);
        if inst.status.reference_price != before {
            out.push(Update::Reference {
                locate,
                symbol: inst.symbol,
                ts: event.ts,
                price: inst.status.reference_price,
            });
        }
    }

    /// A phase, indicative, auction or reference price event: the market
    /// status it changes.
    fn apply_market_status(
        &mut self,
        index: u64,
        kind: &EventKind,
        ts: u64,
        out: &mut Vec<Update>,
    ) {
        let Some(symbol) = crate::status::status_symbol(kind) else {
            return;
        };
        let locate = self.list(symbol, out);
        let sequence = self.sequences.record_event(index, kind).unwrap_or(0);
        let inst = &mut self.instruments[usize::from(locate)];
        if let EventKind::Auction(auction) = kind {
            inst.auction_trades.start(auction);
        }
        if let Some(change) = inst.status.apply(kind, ts) {
            out.push(Update::MarketStatus(StatusUpdate {
                locate,
                symbol,
                sequence,
                ts,
                status: inst.status,
                change,
            }));
        }
    }

    /// One aggregated book update, then the summaries, per instrument the
    /// entry touched, as far as someone hears them.
    fn flush_touched(&mut self, listeners: &impl Listeners, out: &mut Vec<Update>) {
        let touched = std::mem::take(&mut self.touched);
        for &locate in &touched {
            let inst = &mut self.instruments[usize::from(locate)];
            if listeners.hears(Channel::Level2, locate) && !inst.changes.is_empty() {
                let symbol = inst.symbol;
                out.push(Update::Book(BookUpdate {
                    locate,
                    symbol,
                    sequence: self.sequences.get(symbol.as_str()).book,
                    ts: self.now,
                    changes: std::mem::take(&mut inst.changes),
                }));
            } else {
                // Unheard: kept, emptied, so the next entry reuses it.
                inst.changes.clear();
            }
            self.summaries(locate, listeners, out);
        }
        // The buffer is kept, emptied, so the next entry reuses its allocation.
        self.touched = touched;
        self.touched.clear();
    }

    /// The ticker, and the candles if the instrument traded, as far as
    /// someone hears them.
    fn summaries(&mut self, locate: u16, listeners: &impl Listeners, out: &mut Vec<Update>) {
        if listeners.hears(Channel::Ticker, locate) {
            if let Some(ticker) = self.ticker(locate) {
                out.push(Update::Ticker(ticker));
            }
        }
        let inst = &mut self.instruments[usize::from(locate)];
        if std::mem::take(&mut inst.traded) {
            let sequence = self.sequences.get(inst.symbol.as_str()).trades;
            for interval in Interval::ALL {
                if !listeners.hears(Channel::Candles(interval), locate) {
                    continue;
                }
                if let Some(candle) = inst.candles.latest(interval) {
                    out.push(Update::Candle {
                        locate,
                        symbol: inst.symbol,
                        interval,
                        sequence,
                        candle,
                    });
                }
            }
        }
    }

    /// Replaces every book with the snapshot's (which must be newer than
    /// what was applied) and appends the updates that tell subscribers:
    /// new listings and statuses, the trades missed (as far as the
    /// snapshot's recent trades reach), a snapshot per book, tickers.
    pub fn resync(&mut self, snapshot: &MarketSnapshot, out: &mut Vec<Update>) {
        self.load(snapshot, true, out);
    }

    fn load(&mut self, snapshot: &MarketSnapshot, replay_missed: bool, out: &mut Vec<Update>) {
        self.applied_index = self.applied_index.max(snapshot.applied_index);
        self.now = self.now.max(snapshot.now);
        for inst_snap in &snapshot.instruments {
            let known = self.by_symbol.contains_key(&inst_snap.symbol);
            let locate = self.list(inst_snap.symbol, out);
            let symbol = inst_snap.symbol;
            let seen = self.sequences.get(symbol.as_str()).trades;
            let newest = inst_snap.sequences.trades;
            let count = inst_snap.recent_trades.len() as u64;
            let inst = &mut self.instruments[usize::from(locate)];
            if (known && inst.halted != inst_snap.halted) || (!known && inst_snap.halted) {
                out.push(Update::Status {
                    locate,
                    symbol,
                    halted: inst_snap.halted,
                    ts: snapshot.now,
                });
            }
            inst.halted = inst_snap.halted;
            let default = MarketStatus::default();
            let status_changed = if known {
                inst.status != inst_snap.status
            } else {
                inst_snap.status != default
            };
            inst.status = inst_snap.status;
            // An auction cut short by the snapshot tags no later trade.
            inst.auction_trades = AuctionTrades::default();
            if status_changed {
                out.push(Update::MarketStatus(StatusUpdate {
                    locate,
                    symbol,
                    sequence: inst_snap.sequences.status,
                    ts: snapshot.now,
                    status: inst_snap.status,
                    change: StatusChange::Snapshot,
                }));
            }
            for (i, trade) in inst_snap.recent_trades.iter().enumerate() {
                let sequence = (newest + i as u64 + 1).saturating_sub(count);
                if replay_missed && sequence <= seen {
                    continue;
                }
                inst.last_price = Some(trade.price);
                inst.candles.record(trade.ts, trade.price, trade.qty);
                if replay_missed {
                    inst.traded = true;
                    out.push(Update::Trade(TradeUpdate {
                        locate,
                        symbol,
                        sequence,
                        trade_id: trade.trade_id,
                        price: trade.price,
                        qty: trade.qty,
                        aggressor: trade.aggressor,
                        ts: trade.ts,
                        auction: trade.auction,
                    }));
                }
            }
            inst.book = L2Book::from_view(&inst_snap.book);
            inst.changes.clear();
            self.sequences.set(&symbol, inst_snap.sequences);
            out.push(Update::Snapshot {
                locate,
                symbol,
                sequence: inst_snap.sequences.book,
                ts: snapshot.now,
            });
            self.summaries(locate, &Everyone, out);
        }
    }
}
