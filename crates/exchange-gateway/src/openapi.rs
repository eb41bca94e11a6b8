//! `GET /openapi.json`: a hand-written OpenAPI 3 description of every
//! route. docs/server.md is the prose version; a test checks that the two
//! and the router name the same paths.

use axum::Json;
use serde_json::{json, Value};

pub async fn serve() -> Json<Value> {
    Json(document())
}

fn schema_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

fn content(schema: Value) -> Value {
    json!({ "application/json": { "schema": schema } })
}

fn ok(description: &str, schema: Value) -> Value {
    json!({ "description": description, "content": content(schema) })
}

/// Responses: the success ones given, plus the named shared error ones.
fn responses(success: &[(&str, Value)], errors: &[&str]) -> Value {
    let mut map = serde_json::Map::new();
    for (status, response) in success {
        map.insert((*status).into(), response.clone());
    }
    for status in errors {
        map.insert(
            (*status).into(),
            json!({ "$ref": format!("#/components/responses/E{status}") }),
        );
    }
    Value::Object(map)
}

fn body(schema: Value) -> Value {
    json!({ "required": true, "content": content(schema) })
}

fn param(name: &str, location: &str, schema: Value, description: &str) -> Value {
    json!({ "name": name, "in": location, "required": location == "path", "schema": schema,
        "description": description })
}

/// Order and account ids: up to i64::MAX, the largest an SQL column or a
/// signed client takes; larger ones are refused at the edge with a 400.
fn id_schema() -> Value {
    json!({ "type": "integer", "format": "int64", "minimum": 0, "maximum": i64::MAX })
}

fn signed() -> Value {
    json!([{ "apiKey": [], "apiTimestamp": [], "apiSign": [] }])
}

fn admin() -> Value {
    json!([{ "adminToken": [] }])
}

/// Errors every signed route can return (403: a key without the route's
/// scope, or used from outside its allow-list).
const SIGNED_ERRORS: &[&str] = &["400", "401", "403", "413", "429", "503"];
const ADMIN_ERRORS: &[&str] = &["400", "401", "404", "413", "422", "503"];

fn symbol_param() -> Value {
    param(
        "symbol",
        "path",
        json!({ "type": "string" }),
        "instrument symbol, e.g. BTC-USD",
    )
}

fn account_param() -> Value {
    param("account", "path", id_schema(), "account id")
}

fn symbol_query() -> Value {
    param(
        "symbol",
        "query",
        json!({ "type": "string" }),
        "only this instrument",
    )
}

/// A reply whose body is an object the document does not detail.
fn ok_object(description: &str) -> Value {
    ok(description, json!({ "type": "object" }))
}

/// Liveness, readiness, metrics, this document, and the operator's views of the node.
/// `/health` and `/ready` while an alarm is up.
fn alarm_body() -> Value {
    json!({ "type": "object", "required": ["status", "alarms", "message"],
        "properties": {
            "status": { "type": "string", "enum": ["alarm"] },
            "alarms": { "type": "array", "items": { "type": "string", "enum": ["nospace"] } },
            "message": { "type": "string" } } })
}

fn node_paths() -> Value {
    let voters_body = json!({ "type": "object", "properties": {
        "add": { "type": "integer" }, "remove": { "type": "integer" },
        "raft_addr": { "type": "string" } } });
    let leader_body = json!({ "type": "object", "properties": {
        "to": { "type": "integer", "minimum": 1 } } });
    let state_hash = json!({ "name": "state_hash", "in": "query", "required": false,
        "schema": { "type": "string", "enum": ["true"] },
        "description": "also hash the state (serialises it whole)" });
    let prometheus = json!({ "description": "Prometheus text format",
        "content": { "text/plain": {} } });
    json!({
        "/health": { "get": { "summary": "Liveness",
            "responses": {
                "200": { "description": "ok (text)", "content": { "text/plain": {} } },
                "503": { "description": "an alarm is up (nospace: the disk is full)",
                    "content": { "application/json": { "schema": alarm_body() } } } } } },
        "/ready": { "get": { "summary": "Readiness", "responses": {
            "200": { "description": "ready (text)", "content": { "text/plain": {} } },
            "503": { "description": concat!(
                    "recovering or failed (text), or an alarm is up (JSON naming it: ",
                    "nospace, the disk is full)"),
                "content": { "text/plain": {},
                    "application/json": { "schema": alarm_body() } } } } } },
        "/metrics": { "get": {
            "summary": concat!(
                "Prometheus metrics (admin token unless [http] metrics_auth = false, ",
                "or on [http] metrics_bind)"),
            "security": admin(),
            "responses": responses(&[("200", prometheus)], &["401"]) } },
        "/openapi.json": { "get": {
            "summary": "This document (admin token, as /metrics)", "security": admin(),
            "responses": responses(&[("200", ok("OpenAPI 3", json!({})))], &["401"]) } },
        "/admin/replication": { "get": {
            "summary": concat!(
                "This node's Raft role, term, leader and indices; on a gateway, the ",
                "replica it follows and its lag (docs/replication.md)"),
            "security": admin(),
            "parameters": [state_hash],
            "responses": responses(
                &[("200", ok_object("replication status"))], &["400", "401", "503"]) } },
        "/admin/replication/voters": { "post": {
            "summary": concat!(
                "Propose adding ({\"add\": ID, \"raft_addr\": \"HOST:PORT\"}) ",
                "or removing ({\"remove\": ID}) a voter"),
            "security": admin(),
            "requestBody": body(voters_body),
            "responses": responses(
                &[("202", ok_object("proposed; effective once committed"))],
                &["400", "401", "409", "413", "503"]) } },
        "/admin/replication/leader": { "post": {
            "summary": concat!(
                "Hand leadership to voter {\"to\": ID}, or ({}) to the most ",
                "up-to-date other voter; the new leader shows in /admin/replication"),
            "security": admin(),
            "requestBody": body(leader_body),
            "responses": responses(
                &[("202", ok_object("transfer started"))],
                &["400", "401", "409", "413", "503"]) } },
        "/admin/status": { "get": {
            "summary": "Node status for the operator dashboard (docs/ui.md)", "security": admin(),
            "responses": responses(
                &[("200", ok_object(concat!(
                    "role, log position, throughput, latency percentiles, rejects, ",
                    "market data")))],
                &["401", "503"]) } },
    })
}

