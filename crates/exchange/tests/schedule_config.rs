//! A bad trading-day schedule stops `exchange serve` before anything
//! starts, with one line naming the schedule and the field.

use std::process::Command;

#[test]
fn a_schedule_with_times_out_of_order_is_refused_by_field() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let config = tmp.path().join("exchange.toml");
    std::fs::write(
        &config,
        r#"
[[schedule]]
name = "xetra"
symbols = ["BTC-USD"]
time_zone = "Europe/Berlin"
pre_open = "08:00"
open = "09:00"
closing_call = "08:30"
close = "17:35"
closed = "20:00"
"#,
    )
    .expect("write config");
    let out = Command::new(env!("CARGO_BIN_EXE_exchange"))
        .args(["serve", "--config"])
        .arg(&config)
        .arg("--data-dir")
        .arg(tmp.path().join("data"))
        .env_remove("EXCHANGE_ADMIN_TOKEN")
        .output()
        .expect("run exchange");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("schedule \"xetra\": closing_call: 08:30 is not after open (09:00)"),
        "{stderr}"
    );
    assert!(!tmp.path().join("data").join("journal").exists());
}
