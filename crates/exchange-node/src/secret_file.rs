//! Files that hold a secret (the master key, the cluster key, the admin
//! token): created 0600 from the first byte, and refused when group or
//! others may read them.

use std::io::Write;
use std::path::Path;

/// Why a secret file was not read.
#[derive(Debug)]
pub enum ReadError {
    Io(std::io::Error),
    /// Group or others have access: the file's permission bits.
    Exposed(u32),
}

/// The permission bits of a secret's file when group or others have any
/// access to it, `None` when only its owner has. Every file that holds a
/// credential is held to this one rule.
pub fn exposed_mode(path: &Path) -> std::io::Result<Option<u32>> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Ok(Some(mode));
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(None)
}

/// The text of the secret file at `path`, unless others may read it.
pub fn read(path: &Path) -> Result<String, ReadError> {
    let text = std::fs::read_to_string(path).map_err(ReadError::Io)?;
    match exposed_mode(path).map_err(ReadError::Io)? {
        Some(mode) => Err(ReadError::Exposed(mode)),
        None => Ok(text),
    }
}

/// Creates `path` (and its directory) holding `text` and a newline, with
/// mode 0600 from the start, so the secret is never readable by others,
/// even for a moment; fails if the file exists.
pub fn create(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(text.as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()
}
