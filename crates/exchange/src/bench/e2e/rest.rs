//! A REST client of `bench e2e`: one keep-alive HTTP/1.1 connection with
//! one signed request at a time (HTTP/1.1 has no usable pipelining), so a
//! client's `inflight` is its number of connections.

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::flow::{Flow, Market};
use super::record::{error_code, Outcome, Recorder, Totals};
use super::server::Credential;
use super::{Pacing, Schedule};

pub async fn connect(addr: std::net::SocketAddr) -> anyhow::Result<TcpStream> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// One connection's run.
pub struct Driver {
    pub market: Arc<Market>,
    pub flow: Flow,
    pub credential: Credential,
    pub pacing: Pacing,
    pub recorder: Recorder,
}

/// One response read off a keep-alive connection.
pub(in crate::bench) struct Response {
    pub status: u16,
    /// Where the body starts and ends in the read buffer.
    pub body: std::ops::Range<usize>,
    /// Bytes of the buffer this response used.
    pub used: usize,
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A complete response at the front of `buf`, if it has arrived.
pub(in crate::bench) fn parse(buf: &[u8]) -> anyhow::Result<Option<Response>> {
    let Some(head_end) = find(buf, b"\r\n\r\n") else {
        return Ok(None);
    };
    let head = std::str::from_utf8(&buf[..head_end]).context("response headers are not UTF-8")?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .context("no status line")?;
    let length = head
        .split("\r\n")
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse::<usize>().ok())
        .with_context(|| format!("a response without Content-Length: {head}"))?;
    let start = head_end + 4;
    if buf.len() < start + length {
        return Ok(None);
    }
    Ok(Some(Response {
        status,
        body: start..start + length,
        used: start + length,
    }))
}

impl Driver {
    pub async fn run(mut self, mut stream: TcpStream) -> anyhow::Result<Totals> {
        let mut schedule = Schedule::new(&self.pacing);
        let (mut body, mut request, mut buf) =
            (String::new(), Vec::new(), Vec::with_capacity(4096));
        let mut clock = (0u64, String::new());
        loop {
            let now = Instant::now();
            if now >= self.pacing.stop {
                break;
            }
            let Some(order_due) = schedule.take(now) else {
                tokio::time::sleep_until(schedule.next().min(self.pacing.stop).into()).await;
                continue;
            };
            let action = self.flow.next_action();
            let (method, path) = self.flow.rest_request(&self.market, &action, &mut body);
            // Every request of the flow differs (its client order id), so the
            // replay guard never sees two alike in one millisecond.
            let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis() as u64;
            if clock.0 != now {
                clock = (now, now.to_string());
            }
            self.signed_head(method, &path, &body, &clock.1, &mut request);
            request.extend_from_slice(body.as_bytes());
            let sent = Instant::now();
            stream.write_all(&request).await?;
            let response = loop {
                if let Some(response) = parse(&buf)? {
                    break response;
                }
                if stream.read_buf(&mut buf).await? == 0 {
                    bail!("the server closed a REST connection");
                }
            };
            let outcome = match response.status {
                200 | 201 => Outcome::Ok,
                status => {
                    let text = std::str::from_utf8(&buf[response.body.clone()]).unwrap_or_default();
                    Outcome::Refused {
                        code: error_code(text),
                        status,
                    }
                }
            };
            self.recorder.record_paced(
                order_due,
                sent,
                Instant::now(),
                Flow::is_place(&action),
                outcome,
            );
            buf.drain(..response.used);
        }
        Ok(self.recorder.totals)
    }

    /// The head of a signed request for `body`, in `request`.
    #[inline]
    fn signed_head(
        &self,
        method: &str,
        path: &str,
        body: &str,
        timestamp: &str,
        request: &mut Vec<u8>,
    ) {
        let signature = exchange_gateway::auth::sign(
            &self.credential.secret,
            timestamp,
            method,
            path,
            body.as_bytes(),
        );
        request.clear();
        request.extend_from_slice(
            format!(
                "{method} {path} HTTP/1.1\r\nHost: bench\r\n\
                 Content-Type: application/json\r\nContent-Length: {}\r\n\
                 EX-ACCESS-KEY: {}\r\nEX-ACCESS-TIMESTAMP: {}\r\n\
                 EX-ACCESS-SIGN: {signature}\r\n\r\n",
                body.len(),
                self.credential.key,
                timestamp
            )
            .as_bytes(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_response_only_once_it_is_whole() {
        let raw = b"HTTP/1.1 422 Unprocessable Entity\r\ncontent-type: application/json\r\n\
            content-length: 9\r\n\r\n{\"a\":12}\nHTTP/1.1";
        assert!(parse(&raw[..40]).unwrap().is_none());
        assert!(parse(&raw[..raw.len() - 12]).unwrap().is_none());
        let response = parse(raw).unwrap().expect("a whole response");
        assert_eq!(response.status, 422);
        assert_eq!(&raw[response.body.clone()], b"{\"a\":12}\n");
        assert_eq!(&raw[response.used..], b"HTTP/1.1");
        assert!(parse(b"HTTP/1.1 200 OK\r\n\r\n").is_err());
    }
}