/// Creating and funding accounts; listing, halting, resuming, re-ruling and delisting
/// instruments.
fn admin_instrument_paths() -> Value {
    let funding_errors = ["400", "401", "404", "413", "422", "503"];
    let balance_after = || {
        responses(
            &[("200", ok("balance after", schema_ref("AccountBalance")))],
            &funding_errors,
        )
    };
    let new_status = || {
        responses(
            &[("200", ok("new status", schema_ref("StatusChange")))],
            ADMIN_ERRORS,
        )
    };
    let rules_reply = responses(
        &[(
            "200",
            ok_object("the rules as they now stand and the orders canceled"),
        )],
        ADMIN_ERRORS,
    );
    json!({
        "/admin/accounts": { "post": {
            "summary": "Create an account with API credentials", "security": admin(),
            "responses": responses(
                &[("201", ok("the new account; the secret is shown only here",
                    schema_ref("NewAccount")))],
                &["401", "503"]) } },
        "/admin/deposits": { "post": { "summary": "Credit an account", "security": admin(),
            "requestBody": body(schema_ref("Transfer")),
            "responses": balance_after() } },
        "/admin/withdrawals": { "post": {
            "summary": "Debit an account's available balance", "security": admin(),
            "requestBody": body(schema_ref("Transfer")),
            "responses": balance_after() } },
        "/admin/instruments": { "post": { "summary": "List an instrument", "security": admin(),
            "requestBody": body(schema_ref("InstrumentSpec")),
            "responses": responses(
                &[("201", ok("the listed instrument", schema_ref("Instrument")))],
                ADMIN_ERRORS) } },
        "/admin/instruments/{symbol}/halt": { "post": {
            "summary": "Halt trading", "security": admin(),
            "parameters": [symbol_param()],
            "responses": new_status() } },
        "/admin/instruments/{symbol}/resume": { "post": {
            "summary": "Resume trading", "security": admin(),
            "parameters": [symbol_param()],
            "responses": new_status() } },
        "/admin/instruments/{symbol}/rules": { "put": {
            "summary": concat!(
                "Change the instrument's rules (absent field: kept); ",
                "resting orders that no longer fit are canceled"),
            "security": admin(),
            "parameters": [symbol_param()],
            "requestBody": body(rules_body()),
            "responses": rules_reply.clone() } },
        "/admin/instruments/{symbol}/delist": { "post": {
            "summary": "Delist: cancel every order and refuse new ones for good",
            "security": admin(),
            "parameters": [symbol_param()],
            "responses": rules_reply } },
    })
}

/// Market operations' reference price for an instrument.
fn admin_reference_price_paths() -> Value {
    json!({
        "/admin/instruments/{symbol}/reference_price": { "post": {
            "summary": concat!(
                "Set the reference price: the static band's centre and the last price ",
                "the collar, the dynamic band and the auction price use"),
            "security": admin(),
            "parameters": [symbol_param()],
            "requestBody": body(schema_ref("ReferencePriceRequest")),
            "responses": responses(
                &[("200", ok("the reference price now in force",
                    schema_ref("ReferencePriceChange")))],
                ADMIN_ERRORS) } },
    })
}

