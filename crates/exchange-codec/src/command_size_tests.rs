//! How long a line of the log can be: the longest command of each kind,
//! and the bound (`MAX_ENCODED_COMMAND_BYTES`) the server sizes its
//! batches by. Only commands the log can read back count, so decimals are
//! those `Dec::parse` accepts.

use exchange_types::ids::InlineStr;
use exchange_types::limits::{
    MAX_ASSET_LEN, MAX_CLIENT_ORDER_ID_LEN, MAX_DECIMAL_LEN, MAX_ENCODED_COMMAND_BYTES,
    MAX_SYMBOL_LEN,
};
use exchange_types::{
    AddInstrument, Cancel, Command, Dec, InternalTransfer, MassCancel, OrderRef, OrderType, Phase,
    Place, PlaceExt, ReferencePriceRule, Replace, SelfTradePrevention, SetInstrumentRules, SetMmp,
    SetRiskLimits, Side, Stamped, TimeInForce, Trailing, Transfer,
};
use proptest::prelude::*;

use super::encode_command;
use crate::strategies::{command, longest_dec, longest_id, wide_u64};
use crate::{decode_command, COMMAND_NAMES};

/// The widest value of each kind of field: every id all escapes and every
/// number at its widest.
#[derive(Clone, Copy)]
struct Widest {
    dec: Dec,
    coid: InlineStr<MAX_CLIENT_ORDER_ID_LEN>,
    symbol: InlineStr<MAX_SYMBOL_LEN>,
    asset: InlineStr<MAX_ASSET_LEN>,
    account: u64,
}

impl Widest {
    fn new() -> Self {
        Widest {
            dec: {
                let dec = longest_dec();
                assert_eq!(dec.text().as_str().len(), MAX_DECIMAL_LEN);
                dec
            },
            coid: longest_id(),
            symbol: longest_id(),
            asset: longest_id(),
            account: u64::MAX,
        }
    }

    fn transfer(self) -> Transfer {
        Transfer {
            account: self.account,
            asset: self.asset,
            amount: self.dec,
        }
    }

    fn add_instrument(self) -> Command {
        let Widest {
            dec, symbol, asset, ..
        } = self;
        Command::AddInstrument(Box::new(AddInstrument {
            symbol,
            base: asset,
            quote: asset,
            tick_size: dec,
            lot_size: dec,
            min_qty: Some(dec),
            max_qty: Some(dec),
            collar_bps: Some(u32::MAX),
            reference_price: Some(dec),
            maker_fee_bps: i32::MIN,
            taker_fee_bps: i32::MIN,
            min_notional: Some(dec),
            static_band_bps: Some(u32::MAX),
            dynamic_band_bps: Some(u32::MAX),
            volatility_auction_ns: Some(u64::MAX),
            // The unnamed rule is left out of both encodings: the other
            // is the longer (and the longer name).
            reference_price_rule: ReferencePriceRule::LimitNearest,
            phase: Some(Phase::VolatilityAuction),
            hidden_min_notional: Some(dec),
        }))
    }

    fn place(self) -> Command {
        let Widest {
            dec,
            coid,
            symbol,
            account,
            ..
        } = self;
        Command::Place(Place {
            account,
            client_order_id: coid,
            symbol,
            side: Side::Sell,
            order_type: OrderType::StopLimit,
            price: Some(dec),
            qty: dec,
            tif: TimeInForce::AtClose,
            post_only: false,
            stp: SelfTradePrevention::CancelNewest,
            ext: Some(Box::new(PlaceExt {
                stop_price: Some(dec),
                trailing: Some(Trailing::Amount(dec)),
                display_qty: Some(dec),
                funds: Some(dec),
                expire_ts: Some(u64::MAX),
                oco_with: Some(coid),
                min_qty: Some(dec),
                hidden: false,
            })),
        })
    }

    fn replace(self) -> Command {
        let Widest {
            dec, coid, account, ..
        } = self;
        Command::replace(
            Replace {
                account,
                order: OrderRef::Client(coid),
                new_client_order_id: Some(coid),
                price: Some(dec),
                qty: Some(dec),
            },
            Some(dec),
        )
    }

