//! Replicas' data directories on filesystems of a fixed size, so that a
//! test can fill one: a [`SmallDisk`] per replica mounted on the host
//! (root only) and bind-mounted as the container's `/data` by an override
//! compose file; unmounted when dropped, after the venue is down.

use std::path::PathBuf;

use crate::small_disk::SmallDisk;

/// The containers' user, who must own the data directory.
const CONTAINER_UID: u32 = 10_001;

pub struct Disks {
    /// Replica N's disk is `disks[N - 1]`; dropped before `root`.
    disks: Vec<SmallDisk>,
    root: tempfile::TempDir,
}

impl Disks {
    /// A disk of `size_mb` for each of `replicas`; Err says why it cannot
    /// be done here (not root, no `mount`).
    pub fn mount(replicas: u64, size_mb: u64) -> Result<Disks, String> {
        let root = tempfile::tempdir().map_err(|e| format!("a temp dir: {e}"))?;
        let disks = (1..=replicas)
            .map(|n| {
                let dir = root.path().join(format!("replica-{n}"));
                SmallDisk::mount(&dir, size_mb, Some(CONTAINER_UID))
            })
            .collect::<Result<_, _>>()?;
        Ok(Disks { disks, root })
    }

    /// A compose file that puts each replica's `/data` on its disk.
    pub fn write_override(&self) -> PathBuf {
        let mut text = String::from("services:\n");
        for (i, disk) in self.disks.iter().enumerate() {
            text.push_str(&format!(
                "  replica-{}:\n    volumes:\n      - {}:/data\n",
                i + 1,
                disk.dir().display()
            ));
        }
        let file = self.root.path().join("disks.yml");
        std::fs::write(&file, text).expect("write the disks' compose file");
        file
    }

    fn disk(&self, replica: u64) -> Result<&SmallDisk, String> {
        let index = usize::try_from(replica.saturating_sub(1)).unwrap_or(usize::MAX);
        self.disks
            .get(index)
            .ok_or_else(|| format!("no disk for replica {replica}"))
    }

    /// Writes to replica `replica`'s disk until no byte is left.
    pub fn fill(&self, replica: u64) -> Result<(), String> {
        self.disk(replica)?.fill().map(|_| ())
    }

    /// Gives replica `replica`'s disk its space back.
    pub fn free(&self, replica: u64) -> Result<(), String> {
        self.disk(replica)?.free()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_replica_s_data_is_bind_mounted_from_its_disk() {
        let disks = match Disks::mount(2, 4) {
            Ok(disks) => disks,
            Err(why) => return super::super::skip_unless_ci(&format!("no tmpfs here ({why})")),
        };
        let text = std::fs::read_to_string(disks.write_override()).expect("read");
        for n in 1..=2 {
            let line = format!(
                "  replica-{n}:\n    volumes:\n      - {}:/data",
                disks.disks[n - 1].dir().display()
            );
            assert!(text.contains(&line), "{text}");
        }
        assert!(disks.fill(3).is_err(), "no third disk");
    }
}
