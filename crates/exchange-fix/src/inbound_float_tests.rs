//! Prices and quantities are FIX `float`s: the forms FIX 4.4 allows
//! (leading zeros, a point with no digit on one side) are read as the
//! value they spell, which REST and the log would refuse as written.

use super::*;
use crate::testkit::{dec, fix};

const TRADER: Role = Role::Trading { account: 7 };

fn price_and_qty(price: &str, qty: &str) -> (Option<Dec>, Dec) {
    let body = format!("11=c1|55=BTC-USD|54=1|60=20240101-00:00:00|38={qty}|40=2|44={price}|");
    match translate(&fix("D", 2, &body), &TRADER, 0) {
        Inbound::Submit(submission) => match submission.command {
            Command::Place(place) => (place.price.map(Dec::normalized), place.qty.normalized()),
            other => panic!("not a place: {other:?}"),
        },
        other => panic!("expected a command, got {other:?}"),
    }
}

#[test]
fn fix_floats_are_read_in_fix_grammar() {
    for (price, qty) in [
        ("00055000", "0.5"),
        ("55000.", ".5"),
        ("055000.00", "00.50"),
    ] {
        assert_eq!(
            price_and_qty(price, qty),
            (Some(dec("55000")), dec("0.5")),
            "44={price} 38={qty}"
        );
        // Stricter REST and the log never see these forms.
        assert!(Dec::parse(price).is_err() || Dec::parse(qty).is_err());
    }
}
