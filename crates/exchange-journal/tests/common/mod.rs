//! Helpers the journal's test files share.

use std::fs;
use std::path::{Path, PathBuf};

/// The log's segment files in `dir`, oldest first.
pub fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut all: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    all.sort();
    all
}
