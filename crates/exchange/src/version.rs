//! `exchange version`: this binary's version and, with `--formats`, the
//! formats it reads and writes ([`exchange_node::formats`]), as JSON.
//! `cluster upgrade` compares the formats of the running binary and the
//! new one before it replaces anything.

use serde_json::json;

#[derive(clap::Args)]
pub struct VersionArgs {
    /// Also the log, journal, snapshot and protocol formats.
    #[arg(long)]
    formats: bool,
}

pub fn run(args: &VersionArgs) {
    let mut out = json!({ "version": env!("CARGO_PKG_VERSION") });
    if args.formats {
        out["formats"] = exchange_node::formats::formats();
    }
    println!("{out}");
}
