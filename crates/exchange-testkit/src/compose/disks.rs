//! Replicas' data directories on filesystems of a fixed size, so that a
//! test can fill one: a tmpfs per replica mounted on the host (root
//! only) and bind-mounted as the container's `/data` by an override
//! compose file. It keeps its files across the container's restarts, as
//! a disk does; unmounted when dropped, after the venue is down.

use std::io::Write;
#[cfg(test)]
use std::path::Path;
use std::path::PathBuf;
use std::process::Command;

/// The containers' user, who must own the data directory.
const CONTAINER_UID: u32 = 10_001;

pub struct Disks {
    root: tempfile::TempDir,
    /// Replica N's mount point is `mounts[N - 1]`.
    mounts: Vec<PathBuf>,
}

impl Disks {
    /// A tmpfs of `size_mb` for each of `replicas`; Err says why it cannot
    /// be done here (not root, no `mount`).
    pub fn mount(replicas: u64, size_mb: u64) -> Result<Disks, String> {
        let root = tempfile::tempdir().map_err(|e| format!("a temp dir: {e}"))?;
        let mut disks = Disks {
            root,
            mounts: Vec::new(),
        };
        for n in 1..=replicas {
            let dir = disks.root.path().join(format!("replica-{n}"));
            std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            let options =
                format!("size={size_mb}m,uid={CONTAINER_UID},gid={CONTAINER_UID},mode=0700");
            let mounted = Command::new("mount")
                .args(["-t", "tmpfs", "-o", &options, "tmpfs"])
                .arg(&dir)
                .output()
                .map_err(|e| format!("mount: {e}"))?;
            if !mounted.status.success() {
                return Err(format!(
                    "mount -t tmpfs: {}",
                    String::from_utf8_lossy(&mounted.stderr).trim()
                ));
            }
            disks.mounts.push(dir);
        }
        Ok(disks)
    }

    /// A compose file that puts each replica's `/data` on its disk.
    pub fn write_override(&self) -> PathBuf {
        let mut text = String::from("services:\n");
        for (i, dir) in self.mounts.iter().enumerate() {
            text.push_str(&format!(
                "  replica-{}:\n    volumes:\n      - {}:/data\n",
                i + 1,
                dir.display()
            ));
        }
        let file = self.root.path().join("disks.yml");
        std::fs::write(&file, text).expect("write the disks' compose file");
        file
    }

    fn filler(&self, replica: u64) -> Result<PathBuf, String> {
        let index = usize::try_from(replica.saturating_sub(1)).unwrap_or(usize::MAX);
        self.mounts
            .get(index)
            .map(|dir| dir.join("filler"))
            .ok_or_else(|| format!("no disk for replica {replica}"))
    }

    /// Writes to replica `replica`'s disk until no byte is left.
    pub fn fill(&self, replica: u64) -> Result<(), String> {
        let path = self.filler(replica)?;
        let mut file = std::fs::File::create(&path).map_err(|e| format!("{e}"))?;
        let chunk = vec![0u8; 1 << 20];
        loop {
            match file.write(&chunk) {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => return Ok(()),
                Err(e) => return Err(format!("filling {}: {e}", path.display())),
            }
        }
    }

    /// Gives replica `replica`'s disk its space back.
    pub fn free(&self, replica: u64) -> Result<(), String> {
        let path = self.filler(replica)?;
        std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))
    }
}

impl Drop for Disks {
    fn drop(&mut self) {
        for dir in &self.mounts {
            let _ = Command::new("umount").arg("-l").arg(dir).status();
        }
    }
}

/// Whether `dir` is where one of the disks is mounted.
#[cfg(test)]
fn is_mounted(dir: &Path) -> bool {
    std::fs::read_to_string("/proc/self/mounts")
        .is_ok_and(|mounts| mounts.lines().any(|l| l.split(' ').nth(1) == dir.to_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filled_disk_is_full_until_freed() {
        let disks = match Disks::mount(1, 4) {
            Ok(disks) => disks,
            Err(why) => return super::super::skip_unless_ci(&format!("no tmpfs here ({why})")),
        };
        assert!(is_mounted(&disks.mounts[0]));
        disks.fill(1).expect("fill");
        let probe = disks.mounts[0].join("probe");
        let full = std::fs::write(&probe, vec![0u8; 64 << 10]);
        assert!(full.is_err(), "a byte fit on a full disk");
        disks.free(1).expect("free");
        std::fs::write(&probe, b"room again").expect("room after freeing");
        let override_file = std::fs::read_to_string(disks.write_override()).expect("read");
        assert!(
            override_file.contains("replica-1:\n    volumes:\n      - "),
            "{override_file}"
        );
        let mount = disks.mounts[0].clone();
        drop(disks);
        assert!(!is_mounted(&mount), "unmounted when dropped");
    }
}
