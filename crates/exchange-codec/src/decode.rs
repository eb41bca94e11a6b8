//! Commands from JSON: one object per line, `"cmd"` naming the command.

use exchange_types::ids::InlineStr;
use exchange_types::limits::{MAX_COMMAND_BYTES, MAX_DECIMAL_DIGITS};
use exchange_types::{
    AddInstrument, Cancel, Command, Dec, InternalTransfer, MassCancel, OrderRef, OrderType, Phase,
    Place, PlaceExt, ReferencePriceRule, Replace, SelfTradePrevention, SetInstrumentRules, SetMmp,
    SetRiskLimits, Side, Stamped, TimeInForce, Trailing, Transfer,
};

use crate::raw::{parse_object, Val};
use crate::CodecError;

/// Every command name the decoder knows, in the order the docs list them.
pub const COMMAND_NAMES: &[&str] = &[
    "add_instrument",
    "deposit",
    "withdraw",
    "place",
    "cancel",
    "replace",
    "mass_cancel",
    "halt",
    "resume",
    "set_phase",
    "tick",
    "set_risk_limits",
    "suspend",
    "reinstate",
    "set_mmp",
    "reset_mmp",
    "link_sub_account",
    "internal_transfer",
    "set_instrument_rules",
    "delist",
    "set_reference_price",
];

const SET_RULES: &[&str] = &[
    "cmd",
    "ts",
    "symbol",
    "tick_size",
    "lot_size",
    "min_qty",
    "max_qty",
    "min_notional",
    "maker_fee_bps",
    "taker_fee_bps",
    "price_collar_pct",
    "static_band_pct",
    "dynamic_band_pct",
    "volatility_auction_ns",
    "hidden_min_notional",
];

const ADD_INSTRUMENT: &[&str] = &[
    "cmd",
    "ts",
    "symbol",
    "base",
    "quote",
    "tick_size",
    "lot_size",
    "min_qty",
    "max_qty",
    "price_collar_pct",
    "reference_price",
    "min_notional",
    "static_band_pct",
    "dynamic_band_pct",
    "volatility_auction_ns",
    "reference_price_rule",
    "phase",
    "hidden_min_notional",
    "maker_fee_bps",
    "taker_fee_bps",
];
const TRANSFER: &[&str] = &["cmd", "ts", "account", "asset", "amount"];
const PLACE: &[&str] = &[
    "cmd",
    "ts",
    "account",
    "client_order_id",
    "symbol",
    "side",
    "type",
    "price",
    "qty",
    "tif",
    "post_only",
    "stp",
    "stop_price",
    "trailing_amount",
    "trailing_bps",
    "display_qty",
    "funds",
    "expire_ts",
    "oco_with",
    "min_qty",
    "hidden",
];
const CANCEL: &[&str] = &["cmd", "ts", "account", "client_order_id", "order_id"];
const REPLACE: &[&str] = &[
    "cmd",
    "ts",
    "account",
    "client_order_id",
    "order_id",
    "new_client_order_id",
    "price",
    "qty",
    "stop_price",
];
const MASS_CANCEL: &[&str] = &["cmd", "ts", "account", "symbol"];
const STATUS: &[&str] = &["cmd", "ts", "symbol"];
const SET_PHASE: &[&str] = &["cmd", "ts", "symbol", "phase"];
const SET_REFERENCE_PRICE: &[&str] = &["cmd", "ts", "symbol", "price"];
const TICK: &[&str] = &["cmd", "ts"];
const RISK_LIMITS: &[&str] = &[
    "cmd",
    "ts",
    "account",
    "max_order_qty",
    "max_order_notional",
    "max_open_orders",
    "price_band_pct",
];
const ACCOUNT: &[&str] = &["cmd", "ts", "account"];
const SET_MMP: &[&str] = &[
    "cmd",
    "ts",
    "account",
    "symbol",
    "window_ns",
    "max_qty",
    "max_count",
];
const RESET_MMP: &[&str] = &["cmd", "ts", "account", "symbol"];
const LINK_SUB: &[&str] = &["cmd", "ts", "owner", "sub"];
const INTERNAL_TRANSFER: &[&str] = &["cmd", "ts", "from", "to", "asset", "amount"];