fn rules_body() -> Value {
    json!({ "type": "object", "properties": {
        "tick_size": { "type": "string" }, "lot_size": { "type": "string" },
        "min_qty": { "type": "string" }, "max_qty": { "type": "string" },
        "min_notional": { "type": "string" }, "maker_fee_bps": { "type": "integer" },
        "taker_fee_bps": { "type": "integer" }, "price_collar_pct": { "type": "string" },
        "static_band_pct": { "type": "string" }, "dynamic_band_pct": { "type": "string" },
        "volatility_auction_ns": { "type": "integer" },
        "hidden_min_notional": { "type": "string" } } })
}

/// An account's risk limits and suspension, and its sub-accounts.
fn admin_account_paths() -> Value {
    let limits_body = json!({ "type": "object", "properties": {
        "max_order_qty": { "type": "string" }, "max_order_notional": { "type": "string" },
        "max_open_orders": { "type": "integer" }, "price_band_pct": { "type": "string" } } });
    let sub_account_body = json!({ "type": "object", "required": ["account_id"],
        "properties": { "account_id": { "type": "integer" } } });
    let reply = |description: &str| responses(&[("200", ok_object(description))], ADMIN_ERRORS);
    json!({
        "/admin/accounts/{account}/risk-limits": {
            "put": {
                "summary": "Replace the account's pre-trade limits (absent field: no limit)",
                "security": admin(),
                "parameters": [account_param()],
                "requestBody": body(limits_body),
                "responses": reply("limits now in force") },
            "delete": { "summary": "Clear the account's pre-trade limits", "security": admin(),
                "parameters": [account_param()],
                "responses": reply("limits now in force (none)") } },
        "/admin/accounts/{account}/suspend": { "post": {
            "summary": "Kill switch: cancel the account's open orders and refuse new ones",
            "security": admin(),
            "parameters": [account_param()],
            "responses": reply("status and orders canceled") } },
        "/admin/accounts/{account}/reinstate": { "post": {
            "summary": "Lift a suspension", "security": admin(),
            "parameters": [account_param()],
            "responses": reply("status") } },
        "/admin/accounts/{account}/sub-accounts": { "post": {
            "summary": "Make an account a sub-account of this one", "security": admin(),
            "parameters": [account_param()],
            "requestBody": body(sub_account_body),
            "responses": reply("linked") } },
    })
}

/// Market-maker protection: set and removed by the operator, reset by either side.
fn mmp_paths() -> Value {
    let mmp_body = json!({ "type": "object", "required": ["window_ms"], "properties": {
        "window_ms": { "type": "integer" }, "max_qty": { "type": "string" },
        "max_count": { "type": "integer" } } });
    let reply = |description: &str| responses(&[("200", ok_object(description))], ADMIN_ERRORS);
    json!({
        "/admin/accounts/{account}/mmp/{symbol}": {
            "put": {
                "summary": "Set market-maker protection for the account on the instrument",
                "security": admin(),
                "parameters": [account_param(), symbol_param()],
                "requestBody": body(mmp_body),
                "responses": reply("protection now in force") },
            "delete": { "summary": "Remove the protection", "security": admin(),
                "parameters": [account_param(), symbol_param()],
                "responses": reply("removed") } },
        "/admin/accounts/{account}/mmp/{symbol}/reset": { "post": {
            "summary": "Reset tripped market-maker protection", "security": admin(),
            "parameters": [account_param(), symbol_param()],
            "responses": reply("reset") } },
        "/v1/mmp/{symbol}/reset": { "post": {
            "summary": "Reset the account's own tripped market-maker protection",
            "security": signed(),
            "parameters": [symbol_param()],
            "responses": responses(
                &[("200", ok_object("reset"))],
                &["400", "401", "403", "413", "422", "429", "503"]) } },
    })
}

/// The signed account routes besides orders: transfers, fills and balances.
fn account_paths() -> Value {
    let transfer_body = json!({ "type": "object",
        "required": ["to_account_id", "asset", "amount"], "properties": {
            "to_account_id": { "type": "integer" }, "asset": { "type": "string" },
            "amount": { "type": "string" } } });
    let fills = json!({ "type": "object", "properties": {
        "fills": { "type": "array", "items": schema_ref("Fill") } } });
    let limit = param(
        "limit",
        "query",
        json!({ "type": "integer", "default": 100, "maximum": 1000 }),
        "most fills returned",
    );
    json!({
        "/v1/transfers": { "post": {
            "summary": "Move available funds to the account's owner, a sub-account or a sibling",
            "security": signed(),
            "requestBody": body(transfer_body),
            "responses": responses(&[("200", ok_object("both balances after"))], SIGNED_ERRORS) } },
        "/v1/fills": { "get": {
            "summary": "The account's fills, newest first", "security": signed(),
            "parameters": [symbol_query(), limit],
            "responses": responses(&[("200", ok("fills", fills))], SIGNED_ERRORS) } },
        "/v1/balances": { "get": {
            "summary": "The account's balance in every listed asset", "security": signed(),
            "responses": responses(
                &[("200", ok("balances", schema_ref("Balances")))], SIGNED_ERRORS) } },
    })
}

