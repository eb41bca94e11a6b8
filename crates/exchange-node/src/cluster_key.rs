//! The cluster key's file: 64 hex digits (32 bytes), private (mode 0600, or
//! 0440 when root owns it: `secret_file`),
//! the same on every node. The Raft transport talks only to holders of
//! the key (`exchange_replication::transport`); the key never appears in
//! a configuration file, a command line or a log line, only the path of
//! its file does.

use std::path::{Path, PathBuf};

pub use exchange_replication::transport::ClusterKey;
use thiserror::Error;

use crate::secret_file;

/// Its name in a directory that holds one (`exchange cluster up`'s).
pub const CLUSTER_KEY_FILE: &str = "cluster_key";

#[derive(Debug, Error)]
pub enum ClusterKeyError {
    #[error("{path}: a cluster key is 64 hex digits (32 bytes)")]
    Malformed { path: PathBuf },
    #[error(
        "{path}: the cluster key file may be read by other users (mode {mode:o}); \
         make it 0600 or 0400 (0640 or 0440 when root owns it)"
    )]
    Exposed { path: PathBuf, mode: u32 },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> ClusterKeyError + '_ {
    move |source| ClusterKeyError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Reads the key from `path`, refusing a file others may read.
pub fn load(path: &Path) -> Result<ClusterKey, ClusterKeyError> {
    let text = secret_file::read(path).map_err(|error| match error {
        secret_file::ReadError::Io(source) => io_error(path)(source),
        secret_file::ReadError::Exposed(mode) => ClusterKeyError::Exposed {
            path: path.to_path_buf(),
            mode,
        },
    })?;
    let malformed = || ClusterKeyError::Malformed {
        path: path.to_path_buf(),
    };
    let bytes = hex::decode(text.trim()).map_err(|_| malformed())?;
    let bytes: [u8; 32] = bytes.try_into().map_err(|_| malformed())?;
    Ok(ClusterKey::from_bytes(bytes))
}

/// The key in `path`, or a new random one written there first (0600 from
/// the start: [`secret_file::create`]).
pub fn load_or_generate(path: &Path) -> Result<ClusterKey, ClusterKeyError> {
    if path.exists() {
        return load(path);
    }
    let key = ClusterKey::generate().map_err(io_error(path))?;
    secret_file::create(path, &hex::encode(key.as_bytes())).map_err(io_error(path))?;
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_key_is_written_0600_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CLUSTER_KEY_FILE);
        let key = load_or_generate(&path).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        assert_eq!(load(&path).unwrap(), key);
        assert_eq!(load_or_generate(&path).unwrap(), key);
        assert_ne!(key, ClusterKey::generate().unwrap());
    }

    #[test]
    fn bad_key_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            load(&dir.path().join("nope")),
            Err(ClusterKeyError::Io { .. })
        ));
        let short = dir.path().join("short");
        std::fs::write(&short, "abcd").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&short, std::fs::Permissions::from_mode(0o600)).unwrap();
            assert!(matches!(
                load(&short),
                Err(ClusterKeyError::Malformed { .. })
            ));
            let open = dir.path().join("open");
            std::fs::write(&open, "ab".repeat(32)).unwrap();
            std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
            assert!(matches!(
                load(&open),
                Err(ClusterKeyError::Exposed { mode: 0o644, .. })
            ));
        }
    }
}