const SIDES: &[(&str, Side)] = &[("buy", Side::Buy), ("sell", Side::Sell)];
const ORDER_TYPES: &[(&str, OrderType)] = &[
    ("limit", OrderType::Limit),
    ("market", OrderType::Market),
    ("stop", OrderType::Stop),
    ("stop_limit", OrderType::StopLimit),
    ("market_to_limit", OrderType::MarketToLimit),
    ("market_if_touched", OrderType::MarketIfTouched),
    ("limit_if_touched", OrderType::LimitIfTouched),
    ("midpoint", OrderType::Midpoint),
];
const TIFS: &[(&str, TimeInForce)] = &[
    ("gtc", TimeInForce::Gtc),
    ("ioc", TimeInForce::Ioc),
    ("fok", TimeInForce::Fok),
    ("day", TimeInForce::Day),
    ("gtd", TimeInForce::Gtd),
    ("at_open", TimeInForce::AtOpen),
    ("at_close", TimeInForce::AtClose),
];
const PHASES: &[(&str, Phase)] = &[
    ("closed", Phase::Closed),
    ("pre_open", Phase::PreOpen),
    ("opening_auction", Phase::OpeningAuction),
    ("continuous", Phase::Continuous),
    ("closing_call", Phase::ClosingCall),
    ("closing_auction", Phase::ClosingAuction),
    ("post_close", Phase::PostClose),
    ("halted", Phase::Halted),
    ("volatility_auction", Phase::VolatilityAuction),
];
const REFERENCE_PRICE_RULES: &[(&str, ReferencePriceRule)] = &[
    ("limit_nearest", ReferencePriceRule::LimitNearest),
    ("reference", ReferencePriceRule::Reference),
];
const STPS: &[(&str, SelfTradePrevention)] = &[
    ("cancel_newest", SelfTradePrevention::CancelNewest),
    ("cancel_oldest", SelfTradePrevention::CancelOldest),
    ("cancel_both", SelfTradePrevention::CancelBoth),
    ("decrement", SelfTradePrevention::Decrement),
];

/// Decodes one line (without its newline) into a command and its time.
///
/// Checks the shape only: required fields present, each of the right JSON
/// type, decimals well formed, enum values known, no unknown fields. Values
/// the core must judge (zero quantities, off-tick prices, unknown symbols)
/// pass through and come back from the core as `rejected` events.
pub fn decode_command(line: &str) -> Result<Stamped, CodecError> {
    if line.len() > MAX_COMMAND_BYTES {
        return Err(CodecError::TooLong { len: line.len() });
    }
    let object = parse_object(line).map_err(|e| CodecError::Json(e.to_string()))?;
    if let Some(field) = object.duplicate {
        return Err(CodecError::DuplicateField(field));
    }
    let name = match object.members.iter().find(|(k, _)| k == "cmd") {
        None => return Err(CodecError::MissingCmd),
        Some((_, Val::Str(name))) => name.as_ref(),
        Some((_, other)) => return Err(CodecError::CmdNotString(other.kind())),
    };
    let decoder = DECODERS
        .iter()
        .find(|decoder| decoder.cmd == name)
        .ok_or_else(|| CodecError::UnknownCmd(name.to_owned()))?;
    // Unknown fields first: a misspelt optional field must not pass as absent,
    // and a misspelt required one reads better as "unknown" than "missing".
    if let Some((field, _)) = object
        .members
        .iter()
        .find(|(k, _)| !decoder.allowed.contains(&k.as_ref()))
    {
        return Err(CodecError::UnknownField {
            cmd: decoder.cmd,
            field: field.to_string(),
            allowed: decoder.allowed,
        });
    }
    let f = Fields {
        cmd: decoder.cmd,
        members: &object.members,
    };
    let ts = f.opt_u64("ts")?.unwrap_or(0);
    let command = (decoder.build)(&f)?;
    Ok(Stamped { ts, command })
}

/// How one command is read: its name, the fields it may carry, and how it
/// is built from them once they are known to be all allowed.
struct Decoder {
    cmd: &'static str,
    allowed: &'static [&'static str],
    build: fn(&Fields<'_, '_>) -> Result<Command, CodecError>,
}

const fn decoder(
    cmd: &'static str,
    allowed: &'static [&'static str],
    build: fn(&Fields<'_, '_>) -> Result<Command, CodecError>,
) -> Decoder {
    Decoder {
        cmd,
        allowed,
        build,
    }
}

