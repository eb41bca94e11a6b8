//! Read-only views of the state for gateways, tools and tests.

use exchange_types::{
    AccountId, AssetCode, ClientOrderId, OrderId, Phase, ReferencePriceRule, Side, Symbol,
    TimeInForce, TradingStatus,
};

use crate::engine::Engine;
use crate::orders::NIL;

/// Aggregated levels of one book, best first, in units.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BookView {
    pub bids: Vec<(u64, u64)>,
    pub asks: Vec<(u64, u64)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BalanceView {
    pub account: AccountId,
    pub asset: AssetCode,
    pub total: u64,
    pub available: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderView {
    pub order_id: OrderId,
    pub account: AccountId,
    pub client_order_id: ClientOrderId,
    pub symbol: Symbol,
    pub side: Side,
    pub tif: TimeInForce,
    pub price: u64,
    pub qty: u64,
    pub filled_qty: u64,
    pub reserved: u64,
    /// An untriggered stop's trigger price (units); `None` on a book.
    pub stop_price: Option<u64>,
    /// A hidden order: its owner sees it, market data never does.
    pub hidden: bool,
}

/// A resting iceberg's split, in units: what it shows at most, what its
/// slice shows now (its share of its level) and what it hides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IcebergView {
    pub display_qty: u64,
    pub shown_qty: u64,
    pub hidden_qty: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstrumentView {
    pub symbol: Symbol,
    pub base: AssetCode,
    pub quote: AssetCode,
    pub tick_size: u64,
    pub lot_size: u64,
    pub status: TradingStatus,
    pub phase: Phase,
    pub reference_price: Option<u64>,
    pub min_qty: u64,
    pub max_qty: u64,
    /// Zero: no minimum.
    pub min_notional: u64,
    pub maker_fee_bps: i32,
    pub taker_fee_bps: i32,
    /// Zero: no collar.
    pub collar_bps: u32,
    /// Volatility bands in basis points; zero: no such band.
    pub static_band_bps: u32,
    pub dynamic_band_bps: u32,
    /// Length of a volatility auction's call; zero without bands.
    pub volatility_auction_ns: u64,
    /// The static band's centre (price units): the last auction price, or
    /// the listing's reference before any.
    pub static_reference_price: Option<u64>,
    /// How the auction price uses the reference price.
    pub reference_price_rule: ReferencePriceRule,
    /// The smallest value of a hidden order (quote units); `None`: the
    /// instrument takes none.
    pub hidden_min_notional: Option<u64>,
}

impl Engine {
    pub fn instruments(&self) -> Vec<InstrumentView> {
        self.instruments
            .iter()
            .zip(0u32..)
            .map(|(inst, index)| (inst, self.bands_of(index)))
            .map(|(inst, bands)| InstrumentView {
                symbol: inst.symbol,
                base: self.assets[inst.base as usize],
                quote: self.assets[inst.quote as usize],
                tick_size: inst.tick_units,
                lot_size: inst.lot_units,
                status: inst.status,
                phase: inst.phase,
                reference_price: inst.reference_ticks.map(|t| inst.price_units(t)),
                min_qty: inst.qty_units(inst.min_lots),
                max_qty: inst.qty_units(inst.max_lots),
                min_notional: inst.min_notional,
                maker_fee_bps: inst.maker_fee_bps,
                taker_fee_bps: inst.taker_fee_bps,
                collar_bps: inst.collar_bps,
                static_band_bps: bands.static_bps,
                dynamic_band_bps: bands.dynamic_bps,
                volatility_auction_ns: bands.auction_ns,
                static_reference_price: bands
                    .banded()
                    .then_some(bands.static_ref)
                    .flatten()
                    .map(|t| inst.price_units(t)),
                reference_price_rule: inst.reference_price_rule,
                hidden_min_notional: inst.hidden_min_notional,
            })
            .collect()
    }

    /// The indicative uncrossing of an instrument in a call phase, as last
    /// published; `None` for an unknown symbol or outside a call.
    pub fn indicative(&self, symbol: &Symbol) -> Option<exchange_types::Indicative> {
        let &index = self.instrument_by_symbol.get(symbol)?;
        crate::sessions::is_call(self.instruments[index as usize].phase)
            .then(|| self.indicative_event(index))
    }

    /// Up to `depth` levels per side, best first.
    pub fn book(&self, symbol: &Symbol, depth: usize) -> Option<BookView> {
        let &index = self.instrument_by_symbol.get(symbol)?;
        let inst = &self.instruments[index as usize];
        let book = &self.books[index as usize];
        let levels = |side: &crate::book::BookSide| {
            side.levels_best_first()
                .take(depth)
                .map(|l| (inst.price_units(l.price), inst.qty_units(l.qty)))
                .collect()
        };
        Some(BookView {
            bids: levels(book.bids()),
            asks: levels(book.asks()),
        })
    }

    /// Every non-empty balance, by account id then asset code.
    pub fn balances(&self) -> Vec<BalanceView> {
        let mut all = Vec::new();
        for acct in self.accounts.iter() {
            for (asset, b) in acct.balances().iter().enumerate() {
                if b.total > 0 || b.available > 0 {
                    all.push(BalanceView {
                        account: acct.id(),
                        asset: self.assets[asset],
                        total: b.total,
                        available: b.available,
                    });
                }
            }
        }
        all.sort_by_key(|b| (b.account, b.asset));
        all
    }

    pub fn balance(&self, account: AccountId, asset: &AssetCode) -> Option<(u64, u64)> {
        let acct = self.accounts.get(self.accounts.index(account)?);
        let b = acct.balance(*self.asset_by_code.get(asset)?);
        Some((b.total, b.available))
    }

    /// Every open order (resting, or an untriggered stop), by order id.
    pub fn open_orders(&self) -> Vec<OrderView> {
        let mut all = Vec::new();
        for book in &self.books {
            for side in book.all_sides() {
                for level in side.levels_best_first() {
                    let mut slot = level.head;
                    while slot != NIL {
                        all.push(self.order_view(slot, None));
                        slot = self.orders.link(slot).next;
                    }
                }
            }
        }
        for &slot in self.call_markets.values() {
            all.push(self.order_view(slot, None));
        }
        for (instrument, _) in self.midpoints.books() {
            for slot in self.midpoint_slots(instrument) {
                all.push(self.order_view(slot, None));
            }
        }
        for info in self.stops.untriggered() {
            all.push(self.order_view(info.slot, Some(info.stop)));
        }
        all.sort_by_key(|o| o.order_id);
        all
    }

    /// The split of an open iceberg; `None` for any other order id.
    pub fn iceberg(&self, order_id: OrderId) -> Option<IcebergView> {
        let &display = self.iceberg_display.get(&order_id)?;
        let o = self.orders.get(*self.order_by_id.get(&order_id)?);
        let inst = &self.instruments[o.instrument as usize];
        Some(IcebergView {
            display_qty: inst.qty_units(display),
            shown_qty: inst.qty_units(o.displayed()),
            hidden_qty: inst.qty_units(o.hidden),
        })
    }

    /// The view of the order in `slot`; `stop` (ticks) for an untriggered
    /// stop.
    fn order_view(&self, slot: u32, stop: Option<u64>) -> OrderView {
        let o = self.orders.get(slot);
        let inst = &self.instruments[o.instrument as usize];
        OrderView {
            order_id: o.id,
            account: self.accounts.get(o.account).id(),
            client_order_id: o.client_order_id,
            symbol: inst.symbol,
            side: o.side,
            tif: o.tif,
            price: inst.price_units(o.price),
            qty: inst.qty_units(o.qty),
            filled_qty: inst.qty_units(o.filled),
            reserved: o.reserved,
            stop_price: stop.map(|ticks| inst.price_units(ticks)),
            hidden: o.is_hidden,
        }
    }
}
