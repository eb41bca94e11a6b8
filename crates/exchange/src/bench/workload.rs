//! `bench engine`: prepare a stream, time the core on it, time the peers
//! on the same stream, report.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use exchange_core::Engine;
use exchange_types::{Event, Stamped};

use super::generator::{self, Spec, Workload};
#[cfg(feature = "peer-books")]
use super::peer::lobster::Lobster;
#[cfg(feature = "peer-books")]
use super::peer::orderbook_rs::OrderbookRs;
#[cfg(feature = "peer-books")]
use super::peer::PeerOp;
use super::peer::{PeerChoice, PeerSummary};
use super::report::{self, Figures, Report};
use super::stream::{Phase, Prepared, Scratch};
use super::timing::{self, progress_bar, Memory, Subject};
use exchange_codec::encode_command_into as encode_command;

#[derive(clap::Args, Debug, Clone)]
pub struct EngineArgs {
    /// Timed operations of the generated workload.
    #[arg(long, default_value_t = 5_000_000)]
    pub ops: usize,
    /// Which generated stream: the published mix, or the mix with stops,
    /// icebergs and cancels/replaces racing fills.
    #[arg(long, value_enum, default_value_t = Workload::Standard)]
    pub workload: Workload,
    /// Seed of the generated workload.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Funded accounts in the generated workload.
    #[arg(long, default_value_t = 1_000)]
    pub accounts: u64,
    /// Price levels per side the generated workload keeps on the book.
    #[arg(long, default_value_t = 1_000)]
    pub levels: u64,
    /// Time this JSON Lines command stream instead of generating one.
    #[arg(long, value_name = "FILE", conflicts_with = "write_commands")]
    pub commands: Option<PathBuf>,
    /// With --commands: apply this many leading commands untimed (listing,
    /// deposits, book pre-fill).
    #[arg(long, default_value_t = 0, requires = "commands")]
    pub warmup: usize,
    /// Also write the generated stream (setup included) as JSON Lines.
    #[arg(long, value_name = "FILE")]
    pub write_commands: Option<PathBuf>,
    /// Throughput passes of each subject, taken in turn (ours, each peer,
    /// ours again...), so that a slow spell of the shared host weighs on
    /// every subject alike; a subject's throughput is its median pass.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=15))]
    pub passes: u64,
    /// Peer order books to run the same stream through.
    #[arg(long, value_enum, default_value_t = PeerChoice::All)]
    pub peer: PeerChoice,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &EngineArgs) -> anyhow::Result<()> {
    let with_peers = cfg!(feature = "peer-books") && args.peer != PeerChoice::None;
    let prepared = prepare(args, with_peers)?;
    if let Some(path) = &args.write_commands {
        write_commands(&prepared, path)?;
        eprintln!(
            "wrote {} commands to {}; \
             time them with: exchange bench engine --commands {} --warmup {}",
            prepared.setup.len() + prepared.timed.len(),
            path.display(),
            path.display(),
            prepared.setup.len()
        );
    }
    let clock_overhead_ns = timing::clock_overhead_ns();
    let (ours, peers) = measure(args, &prepared)?;
    // As long as our latency pass took, and after every pass so that it
    // takes no CPU from them.
    let latency_pass = ours.ops as f64 / ours.timed_ops_per_sec.max(1.0);
    let host = timing::host_gaps(std::time::Duration::from_secs_f64(
        latency_pass.clamp(0.1, 10.0),
    ));
    let report = Report {
        seed: args.commands.is_none().then_some(args.seed),
        source: args.commands.as_ref().map(|p| p.display().to_string()),
        setup_commands: prepared.setup.len(),
        command_bytes: (prepared.setup.len() + prepared.timed.len())
            * std::mem::size_of::<Stamped>(),
        stats: &prepared.stats,
        final_best: prepared.final_best,
        clock_overhead_ns,
        host,
        ours,
        peers,
    };
    if args.json {
        println!("{}", report::json(&report));
    } else {
        print!("{}", report::text(&report));
    }
    Ok(())
}

/// The commands to time: the file given, or the standard workload.
fn prepare(args: &EngineArgs, with_peers: bool) -> anyhow::Result<Prepared> {
    Ok(match &args.commands {
        Some(path) => load(path, args.warmup, with_peers)?,
        None => {
            if args.accounts == 0 || args.levels == 0 {
                anyhow::bail!("--accounts and --levels must be at least 1");
            }
            let spec = Spec {
                ops: args.ops,
                seed: args.seed,
                accounts: args.accounts,
                levels: args.levels,
                workload: args.workload,
            };
            generator::generate(&spec, with_peers, true)?
        }
    })
}

/// Reads and decodes a command file completely before anything is timed.
fn load(path: &Path, warmup: usize, with_peers: bool) -> anyhow::Result<Prepared> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut commands = Vec::new();
    for (index, line) in BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("reading {}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let stamped = exchange_codec::decode_command(&line)
            .with_context(|| format!("{}:{}: not a command", path.display(), index + 1))?;
        commands.push(stamped);
    }
    let mut scratch = Scratch::new(with_peers, commands.len().saturating_sub(warmup));
    let bar = progress_bar(commands.len(), "preparing");
    for (i, stamped) in commands.into_iter().enumerate() {
        scratch.push(
            stamped,
            if i < warmup {
                Phase::Setup
            } else {
                Phase::Timed
            },
        );
        if i.is_multiple_of(65_536) {
            bar.set_position(i as u64);
        }
    }
    bar.finish_and_clear();
    Ok(scratch.finish())
}