/// One decoder per command, in the order of [`COMMAND_NAMES`].
const DECODERS: &[Decoder] = &[
    decoder("add_instrument", ADD_INSTRUMENT, |f| {
        Ok(Command::AddInstrument(Box::new(add_instrument(f)?)))
    }),
    decoder("deposit", TRANSFER, |f| Ok(Command::Deposit(transfer(f)?))),
    decoder("withdraw", TRANSFER, |f| {
        Ok(Command::Withdraw(transfer(f)?))
    }),
    decoder("place", PLACE, |f| Ok(Command::Place(place(f)?))),
    decoder("cancel", CANCEL, cancel),
    decoder("replace", REPLACE, replace),
    decoder("mass_cancel", MASS_CANCEL, mass_cancel),
    decoder("halt", STATUS, |f| {
        Ok(Command::Halt {
            symbol: f.req_id("symbol")?,
        })
    }),
    decoder("resume", STATUS, |f| {
        Ok(Command::Resume {
            symbol: f.req_id("symbol")?,
        })
    }),
    decoder("set_phase", SET_PHASE, |f| {
        Ok(Command::SetPhase {
            symbol: f.req_id("symbol")?,
            phase: f.req_enum("phase", PHASES)?,
        })
    }),
    decoder("tick", TICK, |_| Ok(Command::Tick)),
    decoder("set_risk_limits", RISK_LIMITS, set_risk_limits),
    decoder("suspend", ACCOUNT, |f| {
        Ok(Command::Suspend {
            account: f.req_u64("account")?,
        })
    }),
    decoder("reinstate", ACCOUNT, |f| {
        Ok(Command::Reinstate {
            account: f.req_u64("account")?,
        })
    }),
    decoder("set_mmp", SET_MMP, set_mmp),
    decoder("reset_mmp", RESET_MMP, |f| {
        Ok(Command::ResetMmp {
            account: f.req_u64("account")?,
            symbol: f.req_id("symbol")?,
        })
    }),
    decoder("link_sub_account", LINK_SUB, |f| {
        Ok(Command::LinkSubAccount {
            owner: f.req_u64("owner")?,
            sub: f.req_u64("sub")?,
        })
    }),
    decoder("internal_transfer", INTERNAL_TRANSFER, internal_transfer),
    decoder("set_instrument_rules", SET_RULES, |f| {
        Ok(Command::SetInstrumentRules(Box::new(set_rules(f)?)))
    }),
    decoder("delist", STATUS, |f| {
        Ok(Command::Delist {
            symbol: f.req_id("symbol")?,
        })
    }),
    decoder("set_reference_price", SET_REFERENCE_PRICE, |f| {
        Ok(Command::SetReferencePrice {
            symbol: f.req_id("symbol")?,
            price: f.req_dec("price")?,
        })
    }),
];

fn cancel(f: &Fields) -> Result<Command, CodecError> {
    Ok(Command::Cancel(Cancel {
        account: f.req_u64("account")?,
        order: order_ref(f)?,
    }))
}

/// A replace that moves a stop price is a [`Command::ReplaceStop`];
/// [`Command::replace`] picks the variant.
fn replace(f: &Fields) -> Result<Command, CodecError> {
    Ok(Command::replace(
        Replace {
            account: f.req_u64("account")?,
            order: order_ref(f)?,
            new_client_order_id: f.opt_id("new_client_order_id")?,
            price: f.opt_dec("price")?,
            qty: f.opt_dec("qty")?,
        },
        f.opt_dec("stop_price")?,
    ))
}

fn mass_cancel(f: &Fields) -> Result<Command, CodecError> {
    Ok(Command::MassCancel(MassCancel {
        account: f.req_u64("account")?,
        symbol: f.opt_id("symbol")?,
    }))
}

fn set_risk_limits(f: &Fields) -> Result<Command, CodecError> {
    Ok(Command::SetRiskLimits(Box::new(SetRiskLimits {
        account: f.req_u64("account")?,
        max_order_qty: f.opt_dec("max_order_qty")?,
        max_order_notional: f.opt_dec("max_order_notional")?,
        max_open_orders: f.opt_u32("max_open_orders")?,
        price_band_bps: f.opt_bps("price_band_pct")?,
    })))
}

