//! Hidden orders and a listing's minimum for them in both encodings, and
//! the blocks written before either existed.

use exchange_types::ids::InlineStr;
use exchange_types::{
    AddInstrument, Command, Dec, OrderType, Phase, Place, PlaceExt, ReferencePriceRule,
    SelfTradePrevention, Side, Stamped, TimeInForce,
};

use super::wire::DEC_BYTES;
use super::*;

fn dec(text: &str) -> Dec {
    Dec::parse(text).unwrap()
}

fn place(ext: Option<PlaceExt>) -> Stamped {
    Stamped {
        ts: 7,
        command: Command::Place(Place {
            account: 3,
            client_order_id: InlineStr::new("c1").unwrap(),
            symbol: InlineStr::new("BTC-USD").unwrap(),
            side: Side::Sell,
            order_type: OrderType::Limit,
            price: Some(dec("100")),
            qty: dec("2"),
            tif: TimeInForce::Gtc,
            post_only: false,
            stp: SelfTradePrevention::CancelNewest,
            ext: ext.map(Box::new),
        }),
    }
}

fn hidden() -> PlaceExt {
    PlaceExt {
        hidden: true,
        ..PlaceExt::default()
    }
}

/// Rewrites the block length after the message was cut or extended.
fn fix_length(bytes: &mut [u8]) {
    let block = u16::try_from(bytes.len() - HEADER_BYTES).unwrap();
    bytes[4..6].copy_from_slice(&block.to_le_bytes());
}

#[test]
fn the_json_line_says_hidden_only_for_a_hidden_order() {
    let stamped = place(Some(hidden()));
    let line = crate::encode_command(&stamped);
    assert!(
        line.ends_with(r#""stp":"cancel_newest","hidden":true}"#),
        "{line}"
    );
    assert_eq!(crate::decode_command(&line), Ok(stamped));
    let shown = crate::encode_command(&place(None));
    assert!(!shown.contains("hidden"), "{shown}");
    let explicit = shown.replace('}', r#","hidden":false}"#);
    assert_eq!(crate::decode_command(&explicit), Ok(place(None)));
}

/// A rarer part written before hidden orders ends at the minimum quantity
/// and reads as a displayed order; a hidden one appends a single 1.
#[test]
fn a_hidden_order_appends_one_byte_to_its_rarer_part() {
    let stamped = place(Some(hidden()));
    let bytes = encode_command(&stamped);
    assert_eq!(decode_command(&bytes), Ok(stamped));
    let expire = PlaceExt {
        expire_ts: Some(99),
        ..PlaceExt::default()
    };
    let older = encode_command(&place(Some(expire.clone())));
    let both = encode_command(&place(Some(PlaceExt {
        hidden: true,
        ..expire.clone()
    })));
    assert_eq!(both.len(), older.len() + 1);
    assert_eq!(both.last(), Some(&1));
    assert_eq!(both[6..older.len()], older[6..]);
    // The older block, cut before the minimum too, still reads.
    let mut oldest = older.clone();
    oldest.truncate(oldest.len() - DEC_BYTES);
    fix_length(&mut oldest);
    assert_eq!(decode_command(&oldest), Ok(place(Some(expire))));
    // A displayed order written out with a flag is a second encoding.
    let mut zero = both.clone();
    *zero.last_mut().unwrap() = 0;
    assert!(decode_command(&zero).is_err());
}

fn listing(phase: Option<Phase>, minimum: Option<&str>) -> Stamped {
    Stamped {
        ts: 1,
        command: Command::AddInstrument(Box::new(AddInstrument {
            reference_price_rule: ReferencePriceRule::Reference,
            phase,
            hidden_min_notional: minimum.map(dec),
            ..AddInstrument::plain(
                InlineStr::new("X-Y").unwrap(),
                InlineStr::new("X").unwrap(),
                InlineStr::new("Y").unwrap(),
                Dec::new(1, 0),
                Dec::new(1, 0),
            )
        })),
    }
}

/// The minimum follows the rule and the phase, which a listing with a
/// minimum therefore writes (no phase as 255); a listing without one
/// keeps its bytes.
#[test]
fn a_listing_s_minimum_for_hidden_orders_follows_its_phase() {
    let bare = encode_command(&listing(None, None));
    let with = listing(None, Some("5000"));
    let bytes = encode_command(&with);
    assert_eq!(bytes.len(), bare.len() + 2 + DEC_BYTES);
    assert_eq!(bytes[bare.len()..bare.len() + 2], [1, u8::MAX]);
    assert_eq!(decode_command(&bytes), Ok(with));
    for phase in Phase::ALL {
        let stamped = listing(Some(*phase), Some("0.5"));
        assert_eq!(decode_command(&encode_command(&stamped)), Ok(stamped));
    }
    // The no-phase byte with nothing after it is refused.
    let mut cut = bytes.clone();
    cut.truncate(bare.len() + 2);
    fix_length(&mut cut);
    assert!(decode_command(&cut).is_err());
    let line = crate::encode_command(&listing(Some(Phase::PreOpen), Some("5000")));
    assert!(
        line.contains(r#""phase":"pre_open","hidden_min_notional":"5000""#),
        "{line}"
    );
    assert_eq!(
        crate::decode_command(&line),
        Ok(listing(Some(Phase::PreOpen), Some("5000")))
    );
}