    fn set_risk_limits(self) -> Command {
        Command::SetRiskLimits(Box::new(SetRiskLimits {
            account: self.account,
            max_order_qty: Some(self.dec),
            max_order_notional: Some(self.dec),
            max_open_orders: Some(u32::MAX),
            price_band_bps: Some(u32::MAX),
        }))
    }

    fn set_mmp(self) -> Command {
        Command::SetMmp(Box::new(SetMmp {
            account: self.account,
            symbol: self.symbol,
            window_ns: u64::MAX,
            max_qty: Some(self.dec),
            max_count: Some(u32::MAX),
        }))
    }

    fn set_instrument_rules(self) -> Command {
        let dec = self.dec;
        Command::SetInstrumentRules(Box::new(SetInstrumentRules {
            symbol: self.symbol,
            tick_size: Some(dec),
            lot_size: Some(dec),
            min_qty: Some(dec),
            max_qty: Some(dec),
            min_notional: Some(dec),
            maker_fee_bps: Some(i32::MIN),
            taker_fee_bps: Some(i32::MIN),
            collar_bps: Some(u32::MAX),
            static_band_bps: Some(u32::MAX),
            dynamic_band_bps: Some(u32::MAX),
            volatility_auction_ns: Some(u64::MAX),
            hidden_min_notional: Some(dec),
        }))
    }
}

/// For each kind of command, the one with the longest line: every optional
/// field present, every id all escapes, every number at its widest and
/// every choice at its longest name.
pub(crate) fn largest_commands() -> Vec<Stamped> {
    let widest = Widest::new();
    let Widest {
        dec,
        coid,
        symbol,
        asset,
        account,
    } = widest;
    [
        widest.add_instrument(),
        Command::Deposit(widest.transfer()),
        Command::Withdraw(widest.transfer()),
        widest.place(),
        Command::Cancel(Cancel {
            account,
            order: OrderRef::Client(coid),
        }),
        widest.replace(),
        Command::MassCancel(MassCancel {
            account,
            symbol: Some(symbol),
        }),
        Command::Halt { symbol },
        Command::Resume { symbol },
        Command::SetPhase {
            symbol,
            phase: Phase::VolatilityAuction,
        },
        Command::Tick,
        widest.set_risk_limits(),
        Command::Suspend { account },
        Command::Reinstate { account },
        widest.set_mmp(),
        Command::ResetMmp { account, symbol },
        Command::LinkSubAccount {
            owner: account,
            sub: account,
        },
        Command::InternalTransfer(InternalTransfer {
            from: account,
            to: account,
            asset,
            amount: dec,
        }),
        widest.set_instrument_rules(),
        Command::Delist { symbol },
        Command::SetReferencePrice { symbol, price: dec },
    ]
    .into_iter()
    .map(|command| Stamped {
        ts: u64::MAX,
        command,
    })
    .collect()
}

fn largest_line_of(name: &str) -> usize {
    largest_commands()
        .iter()
        .find(|c| c.command.name() == name)
        .map(|c| encode_command(c).len())
        .unwrap_or_else(|| panic!("no largest `{name}`"))
}

#[test]
fn the_largest_command_of_each_kind_fits_the_bound_and_reads_back() {
    let largest = largest_commands();
    let names: Vec<&str> = largest.iter().map(|c| c.command.name()).collect();
    assert_eq!(
        names, COMMAND_NAMES,
        "every kind of command has its largest"
    );
    for command in &largest {
        let line = encode_command(command);
        assert!(
            line.len() <= MAX_ENCODED_COMMAND_BYTES,
            "{} bytes, over MAX_ENCODED_COMMAND_BYTES ({MAX_ENCODED_COMMAND_BYTES}): {line}",
            line.len()
        );
        assert_eq!(decode_command(&line).as_ref(), Ok(command), "{line}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_024))]

    /// The largest commands above are the largest there are: no command
    /// of the same kind makes a longer line, and every line reads back.
    #[test]
    fn no_command_is_longer_than_the_largest_of_its_kind(
        ts in wide_u64(),
        command in command(),
    ) {
        let stamped = Stamped { ts, command };
        let line = encode_command(&stamped);
        let name = stamped.command.name();
        prop_assert!(line.len() <= largest_line_of(name), "{}", line);
        prop_assert_eq!(decode_command(&line), Ok(stamped));
    }
}