fn set_mmp(f: &Fields) -> Result<Command, CodecError> {
    Ok(Command::SetMmp(Box::new(SetMmp {
        account: f.req_u64("account")?,
        symbol: f.req_id("symbol")?,
        window_ns: f.req_u64("window_ns")?,
        max_qty: f.opt_dec("max_qty")?,
        max_count: f.opt_u32("max_count")?,
    })))
}

fn internal_transfer(f: &Fields) -> Result<Command, CodecError> {
    Ok(Command::InternalTransfer(InternalTransfer {
        from: f.req_u64("from")?,
        to: f.req_u64("to")?,
        asset: f.req_id("asset")?,
        amount: f.req_dec("amount")?,
    }))
}

fn add_instrument(f: &Fields) -> Result<AddInstrument, CodecError> {
    Ok(AddInstrument {
        symbol: f.req_id("symbol")?,
        base: f.req_id("base")?,
        quote: f.req_id("quote")?,
        tick_size: f.req_dec("tick_size")?,
        lot_size: f.req_dec("lot_size")?,
        min_qty: f.opt_dec("min_qty")?,
        max_qty: f.opt_dec("max_qty")?,
        collar_bps: f.opt_bps("price_collar_pct")?,
        reference_price: f.opt_dec("reference_price")?,
        maker_fee_bps: f.req_i32("maker_fee_bps")?,
        taker_fee_bps: f.req_i32("taker_fee_bps")?,
        min_notional: f.opt_dec("min_notional")?,
        static_band_bps: f.opt_bps("static_band_pct")?,
        dynamic_band_bps: f.opt_bps("dynamic_band_pct")?,
        volatility_auction_ns: f.opt_u64("volatility_auction_ns")?,
        reference_price_rule: f
            .opt_enum("reference_price_rule", REFERENCE_PRICE_RULES)?
            .unwrap_or(ReferencePriceRule::UNNAMED),
        phase: f.opt_enum("phase", PHASES)?,
        hidden_min_notional: f.opt_dec("hidden_min_notional")?,
    })
}

fn set_rules(f: &Fields) -> Result<SetInstrumentRules, CodecError> {
    let opt_i32 = |field| match f.get(field) {
        None => Ok(None),
        Some(_) => f.req_i32(field).map(Some),
    };
    Ok(SetInstrumentRules {
        symbol: f.req_id("symbol")?,
        tick_size: f.opt_dec("tick_size")?,
        lot_size: f.opt_dec("lot_size")?,
        min_qty: f.opt_dec("min_qty")?,
        max_qty: f.opt_dec("max_qty")?,
        min_notional: f.opt_dec("min_notional")?,
        maker_fee_bps: opt_i32("maker_fee_bps")?,
        taker_fee_bps: opt_i32("taker_fee_bps")?,
        collar_bps: f.opt_bps("price_collar_pct")?,
        static_band_bps: f.opt_bps("static_band_pct")?,
        dynamic_band_bps: f.opt_bps("dynamic_band_pct")?,
        volatility_auction_ns: f.opt_u64("volatility_auction_ns")?,
        hidden_min_notional: f.opt_dec("hidden_min_notional")?,
    })
}

/// A percentage with at most two decimals is a whole number of basis
/// points; anything finer would have to be rounded, so it is refused.
fn percent_to_bps(f: &Fields, field: &'static str, pct: Dec) -> Result<u32, CodecError> {
    let pct = pct.normalized();
    if pct.is_negative() {
        return Err(f.invalid(field, "must not be negative".into()));
    }
    if pct.scale() > 2 {
        return Err(f.invalid(
            field,
            "has more than 2 decimals; it is kept in whole basis points".into(),
        ));
    }
    let bps = pct
        .magnitude()
        .checked_mul(10u64.pow(2 - u32::from(pct.scale())));
    bps.and_then(|bps| u32::try_from(bps).ok())
        .ok_or_else(|| f.invalid(field, "is too large".into()))
}

fn transfer(f: &Fields) -> Result<Transfer, CodecError> {
    Ok(Transfer {
        account: f.req_u64("account")?,
        asset: f.req_id("asset")?,
        amount: f.req_dec("amount")?,
    })
}