fn write_commands(prepared: &Prepared, path: &Path) -> anyhow::Result<()> {
    let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut out = BufWriter::new(file);
    let mut line = Vec::with_capacity(512);
    for stamped in prepared.setup.iter().chain(&prepared.timed) {
        line.clear();
        encode_command(stamped, &mut line);
        line.push(b'\n');
        out.write_all(&line)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    out.flush()
        .with_context(|| format!("writing {}", path.display()))
}

/// The core as a measured subject.
struct Core {
    engine: Engine,
    events: Vec<Event>,
}

impl Core {
    fn new(base: &Engine) -> Self {
        Core {
            engine: base.clone(),
            events: Vec::with_capacity(64),
        }
    }
}

impl Subject for Core {
    type Op = Stamped;

    #[inline]
    fn apply(&mut self, op: &Stamped) {
        self.engine.apply(op, &mut self.events);
    }

    #[inline]
    fn after(&mut self) {
        self.events.clear();
    }

    #[inline]
    fn prefetch(&self, next: &Stamped) {
        self.engine.prefetch(next);
    }
}

/// Every subject's latency pass, then their throughput passes in turn:
/// our figures and the peers'.
fn measure(args: &EngineArgs, prepared: &Prepared) -> anyhow::Result<(Figures, Vec<Figures>)> {
    #[cfg_attr(not(feature = "peer-books"), allow(unused_mut))]
    let mut subjects: Vec<(Measured, Pass<'_>)> =
        vec![(core_latency(prepared)?, Box::new(|| core_pass(prepared)))];
    if !cfg!(feature = "peer-books") && args.peer != PeerChoice::None {
        eprintln!(
            "the peer order books are not in this build; \
             for them: cargo build --release -p exchange --features peer-books"
        );
    }
    #[cfg(feature = "peer-books")]
    if args.peer.includes_lobster() {
        subjects.push(peer_subject(
            prepared,
            "lobster 0.7",
            Lobster::new,
            Lobster::finish,
        )?);
    }
    #[cfg(feature = "peer-books")]
    if args.peer.includes_orderbook_rs() {
        subjects.push(peer_subject(
            prepared,
            "orderbook-rs 0.15",
            OrderbookRs::new,
            OrderbookRs::finish,
        )?);
    }
    for _ in 0..args.passes {
        for (subject, pass) in &mut subjects {
            subject.passes.push(pass());
        }
    }
    let mut figures = subjects.into_iter().map(|(subject, _)| subject.figures());
    let ours = figures
        .next()
        .context("our figures are always measured first")?;
    Ok((ours, figures.collect()))
}

/// One throughput pass of a subject, on a fresh copy of its start.
type Pass<'a> = Box<dyn FnMut() -> timing::Span + 'a>;

/// A subject's latency pass and memory, and its throughput passes as
/// they come.
struct Measured {
    name: &'static str,
    timed: timing::Timed,
    memory: Memory,
    peer: Option<PeerSummary>,
    passes: Vec<timing::Span>,
}

impl Measured {
    fn figures(self) -> Figures {
        Figures::new(self.name, &self.timed, &self.passes, self.memory, self.peer)
    }
}

/// Our latency pass, checked to end in the state the scratch run did.
fn core_latency(prepared: &Prepared) -> anyhow::Result<Measured> {
    timing::reset_peak_rss();
    let (rss_before, _) = timing::rss()?;
    let mut core = Core::new(&prepared.base);
    let timed = timing::run_timed(&mut core, &prepared.timed, "exchange: latency")?;
    // The scratch run and the timed run must have done the same work.
    let hash = core.engine.state_hash();
    if hash != prepared.final_hash {
        anyhow::bail!(
            "the timed run ended in state {hash}, the scratch run in {}",
            prepared.final_hash
        );
    }
    let (_, peak) = timing::rss()?;
    Ok(Measured {
        name: "exchange (ours)",
        timed,
        memory: Memory { rss_before, peak },
        peer: None,
        passes: Vec::new(),
    })
}

fn core_pass(prepared: &Prepared) -> timing::Span {
    let mut core = Core::new(&prepared.base);
    timing::run_untimed(&mut core, &prepared.timed, "exchange: throughput")
}

/// A peer's latency pass, and its throughput pass to take in turn.
#[cfg(feature = "peer-books")]
fn peer_subject<'a, P: Subject<Op = PeerOp> + 'static>(
    prepared: &'a Prepared,
    name: &'static str,
    new: fn() -> P,
    finish: fn(&mut P) -> PeerSummary,
) -> anyhow::Result<(Measured, Pass<'a>)> {
    timing::reset_peak_rss();
    let (rss_before, _) = timing::rss()?;
    let mut peer = new();
    timing::run_setup(&mut peer, &prepared.setup_peer);
    let timed = timing::run_timed(&mut peer, &prepared.timed_peer, &format!("{name}: latency"))?;
    let summary = finish(&mut peer);
    let (_, peak) = timing::rss()?;
    let measured = Measured {
        name,
        timed,
        memory: Memory { rss_before, peak },
        peer: Some(summary),
        passes: Vec::new(),
    };
    Ok((measured, Box::new(move || peer_pass(prepared, name, new))))
}

#[cfg(feature = "peer-books")]
fn peer_pass<P: Subject<Op = PeerOp>>(
    prepared: &Prepared,
    name: &str,
    new: fn() -> P,
) -> timing::Span {
    let mut peer = new();
    timing::run_setup(&mut peer, &prepared.setup_peer);
    timing::run_untimed(
        &mut peer,
        &prepared.timed_peer,
        &format!("{name}: throughput"),
    )
}
