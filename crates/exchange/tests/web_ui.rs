//! The web trading screen and operator dashboard of the real `exchange
//! serve --demo`, in headless Chromium: the Python suite in tests/ui/
//! drives the system browser with Playwright (see its docstring for what it
//! checks) and writes a screenshot of each page to target/ui-screenshots/.
//!
//! It needs Python 3 with `playwright` (`pip install -r
//! tests/ui/requirements.txt`) and Chromium at /usr/bin/chromium (Debian
//! `chromium`; or set CHROMIUM). `.ci/run` installs them. In CI
//! (`CI=true`) a missing one fails the test: passing without a browser
//! would prove nothing. On a newcomer's machine it prints a loud warning
//! and skips, so `cargo test --workspace` works anywhere.

use std::path::{Path, PathBuf};
use std::process::Command;

use exchange_testkit::{Server, ADMIN_TOKEN};
use serde_json::Value;

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

/// Why the browser suite cannot run here, if it cannot.
fn missing_prerequisite(python: &str, chromium: &str) -> Option<String> {
    if !Path::new(chromium).exists() {
        return Some(format!(
            "no Chromium at {chromium} (apt-get install chromium chromium-driver)"
        ));
    }
    match Command::new(python)
        .args(["-c", "import playwright.sync_api"])
        .output()
    {
        Ok(probe) if probe.status.success() => None,
        Ok(probe) => Some(format!(
            "{python} lacks playwright (pip install -r tests/ui/requirements.txt): {}",
            String::from_utf8_lossy(&probe.stderr).trim()
        )),
        Err(error) => Some(format!("cannot run {python}: {error}")),
    }
}

const PAGES: [&str; 4] = [
    "trading-desktop.png",
    "trading-phone.png",
    "ops-desktop.png",
    "ops-phone.png",
];

/// The screenshot directory, without the screenshots of an earlier run:
/// only this run's may satisfy the check of the pages.
fn fresh_screenshots(root: &Path) -> PathBuf {
    let screenshots = root.join("target/ui-screenshots");
    std::fs::create_dir_all(&screenshots).expect("screenshot directory");
    let screenshots = screenshots.canonicalize().expect("screenshot directory");
    for page in PAGES {
        if let Err(e) = std::fs::remove_file(screenshots.join(page)) {
            assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "remove {page}: {e}");
        }
    }
    screenshots
}

/// The default crypto pairs, BTC-USD taking hidden orders worth 100 USD
/// or more (the default listings take none), so the order ticket's
/// "Hidden" box can be tried.
fn demo_config() -> String {
    let quoted = |value: &Option<String>| value.as_ref().map(|v| format!("{v:?}"));
    let mut text = String::new();
    for i in exchange_node::config::Config::default().instruments {
        text += &format!(
            "[[instruments]]\nsymbol = {:?}\nbase = {:?}\nquote = {:?}\n\
             tick_size = {:?}\nlot_size = {:?}\nmaker_fee_bps = {}\ntaker_fee_bps = {}\n",
            i.symbol, i.base, i.quote, i.tick_size, i.lot_size, i.maker_fee_bps, i.taker_fee_bps
        );
        for (key, value) in [
            ("price_collar_pct", quoted(&i.price_collar_pct)),
            ("reference_price", quoted(&i.reference_price)),
            (
                "hidden_min_notional",
                (i.symbol == "BTC-USD").then(|| "\"100\"".to_string()),
            ),
        ] {
            if let Some(value) = value {
                text += &format!("{key} = {value}\n");
            }
        }
    }
    text
}

/// The demo server in `dir`, and the account the browser trades with.
fn start_demo(dir: &Path) -> (Server, Value) {
    let data_dir = dir.join("data");
    let config = dir.join("exchange.toml");
    std::fs::write(&config, demo_config()).expect("write the configuration");
    let server = Server::start_demo_with(EXCHANGE, &data_dir, Some(&config));
    // The demo saves its accounts' credentials before the server is ready.
    let accounts: Value = serde_json::from_str(
        &std::fs::read_to_string(data_dir.join("demo_accounts.json"))
            .expect("the demo's accounts file"),
    )
    .expect("demo accounts JSON");
    // The last taker: the demo trades with it too, as a newcomer would.
    let account = accounts["takers"]
        .as_array()
        .and_then(|takers| takers.last())
        .cloned()
        .expect("demo takers");
    (server, account)
}

#[test]
fn trading_screen_and_dashboard_in_headless_chromium() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let suite = root.join("tests/ui");
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true");
    if let Some(missing) = missing_prerequisite(&python, &chromium) {
        assert!(!in_ci, "the browser tests cannot run in CI: {missing}");
        eprintln!(
            "\n!!!!! WEB UI BROWSER TESTS NOT RUN: {missing}\n\
             !!!!! Install: apt-get install chromium chromium-driver && \
             pip install -r tests/ui/requirements.txt\n"
        );
        return;
    }

    let dir = tempfile::tempdir().expect("temp dir");
    let (server, account) = start_demo(dir.path());
    let screenshots = fresh_screenshots(&root);

    let output = Command::new(&python)
        .args(["-m", "unittest", "-v", "test_ui.py"])
        .current_dir(&suite)
        .env(
            "EXCHANGE_URL",
            format!("http://127.0.0.1:{}", server.api.port),
        )
        .env("EXCHANGE_ADMIN_TOKEN", ADMIN_TOKEN)
        .env(
            "EXCHANGE_API_KEY",
            account["api_key"].as_str().expect("api_key"),
        )
        .env(
            "EXCHANGE_API_SECRET",
            account["api_secret"].as_str().expect("api_secret"),
        )
        .env("SCREENSHOT_DIR", &screenshots)
        .env("CHROMIUM", &chromium)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run the browser suite");
    let report = String::from_utf8_lossy(&output.stderr);
    println!("{}", String::from_utf8_lossy(&output.stdout));
    println!("{report}");
    println!("screenshots: {}", screenshots.display());
    assert!(
        output.status.success(),
        "the browser suite failed:\n{report}\nserver log:\n{}",
        server.stderr()
    );
    let ran: usize = report
        .lines()
        .find_map(|line| line.strip_prefix("Ran ")?.split(' ').next()?.parse().ok())
        .unwrap_or(0);
    assert!(
        ran >= 14,
        "the browser suite ran {ran} tests; expected all of them:\n{report}"
    );
    for page in PAGES {
        let shot = screenshots.join(page);
        let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
        assert!(size > 10_000, "{} is missing or empty", shot.display());
    }
}
