//! The demo's accounts: created and funded once through the log, their
//! credentials kept in `demo_accounts.json` (mode 0600) so that a restart
//! trades with the same accounts instead of opening new ones every time.

use std::io::Write;
use std::path::{Path, PathBuf};

use exchange_types::{AccountId, AssetCode, EventKind};
use serde::{Deserialize, Serialize};

use super::{deposit_entry, submit_retrying, Funding};
use exchange_node::random_hex;
use exchange_node::reads::Verifier;
use exchange_node::sequencer::Handle;
use exchange_node::LogEntry;

use crate::DemoError;

/// Takers opened on first start.
pub const TAKERS: usize = 3;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DemoAccount {
    pub account: AccountId,
    pub api_key: String,
    pub api_secret: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DemoAccounts {
    pub market_maker: DemoAccount,
    pub takers: Vec<DemoAccount>,
}

impl DemoAccounts {
    fn all(&self) -> impl Iterator<Item = &DemoAccount> {
        std::iter::once(&self.market_maker).chain(&self.takers)
    }
}

pub fn accounts_file(data_dir: &Path) -> PathBuf {
    data_dir.join("demo_accounts.json")
}

/// The saved accounts if the state still knows every one of them (a data
/// directory whose journal was wiped but whose file survived must not
/// hand out credentials that no longer work); else new, funded accounts.
/// The flag says whether they were created now.
pub async fn load_or_create(
    handle: &Handle,
    data_dir: &Path,
    funding: &[Funding],
) -> Result<(DemoAccounts, bool), DemoError> {
    let path = accounts_file(data_dir);
    if let Some(saved) = read(&path) {
        // A secret derived from another master key no longer signs.
        let known = saved.all().all(|saved| {
            handle.credential(&saved.api_key).is_some_and(|c| {
                c.account == saved.account
                    && matches!(&c.verifier, Verifier::Hmac(secret) if *secret == saved.api_secret)
            })
        });
        if known && !saved.takers.is_empty() {
            return Ok((saved, false));
        }
        eprintln!(
            "demo: {} names accounts this exchange does not have; creating new ones",
            path.display()
        );
    }
    let market_maker = create(handle).await?;
    let mut takers = Vec::with_capacity(TAKERS);
    for _ in 0..TAKERS {
        takers.push(create(handle).await?);
    }
    for item in funding {
        deposit(handle, market_maker.account, item.asset, item.maker).await?;
        for taker in &takers {
            deposit(handle, taker.account, item.asset, item.taker).await?;
        }
    }
    let accounts = DemoAccounts {
        market_maker,
        takers,
    };
    write(&path, &accounts)?;
    Ok((accounts, true))
}

fn read(path: &Path) -> Option<DemoAccounts> {
    let text = std::fs::read_to_string(path).ok()?;
    match serde_json::from_str(&text) {
        Ok(accounts) => Some(accounts),
        Err(error) => {
            eprintln!("demo: ignoring unreadable {}: {error}", path.display());
            None
        }
    }
}

/// Writes through a temporary file so a crash never leaves half a file,
/// created 0600 because it holds API secrets.
fn write(path: &Path, accounts: &DemoAccounts) -> Result<(), std::io::Error> {
    let text = serde_json::to_string_pretty(accounts).map_err(std::io::Error::other)?;
    let temp = path.with_extension("json.tmp");
    // A leftover temporary file would keep its old mode.
    let _ = std::fs::remove_file(&temp);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&temp)?;
    file.write_all(text.as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()?;
    std::fs::rename(&temp, path)
}

async fn create(handle: &Handle) -> Result<DemoAccount, DemoError> {
    let api_key = random_hex(16);
    let api_secret = handle.hmac_secret(&api_key);
    let entry = LogEntry::CreateAccount {
        ts: 0,
        api_key: api_key.clone(),
        legacy_secret: None,
    };
    let applied = submit_retrying(handle, entry).await?;
    // Applying create_account always assigns an id; its absence would be
    // a sequencer bug, reported rather than papered over.
    let account = applied.account.ok_or_else(|| {
        DemoError::Io(std::io::Error::other(
            "create_account was applied without assigning an account",
        ))
    })?;
    Ok(DemoAccount {
        account,
        api_key,
        api_secret,
    })
}

/// Deposits `units` of `asset`; a refused deposit is reported, not fatal,
/// since the demo still runs with whatever the accounts hold.
async fn deposit(
    handle: &Handle,
    account: AccountId,
    asset: AssetCode,
    units: u64,
) -> Result<(), DemoError> {
    if units == 0 {
        return Ok(());
    }
    let applied = submit_retrying(handle, deposit_entry(account, asset, units)).await?;
    for event in &applied.events {
        if let EventKind::Rejected(rejected) = &event.kind {
            let reason = rejected.reason;
            tracing::warn!(account, asset = %asset, %reason, "demo deposit refused");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_accounts_file_round_trips_with_private_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = accounts_file(dir.path());
        let account = |id: u64| DemoAccount {
            account: id,
            api_key: format!("k{id}"),
            api_secret: format!("s{id}"),
        };
        let accounts = DemoAccounts {
            market_maker: account(1),
            takers: vec![account(2), account(3)],
        };
        write(&path, &accounts).unwrap();
        assert_eq!(read(&path), Some(accounts));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(&path, "{not json").unwrap();
        assert_eq!(read(&path), None);
    }
}
