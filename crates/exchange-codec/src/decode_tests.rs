use super::*;
use exchange_types::{AssetCode, ClientOrderId, ReplaceStop, Symbol};

fn decode(line: &str) -> Command {
    decode_command(line)
        .unwrap_or_else(|e| panic!("{line}: {e}"))
        .command
}

fn error(line: &str) -> CodecError {
    match decode_command(line) {
        Ok(stamped) => panic!("{line} decoded to {stamped:?}"),
        Err(e) => e,
    }
}

/// Asserts that decoding fails and that both the error and its message
/// name `field`.
fn error_names(line: &str, field: &str) -> String {
    let e = error(line);
    let message = e.to_string();
    assert_eq!(e.field(), Some(field), "{message}");
    assert!(
        message.contains(&format!("`{field}`")),
        "{message} does not name {field}"
    );
    message
}

fn dec(text: &str) -> Dec {
    Dec::parse(text).expect("test decimal")
}

const PLACE_LINE: &str = concat!(
    r#"{"cmd":"place","account":1,"client_order_id":"c1","symbol":"BTC-USD","side":"buy","#,
    r#""type":"limit","price":"100.00","qty":"1.5","tif":"gtc"}"#,
);

#[test]
fn decodes_add_instrument_with_every_option() {
    let line = concat!(
        r#"{"cmd":"add_instrument","symbol":"BTC-USD","base":"BTC","quote":"USD","#,
        r#""tick_size":"0.01","lot_size":"0.0001","maker_fee_bps":-1,"taker_fee_bps":5,"#,
        r#""min_qty":"0.001","max_qty":"100","price_collar_pct":"2.5","#,
        r#""reference_price":"100.00","ts":7}"#,
    );
    let stamped = decode_command(line).expect("decodes");
    assert_eq!(stamped.ts, 7);
    let Command::AddInstrument(spec) = stamped.command else {
        panic!("wrong command")
    };
    assert_eq!(spec.symbol, Symbol::new("BTC-USD").unwrap());
    assert_eq!(spec.base, AssetCode::new("BTC").unwrap());
    assert_eq!(spec.tick_size, Dec::new(1, 2));
    assert_eq!(spec.lot_size, Dec::new(1, 4));
    assert_eq!(spec.min_qty, Some(dec("0.001")));
    assert_eq!(spec.max_qty, Some(dec("100")));
    assert_eq!(spec.collar_bps, Some(250));
    assert_eq!(spec.reference_price, Some(Dec::new(10000, 2)));
    assert_eq!((spec.maker_fee_bps, spec.taker_fee_bps), (-1, 5));
}

