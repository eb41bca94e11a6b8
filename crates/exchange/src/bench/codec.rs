//! `exchange bench codec`: what writing and reading a command costs in
//! the log's two forms, the JSON line journals held before and the binary
//! encoding they hold now, on the standard workload's commands. Followers
//! read every entry and the leader writes every one, so this is paid per
//! command on every replica.
//!
//! Commands are timed in chunks of [`CHUNK`] (one clock read per command
//! would cost as much as the binary read itself); each chunk's mean per
//! command goes into the histogram the percentiles come from.

use std::time::Instant;

use exchange_types::Stamped;
use hdrhistogram::Histogram;
use serde_json::json;

use super::generator::{self, Spec};

/// Commands per timed chunk.
const CHUNK: usize = 1_024;

#[derive(clap::Args, Debug)]
pub struct CodecArgs {
    /// Commands of the standard workload.
    #[arg(long, default_value_t = 1_000_000)]
    ops: usize,
    /// Seed of the workload.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

/// One form's figures: bytes per command and ns per command to write and
/// to read.
struct Form {
    name: &'static str,
    bytes: u64,
    write: Histogram<u64>,
    read: Histogram<u64>,
}

pub fn run(args: CodecArgs) -> anyhow::Result<()> {
    let prepared = generator::generate(&Spec::standard(args.ops, args.seed), false, !args.json)?;
    let commands: Vec<Stamped> = prepared.setup.into_iter().chain(prepared.timed).collect();
    let json_form = measure(
        "json",
        &commands,
        exchange_codec::encode_command_into,
        |bytes| {
            let text = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
            exchange_codec::decode_command(text).map_err(|e| e.to_string())
        },
    )?;
    let binary_form = measure(
        "binary",
        &commands,
        exchange_codec::binary::encode_command_into,
        |bytes| exchange_codec::binary::decode_command(bytes).map_err(|e| e.to_string()),
    )?;
    print_forms(commands.len(), &[json_form, binary_form], args.json);
    Ok(())
}

fn measure(
    name: &'static str,
    commands: &[Stamped],
    write: fn(&Stamped, &mut Vec<u8>),
    read: fn(&[u8]) -> Result<Stamped, String>,
) -> anyhow::Result<Form> {
    let mut form = Form {
        name,
        bytes: 0,
        write: Histogram::new_with_bounds(1, 1_000_000_000, 3)?,
        read: Histogram::new_with_bounds(1, 1_000_000_000, 3)?,
    };
    let mut encoded: Vec<Vec<u8>> = Vec::with_capacity(CHUNK);
    for chunk in commands.chunks(CHUNK) {
        // Buffers from the previous chunk are reused, so the writer is
        // timed, not the allocator.
        encoded.resize_with(chunk.len(), Vec::new);
        let started = Instant::now();
        for (stamped, out) in chunk.iter().zip(encoded.iter_mut()) {
            out.clear();
            write(stamped, out);
        }
        record_mean(&mut form.write, started, chunk.len());
        form.bytes += encoded.iter().map(|e| e.len() as u64).sum::<u64>();
        let started = Instant::now();
        for (stamped, bytes) in chunk.iter().zip(&encoded) {
            let decoded = read(bytes).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
            // Checked after the clock would cost nothing, but reading back
            // something else would make the figure meaningless.
            if decoded.ts != stamped.ts {
                anyhow::bail!("{name}: a command did not read back");
            }
        }
        record_mean(&mut form.read, started, chunk.len());
    }
    Ok(form)
}

fn record_mean(histogram: &mut Histogram<u64>, started: Instant, commands: usize) {
    let ns = started.elapsed().as_nanos() / commands.max(1) as u128;
    histogram.saturating_record(u64::try_from(ns).unwrap_or(u64::MAX).max(1));
}

fn percentiles(h: &Histogram<u64>) -> serde_json::Value {
    json!({
        "p50": h.value_at_quantile(0.50),
        "p99": h.value_at_quantile(0.99),
        "p99_9": h.value_at_quantile(0.999),
        "max": h.max(),
    })
}

fn print_forms(commands: usize, forms: &[Form], as_json: bool) {
    let per_command = |form: &Form| form.bytes as f64 / commands.max(1) as f64;
    if as_json {
        let figures: Vec<_> = forms
            .iter()
            .map(|f| {
                json!({
                    "form": f.name,
                    "bytes_per_command": per_command(f),
                    "write_ns": percentiles(&f.write),
                    "read_ns": percentiles(&f.read),
                })
            })
            .collect();
        println!("{}", json!({ "commands": commands, "forms": figures }));
        return;
    }
    println!(
        "{commands} commands of the standard workload, ns per command (chunk means of {CHUNK})"
    );
    println!(
        "{:>8} {:>7} | {:>22} | {:>22}",
        "form", "bytes", "write p50 / p99 / max", "read p50 / p99 / max"
    );
    for f in forms {
        println!(
            "{:>8} {:>7.1} | {:>6} / {:>6} / {:>6} | {:>6} / {:>6} / {:>6}",
            f.name,
            per_command(f),
            f.write.value_at_quantile(0.50),
            f.write.value_at_quantile(0.99),
            f.write.max(),
            f.read.value_at_quantile(0.50),
            f.read.value_at_quantile(0.99),
            f.read.max(),
        );
    }
}
