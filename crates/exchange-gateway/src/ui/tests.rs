//! The pages and assets as a browser fetches them, and `/admin/status`.

use axum::body::Body;
use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, ETAG};
use axum::http::{Method, Request, StatusCode};

use super::super::rest_client::*;
use super::super::test_support::funded_node;
use super::ASSETS;

fn header(reply: &Reply, name: axum::http::HeaderName) -> String {
    reply
        .headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn pages_and_assets_have_their_types_and_revalidate() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    for (path, content_type, marker) in [
        ("/", "text/html; charset=utf-8", "trade.js"),
        ("/ops", "text/html; charset=utf-8", "ops.js"),
        ("/ui/style.css", "text/css; charset=utf-8", "--bg"),
        ("/ui/trade.js", "text/javascript; charset=utf-8", "import"),
        ("/ui/icon.svg", "image/svg+xml", "<svg"),
    ] {
        let reply = call(&app, get(path)).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert_eq!(header(&reply, CONTENT_TYPE), content_type, "{path}");
        assert_eq!(header(&reply, CACHE_CONTROL), "no-cache", "{path}");
        let body = reply.json.as_str().unwrap_or_default().to_owned();
        assert!(body.contains(marker), "{path} lacks {marker}");
        let csp = header(&reply, CONTENT_SECURITY_POLICY);
        assert_eq!(
            csp.contains("script-src 'self'"),
            content_type.starts_with("text/html"),
            "{path}: {csp}"
        );

        let etag = header(&reply, ETAG);
        assert!(etag.starts_with('"') && etag.len() > 10, "{path}: {etag}");
        let again = Request::get(path)
            .header("If-None-Match", format!("\"other\", {etag}"))
            .body(Body::empty())
            .expect("request");
        let reply = call(&app, again).await;
        assert_eq!(reply.status, StatusCode::NOT_MODIFIED, "{path}");
        let stale = Request::get(path)
            .header("If-None-Match", "\"other\"")
            .body(Body::empty())
            .expect("request");
        assert_eq!(call(&app, stale).await.status, StatusCode::OK, "{path}");
    }
}

#[tokio::test]
async fn unknown_assets_and_pages_as_assets_are_not_found() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    for path in ["/ui/nope.js", "/ui/index.html", "/ui/", "/ui/..%2Fmod.rs"] {
        let reply = call(&app, get(path)).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(reply.json["code"], "not_found", "{path}");
    }
    let post = Request::builder()
        .method(Method::POST)
        .uri("/")
        .body(Body::empty())
        .expect("request");
    assert_eq!(
        call(&app, post).await.status,
        StatusCode::METHOD_NOT_ALLOWED
    );
}

/// Every module a page imports is served: a missing one would only show
/// as a broken page in a browser.
#[test]
fn every_imported_module_is_embedded() {
    for asset in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
        let text = std::str::from_utf8(asset.body).expect("UTF-8 script");
        for line in text.lines().filter(|l| l.starts_with("import ")) {
            let target = line
                .split(['"', '\''])
                .nth(1)
                .and_then(|path| path.strip_prefix("./"))
                .unwrap_or_else(|| panic!("{}: relative import expected: {line}", asset.name));
            assert!(
                ASSETS.iter().any(|a| a.name == target),
                "{} imports {target}, which is not embedded",
                asset.name
            );
        }
    }
}