/// Lines written before the setting existed have no such field: they
/// list with the rule they ran under, which is left out when encoding.
#[test]
fn a_listing_without_a_reference_price_rule_keeps_the_one_it_ran_under() {
    use exchange_types::ReferencePriceRule;
    let line = |extra: &str| {
        format!(
            concat!(
                r#"{{"cmd":"add_instrument","symbol":"X-Y","base":"X","quote":"Y","#,
                r#""tick_size":"1","lot_size":"1","maker_fee_bps":0,"taker_fee_bps":0{}}}"#,
            ),
            extra
        )
    };
    let rule = |text: &str| match decode_command(text).map(|s| s.command) {
        Ok(Command::AddInstrument(spec)) => Ok(spec.reference_price_rule),
        Ok(other) => panic!("not a listing: {other:?}"),
        Err(e) => Err(e),
    };
    assert_eq!(rule(&line("")), Ok(ReferencePriceRule::Reference));
    assert_eq!(ReferencePriceRule::UNNAMED, ReferencePriceRule::Reference);
    let nearest = line(r#","reference_price_rule":"limit_nearest""#);
    assert_eq!(rule(&nearest), Ok(ReferencePriceRule::LimitNearest));
    let euronext = line(r#","reference_price_rule":"reference""#);
    assert_eq!(rule(&euronext), Ok(ReferencePriceRule::Reference));
    let error = rule(&line(r#","reference_price_rule":"midpoint""#)).expect_err("unknown");
    assert_eq!(error.field(), Some("reference_price_rule"));
    let again = |text: &str| crate::encode_command(&decode_command(text).expect("decodes"));
    assert!(again(&nearest).contains(r#""reference_price_rule":"limit_nearest""#));
    assert!(!again(&euronext).contains("reference_price_rule"));
}

#[test]
fn collar_percentages_convert_exactly() {
    let with_collar = |pct: &str| {
        format!(
            concat!(
                r#"{{"cmd":"add_instrument","symbol":"X-Y","base":"X","quote":"Y","#,
                r#""tick_size":"1","lot_size":"1","maker_fee_bps":0,"taker_fee_bps":0,"#,
                r#""price_collar_pct":"{pct}"}}"#,
            ),
            pct = pct
        )
    };
    let bps = |pct: &str| match decode(&with_collar(pct)) {
        Command::AddInstrument(spec) => spec.collar_bps,
        other => panic!("{other:?}"),
    };
    assert_eq!(bps("10"), Some(1000));
    assert_eq!(bps("0.01"), Some(1));
    assert_eq!(bps("2.50000"), Some(250));
    assert_eq!(bps("0"), Some(0));
    let message = error_names(&with_collar("0.125"), "price_collar_pct");
    assert!(message.contains("more than 2 decimals"), "{message}");
    error_names(&with_collar("-1"), "price_collar_pct");
    error_names(&with_collar("99999999999"), "price_collar_pct");
}

#[test]
fn decodes_place_exactly_with_defaults() {
    let Command::Place(place) = decode(PLACE_LINE) else {
        panic!("wrong command")
    };
    assert_eq!(place.account, 1);
    assert_eq!(place.client_order_id, ClientOrderId::new("c1").unwrap());
    assert_eq!(place.side, Side::Buy);
    assert_eq!(place.order_type, OrderType::Limit);
    // Kept as written: the core, not the codec, checks the tick.
    assert_eq!(place.price, Some(Dec::new(10000, 2)));
    assert_eq!(place.qty, Dec::new(15, 1));
    assert_eq!(place.tif, TimeInForce::Gtc);
    assert!(!place.post_only);
    assert_eq!(place.stp, SelfTradePrevention::CancelNewest);

    let minimal = concat!(
        r#"{"cmd":"place","account":2,"client_order_id":"m","symbol":"S","side":"sell","#,
        r#""type":"market","qty":"0.00000001"}"#,
    );
    let Command::Place(market) = decode(minimal) else {
        panic!("wrong command")
    };
    assert_eq!(market.order_type, OrderType::Market);
    assert_eq!(market.tif, TimeInForce::Ioc);
    assert_eq!(market.price, None);
    assert_eq!(market.qty, Dec::new(1, 8));
    assert_eq!(decode_command(minimal).unwrap().ts, 0);

    let full = concat!(
        r#"{"cmd":"place","account":2,"client_order_id":"p","symbol":"S","side":"buy","#,
        r#""price":"1","qty":"1","tif":"fok","post_only":true,"stp":"decrement","#,
        r#""ts":18446744073709551615}"#,
    );
    let stamped = decode_command(full).expect("decodes");
    assert_eq!(stamped.ts, u64::MAX);
    let Command::Place(place) = stamped.command else {
        panic!("wrong command")
    };
    assert_eq!(place.order_type, OrderType::Limit);
    assert_eq!(place.tif, TimeInForce::Fok);
    assert!(place.post_only);
    assert_eq!(place.stp, SelfTradePrevention::Decrement);
}

#[test]
fn decodes_transfers_and_cancels() {
    let coid = |s: &str| ClientOrderId::new(s).unwrap();
    assert_eq!(
        decode(r#"{"cmd":"deposit","account":1,"asset":"USD","amount":"100000"}"#),
        Command::Deposit(Transfer {
            account: 1,
            asset: AssetCode::new("USD").unwrap(),
            amount: dec("100000")
        })
    );
    assert!(matches!(
        decode(r#"{"cmd":"withdraw","account":3,"asset":"BTC","amount":"0.5"}"#),
        Command::Withdraw(Transfer { account: 3, .. })
    ));
    assert_eq!(
        decode(r#"{"cmd":"cancel","account":1,"client_order_id":"c1"}"#),
        Command::Cancel(Cancel {
            account: 1,
            order: OrderRef::Client(coid("c1"))
        })
    );
    assert_eq!(
        decode(r#"{"cmd":"cancel","account":1,"order_id":42}"#),
        Command::Cancel(Cancel {
            account: 1,
            order: OrderRef::Id(42)
        })
    );
}

#[test]
fn decodes_replace_with_and_without_a_stop_price() {
    let coid = |s: &str| ClientOrderId::new(s).unwrap();
    assert_eq!(
        decode(concat!(
            r#"{"cmd":"replace","account":1,"client_order_id":"c1","#,
            r#""new_client_order_id":"c2","price":"101.00","qty":"1.0"}"#,
        )),
        Command::Replace(Replace {
            account: 1,
            order: OrderRef::Client(coid("c1")),
            new_client_order_id: Some(coid("c2")),
            price: Some(Dec::new(10100, 2)),
            qty: Some(Dec::new(10, 1)),
        })
    );
    assert_eq!(
        decode(r#"{"cmd":"replace","account":1,"order_id":9,"qty":"2"}"#),
        Command::Replace(Replace {
            account: 1,
            order: OrderRef::Id(9),
            new_client_order_id: None,
            price: None,
            qty: Some(dec("2")),
        })
    );
    assert_eq!(
        decode(r#"{"cmd":"replace","account":1,"order_id":9,"stop_price":"95.5"}"#),
        Command::ReplaceStop(Box::new(ReplaceStop {
            replace: Replace {
                account: 1,
                order: OrderRef::Id(9),
                new_client_order_id: None,
                price: None,
                qty: None,
            },
            stop_price: dec("95.5"),
        }))
    );
}

#[test]
fn decodes_mass_cancel_halt_and_resume() {
    let sym = |s: &str| Symbol::new(s).unwrap();
    assert_eq!(
        decode(r#"{"cmd":"mass_cancel","account":4}"#),
        Command::MassCancel(MassCancel {
            account: 4,
            symbol: None
        })
    );
    assert_eq!(
        decode(r#"{"cmd":"mass_cancel","account":4,"symbol":"BTC-USD"}"#),
        Command::MassCancel(MassCancel {
            account: 4,
            symbol: Some(sym("BTC-USD"))
        })
    );
    assert_eq!(
        decode(r#"{"cmd":"halt","symbol":"BTC-USD"}"#),
        Command::Halt {
            symbol: sym("BTC-USD")
        }
    );
    assert_eq!(
        decode(r#"  {"symbol":"BTC-USD", "cmd" : "resume"}  "#),
        Command::Resume {
            symbol: sym("BTC-USD")
        }
    );
}

#[test]
fn null_means_absent_for_optional_fields_only() {
    let line = concat!(
        r#"{"cmd":"place","account":1,"client_order_id":"c","symbol":"S","side":"buy","#,
        r#""price":"1","qty":"1","tif":null,"stp":null}"#,
    );
    let Command::Place(place) = decode(line) else {
        panic!("wrong command")
    };
    assert_eq!(place.tif, TimeInForce::Gtc);
    let message = error_names(
        &PLACE_LINE.replace(r#""qty":"1.5""#, r#""qty":null"#),
        "qty",
    );
    assert!(message.contains("missing"), "{message}");
}

#[test]
fn escaped_strings_decode() {
    let line = r#"{"cmd":"cancel","account":1,"client_order_id":"a\"b\u0041"}"#;
    assert_eq!(
        decode(line),
        Command::Cancel(Cancel {
            account: 1,
            order: OrderRef::Client(ClientOrderId::new("a\"bA").unwrap())
        })
    );
}

#[test]
fn json_numbers_are_refused_for_decimals() {
    for (field, from, to) in [
        ("price", r#""price":"100.00""#, r#""price":100.5"#),
        ("qty", r#""qty":"1.5""#, r#""qty":1"#),
        ("qty", r#""qty":"1.5""#, r#""qty":-2"#),
    ] {
        let message = error_names(&PLACE_LINE.replace(from, to), field);
        assert!(message.contains("decimal string"), "{message}");
        assert!(message.contains("not exact"), "{message}");
    }
    let message = error_names(
        &PLACE_LINE.replace(r#""qty":"1.5""#, r#""qty":true"#),
        "qty",
    );
    assert!(message.contains("got a boolean"), "{message}");
}

#[test]
fn malformed_decimals_name_the_field_and_the_cause() {
    let message = error_names(&PLACE_LINE.replace("100.00", "1e2"), "price");
    assert!(message.contains("invalid character 'e'"), "{message}");
    error_names(&PLACE_LINE.replace("100.00", ""), "price");
    error_names(&PLACE_LINE.replace("100.00", "1.0.0"), "price");
    error_names(&PLACE_LINE.replace("100.00", " 100"), "price");
    error_names(&PLACE_LINE.replace("100.00", &"9".repeat(41)), "price");
    // More digits than any amount needs are refused before parsing.
    let message = error_names(&PLACE_LINE.replace("100.00", &"9".repeat(39)), "price");
    assert!(message.contains("more than 38 digits"), "{message}");
    let message = error_names(
        &PLACE_LINE.replace("100.00", &format!("0.{}", "0".repeat(38))),
        "price",
    );
    assert!(message.contains("more than 38 digits"), "{message}");
    // Fewer digits, but more significant ones than a decimal holds (19).
    let message = error_names(&PLACE_LINE.replace("100.00", &"9".repeat(20)), "price");
    assert!(message.contains("too many significant digits"), "{message}");
    let Command::Place(place) = decode(&PLACE_LINE.replace("100.00", &"9".repeat(19))) else {
        panic!("wrong command")
    };
    assert_eq!(place.price, Some(Dec::from_parts(10u64.pow(19) - 1, 0)));
    // Trailing zeros are not significant.
    let padded = format!("1.5{}", "0".repeat(34));
    let Command::Place(place) = decode(&PLACE_LINE.replace("100.00", &padded)) else {
        panic!("wrong command")
    };
    assert_eq!(place.price.map(Dec::normalized), Some(Dec::new(15, 1)));
    // One value, one spelling: no leading zero, a digit on each side of a
    // point.
    for (text, cause) in [
        ("0100", "zero"),
        ("100.", "no digit after"),
        (".5", "no digit before"),
    ] {
        let message = error_names(&PLACE_LINE.replace("100.00", text), "price");
        assert!(message.contains(cause), "{text}: {message}");
    }
}

#[test]
fn every_missing_required_field_is_named() {
    let required = ["account", "client_order_id", "symbol", "side", "qty"];
    let object: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(PLACE_LINE).expect("test line");
    for field in required {
        let mut without = object.clone();
        without.remove(field);
        let line = serde_json::Value::Object(without).to_string();
        let message = error_names(&line, field);
        assert!(message.starts_with("place: missing field"), "{message}");
    }
    error_names(r#"{"cmd":"deposit","account":1,"asset":"USD"}"#, "amount");
    error_names(r#"{"cmd":"halt"}"#, "symbol");
    error_names(
        concat!(
            r#"{"cmd":"add_instrument","symbol":"S","base":"B","quote":"Q","#,
            r#""tick_size":"1","lot_size":"1","maker_fee_bps":0}"#,
        ),
        "taker_fee_bps",
    );
}

/// Edits of `PLACE_LINE` that make one field wrong: what to replace, with
/// what, the field the error must name, and what its message must say.
const WRONG_PLACE_FIELDS: &[(&str, &str, &str, &str)] = &[
    (
        r#""account":1"#,
        r#""account":"1""#,
        "account",
        "got a string",
    ),
    (r#""account":1"#, r#""account":-1"#, "account", "negative"),
    (
        r#""account":1"#,
        r#""account":1.5"#,
        "account",
        "whole number",
    ),
    (
        r#""side":"buy""#,
        r#""side":"up""#,
        "side",
        "\"buy\", \"sell\", got \"up\"",
    ),
    (r#""side":"buy""#, r#""side":1"#, "side", "must be a string"),
    (
        r#""type":"limit""#,
        r#""type":"iceberg""#,
        "type",
        "\"limit\", \"market\", \"stop\", \"stop_limit\"",
    ),
    (r#""tif":"gtc""#, r#""tif":"gtx""#, "tif", "\"at_close\""),
    (
        r#""tif":"gtc""#,
        r#""tif":"gtc","trailing_amount":"1","trailing_bps":5"#,
        "trailing_bps",
        "cannot be given with `trailing_amount`",
    ),
    (
        r#""tif":"gtc""#,
        r#""tif":"gtc","stp":"none""#,
        "stp",
        "\"decrement\"",
    ),
    (
        r#""tif":"gtc""#,
        r#""tif":"gtc","post_only":"yes""#,
        "post_only",
        "true or false",
    ),
    (
        r#""symbol":"BTC-USD""#,
        r#""symbol":"BTC USD""#,
        "symbol",
        "printable ASCII",
    ),
    (r#""symbol":"BTC-USD""#, r#""symbol":"""#, "symbol", "empty"),
    (
        r#""client_order_id":"c1""#,
        r#""client_order_id":["c1"]"#,
        "client_order_id",
        "array",
    ),
    (
        r#""client_order_id":"c1""#,
        r#""client_order_id":{"a":1}"#,
        "client_order_id",
        "object",
    ),
    (
        r#""tif":"gtc""#,
        r#""tif":"gtc","ts":-5"#,
        "ts",
        "non-negative integer",
    ),
    (
        r#""tif":"gtc""#,
        r#""tif":"gtc","ts":"5""#,
        "ts",
        "got a string",
    ),
];

#[test]
fn wrong_types_and_values_are_named() {
    for &(from, to, field, expect) in WRONG_PLACE_FIELDS {
        let line = PLACE_LINE.replace(from, to);
        assert_ne!(line, PLACE_LINE, "case {to} did not apply");
        let message = error_names(&line, field);
        assert!(message.contains(expect), "{message} lacks {expect}");
    }
    let long_id = PLACE_LINE.replace("\"c1\"", &format!("\"{}\"", "x".repeat(37)));
    let message = error_names(&long_id, "client_order_id");
    assert!(message.contains("longer than 36"), "{message}");
    let fee = concat!(
        r#"{"cmd":"add_instrument","symbol":"S","base":"B","quote":"Q","tick_size":"1","#,
        r#""lot_size":"1","maker_fee_bps":0,"taker_fee_bps":3000000000}"#,
    );
    error_names(fee, "taker_fee_bps");
    error_names(&fee.replace("3000000000", "\"5\""), "taker_fee_bps");
}

#[test]
fn unknown_fields_are_refused_before_missing_ones() {
    let message = error_names(&PLACE_LINE.replace("\"price\"", "\"pirce\""), "pirce");
    assert!(message.contains("unknown field"), "{message}");
    assert!(message.contains("allowed: cmd, ts, account"), "{message}");
    // A field of another command is unknown here too.
    error_names(r#"{"cmd":"halt","symbol":"S","account":1}"#, "account");
}

#[test]
fn cmd_problems_are_named() {
    assert_eq!(error(r#"{"account":1}"#), CodecError::MissingCmd);
    let message = error_names(r#"{"cmd":"buy","account":1}"#, "cmd");
    assert!(
        message.contains("unknown command \"buy\"") && message.contains("mass_cancel"),
        "{message}"
    );
    let message = error_names(r#"{"cmd":3}"#, "cmd");
    assert!(message.contains("must be a string"), "{message}");
    error_names(r#"{"cmd":"halt","symbol":"A","cmd":"resume"}"#, "cmd");
}

#[test]
fn order_reference_needs_exactly_one_id() {
    for line in [
        r#"{"cmd":"cancel","account":1}"#,
        r#"{"cmd":"cancel","account":1,"order_id":1,"client_order_id":"c"}"#,
        r#"{"cmd":"replace","account":1,"qty":"1"}"#,
    ] {
        let message = error(line).to_string();
        assert!(
            message.contains("`client_order_id`") && message.contains("`order_id`"),
            "{message}"
        );
    }
    error_names(r#"{"cmd":"cancel","account":1,"order_id":"7"}"#, "order_id");
}

#[test]
fn malformed_json_and_oversized_lines_are_errors() {
    for line in [
        "",
        "{",
        "not json",
        "[1,2]",
        "42",
        r#"{"cmd":"halt","symbol":"S"} x"#,
        "{'cmd':1}",
    ] {
        assert!(matches!(error(line), CodecError::Json(_)), "{line:?}");
    }
    let message = error("[1]").to_string();
    assert!(message.contains("expected a JSON object"), "{message}");
    let padding = " ".repeat(MAX_COMMAND_BYTES);
    let long = format!(r#"{{"cmd":"halt","symbol":"S"}}{padding}"#);
    assert_eq!(error(&long), CodecError::TooLong { len: long.len() });
    let just_fits = r#"{"cmd":"halt","symbol":"S"}"#;
    let just_fits = format!(
        "{just_fits}{}",
        " ".repeat(MAX_COMMAND_BYTES - just_fits.len())
    );
    assert!(decode_command(&just_fits).is_ok());
}

#[test]
fn mangled_lines_never_panic_and_always_explain() {
    let seeds = [
        PLACE_LINE,
        concat!(
            r#"{"cmd":"add_instrument","symbol":"X-Y","base":"X","quote":"Y","#,
            r#""tick_size":"0.01","lot_size":"1","maker_fee_bps":-1,"taker_fee_bps":5,"#,
            r#""price_collar_pct":"2.5"}"#,
        ),
        concat!(
            r#"{"cmd":"replace","account":1,"order_id":9,"new_client_order_id":"n","#,
            r#""price":"1","qty":"2","ts":3}"#,
        ),
    ];
    let junk = b"0123456789.-\"{}[],: eE+\\nul\x01\xc3\xa9";
    let mut x: u64 = 42;
    let mut next = |bound: usize| {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (x >> 33) as usize % bound
    };
    let (mut ok, mut failed) = (0, 0);
    for round in 0..20_000 {
        let mut bytes = seeds[round % seeds.len()].as_bytes().to_vec();
        for _ in 0..1 + next(3) {
            let pos = next(bytes.len() + 1);
            match next(4) {
                0 if pos < bytes.len() => bytes[pos] = junk[next(junk.len())],
                1 => bytes.insert(pos, junk[next(junk.len())]),
                2 => bytes.truncate(pos),
                _ if pos < bytes.len() => {
                    bytes.remove(pos);
                }
                _ => {}
            }
        }
        let Ok(line) = std::str::from_utf8(&bytes) else {
            continue;
        };
        match decode_command(line) {
            Ok(_) => ok += 1,
            Err(e) => {
                assert!(!e.to_string().is_empty());
                failed += 1;
            }
        }
    }
    // Both outcomes occur, so the mutations reach past the JSON parser.
    assert!(ok > 100 && failed > 100, "ok {ok}, failed {failed}");
}

#[test]
fn every_command_name_has_a_decoder_in_the_same_order() {
    let names: Vec<&str> = DECODERS.iter().map(|decoder| decoder.cmd).collect();
    assert_eq!(names, COMMAND_NAMES);
}
