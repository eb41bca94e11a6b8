//! What a compose venue needs before `docker-compose up`: docker itself,
//! the two images built from this checkout, and the secrets' files.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use crate::http::{ADMIN_TOKEN, MASTER_KEY};

/// The containers' user (deploy/image/lib.sh): the secrets are its.
const IMAGE_UID: u32 = 10_001;

/// The checkout this kit was built from: deploy/ is there.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Ok when `docker` reaches a daemon and `docker-compose` (v1) runs; else
/// why not.
pub fn compose_available() -> Result<(), String> {
    let works = |program: &str, args: &[&str]| match Command::new(program).args(args).output() {
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => Err(format!(
            "`{program} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        )),
        Err(error) => Err(format!("no `{program}` here: {error}")),
    };
    works("docker", &["info", "--format", "{{.ServerVersion}}"])?;
    works("docker-compose", &["version", "--short"])
}

/// Prints `SKIPPED: why` and returns, or with `CI=true` fails: CI must
/// run what the test checks.
pub fn skip_unless_ci(why: &str) {
    assert!(
        !std::env::var("CI").is_ok_and(|v| v == "true"),
        "the compose tests cannot run in CI: {why}"
    );
    eprintln!("SKIPPED: {why}");
}

/// Runs `command`, panicking with its output unless it succeeds.
pub(super) fn succeed(command: &mut Command, what: &str) -> Output {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// A name no other venue of this or another test process uses.
pub(super) fn unique(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!(
        "{prefix}{}x{}x{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        nanos % 10_000
    )
}

/// The images a venue runs.
pub struct Images {
    /// The exchange binary's image, made for this venue (removed with it).
    pub exchange: String,
    /// The PostgreSQL image, shared by every venue built from the same
    /// build script (tagged by the script's digest, kept).
    pub postgres: String,
}

impl Images {
    /// Builds the exchange image from `bin` (a debug build is fine: its
    /// debug info is stripped) and the PostgreSQL image unless one from
    /// the same build script is there.
    pub fn build(bin: &Path) -> Images {
        let deploy = repo_root().join("deploy/image");
        let exchange = build_exchange(bin);
        let postgres = format!("exchange-postgres-test:{}", script_digest(&deploy));
        let present = Command::new("docker")
            .args(["image", "inspect", &postgres])
            .output()
            .is_ok_and(|o| o.status.success());
        if !present {
            succeed(
                Command::new(deploy.join("build-postgres")).arg(&postgres),
                "deploy/image/build-postgres",
            );
        }
        Images { exchange, postgres }
    }
}

/// Builds an image of the exchange binary `bin` under a tag of its own;
/// the tag.
pub(super) fn build_exchange(bin: &Path) -> String {
    let tag = format!("exchange-test:{}", unique("v"));
    succeed(
        Command::new(repo_root().join("deploy/image/build-exchange"))
            .arg(bin)
            .arg(&tag),
        "deploy/image/build-exchange",
    );
    tag
}

/// Removes an image made for one venue (the PostgreSQL one is shared).
pub(super) fn remove_image(tag: &str) {
    let _ = Command::new("docker")
        .args(["rmi", "--force", tag])
        .output();
}

/// The first 12 hex digits of the SHA-256 of the PostgreSQL image's build
/// scripts: a changed script makes a new image.
fn script_digest(deploy: &Path) -> String {
    let mut digest = Sha256::new();
    for script in ["build-postgres", "lib.sh"] {
        let text = std::fs::read(deploy.join(script))
            .unwrap_or_else(|e| panic!("read deploy/image/{script}: {e}"));
        digest.update(&text);
    }
    hex::encode(digest.finalize())[..12].to_string()
}

/// Writes the three secrets into `dir` as `deploy/compose/venue secrets`
/// does (mode 0600, the containers' user's): the kit's admin token and
/// master key, so that [`crate::Client`] works against the venue, and a
/// random cluster key.
pub(super) fn write_secrets(dir: &Path) -> Result<(), String> {
    let cluster_key: String = (0..4).map(|_| format!("{:016x}", random_u64())).collect();
    for (name, value) in [
        ("cluster_key", cluster_key.as_str()),
        ("admin_token", ADMIN_TOKEN),
        ("master_key", MASTER_KEY),
    ] {
        let path = dir.join(name);
        let mut file = std::fs::File::create(&path).map_err(|e| format!("{name}: {e}"))?;
        file.write_all(value.as_bytes())
            .map_err(|e| format!("{name}: {e}"))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("{name}: {e}"))?;
        give_to_image_user(&path)?;
    }
    Ok(())
}

/// A bind-mounted secret keeps its owner, and the processes read only a
/// file mode 0600: it must be the containers' user's.
fn give_to_image_user(path: &Path) -> Result<(), String> {
    let owner = format!("{IMAGE_UID}:{IMAGE_UID}");
    let chown = |program: &[&str]| {
        Command::new(program[0])
            .args(&program[1..])
            .arg(&owner)
            .arg(path)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if chown(&["chown"]) || chown(&["sudo", "-n", "chown"]) {
        Ok(())
    } else {
        Err(format!(
            "cannot give the secrets to uid {IMAGE_UID} (needs root or sudo without a password)"
        ))
    }
}

fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    let read = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes));
    read.expect("read /dev/urandom");
    u64::from_le_bytes(bytes)
}