/// Placing, listing, canceling and replacing orders.
fn order_paths() -> Value {
    let order_id = param("order_id", "path", id_schema(), "exchange order id");
    let order = ok(
        "the order and the fills this command caused",
        schema_ref("OrderWithFills"),
    );
    let order_errors = [
        "400", "401", "403", "404", "409", "413", "422", "429", "503",
    ];
    let status = param(
        "status",
        "query",
        json!({ "type": "string", "enum": ["open", "closed", "all"], "default": "open" }),
        "open orders (live state), closed ones (reporting store), or both",
    );
    let orders = json!({ "type": "object", "properties": {
        "orders": { "type": "array", "items": schema_ref("Order") } } });
    let canceled = json!({ "type": "object", "properties": {
        "canceled": { "type": "array", "items": { "type": "integer" } } } });
    let client_order_id = param(
        "client_order_id",
        "path",
        json!({ "type": "string" }),
        "the client's id",
    );
    json!({
        "/v1/orders": {
            "post": { "summary": "Place an order", "security": signed(),
                "requestBody": body(schema_ref("PlaceRequest")),
                "responses": responses(&[("201", order.clone())], &order_errors) },
            "get": { "summary": "The account's orders, newest first", "security": signed(),
                "parameters": [status, symbol_query()],
                "responses": responses(&[("200", ok("orders", orders))], SIGNED_ERRORS) },
            "delete": {
                "summary": "Cancel all the account's open orders (mass cancel)",
                "security": signed(),
                "parameters": [symbol_query()],
                "responses": responses(
                    &[("200", ok("ids of the canceled orders", canceled))],
                    &["400", "401", "403", "413", "422", "429", "503"]) } },
        "/v1/orders/by-client-id/{client_order_id}": { "delete": {
            "summary": "Cancel an open order by client order id", "security": signed(),
            "parameters": [client_order_id],
            "responses": responses(&[("200", order.clone())], &order_errors) } },
        "/v1/orders/{order_id}": {
            "get": { "summary": "One of the account's orders", "security": signed(),
                "parameters": [order_id.clone()],
                "responses": responses(
                    &[("200", ok("the order", schema_ref("Order")))],
                    &["400", "401", "403", "404", "429", "503"]) },
            "delete": { "summary": "Cancel an open order", "security": signed(),
                "parameters": [order_id.clone()],
                "responses": responses(&[("200", order.clone())], &order_errors) } },
        "/v1/orders/{order_id}/replace": { "post": {
            "summary": "Cancel-replace: new price, total quantity, stop price and/or client id",
            "security": signed(),
            "parameters": [order_id], "requestBody": body(schema_ref("ReplaceRequest")),
            "responses": responses(&[("200", order)], &order_errors) } },
    })
}

/// Public market data, and the WebSocket.
fn market_paths() -> Value {
    let market_errors = ["400", "404", "503"];
    let instruments = json!({ "type": "object", "properties": {
        "instruments": { "type": "array", "items": schema_ref("Instrument") } } });
    let depth = param(
        "depth",
        "query",
        json!({ "type": "integer", "default": 50, "maximum": 1000 }),
        "levels per side",
    );
    let limit = |default: u32, maximum: u32, description: &str| {
        let schema = json!({ "type": "integer", "default": default, "maximum": maximum });
        param("limit", "query", schema, description)
    };
    json!({
        "/v1/instruments": { "get": { "summary": "Listed instruments",
            "responses": responses(&[("200", ok("instruments", instruments))], &["503"]) } },
        "/v1/markets/{symbol}/book": { "get": { "summary": "Aggregated order book, best first",
            "parameters": [symbol_param(), depth],
            "responses": responses(
                &[("200", ok("the book", schema_ref("Book")))], &market_errors) } },
        "/v1/markets/{symbol}/trades": { "get": { "summary": "Recent trades, newest first",
            "parameters": [symbol_param(), limit(100, 1000, "most trades returned")],
            "responses": responses(
                &[("200", ok("trades", schema_ref("Trades")))], &market_errors) } },
        "/v1/markets/{symbol}/candles": { "get": {
            "summary": "Candles, newest first (intervals without trades have none)",
            "parameters": candle_params(limit(300, 1500, "most candles returned")),
            "responses": responses(
                &[("200", ok("candles", schema_ref("Candles")))], &market_errors) } },
        "/v1/markets/{symbol}/status": { "get": {
            "summary": "Trading phase, indicative uncrossing during a call, last auction",
            "parameters": [symbol_param()],
            "responses": responses(
                &[("200", ok("the status", schema_ref("MarketStatus")))], &market_errors) } },
        "/v1/ws": { "get": {
            "summary": concat!(
                "WebSocket: authenticate, private order/fill stream, order entry ",
                "(see docs/server.md); public market-data channels (see docs/marketdata.md)"),
            "responses": { "101": { "description": "switching protocols" },
                "400": { "$ref": "#/components/responses/E400" } } } },
    })
}

