use super::*;

#[test]
fn a_plain_metric_has_help_type_and_value() {
    let mut page = Exposition::new();
    page.counter("exchange_things_total", "Things done.", 7u64);
    page.gauge("exchange_depth", "Waiting now.", 0u64);
    assert_eq!(
        page.finish(),
        "# HELP exchange_things_total Things done.\n\
         # TYPE exchange_things_total counter\n\
         exchange_things_total 7\n\
         # HELP exchange_depth Waiting now.\n\
         # TYPE exchange_depth gauge\n\
         exchange_depth 0\n"
    );
}

#[test]
fn a_family_named_twice_has_one_help_and_its_samples_together() {
    let mut page = Exposition::new();
    page.family("exchange_rejects_total", Kind::Counter, "By reason.")
        .sample(&[("reason", "a")], 1u64);
    page.gauge("exchange_other", "Between.", 3u64);
    page.family("exchange_rejects_total", Kind::Counter, "By reason.")
        .sample(&[("reason", "b")], 2u64);
    let text = page.finish();
    assert_eq!(text.matches("# HELP exchange_rejects_total ").count(), 1);
    assert_eq!(text.matches("# TYPE exchange_rejects_total ").count(), 1);
    assert_eq!(
        text,
        "# HELP exchange_rejects_total By reason.\n\
         # TYPE exchange_rejects_total counter\n\
         exchange_rejects_total{reason=\"a\"} 1\n\
         exchange_rejects_total{reason=\"b\"} 2\n\
         # HELP exchange_other Between.\n\
         # TYPE exchange_other gauge\n\
         exchange_other 3\n"
    );
}

#[test]
fn a_family_with_no_samples_still_has_help_and_type() {
    let mut page = Exposition::new();
    page.family("exchange_rejects_total", Kind::Counter, "By reason.");
    assert_eq!(
        page.finish(),
        "# HELP exchange_rejects_total By reason.\n# TYPE exchange_rejects_total counter\n"
    );
}

#[test]
fn labels_are_comma_separated_and_values_escaped() {
    let mut page = Exposition::new();
    page.family("m", Kind::Gauge, "h")
        .sample(&[("a", "1"), ("b", "x\\y\"z\nw")], 5u64)
        .sample(&[("a", "ünïcode")], 6u64);
    let text = page.finish();
    assert!(
        text.contains("m{a=\"1\",b=\"x\\\\y\\\"z\\nw\"} 5\n"),
        "{text}"
    );
    assert!(text.contains("m{a=\"ünïcode\"} 6\n"), "{text}");
    assert_eq!(
        text.lines().count(),
        4,
        "an escaped line feed stays on its line"
    );
}

#[test]
fn help_escapes_backslash_and_line_feed_only() {
    let mut page = Exposition::new();
    page.counter("m", "a \\ b\nc \"quoted\"", 1u64);
    assert!(page
        .finish()
        .starts_with("# HELP m a \\\\ b\\nc \"quoted\"\n# TYPE m counter\n"),);
}

#[test]
fn a_histogram_has_cumulative_buckets_inf_sum_and_count() {
    let mut page = Exposition::new();
    page.histogram("lat_seconds", "Latency.", [(0.001, 2), (1.0, 5)], 6, 0.25);
    assert_eq!(
        page.finish(),
        "# HELP lat_seconds Latency.\n\
         # TYPE lat_seconds histogram\n\
         lat_seconds_bucket{le=\"0.001\"} 2\n\
         lat_seconds_bucket{le=\"1\"} 5\n\
         lat_seconds_bucket{le=\"+Inf\"} 6\n\
         lat_seconds_sum 0.25\n\
         lat_seconds_count 6\n"
    );
}

#[test]
fn values_are_spelled_as_prometheus_parses_them() {
    let spelled = |v: Value| {
        let mut out = String::new();
        v.write(&mut out);
        out
    };
    assert_eq!(spelled(Value::Int(u64::MAX)), "18446744073709551615");
    assert_eq!(spelled(Value::Float(0.0001)), "0.0001");
    assert_eq!(spelled(Value::Float(f64::INFINITY)), "+Inf");
    assert_eq!(spelled(Value::Float(f64::NEG_INFINITY)), "-Inf");
    assert_eq!(spelled(Value::Float(f64::NAN)), "NaN");
    assert_eq!(spelled(Value::NanosAsSeconds(0)), "0.000000000");
    assert_eq!(spelled(Value::NanosAsSeconds(1_500)), "0.000001500");
    assert_eq!(
        spelled(Value::NanosAsSeconds(12_000_000_001)),
        "12.000000001"
    );
    assert_eq!(
        spelled(Value::NanosAsSeconds(u64::MAX)),
        "18446744073.709551615"
    );
}

#[test]
fn names_follow_the_format() {
    assert!(valid_name("exchange_commands_total"));
    assert!(valid_name("_x:y1"));
    assert!(!valid_name(""));
    assert!(!valid_name("1abc"));
    assert!(!valid_name("a-b"));
    assert!(!valid_name("a b"));
}
