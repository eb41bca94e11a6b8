#[derive(clap::Subcommand)]
pub enum BenchCmd {
    /// The core alone.
    Engine,
}

pub fn run(_cmd: BenchCmd) -> anyhow::Result<()> {
    anyhow::bail!("bench is being built")
}