fn candle_params(limit: Value) -> Value {
    json!([
        symbol_param(),
        param(
            "interval",
            "query",
            json!({ "enum": ["1m", "5m", "1h", "1d"], "default": "1m" }),
            "candle interval",
        ),
        param(
            "start",
            "query",
            json!({ "type": "integer" }),
            "candles starting at or after this time (ns since the Unix epoch)",
        ),
        param(
            "end",
            "query",
            json!({ "type": "integer" }),
            "candles starting before this time (ns)",
        ),
        limit,
    ])
}

fn paths() -> Value {
    [
        node_paths(),
        admin_instrument_paths(),
        admin_reference_price_paths(),
        admin_account_paths(),
        mmp_paths(),
        account_paths(),
        order_paths(),
        market_paths(),
    ]
    .into_iter()
    .fold(json!({}), merged)
}

/// docs/protocol.md's one decimal grammar: no leading zero, no bare point.
fn decimal_schema() -> Value {
    json!({ "type": "string", "pattern": "^-?(0|[1-9][0-9]*)(\\.[0-9]+)?$",
        "maxLength": 40, "example": "60000.5" })
}

/// OpenAPI 3.0 forbids an empty `required`: left out when nothing is.
fn object_schema(required: &[&str], properties: Value) -> Value {
    let mut object = json!({ "type": "object", "properties": properties });
    if !required.is_empty() {
        object["required"] = json!(required);
    }
    object
}

fn schemas() -> Value {
    [
        order_schemas(),
        account_schemas(),
        instrument_schemas(),
        market_schemas(),
    ]
    .into_iter()
    .fold(json!({}), merged)
}

/// Errors, orders, fills, and the order requests.
fn order_schemas() -> Value {
    let dec = decimal_schema();
    let (text, int) = (json!({ "type": "string" }), json!({ "type": "integer" }));
    let order_types = json!([
        "limit",
        "market",
        "stop",
        "stop_limit",
        "market_to_limit",
        "market_if_touched",
        "limit_if_touched",
        "midpoint"
    ]);
    let order_props = json!({
        "order_id": int, "client_order_id": text, "symbol": text,
        "side": { "enum": ["buy", "sell"] }, "type": { "enum": order_types },
        "price": { "type": "string", "nullable": true }, "qty": dec,
        "filled_qty": dec, "remaining_qty": dec, "tif": { "enum": ["gtc", "ioc", "fok"] },
        "status": { "enum": ["new", "partially_filled", "filled", "canceled", "expired"] },
        "created_ts": int, "updated_ts": int,
        "min_qty": { "type": "string", "description":
            "the minimum acceptable quantity the order was entered with; absent without one" },
        "hidden": { "type": "boolean", "description": "present, true, on a hidden order" },
    });
    let mut with_fills = order_props.clone();
    with_fills["fills"] = json!({ "type": "array", "items": schema_ref("Fill") });
    let order_required = [
        "order_id",
        "client_order_id",
        "symbol",
        "side",
        "price",
        "qty",
        "filled_qty",
        "status",
    ];
    json!({
        "Error": object_schema(&["code", "message"], json!({ "code": text, "message": text })),
        "Decimal": dec,
        "Order": object_schema(&order_required, order_props),
        "OrderWithFills": object_schema(&["order_id", "status", "fills"], with_fills),
        "Fill": object_schema(&["trade_id", "order_id", "price", "qty"], json!({
            "trade_id": int, "order_id": int, "symbol": text, "side": text, "price": dec,
            "qty": dec, "fee": dec, "liquidity": { "enum": ["maker", "taker"] }, "ts": int })),
        "PlaceRequest": object_schema(&["symbol", "side", "qty"], json!({
            "symbol": text, "side": { "enum": ["buy", "sell"] },
            "type": { "enum": order_types, "default": "limit" },
            "price": dec, "qty": dec, "min_qty": dec, "tif": { "enum": ["gtc", "ioc", "fok"] },
            "post_only": { "type": "boolean" },
            "hidden": { "type": "boolean", "description":
                "a limit order that may rest, never shown in market data; at least the \
                instrument's hidden_min_notional in value" },
            "stp": { "enum": ["cancel_newest", "cancel_oldest", "cancel_both", "decrement"] },
            "client_order_id": { "type": "string", "maxLength": 36 } })),
        "ReplaceRequest": object_schema(&[], json!({
            "price": dec, "qty": dec, "new_client_order_id": text, "stop_price": dec })),
    })
}

