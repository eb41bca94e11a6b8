//! The node's master key: 32 bytes from which every HMAC API secret is
//! derived, so that the log and the snapshots name keys but hold no
//! secret. The secret of key `id` is the lowercase hex of
//! HMAC-SHA256(master key, `"exchange-api-secret\n" + id`).
//!
//! Where it comes from, first found wins: `EXCHANGE_MASTER_KEY` (64 hex
//! digits), the file `master_key_file` names, the file `master_key` in
//! the data directory, or else 32 fresh random bytes written there with
//! mode 0600. Every node of a cluster must hold the same key, or a key
//! created on one is refused by the others.

use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use sha2::Sha256;
use thiserror::Error;

use crate::secret_file;

/// The environment variable that gives the master key.
pub const MASTER_KEY_ENV: &str = "EXCHANGE_MASTER_KEY";
/// Its file in the data directory, when neither the environment nor the
/// configuration names one.
pub const MASTER_KEY_FILE: &str = "master_key";

const DERIVATION_LABEL: &[u8] = b"exchange-api-secret\n";

#[derive(Debug, Error)]
pub enum MasterKeyError {
    #[error("{origin}: a master key is 64 hex digits (32 bytes)")]
    Malformed { origin: String },
    #[error(
        "{path}: the master key file may be read by other users (mode {mode:o}); \
         make it 0600 or 0400 (0640 or 0440 when root owns it)"
    )]
    Exposed { path: PathBuf, mode: u32 },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Where the key came from, for the start-up message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MasterKeySource {
    Environment,
    File(PathBuf),
    Generated(PathBuf),
}

#[derive(Clone, PartialEq, Eq)]
pub struct MasterKey([u8; 32]);

// The key must never reach a log line.
impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey(..)")
    }
}

impl MasterKey {
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        MasterKey(bytes)
    }

    /// From 64 hex digits; `origin` names where they came from in the error.
    pub fn from_hex(text: &str, origin: &str) -> Result<Self, MasterKeyError> {
        let malformed = || MasterKeyError::Malformed {
            origin: origin.to_string(),
        };
        let bytes = hex::decode(text.trim()).map_err(|_| malformed())?;
        let bytes: [u8; 32] = bytes.try_into().map_err(|_| malformed())?;
        Ok(MasterKey(bytes))
    }

    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).expect("the operating system's random source");
        MasterKey(bytes)
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// The HMAC secret of the key `key_id`.
    pub fn derive_secret(&self, key_id: &str) -> String {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes keys of any length");
        mac.update(DERIVATION_LABEL);
        mac.update(key_id.as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }

    /// Finds the key (see the module's documentation), generating it in
    /// `data_dir` if nothing gives one.
    pub fn load(
        file: Option<&Path>,
        data_dir: &Path,
    ) -> Result<(MasterKey, MasterKeySource), MasterKeyError> {
        if let Some(text) = std::env::var(MASTER_KEY_ENV)
            .ok()
            .filter(|t| !t.trim().is_empty())
        {
            return Ok((
                MasterKey::from_hex(&text, MASTER_KEY_ENV)?,
                MasterKeySource::Environment,
            ));
        }
        let path = file.map_or_else(|| data_dir.join(MASTER_KEY_FILE), Path::to_path_buf);
        if path.exists() || file.is_some() {
            return Ok((read(&path)?, MasterKeySource::File(path)));
        }
        let key = MasterKey::generate();
        write_new(&path, &key)?;
        Ok((key, MasterKeySource::Generated(path)))
    }
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> MasterKeyError + '_ {
    move |source| MasterKeyError::Io {
        path: path.to_path_buf(),
        source,
    }
}

pub use crate::secret_file::exposed_mode;

fn read(path: &Path) -> Result<MasterKey, MasterKeyError> {
    let text = secret_file::read(path).map_err(|error| match error {
        secret_file::ReadError::Io(source) => io_error(path)(source),
        secret_file::ReadError::Exposed(mode) => MasterKeyError::Exposed {
            path: path.to_path_buf(),
            mode,
        },
    })?;
    MasterKey::from_hex(&text, &path.display().to_string())
}

fn write_new(path: &Path, key: &MasterKey) -> Result<(), MasterKeyError> {
    secret_file::create(path, &key.to_hex()).map_err(io_error(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_derived_from_the_key_and_the_id() {
        let key = MasterKey::from_bytes([7; 32]);
        let secret = key.derive_secret("abc");
        assert_eq!(secret.len(), 64);
        assert_eq!(secret, key.derive_secret("abc"));
        assert_ne!(secret, key.derive_secret("abd"));
        assert_ne!(secret, MasterKey::from_bytes([8; 32]).derive_secret("abc"));
    }

    // Computed independently: python3 -c 'import hmac,hashlib;
    // print(hmac.new(bytes([7])*32, b"exchange-api-secret\nabc", hashlib.sha256).hexdigest())'
    #[test]
    fn the_derivation_matches_an_independent_implementation() {
        assert_eq!(
            MasterKey::from_bytes([7; 32]).derive_secret("abc"),
            "b0c55f4e545fbea12dcfdffa87467a2da2e1a590af9a04e47afe8a6ff2a552c3"
        );
    }

    #[test]
    fn a_missing_key_is_generated_once_with_mode_0600() {
        let dir = tempfile::tempdir().unwrap();
        let (key, source) = MasterKey::load(None, dir.path()).unwrap();
        let path = dir.path().join(MASTER_KEY_FILE);
        assert_eq!(source, MasterKeySource::Generated(path.clone()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        let (again, source) = MasterKey::load(None, dir.path()).unwrap();
        assert_eq!(source, MasterKeySource::File(path));
        assert_eq!(again, key);
    }

    #[test]
    fn bad_key_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope");
        assert!(matches!(
            MasterKey::load(Some(&missing), dir.path()),
            Err(MasterKeyError::Io { .. })
        ));
        let short = dir.path().join("short");
        std::fs::write(&short, "abcd").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&short, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        assert!(matches!(
            MasterKey::load(Some(&short), dir.path()),
            Err(MasterKeyError::Malformed { .. })
        ));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let open = dir.path().join("open");
            std::fs::write(&open, MasterKey::generate().to_hex()).unwrap();
            std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
            assert!(matches!(
                MasterKey::load(Some(&open), dir.path()),
                Err(MasterKeyError::Exposed { mode: 0o644, .. })
            ));
        }
    }
}
