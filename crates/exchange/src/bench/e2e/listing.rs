//! The instrument the flow trades, as the server lists it.
//!
//! A cluster just started lists its instruments a moment after it elects
//! a leader (the listing is a command like any other), so a run started
//! right after `cluster up` may ask before it is applied: the listing is
//! asked for again until the instrument appears or [`LISTING_WAIT`] has
//! passed.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde_json::Value;

use super::flow::Market;
use super::server;

/// How long a run waits for its instrument to be listed.
pub(super) const LISTING_WAIT: Duration = Duration::from_secs(15);
const ASK_EVERY: Duration = Duration::from_millis(100);

/// The flow's market: the instrument's reference price, tick and lot.
pub(super) async fn market(
    addr: SocketAddr,
    symbol: &str,
    wait: Duration,
) -> anyhow::Result<Market> {
    let deadline = Instant::now() + wait;
    let found = loop {
        match listed(addr, symbol).await? {
            Some(found) => break found,
            None if Instant::now() < deadline => tokio::time::sleep(ASK_EVERY).await,
            None => bail!(
                "the server lists no {symbol} (asked for {:.1} s)",
                wait.as_secs_f64()
            ),
        }
    };
    let field = |name: &str| {
        found[name]
            .as_str()
            .with_context(|| format!("{symbol} has no {name}"))
    };
    Market::new(
        symbol,
        field("reference_price")?,
        field("tick_size")?,
        field("lot_size")?,
    )
}

/// The listing of `symbol`, if the server lists it yet.
async fn listed(addr: SocketAddr, symbol: &str) -> anyhow::Result<Option<Value>> {
    let (status, text) = server::http(addr, "GET", "/v1/instruments", None, None).await?;
    if status != 200 {
        bail!("GET /v1/instruments: {status} {text}");
    }
    let mut listing: Value = serde_json::from_str(&text)?;
    let found = listing["instruments"]
        .as_array_mut()
        .and_then(|all| all.iter_mut().find(|i| i["symbol"] == symbol))
        .map(Value::take);
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// A server whose listing gains BTC-USD from the `listed_from`th
    /// request on.
    async fn listing_server(listed_from: usize) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        tokio::spawn(async move {
            for asked in 1.. {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let mut request = [0u8; 1024];
                let _ = socket.read(&mut request).await;
                let instruments = if asked >= listed_from {
                    json!([{"symbol": "BTC-USD", "reference_price": "50000",
                            "tick_size": "0.01", "lot_size": "0.0001"}])
                } else {
                    json!([])
                };
                let body = json!({ "instruments": instruments }).to_string();
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
            }
        });
        addr
    }

    #[tokio::test]
    async fn a_listing_that_comes_late_is_waited_for() {
        let addr = listing_server(4).await;
        let started = Instant::now();
        let market = market(addr, "BTC-USD", Duration::from_secs(5)).await;
        assert!(market.is_ok(), "{:?}", market.err());
        assert!(
            started.elapsed() >= 3 * ASK_EVERY,
            "asked three times before"
        );
    }

    #[tokio::test]
    async fn a_listing_that_never_comes_is_an_error_naming_the_symbol() {
        let addr = listing_server(usize::MAX).await;
        let error = market(addr, "BTC-USD", Duration::from_millis(300))
            .await
            .expect_err("never listed");
        assert!(error.to_string().contains("lists no BTC-USD"), "{error}");
    }
}