/// Transfers, balances and new accounts.
fn account_schemas() -> Value {
    let dec = decimal_schema();
    let (text, int) = (json!({ "type": "string" }), json!({ "type": "integer" }));
    let balance = object_schema(
        &["asset", "total", "available"],
        json!({ "asset": text, "total": dec, "available": dec }),
    );
    json!({
        "Transfer": object_schema(&["account_id", "asset", "amount"],
            json!({ "account_id": int, "asset": text, "amount": dec })),
        "AccountBalance": object_schema(&["account_id", "asset", "total", "available"],
            json!({ "account_id": int, "asset": text, "total": dec, "available": dec })),
        "Balances": object_schema(&["account_id", "balances"], json!({
            "account_id": int, "balances": { "type": "array", "items": balance } })),
        "NewAccount": object_schema(&["account_id", "api_key", "api_secret", "scopes"], json!({
            "account_id": int, "api_key": text, "api_secret": text,
            "scopes": { "type": "array", "items": text } })),
    })
}

fn phase_schema() -> Value {
    json!({
        "enum": exchange_types::Phase::ALL.iter().map(|p| p.as_str()).collect::<Vec<_>>(),
        "description": "the trading phase the core has the instrument in" })
}

fn auction_schema() -> Value {
    json!({ "enum": ["open", "close", "volatility", "reopen"] })
}

/// Instruments: their specification, listing, status and trading phase.
fn instrument_schemas() -> Value {
    let dec = decimal_schema();
    let (text, int) = (json!({ "type": "string" }), json!({ "type": "integer" }));
    let spec_required = [
        "symbol",
        "base",
        "quote",
        "tick_size",
        "lot_size",
        "maker_fee_bps",
        "taker_fee_bps",
    ];
    let indicative = json!({ "type": "object", "nullable": true,
        "description": "during a call, when something crosses",
        "properties": { "price": dec, "volume": dec,
            "imbalance_side": { "enum": ["buy", "sell"], "nullable": true },
            "imbalance_qty": dec } });
    let last_auction = json!({ "type": "object", "nullable": true,
        "properties": { "kind": auction_schema(), "price": dec, "volume": dec, "ts": int } });
    let trading_status = json!({ "enum": ["trading", "halted", "delisted"] });
    json!({
        "InstrumentSpec": object_schema(&spec_required, json!({
            "symbol": text, "base": text, "quote": text, "tick_size": dec, "lot_size": dec,
            "min_qty": dec, "max_qty": dec, "price_collar_pct": dec, "reference_price": dec,
            "maker_fee_bps": int, "taker_fee_bps": int, "hidden_min_notional": dec,
            "reference_price_rule": { "enum": ["limit_nearest", "reference"] },
            "phase": { "enum": [
                "closed", "pre_open", "continuous", "closing_call", "post_close", "halted"] } })),
        "ReferencePriceRequest": object_schema(&["price"], json!({ "price": dec })),
        "ReferencePriceChange": object_schema(&["symbol", "reference_price"],
            json!({ "symbol": text, "reference_price": dec })),
        "Instrument": object_schema(
            &["symbol", "base", "quote", "tick_size", "lot_size", "status"], json!({
            "symbol": text, "base": text, "quote": text, "tick_size": dec, "lot_size": dec,
            "status": trading_status,
            "reference_price": { "type": "string", "nullable": true },
            "hidden_min_notional": { "type": "string", "nullable": true,
                "description": "the smallest value of a hidden order; null: none taken" },
            "phase": phase_schema() })),
        "MarketStatus": object_schema(
            &["symbol", "sequence", "ts", "phase", "indicative", "last_auction",
                "reference_price"], json!({
            "symbol": text, "sequence": int, "ts": int, "phase": phase_schema(),
            "indicative": indicative, "last_auction": last_auction,
            "reference_price": { "type": "string", "nullable": true,
                "description": "the collar's centre and the last price the bands and \
                    auctions use; null before the listing named one or anything traded" } })),
        "StatusChange": object_schema(&["symbol", "status"],
            json!({ "symbol": text, "status": trading_status })),
    })
}

/// The book, candles and trades.
fn market_schemas() -> Value {
    let dec = decimal_schema();
    let (text, int) = (json!({ "type": "string" }), json!({ "type": "integer" }));
    let levels = json!({ "type": "array",
        "items": { "type": "array", "items": dec, "minItems": 2, "maxItems": 2 } });
    let candle = object_schema(
        &["start", "open", "high", "low", "close", "volume", "trades"],
        json!({ "start": int, "open": dec, "high": dec, "low": dec, "close": dec,
            "volume": dec, "trades": int }),
    );
    let trade = object_schema(
        &["trade_id", "price", "qty", "side", "ts"],
        json!({ "trade_id": int, "price": dec, "qty": dec,
            "side": { "enum": ["buy", "sell"], "description": "the aggressor's side" }, "ts": int,
            "auction": { "allOf": [auction_schema()],
                "description": concat!(
                    "the auction the trade executed in; ",
                    "absent in continuous trading") } }),
    );
    json!({
        "Book": object_schema(&["symbol", "sequence", "bids", "asks"], json!({
            "symbol": text, "sequence": int, "bids": levels, "asks": levels })),
        "Candles": object_schema(&["symbol", "interval", "candles"], json!({
            "symbol": text, "interval": text, "candles": { "type": "array", "items": candle } })),
        "Trades": object_schema(&["symbol", "trades"], json!({
            "symbol": text, "trades": { "type": "array", "items": trade } })),
    })
}

