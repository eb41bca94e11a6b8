//! A file system of a fixed size that a test fills: a tmpfs mounted on a
//! directory (root only), filled by a filler file and freed by deleting
//! it; unmounted when dropped. It keeps its files across the restarts of
//! the process using it, as a disk does.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct SmallDisk {
    dir: PathBuf,
}

impl SmallDisk {
    /// Mounts a tmpfs of `size_mb` on `dir` (made if missing), owned by
    /// `owner` when given (a container's user), or says why it cannot be
    /// done here.
    pub fn mount(dir: &Path, size_mb: u64, owner: Option<u32>) -> Result<SmallDisk, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut options = format!("size={size_mb}m,mode=0700");
        if let Some(uid) = owner {
            options.push_str(&format!(",uid={uid},gid={uid}"));
        }
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &options, "tmpfs"])
            .arg(dir)
            .output()
            .map_err(|e| format!("mount: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "mount -t tmpfs: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(SmallDisk {
            dir: dir.to_path_buf(),
        })
    }

    /// Where it is mounted.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn filler(&self) -> PathBuf {
        self.dir.join("filler")
    }

    /// Writes the filler file until not a byte is left; its path.
    pub fn fill(&self) -> Result<PathBuf, String> {
        let path = self.filler();
        let mut file = std::fs::File::create(&path).map_err(|e| format!("the filler: {e}"))?;
        let chunk = vec![0x5a_u8; 64 << 10];
        loop {
            match file.write(&chunk) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
                Err(e) => return Err(format!("filling {}: {e}", path.display())),
            }
        }
        // The last partial page too.
        while file.write(&[0x5a]).is_ok_and(|n| n == 1) {}
        Ok(path)
    }

    /// Deletes the filler: the space is back.
    pub fn free(&self) -> Result<(), String> {
        let path = self.filler();
        std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

/// Mounts a small disk of `size_mb` on each of `dirs`, or prints
/// `SKIPPED` and returns `None` (a failure where CI=true).
pub fn small_disks(dirs: &[PathBuf], size_mb: u64) -> Option<Vec<SmallDisk>> {
    let mut disks = Vec::new();
    for dir in dirs {
        match SmallDisk::mount(dir, size_mb, None) {
            Ok(disk) => disks.push(disk),
            Err(why) => {
                let in_ci = std::env::var("CI").is_ok_and(|v| v == "true");
                assert!(!in_ci, "a small disk is needed in CI: {why}");
                eprintln!("SKIPPED: no small file system to fill here ({why})");
                return None;
            }
        }
    }
    Some(disks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_mounted(dir: &Path) -> bool {
        std::fs::read_to_string("/proc/self/mounts")
            .is_ok_and(|mounts| mounts.lines().any(|l| l.split(' ').nth(1) == dir.to_str()))
    }

    #[test]
    fn a_filled_disk_is_full_until_freed() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let Some(disks) = small_disks(&[tmp.path().join("d")], 4) else {
            return;
        };
        let disk = &disks[0];
        assert!(is_mounted(disk.dir()));
        disk.fill().expect("fill");
        let probe = disk.dir().join("probe");
        assert!(
            std::fs::write(&probe, [0u8; 1]).is_err(),
            "a byte fit on a full disk"
        );
        disk.free().expect("free");
        std::fs::write(&probe, b"room again").expect("room after freeing");
        let mount = disk.dir().to_path_buf();
        drop(disks);
        assert!(!is_mounted(&mount), "unmounted when dropped");
    }
}
