//! For tests (here and in the binary's integration tests): the same test
//! runs on SQLite and on the PostgreSQL server named by
//! `EXCHANGE_TEST_PG_URL`, each run in a fresh schema of its own.
//!
//! Without that variable, or with the server unreachable, PostgreSQL tests
//! say so loudly and pass, so the README's test command works on a fresh
//! machine; with `CI=true` they fail instead, so CI cannot silently skip.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::Target;

pub const PG_URL_VAR: &str = "EXCHANGE_TEST_PG_URL";

fn skip(test: &str, why: &str) -> Option<Target> {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let message = format!(
        "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
         !!! {test}: PostgreSQL NOT TESTED: {why}\n\
         !!! set {PG_URL_VAR}=postgres://... (.ci/run starts a server)\n\
         !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n"
    );
    assert!(!ci, "{message}CI=true: the PostgreSQL tests must run");
    // Straight to the process's stderr: the test harness captures
    // `eprintln!` of passing tests, and this must be seen.
    let _ = std::io::Write::write_all(&mut std::io::stderr(), message.as_bytes());
    None
}

/// A fresh, empty schema on the test server, as a target whose
/// connections use it; `None` (after the loud message) when there is no
/// server to test against.
pub fn fresh_postgres(test: &str) -> Option<Target> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let Some(url) = std::env::var(PG_URL_VAR).ok().filter(|u| !u.is_empty()) else {
        return skip(test, &format!("{PG_URL_VAR} is not set"));
    };
    let mut admin = match postgres::Client::connect(&url, postgres::NoTls) {
        Ok(client) => client,
        Err(error) => return skip(test, &format!("cannot connect to {url}: {error}")),
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let schema = format!(
        "t_{}_{}_{}_{nanos}",
        test.chars()
            .map(|c| if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            })
            .take(30)
            .collect::<String>(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    if let Err(error) = admin.batch_execute(&format!("CREATE SCHEMA {schema}")) {
        panic!("{test}: cannot create schema {schema} on {url}: {error}");
    }
    let separator = if url.contains('?') { '&' } else { '?' };
    Some(Target::Postgres(format!(
        "{url}{separator}options=-c%20search_path%3D{schema}"
    )))
}
