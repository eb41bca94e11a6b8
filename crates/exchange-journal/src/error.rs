use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum JournalError {
    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// An `fdatasync` of written records failed. Unlike a failed write it
    /// cannot be retried: the kernel may have dropped the pages it did not
    /// write, and a second sync would report them durable.
    #[error("sync of {path} failed: {source}")]
    Sync {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("journal corrupt at {path} offset {offset}: {reason}")]
    Corrupt {
        path: PathBuf,
        offset: u64,
        reason: String,
    },
    #[error("entry of {0} bytes exceeds the record limit")]
    TooLarge(usize),
}
