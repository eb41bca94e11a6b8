//! Files that hold a secret (the master key, the cluster key, the admin
//! token): created 0600 from the first byte, and refused when others may
//! read them.
//!
//! The rule is PostgreSQL's for its server key: a file this process owns
//! must give no access to group or others (0600 or less); a file root
//! owns may also be read by its group (0640 or less). The second form is
//! what an orchestrator mounts: a Kubernetes Secret volume with `fsGroup`
//! is root's file, readable by the pod's group and by nobody else.

use std::io::Write;
use std::path::Path;

/// Why a secret file was not read.
#[derive(Debug)]
pub enum ReadError {
    Io(std::io::Error),
    /// Others have access: the file's permission bits.
    Exposed(u32),
}

/// The permission bits of a secret's file when they give more access
/// than the rule allows (module doc), `None` when they do not. Every file
/// that holds a credential is held to this one rule.
pub fn exposed_mode(path: &Path) -> std::io::Result<Option<u32>> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let metadata = std::fs::metadata(path)?;
        let mode = metadata.mode() & 0o777;
        Ok((!allowed(mode, metadata.uid())).then_some(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        Ok(None)
    }
}

/// Whether a secret's file of permission bits `mode` and owner `uid`
/// keeps it: owner-only, or root's and readable by its group alone.
fn allowed(mode: u32, uid: u32) -> bool {
    mode & 0o077 == 0 || (uid == 0 && mode & 0o037 == 0)
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

#[cfg(test)]
mod rule_tests {
    use super::allowed;

    #[test]
    fn owner_only_always_and_group_read_only_for_roots_files() {
        for uid in [0, 10_001] {
            assert!(allowed(0o600, uid) && allowed(0o400, uid));
            assert!(!allowed(0o644, uid) && !allowed(0o604, uid) && !allowed(0o660, uid));
        }
        assert!(allowed(0o440, 0) && allowed(0o640, 0));
        assert!(!allowed(0o440, 10_001) && !allowed(0o640, 10_001));
        assert!(!allowed(0o460, 0), "group write");
        assert!(!allowed(0o444, 0), "others read");
    }
}
