//! The few HTTP/1.1 requests the cluster commands make, over a plain
//! socket (one connection each, `Connection: close`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::anyhow;

pub fn parse_addr(url: &str) -> anyhow::Result<SocketAddr> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| anyhow!("{url}: only http:// URLs"))?;
    let host = rest.split('/').next().unwrap_or(rest);
    std::net::ToSocketAddrs::to_socket_addrs(host)?
        .next()
        .ok_or_else(|| anyhow!("{url}: no address"))
}

pub fn http_get(
    addr: SocketAddr,
    path: &str,
    token: Option<&str>,
) -> anyhow::Result<(u16, Vec<u8>)> {
    http_send(addr, "GET", path, token, "")
}

/// A minimal HTTP/1.1 request (one connection, `Connection: close`).
pub fn http_send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> anyhow::Result<(u16, Vec<u8>)> {
    let timeouts = Timeouts {
        connect: Duration::from_secs(2),
        io: Duration::from_secs(10),
    };
    http_send_within(addr, (method, path), token, body, timeouts)
}

/// How long a request may wait to connect, and then for each read or write.
#[derive(Clone, Copy, Debug)]
pub struct Timeouts {
    pub connect: Duration,
    pub io: Duration,
}

/// As [`http_send`], within `timeouts`.
pub fn http_send_within(
    addr: SocketAddr,
    (method, path): (&str, &str),
    token: Option<&str>,
    body: &str,
    timeouts: Timeouts,
) -> anyhow::Result<(u16, Vec<u8>)> {
    let mut stream = TcpStream::connect_timeout(&addr, timeouts.connect)?;
    stream.set_read_timeout(Some(timeouts.io))?;
    stream.set_write_timeout(Some(timeouts.io))?;
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let content = if body.is_empty() {
        String::new()
    } else {
        format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        )
    };
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}{content}Connection: close\r\n\r\n{body}"
    )?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let head_end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| anyhow!("malformed HTTP answer"))?;
    let head = String::from_utf8_lossy(&raw[..head_end]).to_string();
    let status: u16 = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow!("malformed status line"))?;
    let mut body = raw[head_end + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body)?;
    }
    Ok((status, body))
}

fn dechunk(mut body: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = body
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or_else(|| anyhow!("bad chunk"))?;
        let size = usize::from_str_radix(std::str::from_utf8(&body[..line_end])?.trim(), 16)?;
        body = &body[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        out.extend_from_slice(body.get(..size).ok_or_else(|| anyhow!("short chunk"))?);
        body = body.get(size + 2..).ok_or_else(|| anyhow!("short chunk"))?;
    }
}
