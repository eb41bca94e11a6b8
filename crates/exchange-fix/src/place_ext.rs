//! The NewOrderSingle fields of the core's rarer order kinds that FIX 4.4
//! has no single field for: a trailing stop (ExecInst `a`, trailing stop
//! peg, with the PegInstructions' PegOffsetValue and PegOffsetType) and a
//! one-cancels-other pair (ContingencyType 1 with ClOrdLinkID naming the
//! open order to pair with). Only the shape is read here; whether the
//! order may be a trailing stop or pair with that order is the core's
//! decision, as for REST.

use exchange_types::ids::InlineStr;
use exchange_types::{ClientOrderId, Dec, Trailing};

use crate::message::Message;
use crate::tags;

/// Why the fields cannot make an order: an OrdRejReason and a Text.
pub type Refusal = (u32, &'static str);

/// OrdRejReason 11: unsupported order characteristic.
const UNSUPPORTED: u32 = 11;
/// OrdRejReason 99: other.
const OTHER: u32 = 99;

/// Whether the order is hidden: DisplayQty (1138) 0, the FIX 5.0
/// DisplayInstruction convention for a non-displayed order. Any other
/// display quantity is an iceberg's, which FIX 4.4 gives in MaxFloor (111).
pub fn hidden(message: &Message) -> Result<bool, Refusal> {
    let Some(display) = message.text(tags::DISPLAY_QTY) else {
        return Ok(false);
    };
    match Dec::parse(display) {
        Ok(qty) if qty.to_units_allow_zero() == Ok(0) => Ok(true),
        _ => Err((
            UNSUPPORTED,
            concat!(
                "DisplayQty (1138) may only be 0 (a hidden order); ",
                "give an iceberg's shown quantity in MaxFloor (111)"
            ),
        )),
    }
}

/// A trailing stop's distance, when ExecInst (18) carries `a`
/// (`trailing_peg`).
pub fn trailing(message: &Message, trailing_peg: bool) -> Result<Option<Trailing>, Refusal> {
    let offset = message.text(tags::PEG_OFFSET_VALUE);
    let kind = message.get(tags::PEG_OFFSET_TYPE);
    let Some(offset) = offset.filter(|_| trailing_peg) else {
        return match (trailing_peg, offset.is_some() || kind.is_some()) {
            (false, false) => Ok(None),
            (false, true) => Err((
                UNSUPPORTED,
                concat!(
                    "PegOffsetValue (211) and PegOffsetType (836) are a trailing stop's: ",
                    "give ExecInst (18) a with them"
                ),
            )),
            (true, _) => Err((
                UNSUPPORTED,
                concat!(
                    "ExecInst (18) a (trailing stop peg) needs PegOffsetValue (211), ",
                    "the trailing distance"
                ),
            )),
        };
    };
    match kind {
        None | Some(b"0") => Dec::parse(offset)
            .map(|amount| Some(Trailing::Amount(amount)))
            .map_err(|_| {
                (
                    OTHER,
                    "PegOffsetValue (211) is not a decimal the exchange can read",
                )
            }),
        Some(b"1") => offset
            .parse::<u32>()
            .map(|bps| Some(Trailing::Bps(bps)))
            .map_err(|_| {
                (
                    OTHER,
                    concat!(
                        "with PegOffsetType (836) 1, PegOffsetValue (211) is a whole number ",
                        "of basis points"
                    ),
                )
            }),
        Some(_) => Err((
            UNSUPPORTED,
            "PegOffsetType (836) must be 0 (price) or 1 (basis points)",
        )),
    }
}

/// The ClOrdID of the open order a one-cancels-other order pairs with.
pub fn oco_with(message: &Message) -> Result<Option<ClientOrderId>, Refusal> {
    let link = message.text(tags::CL_ORD_LINK_ID);
    match (message.get(tags::CONTINGENCY_TYPE), link) {
        (None, None) => Ok(None),
        (Some(b"1"), Some(link)) => InlineStr::new(link).map(Some).map_err(|_| {
            (
                OTHER,
                "ClOrdLinkID (583) must be the ClOrdID of an open order of the account",
            )
        }),
        (Some(b"1"), None) => Err((
            UNSUPPORTED,
            concat!(
                "ContingencyType (1385) 1 needs ClOrdLinkID (583): ",
                "the ClOrdID of the open order to pair with"
            ),
        )),
        (Some(_), _) => Err((
            UNSUPPORTED,
            "ContingencyType (1385) may only be 1 (one cancels the other)",
        )),
        (None, Some(_)) => Err((
            UNSUPPORTED,
            concat!(
                "ClOrdLinkID (583) names the other order of a one-cancels-other pair: ",
                "give ContingencyType (1385) 1 with it"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use exchange_types::{Command, OrderType, Place};

    use crate::inbound::{translate, Inbound, Role};
    use crate::testkit::{dec, fix};

    const TRADER: Role = Role::Trading { account: 7 };

    fn place(fields: &str) -> Result<Place, (Option<String>, String)> {
        let body = format!("11=c1|55=BTC-USD|54=2|60=20240101-00:00:00|38=1|{fields}");
        match translate(&fix("D", 2, &body), &TRADER, 0) {
            Inbound::Submit(submission) => match submission.command {
                Command::Place(place) => Ok(place),
                other => panic!("not a place: {other:?}"),
            },
            Inbound::Reply(out) => Err((out.get(103), out.get(58).unwrap_or_default())),
            other => panic!("neither an order nor its refusal: {other:?}"),
        }
    }

    #[test]
    fn a_trailing_stop_by_amount_or_basis_points() {
        let by_amount = place("40=3|18=a|211=2.5|").expect("an order");
        assert_eq!(by_amount.order_type, OrderType::Stop);
        assert_eq!(
            by_amount.ext().trailing,
            Some(super::Trailing::Amount(dec("2.5")))
        );
        let explicit = place("40=3|18=a|211=2.5|836=0|").expect("an order");
        assert_eq!(explicit.ext().trailing, by_amount.ext().trailing);
        let by_bps = place("40=4|44=90|18=a|211=150|836=1|").expect("an order");
        assert_eq!(by_bps.ext().trailing, Some(super::Trailing::Bps(150)));
        // Post-only beside it reaches the core, which judges the pair.
        assert!(place("40=3|18=6 a|211=1|").expect("an order").post_only);
    }

    #[test]
    fn trailing_fields_out_of_place_are_refused_naming_them() {
        for (fields, code, names) in [
            ("40=3|211=2|", "11", "ExecInst (18) a"),
            ("40=3|836=1|", "11", "ExecInst (18) a"),
            ("40=3|18=a|", "11", "PegOffsetValue (211)"),
            ("40=3|18=a|211=1.5|836=1|", "99", "basis points"),
            ("40=3|18=a|211=x|", "99", "PegOffsetValue (211)"),
            ("40=3|18=a|211=3|836=2|", "11", "PegOffsetType (836)"),
            ("40=3|18=b|", "11", "ExecInst (18)"),
        ] {
            let (reason, text) = place(fields).expect_err(fields);
            assert_eq!(reason.as_deref(), Some(code), "{fields}: {text}");
            assert!(text.contains(names), "{fields}: {text}");
        }
    }

    #[test]
    fn one_cancels_other_names_the_paired_order() {
        let paired = place("40=2|44=100|1385=1|583=take-profit|").expect("an order");
        assert_eq!(
            paired.ext().oco_with.map(|id| id.as_str().to_string()),
            Some("take-profit".into())
        );
        for (fields, names) in [
            ("40=2|44=100|1385=1|", "ClOrdLinkID (583)"),
            ("40=2|44=100|583=x|", "ContingencyType (1385)"),
            ("40=2|44=100|1385=2|583=x|", "ContingencyType (1385)"),
            ("40=2|44=100|1385=1|583=has space|", "ClOrdLinkID (583)"),
        ] {
            let (_, text) = place(fields).expect_err(fields);
            assert!(text.contains(names), "{fields}: {text}");
        }
    }

    #[test]
    fn a_plain_order_has_no_extension() {
        assert!(place("40=2|44=100|").expect("an order").ext.is_none());
    }
}
