//! `exchange probe URL`: one HTTP GET, exit 0 on a 2xx answer. It is the
//! health and readiness check of a container whose image holds nothing
//! but the binary (no shell, no curl): `HEALTHCHECK CMD ["exchange",
//! "probe", "http://127.0.0.1:8080/ready"]` (deploy/image).

use std::time::Duration;

use anyhow::{anyhow, bail, Context};

use crate::cluster::http::{http_send_within, parse_addr, Timeouts};

#[derive(clap::Args)]
pub struct ProbeArgs {
    /// `http://HOST:PORT/PATH`, e.g. `http://127.0.0.1:8080/ready`.
    url: String,
    /// How long to wait to connect, then for the answer, in milliseconds.
    #[arg(long, default_value_t = 2000)]
    timeout_ms: u64,
    /// Pass a `503` that names an alarm (`{"status": "alarm", ...}`) too:
    /// for a liveness check of `/health`, since restarting a replica that
    /// waits for disk space frees none (docs/replication.md).
    #[arg(long)]
    alarm_ok: bool,
}

pub fn run(args: &ProbeArgs) -> anyhow::Result<()> {
    let timeout = Duration::from_millis(args.timeout_ms);
    let status = probe(&args.url, timeout, args.alarm_ok)?;
    println!("{status}");
    Ok(())
}

/// The status line's code and first words of the body on a 2xx answer
/// (or, with `alarm_ok`, a 503 naming an alarm); an error naming the URL
/// and why otherwise (refused, timed out, another code with the body's
/// first line).
pub fn probe(url: &str, timeout: Duration, alarm_ok: bool) -> anyhow::Result<String> {
    let addr = parse_addr(url)?;
    let path = path_of(url)?;
    let timeouts = Timeouts {
        connect: timeout,
        io: timeout,
    };
    let (status, body) = http_send_within(addr, ("GET", path), None, "", timeouts)
        .with_context(|| format!("GET {url}"))?;
    let first_line = String::from_utf8_lossy(&body)
        .lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(200)
        .collect::<String>();
    let passes = (200..300).contains(&status) || (alarm_ok && names_an_alarm(status, &body));
    if !passes {
        bail!("GET {url}: {status} {first_line}");
    }
    Ok(format!("{status} {first_line}").trim_end().to_string())
}

fn names_an_alarm(status: u16, body: &[u8]) -> bool {
    status == 503
        && serde_json::from_slice::<serde_json::Value>(body)
            .is_ok_and(|answer| answer["status"] == "alarm")
}

/// The path and query of an `http://` URL (`/` when it has none).
fn path_of(url: &str) -> anyhow::Result<&str> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| anyhow!("{url}: only http:// URLs"))?;
    Ok(rest.find('/').map_or("/", |at| &rest[at..]))
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;

    use super::*;

    /// A listener that answers one request with `answer` and returns the
    /// request line it read.
    fn answer_once(answer: &'static str) -> (String, std::thread::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/ready", listener.local_addr().expect("addr"));
        let server = std::thread::spawn(move || {
            let (mut socket, _) = listener.accept().expect("accept");
            // The whole request head, which may come in several writes: a
            // socket closed with unread bytes resets the connection, and
            // the client then reads an error instead of the answer.
            let mut request = Vec::new();
            let mut chunk = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                let read = socket.read(&mut chunk).expect("read");
                if read == 0 {
                    break;
                }
                request.extend_from_slice(&chunk[..read]);
            }
            socket.write_all(answer.as_bytes()).expect("write");
            let text = String::from_utf8_lossy(&request).to_string();
            text.lines().next().unwrap_or_default().to_string()
        });
        (url, server)
    }

    #[test]
    fn a_2xx_answer_passes_and_the_path_is_asked() {
        let (url, server) =
            answer_once("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nready");
        let outcome = probe(&url, Duration::from_secs(5), false).expect("a 200 passes");
        assert_eq!(outcome, "200 ready");
        assert_eq!(server.join().expect("server"), "GET /ready HTTP/1.1");
    }

    #[test]
    fn a_503_fails_with_its_code_and_body() {
        let (url, server) = answer_once(
            "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 10\r\n\
             Connection: close\r\n\r\nrecovering",
        );
        let error = probe(&url, Duration::from_secs(5), false).expect_err("a 503 fails");
        assert_eq!(error.to_string(), format!("GET {url}: 503 recovering"));
        server.join().expect("server");
    }

    #[test]
    fn an_alarm_passes_only_when_asked() {
        let alarm = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 39\r\n\
                     Connection: close\r\n\r\n{\"status\":\"alarm\",\"alarms\":[\"nospace\"]}";
        let (url, server) = answer_once(alarm);
        assert!(probe(&url, Duration::from_secs(5), false).is_err());
        server.join().expect("server");
        let (url, server) = answer_once(alarm);
        let outcome = probe(&url, Duration::from_secs(5), true).expect("an alarm passes");
        assert!(outcome.starts_with("503 "), "{outcome}");
        server.join().expect("server");
        let (url, server) = answer_once(
            "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 10\r\n\
             Connection: close\r\n\r\nrecovering",
        );
        assert!(probe(&url, Duration::from_secs(5), true).is_err());
        server.join().expect("server");
    }

    #[test]
    fn a_closed_port_and_a_silent_listener_fail() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let silent = format!("http://{}/ready", listener.local_addr().expect("addr"));
        // Accepted by the kernel's backlog, never answered.
        assert!(probe(&silent, Duration::from_millis(200), false).is_err());
        drop(listener);
        assert!(probe(&silent, Duration::from_millis(200), false).is_err());
        assert!(probe("https://127.0.0.1:1/", Duration::from_millis(200), false).is_err());
    }

    #[test]
    fn the_path_defaults_to_the_root() {
        assert_eq!(path_of("http://127.0.0.1:8080").ok(), Some("/"));
        assert_eq!(path_of("http://h:1/ready?x=1").ok(), Some("/ready?x=1"));
    }
}
