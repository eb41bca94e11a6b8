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
    let Some(url) = std::env::var(PG_URL_VAR).ok().filter(|u| !u.is_empty()) else {
        return skip(test, &format!("{PG_URL_VAR} is not set"));
    };
    match fresh_schema(&url, test) {
        Ok(target) => Some(target),
        Err(FreshSchemaError::Connect(error)) => {
            skip(test, &format!("cannot connect to {url}: {error}"))
        }
        Err(FreshSchemaError::Create(schema, error)) => {
            panic!("{test}: cannot create schema {schema} on {url}: {error}")
        }
    }
}

/// Why [`fresh_schema`] gave no schema.
#[derive(Debug, thiserror::Error)]
pub enum FreshSchemaError {
    #[error("cannot connect: {0}")]
    Connect(postgres::Error),
    /// The schema's name, and why it could not be created.
    #[error("cannot create schema {0}: {1}")]
    Create(String, postgres::Error),
}

/// A fresh, empty schema named after `name` on the server at `url`, as a
/// target whose connections use it (for the tests and the throughput
/// example, whose every run must start from an empty store).
pub fn fresh_schema(url: &str, name: &str) -> Result<Target, FreshSchemaError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut admin =
        postgres::Client::connect(url, postgres::NoTls).map_err(FreshSchemaError::Connect)?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let schema = format!(
        "t_{}_{}_{}_{nanos}",
        name.chars()
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
        return Err(FreshSchemaError::Create(schema, error));
    }
    let separator = if url.contains('?') { '&' } else { '?' };
    Ok(Target::Postgres(format!(
        "{url}{separator}options=-c%20search_path%3D{schema}"
    )))
}