fn error_responses() -> Value {
    let error = |description: &str| ok(description, schema_ref("Error"));
    let mut limited =
        error("rate limit of the API key exceeded (code rate_limited); see Retry-After");
    limited["headers"] =
        json!({ "Retry-After": { "schema": { "type": "integer" }, "description": "seconds" } });
    json!({
        "E400": error(concat!(
            "malformed request: malformed_json, unknown_field, missing_field, duplicate_field, ",
            "invalid_type, invalid_value, invalid_decimal, invalid_path, invalid_query")),
        "E401": error(concat!(
            "missing_credentials, invalid_api_key, invalid_signature, invalid_timestamp, ",
            "stale_timestamp, key_expired, missing_token, invalid_token")),
        "E403": error(concat!(
            "insufficient_scope (the key lacks the route's scope), address_not_allowed ",
            "(the client's address is outside the key's allow-list)")),
        "E404": error(
            "unknown_order, unknown_instrument, unknown_account, unknown_api_key, not_found"),
        "E409": error("duplicate_client_order_id, too_many_keys, duplicate_api_key"),
        "E413": error("body_too_large"),
        "E422": error(concat!(
            "a business reject of the core; code is its reason ",
            "(insufficient_funds, price_not_on_tick, ...)")),
        "E429": limited,
        "E503": error("overloaded, unavailable or not_ready; see Retry-After"),
    })
}

fn key_id_param() -> Value {
    param(
        "key_id",
        "path",
        json!({ "type": "string" }),
        "the API key's id",
    )
}

fn created_key() -> Value {
    ok(
        "the key; an HMAC key's api_secret is shown only here",
        schema_ref("ApiKey"),
    )
}

fn key_list() -> Value {
    ok(
        "the account's keys (no secrets)",
        json!({ "type": "object", "properties": { "account_id": { "type": "integer" },
            "keys": { "type": "array", "items": schema_ref("ApiKey") } } }),
    )
}

fn revoked_key() -> Value {
    ok(
        "revoked: refused from this answer on, on every node",
        json!({ "type": "object", "properties": { "api_key": { "type": "string" },
            "account_id": { "type": "integer" }, "revoked": { "type": "boolean" } } }),
    )
}

fn rotate_body() -> Value {
    json!({ "required": false, "content": content(json!({ "type": "object",
        "properties": { "ed25519_public_key": { "type": "string" } } })) })
}

const KEY_ERRORS: &[&str] = &["400", "401", "403", "404", "409", "413", "429", "503"];

/// The API key routes (docs/server.md, "API keys").
fn key_paths() -> Value {
    merged(admin_key_paths(), own_key_paths())
}

/// The operator's API key routes.
fn admin_key_paths() -> Value {
    let account_id = param("account_id", "path", id_schema(), "account id");
    json!({
        "/admin/accounts/{account_id}/keys": {
            "post": { "summary": "Create an API key for the account", "security": admin(),
                "parameters": [account_id.clone()], "requestBody": body(schema_ref("KeyRequest")),
                "responses": responses(&[("201", created_key())], KEY_ERRORS) },
            "get": { "summary": "The account's API keys", "security": admin(),
                "parameters": [account_id],
                "responses": responses(&[("200", key_list())], &["400", "401", "404", "503"]) } },
        "/admin/keys/{key_id}": { "delete": { "summary": "Revoke an API key", "security": admin(),
            "parameters": [key_id_param()],
            "responses": responses(&[("200", revoked_key())], &["401", "404", "503"]) } },
        "/admin/keys/{key_id}/rotate": { "post": {
            "summary": concat!(
                "Replace an API key by a new id and secret (or Ed25519 public key) ",
                "with the same scopes, label, expiry and allow-list"),
            "security": admin(),
            "parameters": [key_id_param()], "requestBody": rotate_body(),
            "responses": responses(&[("201", created_key())], KEY_ERRORS) } },
    })
}