fn place(f: &Fields) -> Result<Place, CodecError> {
    let order_type = f.opt_enum("type", ORDER_TYPES)?.unwrap_or(OrderType::Limit);
    // A market order cannot rest, so its natural default is immediate.
    let default_tif = match order_type {
        OrderType::Limit
        | OrderType::Stop
        | OrderType::StopLimit
        | OrderType::MarketToLimit
        | OrderType::MarketIfTouched
        | OrderType::LimitIfTouched
        | OrderType::Midpoint => TimeInForce::Gtc,
        OrderType::Market => TimeInForce::Ioc,
    };
    let trailing = match (f.opt_dec("trailing_amount")?, f.opt_u32("trailing_bps")?) {
        (None, None) => None,
        (Some(amount), None) => Some(Trailing::Amount(amount)),
        (None, Some(bps)) => Some(Trailing::Bps(bps)),
        (Some(_), Some(_)) => {
            return Err(CodecError::InvalidField {
                cmd: f.cmd,
                field: "trailing_bps",
                problem: "cannot be given with `trailing_amount`".into(),
            })
        }
    };
    let ext = PlaceExt {
        stop_price: f.opt_dec("stop_price")?,
        trailing,
        display_qty: f.opt_dec("display_qty")?,
        funds: f.opt_dec("funds")?,
        expire_ts: f.opt_u64("expire_ts")?,
        oco_with: f.opt_id("oco_with")?,
        min_qty: f.opt_dec("min_qty")?,
        hidden: f.opt_bool("hidden")?.unwrap_or(false),
    };
    // An order sized by funds has no quantity of its own.
    let qty = match (f.opt_dec("qty")?, ext.funds) {
        (Some(qty), _) => qty,
        (None, Some(_)) => Dec::from_units(0),
        (None, None) => f.req_dec("qty")?,
    };
    Ok(Place {
        account: f.req_u64("account")?,
        client_order_id: f.req_id("client_order_id")?,
        symbol: f.req_id("symbol")?,
        side: f.req_enum("side", SIDES)?,
        order_type,
        price: f.opt_dec("price")?,
        qty,
        tif: f.opt_enum("tif", TIFS)?.unwrap_or(default_tif),
        post_only: f.opt_bool("post_only")?.unwrap_or(false),
        stp: f
            .opt_enum("stp", STPS)?
            .unwrap_or(SelfTradePrevention::CancelNewest),
        ext: (ext != PlaceExt::default()).then(|| Box::new(ext)),
    })
}

fn order_ref(f: &Fields) -> Result<OrderRef, CodecError> {
    match (f.opt_id("client_order_id")?, f.opt_u64("order_id")?) {
        (Some(coid), None) => Ok(OrderRef::Client(coid)),
        (None, Some(id)) => Ok(OrderRef::Id(id)),
        _ => Err(CodecError::OrderRef { cmd: f.cmd }),
    }
}

/// Typed access to the members of one command's object. `null` counts as
/// absent, so optional fields may be written out as `null`.
struct Fields<'o, 'a> {
    cmd: &'static str,
    members: &'o [(std::borrow::Cow<'a, str>, Val<'a>)],
}

