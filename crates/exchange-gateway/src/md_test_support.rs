//! WebSocket clients of the gateway for the market-data tests (the node,
//! workload and book model are `exchange_marketdata_service::testkit`).

use std::net::SocketAddr;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message as WsMessage;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use exchange_marketdata_service::MarketDataService;
use exchange_node::config::Config;
use exchange_node::Handle;

use crate::{router, AppState};

pub(super) use exchange_marketdata_service::testkit::*;

pub(super) async fn serve(app: AppState) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, router(app)).await });
    addr
}

pub(super) type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub(super) async fn ws_subscribe(addr: SocketAddr, channel: &str) -> Ws {
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/v1/ws"))
        .await
        .expect("connect");
    let request =
        json!({ "type": "subscribe", "channel": channel, "symbols": SYMBOLS, "request_id": 1 });
    ws.send(WsMessage::text(request.to_string()))
        .await
        .expect("send");
    ws
}

pub(super) async fn next_json(ws: &mut Ws) -> Option<Value> {
    loop {
        match tokio::time::timeout(DEADLINE, ws.next())
            .await
            .expect("a message in time")?
        {
            Ok(WsMessage::Text(text)) => return serde_json::from_str(text.as_str()).ok(),
            Ok(WsMessage::Close(_)) | Err(_) => return None,
            Ok(_) => continue,
        }
    }
}

/// A ready gateway state whose public channels are `service`'s.
pub(super) fn app(handle: &Handle, service: &MarketDataService) -> AppState {
    AppState::new(
        handle.clone(),
        Config::default(),
        crate::config::GatewayConfig::default(),
        "t".into(),
        Arc::new(AtomicBool::new(true)),
    )
    .with_market_data(service.market.clone())
}
