//! `exchange`: one binary, one subcommand per job.

mod bench;
mod replay;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "exchange", version, about = "An open-source stock exchange")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Apply JSON Lines commands to a fresh core and print the events as JSON Lines.
    Replay {
        /// Command file, or `-` for standard input.
        file: PathBuf,
        /// Write the final books, balances and state hash to this JSON file.
        #[arg(long)]
        final_state: Option<PathBuf>,
    },
    /// Benchmarks.
    #[command(subcommand)]
    Bench(bench::BenchCmd),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Cmd::Replay { file, final_state } => replay::run(&file, final_state.as_deref()),
        Cmd::Bench(cmd) => bench::run(cmd),
    }
}