impl Fields<'_, '_> {
    fn get(&self, name: &str) -> Option<&Val<'_>> {
        self.members
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
            .filter(|v| !matches!(v, Val::Null))
    }

    fn invalid(&self, field: &'static str, problem: String) -> CodecError {
        CodecError::InvalidField {
            cmd: self.cmd,
            field,
            problem,
        }
    }

    fn required<T>(
        &self,
        field: &'static str,
        value: Result<Option<T>, CodecError>,
    ) -> Result<T, CodecError> {
        value?.ok_or(CodecError::MissingField {
            cmd: self.cmd,
            field,
        })
    }

    fn opt_str(&self, field: &'static str) -> Result<Option<&str>, CodecError> {
        match self.get(field) {
            None => Ok(None),
            Some(Val::Str(s)) => Ok(Some(s.as_ref())),
            Some(other) => {
                Err(self.invalid(field, format!("must be a string, got {}", other.kind())))
            }
        }
    }

    fn opt_dec(&self, field: &'static str) -> Result<Option<Dec>, CodecError> {
        match self.get(field) {
            None => Ok(None),
            Some(Val::Str(s)) => {
                if s.bytes().filter(u8::is_ascii_digit).count() > MAX_DECIMAL_DIGITS {
                    return Err(
                        self.invalid(field, format!("has more than {MAX_DECIMAL_DIGITS} digits"))
                    );
                }
                Dec::parse(s)
                    .map(Some)
                    .map_err(|e| self.invalid(field, format!("is not a decimal: {e}")))
            }
            Some(number @ (Val::UInt(_) | Val::NegInt(_) | Val::Float)) => Err(self.invalid(
                field,
                format!(
                    "must be a decimal string such as \"1.25\", got {}; JSON numbers are refused \
                     because they are not exact",
                    number.kind()
                ),
            )),
            Some(other) => Err(self.invalid(
                field,
                format!(
                    "must be a decimal string such as \"1.25\", got {}",
                    other.kind()
                ),
            )),
        }
    }

    /// A percentage, read as the whole basis points it must be.
    fn opt_bps(&self, field: &'static str) -> Result<Option<u32>, CodecError> {
        self.opt_dec(field)?
            .map(|pct| percent_to_bps(self, field, pct))
            .transpose()
    }

    fn req_dec(&self, field: &'static str) -> Result<Dec, CodecError> {
        self.required(field, self.opt_dec(field))
    }

    fn opt_u64(&self, field: &'static str) -> Result<Option<u64>, CodecError> {
        match self.get(field) {
            None => Ok(None),
            Some(Val::UInt(n)) => Ok(Some(*n)),
            Some(Val::Float) => Err(self.invalid(
                field,
                "must be a whole number from 0 to 18446744073709551615".into(),
            )),
            Some(other) => Err(self.invalid(
                field,
                format!("must be a non-negative integer, got {}", other.kind()),
            )),
        }
    }

    fn opt_u32(&self, field: &'static str) -> Result<Option<u32>, CodecError> {
        self.opt_u64(field)?
            .map(|n| {
                u32::try_from(n).map_err(|_| self.invalid(field, "is above 4294967295".into()))
            })
            .transpose()
    }

    fn req_u64(&self, field: &'static str) -> Result<u64, CodecError> {
        self.required(field, self.opt_u64(field))
    }

    fn req_i32(&self, field: &'static str) -> Result<i32, CodecError> {
        let wide = match self.get(field) {
            None => {
                return Err(CodecError::MissingField {
                    cmd: self.cmd,
                    field,
                })
            }
            Some(Val::UInt(n)) => i128::from(*n),
            Some(Val::NegInt(n)) => i128::from(*n),
            Some(other) => {
                return Err(self.invalid(field, format!("must be an integer, got {}", other.kind())))
            }
        };
        i32::try_from(wide).map_err(|_| self.invalid(field, "is out of range".into()))
    }

    fn opt_bool(&self, field: &'static str) -> Result<Option<bool>, CodecError> {
        match self.get(field) {
            None => Ok(None),
            Some(Val::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.invalid(
                field,
                format!("must be true or false, got {}", other.kind()),
            )),
        }
    }

    fn opt_id<const N: usize>(
        &self,
        field: &'static str,
    ) -> Result<Option<InlineStr<N>>, CodecError> {
        let Some(text) = self.opt_str(field)? else {
            return Ok(None);
        };
        InlineStr::new(text)
            .map(Some)
            .map_err(|e| self.invalid(field, format!("is not a valid identifier: {e}")))
    }

    fn req_id<const N: usize>(&self, field: &'static str) -> Result<InlineStr<N>, CodecError> {
        self.required(field, self.opt_id(field))
    }

    fn opt_enum<T: Copy>(
        &self,
        field: &'static str,
        choices: &[(&str, T)],
    ) -> Result<Option<T>, CodecError> {
        let Some(text) = self.opt_str(field)? else {
            return Ok(None);
        };
        match choices.iter().find(|(name, _)| *name == text) {
            Some((_, value)) => Ok(Some(*value)),
            None => {
                let names: Vec<String> = choices.iter().map(|(n, _)| format!("{n:?}")).collect();
                Err(self.invalid(
                    field,
                    format!("must be one of {}, got {text:?}", names.join(", ")),
                ))
            }
        }
    }

    fn req_enum<T: Copy>(
        &self,
        field: &'static str,
        choices: &[(&str, T)],
    ) -> Result<T, CodecError> {
        self.required(field, self.opt_enum(field, choices))
    }
}

#[cfg(test)]
#[path = "decode_tests.rs"]
mod tests;
