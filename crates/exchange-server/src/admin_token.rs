//! The admin token `exchange serve` accepts: from the configured file, the
//! environment, or generated once and kept (mode 0600) in the data
//! directory. Never from the command line or the configuration itself,
//! and never printed.
//!
//! The token opens every admin route (accounts, deposits, suspensions,
//! keys of any account), so it is held to the rules of the master key: a
//! file group or others may read is refused, and so is a token short
//! enough to guess.

use std::io::Write;
use std::path::Path;

use exchange_node::config::Config;
use exchange_node::master_key::exposed_mode;
use exchange_node::random_hex;

use crate::ServerError;

/// The environment variable that gives the token.
pub const ADMIN_TOKEN_ENV: &str = "EXCHANGE_ADMIN_TOKEN";
/// Fewest bytes a token may have: 256 bits of a random byte string, 128
/// of hex digits, beyond any online guessing.
pub const MIN_ADMIN_TOKEN_LEN: usize = 32;
/// Random bytes of a generated token (written as twice as many hex digits).
const GENERATED_TOKEN_BYTES: usize = 24;

fn file_error(path: &Path, problem: impl Into<String>) -> ServerError {
    ServerError::AdminToken {
        path: path.to_path_buf(),
        problem: problem.into(),
    }
}

fn too_short(len: usize) -> String {
    format!(
        "the token is {len} bytes; it needs at least {MIN_ADMIN_TOKEN_LEN} \
         (e.g. `openssl rand -hex {GENERATED_TOKEN_BYTES}`)"
    )
}

/// The token in `path`: private to its owner, not empty, long enough.
fn read_file(path: &Path) -> Result<String, ServerError> {
    let read = std::fs::read_to_string(path).map_err(|e| file_error(path, e.to_string()))?;
    let exposed = exposed_mode(path).map_err(|e| file_error(path, e.to_string()))?;
    if let Some(mode) = exposed {
        return Err(file_error(
            path,
            format!(
                "other users may read it (mode {mode:o}); make it private: chmod 600 {}",
                path.display()
            ),
        ));
    }
    let token = read.trim();
    if token.is_empty() {
        return Err(file_error(path, "the file is empty"));
    }
    if token.len() < MIN_ADMIN_TOKEN_LEN {
        return Err(file_error(path, too_short(token.len())));
    }
    Ok(token.to_string())
}

/// The admin token, and whether it was generated now.
pub fn admin_token(config: &Config) -> Result<(String, bool), ServerError> {
    if let Some(path) = &config.admin_token_file {
        return Ok((read_file(path)?, false));
    }
    if let Some(token) = std::env::var(ADMIN_TOKEN_ENV)
        .ok()
        .filter(|t| !t.is_empty())
    {
        if token.len() < MIN_ADMIN_TOKEN_LEN {
            return Err(ServerError::AdminTokenEnv(too_short(token.len())));
        }
        return Ok((token, false));
    }
    let path = config.data_dir.join("admin_token");
    // An empty file is what a start that stopped before writing the token
    // leaves: it holds nothing to protect, so a new token replaces it.
    let kept = std::fs::read_to_string(&path).is_ok_and(|t| !t.trim().is_empty());
    if kept {
        return Ok((read_file(&path)?, false));
    }
    Ok((generate(&config.data_dir, &path)?, true))
}

/// A new random token in `path`, created mode 0600 so that it is never
/// readable by others, even for a moment.
fn generate(data_dir: &Path, path: &Path) -> Result<String, ServerError> {
    std::fs::create_dir_all(data_dir)?;
    let token = random_hex(GENERATED_TOKEN_BYTES);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    #[cfg(unix)]
    {
        // An existing empty file keeps its mode through `truncate`.
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    file.write_all(token.as_bytes())?;
    file.sync_all()?;
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn config_with(file: Option<PathBuf>, data_dir: &Path) -> Config {
        Config {
            admin_token_file: file,
            data_dir: data_dir.to_path_buf(),
            ..Config::default()
        }
    }

    #[cfg(unix)]
    fn write_mode(path: &Path, text: &str, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn token_files_must_be_private_and_long_enough() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        let good = "a".repeat(MIN_ADMIN_TOKEN_LEN);
        write_mode(&file, &format!("{good}\n"), 0o600);
        let config = config_with(Some(file.clone()), dir.path());
        assert_eq!(admin_token(&config).unwrap(), (good.clone(), false));
        // Others may read it: refused whoever owns it (root's file may be
        // group-readable, no more).
        write_mode(&file, &good, 0o644);
        let exposed = admin_token(&config).unwrap_err().to_string();
        assert!(
            exposed.contains("chmod 600") && exposed.contains("644"),
            "{exposed}"
        );
        write_mode(&file, &good[1..], 0o400);
        let short = admin_token(&config).unwrap_err().to_string();
        assert!(
            short.contains("31 bytes") && short.contains("32"),
            "{short}"
        );
        // The one in the data directory is held to the same rules.
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        write_mode(&data.join("admin_token"), &good, 0o644);
        assert!(admin_token(&config_with(None, &data)).is_err());
    }
}