#[tokio::test]
async fn status_reports_the_single_node_as_leader_with_its_figures() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    let missing = call(&app, get("/admin/status")).await;
    assert_eq!(
        (missing.status, missing.json["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("missing_token"))
    );
    // A reject, so the table of rejects has a row.
    let bad = r#"{"symbol":"BTC-USD","side":"buy","price":"100.001","qty":"1"}"#;
    let refused = call(&app, signed(1, Method::POST, "/v1/orders", bad)).await;
    assert_eq!(refused.json["code"], "price_not_on_tick");

    let status_request = || {
        Request::get("/admin/status")
            .header("Authorization", format!("Bearer {ADMIN}"))
            .body(Body::empty())
            .expect("request")
    };
    // Two accounts, the listing, two deposits and the refused order; the
    // counts are published just after the answers of their batch.
    let commands = 6;
    let mut status = serde_json::Value::Null;
    for _ in 0..500 {
        let reply = call(&app, status_request()).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.json);
        status = reply.json;
        if status["commands_total"] == commands && status["lag"] == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    // A single node is a cluster of one voter: its own leader, in the term
    // it elected itself in, with every durable entry committed.
    let raft = node.pipeline.handle.replication_status();
    assert_eq!(status["role"], "leader");
    assert_eq!(status["node_id"], 1);
    assert!(status["term"].as_u64() >= Some(1), "{status}");
    assert_eq!(status["term"], raft.term);
    let applied = status["applied_index"].as_u64().expect("applied index");
    assert_eq!(applied, raft.applied_index, "{status}");
    assert_eq!(status["commit_index"], applied);
    assert_eq!(status["lag"], 0);
    assert_eq!(status["nodes"][0]["role"], "leader");
    // The state hash names the command it was taken after.
    assert_eq!(status["state_hash_index"], commands);
    let (_, expected_hash) = node.pipeline.handle.state_hash().await.expect("read");
    assert_eq!(status["state_hash"], expected_hash.as_str());
    assert_eq!(status["commands_total"], commands);
    assert_eq!(status["rejects"]["price_not_on_tick"], 1);
    // The test app runs a reporting store: its lag is a count, and a time
    // in seconds.
    assert!(status["reporting_lag"].is_u64(), "{status}");
    assert!(status["reporting_lag_seconds"].is_f64(), "{status}");
    assert!(
        status["marketdata"].is_null(),
        "no market data service here"
    );
    for field in ["ack_latency_us", "fsync_latency_us"] {
        for key in ["count", "p50", "p99", "p999", "max"] {
            assert!(status[field][key].is_u64(), "{field}.{key}: {status}");
        }
    }
    assert!(status["series"].is_array());
    assert!(status["commands_per_sec"].is_number());
}

/// The operator page carries the member risk controls, and every element
/// its script looks up exists on the page (a missing one would only show
/// as a dead button in a browser).
#[tokio::test]
async fn ops_has_the_risk_controls_and_their_script_finds_every_element() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    let page = call(&app, get("/ops")).await;
    let html = page.json.as_str().unwrap_or_default().to_owned();
    assert!(
        html.contains("/ui/ops_risk.js"),
        "the page loads the controls"
    );
    let script = call(&app, get("/ui/ops_risk.js")).await;
    assert_eq!(script.status, StatusCode::OK);
    let js = script.json.as_str().unwrap_or_default().to_owned();
    let ids: Vec<&str> = js
        .split("$(\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect();
    assert!(ids.contains(&"risk-suspend") && ids.contains(&"mmp-reset"));
    for id in ids {
        assert!(
            html.contains(&format!("id=\"{id}\"")),
            "ops.html has no #{id}"
        );
    }
    for route in ["/suspend", "/reinstate", "/risk-limits", "/mmp/", "/reset"] {
        assert!(js.contains(route), "the script never calls {route}");
    }
}

/// Every element a page's scripts look up by id exists on that page, so
/// a renamed input of the order form or a table the dashboard fills
/// cannot silently go dead.
#[test]
fn every_element_the_scripts_look_up_is_on_their_page() {
    let body = |name: &str| {
        let asset = ASSETS
            .iter()
            .find(|a| a.name == name)
            .unwrap_or_else(|| panic!("{name} is embedded"));
        std::str::from_utf8(asset.body).expect("UTF-8")
    };
    for (page, scripts) in [
        ("index.html", &["trade.js", "entry.js"][..]),
        ("ops.html", &["ops.js", "ops_phases.js"][..]),
    ] {
        let html = body(page);
        for script in scripts {
            let js = body(script);
            let ids: Vec<&str> = js
                .split("$(\"")
                .skip(1)
                .filter_map(|rest| rest.split('"').next())
                .collect();
            assert!(
                !ids.is_empty(),
                "{script} looks up its elements with $(\"id\")"
            );
            for id in ids {
                assert!(
                    html.contains(&format!("id=\"{id}\"")),
                    "{page} has no #{id}, which {script} uses"
                );
            }
        }
    }
    // The new order fields are sent under the REST names (docs/server.md).
    let entry = body("entry.js");
    for field in [
        "stop_price",
        "trailing_amount",
        "trailing_bps",
        "display_qty",
        "funds",
        "expire_ts",
        "oco_with",
    ] {
        assert!(entry.contains(field), "entry.js never sends {field}");
    }
}