/// The signed routes by which an account manages its own keys, and withdraws.
fn own_key_paths() -> Value {
    let withdrawal_body = json!({ "type": "object", "required": ["asset", "amount"],
        "properties": { "asset": { "type": "string" }, "amount": { "type": "string" } } });
    json!({
        "/v1/keys": {
            "post": {
                "summary": concat!(
                    "Create an API key for the caller's account ",
                    "(scope transfer; no scope the caller lacks)"),
                "security": signed(),
                "requestBody": body(schema_ref("KeyRequest")),
                "responses": responses(&[("201", created_key())], KEY_ERRORS) },
            "get": { "summary": "The caller's account's API keys (scope read)",
                "security": signed(),
                "responses": responses(&[("200", key_list())], &["401", "403", "429", "503"]) } },
        "/v1/keys/{key_id}": { "delete": {
            "summary": "Revoke one of the account's API keys (scope transfer)",
            "security": signed(),
            "parameters": [key_id_param()],
            "responses": responses(&[("200", revoked_key())], KEY_ERRORS) } },
        "/v1/keys/{key_id}/rotate": { "post": {
            "summary": "Rotate one of the account's API keys (scope transfer)",
            "security": signed(),
            "parameters": [key_id_param()], "requestBody": rotate_body(),
            "responses": responses(&[("201", created_key())], KEY_ERRORS) } },
        "/v1/withdrawals": { "post": {
            "summary": "Debit the caller's account (scope transfer)", "security": signed(),
            "requestBody": body(withdrawal_body),
            "responses": responses(
                &[("200", ok("balance after", schema_ref("AccountBalance")))],
                &["400", "401", "403", "413", "422", "429", "503"]) } },
    })
}

fn key_schemas() -> Value {
    let text = json!({ "type": "string" });
    let texts = json!({ "type": "array", "items": { "type": "string" } });
    let scopes = json!({ "type": "array", "items": { "enum": ["read", "trade", "transfer"] } });
    json!({
        "KeyRequest": { "type": "object", "required": ["scopes"], "properties": {
            "scopes": scopes, "label": text,
            "expires_in_secs": { "type": "integer", "minimum": 1 },
            "allow": texts,
            "ed25519_public_key": { "type": "string",
                "description": "makes an Ed25519 key: 32 bytes, hex or base64" } } },
        "ApiKey": { "type": "object", "required": ["api_key", "account_id", "type", "scopes"],
            "properties": {
            "api_key": text, "account_id": { "type": "integer" },
            "type": { "enum": ["hmac", "ed25519"] },
            "label": text, "scopes": scopes,
            "created_at": { "type": "integer", "description": "Unix nanoseconds (log time)" },
            "expires_at": { "type": "integer", "nullable": true,
                "description": "Unix nanoseconds" },
            "allow": texts, "api_secret": text, "ed25519_public_key": text } },
    })
}

fn merged(mut into: Value, more: Value) -> Value {
    if let (Some(into), Value::Object(more)) = (into.as_object_mut(), more) {
        into.extend(more);
    }
    into
}

fn security_schemes() -> Value {
    json!({
        "adminToken": { "type": "http", "scheme": "bearer" },
        "apiKey": { "type": "apiKey", "in": "header", "name": "EX-ACCESS-KEY" },
        "apiTimestamp": { "type": "apiKey", "in": "header", "name": "EX-ACCESS-TIMESTAMP",
            "description": concat!(
                "Unix milliseconds, within recv_window_ms of server time; ",
                "each signed request is accepted once") },
        "apiSign": { "type": "apiKey", "in": "header", "name": "EX-ACCESS-SIGN",
            "description": concat!(
                "over timestamp + \"\\n\" + METHOD + \"\\n\" + path?query + \"\\n\" + body: ",
                "lowercase hex HMAC-SHA256 with the API secret, ",
                "or for an Ed25519 key the signature in hex or base64") },
    })
}

/// The whole document.
pub fn document() -> Value {
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "Exchange API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": concat!(
                "REST and WebSocket gateway of `exchange serve`. Prices, quantities and amounts ",
                "are decimal strings. See docs/server.md."),
        },
        "paths": merged(paths(), key_paths()),
        "components": {
            "schemas": merged(schemas(), key_schemas()),
            "responses": error_responses(),
            "securitySchemes": security_schemes(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `$ref` must point at something the document defines.
    fn check_refs(value: &Value, root: &Value) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(target)) = map.get("$ref") {
                    let pointer = target.trim_start_matches('#');
                    assert!(root.pointer(pointer).is_some(), "dangling {target}");
                }
                map.values().for_each(|v| check_refs(v, root));
            }
            Value::Array(items) => items.iter().for_each(|v| check_refs(v, root)),
            _ => {}
        }
    }

    #[test]
    fn documents_every_route_and_resolves_every_ref() {
        let doc = document();
        check_refs(&doc, &doc);
        let source = include_str!("lib.rs");
        // The first string literal after each `.route(`, however formatted.
        let routes: Vec<&str> = source
            .split(".route(")
            .skip(1)
            .filter_map(|call| call.trim_start().strip_prefix('"'))
            .filter_map(|call| call.split('"').next())
            .collect();
        assert!(routes.len() >= 20, "{routes:?}");
        let docs = include_str!("../../../docs/server.md");
        for route in routes {
            assert!(
                doc["paths"].get(route).is_some(),
                "{route} is missing from openapi.json"
            );
            assert!(
                docs.contains(route),
                "{route} is missing from docs/server.md"
            );
        }
    }
}
