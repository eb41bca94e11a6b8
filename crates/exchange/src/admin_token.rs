//! The admin token of a server this binary talks to, as an operator's
//! command takes it: from a file or the environment, never the command
//! line, where `ps` would show it to every user of the machine.

use std::path::Path;

use anyhow::Context;

/// The token in `file` (trimmed; an empty file is an error), else
/// `EXCHANGE_ADMIN_TOKEN`, else none.
pub fn from_file_or_env(file: Option<&Path>) -> anyhow::Result<Option<String>> {
    if let Some(path) = file {
        let token = std::fs::read_to_string(path)
            .with_context(|| format!("admin token file {}", path.display()))?;
        let token = token.trim();
        anyhow::ensure!(
            !token.is_empty(),
            "admin token file {} is empty",
            path.display()
        );
        return Ok(Some(token.to_owned()));
    }
    Ok(std::env::var("EXCHANGE_ADMIN_TOKEN")
        .ok()
        .filter(|t| !t.is_empty()))
}
