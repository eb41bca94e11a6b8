//! The scheduler in a three-node cluster: the leader stops just before the
//! open, and the committed log still holds every phase change of the day
//! exactly once, in order.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use exchange_node::cluster_key::ClusterKey;
use exchange_node::master_key::MasterKey;
use exchange_node::recovery::{self, journal_dir, snapshot_dir};
use exchange_node::replication::{decode_batch, ClusterSettings};
use exchange_node::schedule::{self, ScheduleConfig};
use exchange_node::scheduler::{self, ManualClock, SchedulerConfig};
use exchange_node::{Applied, Handle, LogEntry, Pipeline, PipelineConfig};
use exchange_replication::{CommittedKind, ReplicaNode};
use exchange_types::{Command, Phase, Symbol};
use tokio::sync::{broadcast, watch};

struct Node {
    pipeline: Pipeline,
    stop: watch::Sender<bool>,
    scheduler: tokio::task::JoinHandle<()>,
}

impl Node {
    async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.scheduler.await;
        tokio::task::spawn_blocking(move || self.pipeline.join())
            .await
            .expect("join");
    }
}

fn free_port() -> SocketAddr {
    let socket = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    socket.local_addr().expect("addr")
}

fn settings(id: u64, peers: &BTreeMap<u64, SocketAddr>) -> ClusterSettings {
    ClusterSettings {
        node_id: id,
        peers: peers
            .iter()
            .map(|(id, addr)| (*id, (*addr).into()))
            .collect(),
        tick: Duration::from_millis(20),
        election_ticks: 10,
        heartbeat_ticks: 2,
        join: false,
        preallocate_journal: false,
        key: Some(ClusterKey::from_bytes([3; 32])),
    }
}

fn xetra() -> ScheduleConfig {
    ScheduleConfig {
        name: "xetra".into(),
        symbols: vec!["SAP-EUR".into()],
        time_zone: Some("Europe/Berlin".into()),
        trading_days: Some(
            ["mon", "tue", "wed", "thu", "fri"]
                .map(String::from)
                .to_vec(),
        ),
        pre_open: Some("08:00".into()),
        open: Some("09:00".into()),
        closing_call: Some("17:30".into()),
        close: Some("17:35".into()),
        closed: Some("20:00".into()),
        holidays: Vec::new(),
        cycle: None,
    }
}

fn berlin(text: &str) -> u64 {
    let civil: jiff::civil::DateTime = text.parse().unwrap();
    let zoned = civil
        .to_zoned(jiff::tz::TimeZone::get("Europe/Berlin").unwrap())
        .unwrap();
    u64::try_from(zoned.timestamp().as_nanosecond()).unwrap()
}

fn start(dir: &Path, id: u64, peers: &BTreeMap<u64, SocketAddr>, clock: &Arc<ManualClock>) -> Node {
    let config = PipelineConfig {
        submit_queue: 1_024,
        core_queue: 64,
        events_buffer: 1_024,
        snapshot_every: 0,
        snapshot_dir: dir.join("unused"),
        master_key: MasterKey::from_bytes([7; 32]),
    };
    let (pipeline, _) =
        recovery::start_cluster(dir, config, &settings(id, peers)).expect("start node");
    let (stop, stopping) = watch::channel(false);
    let scheduler = scheduler::spawn(
        pipeline.handle.clone(),
        SchedulerConfig {
            schedules: schedule::build(&[xetra()]).expect("schedule"),
            // Ticks would be entries too; this test counts phase changes.
            tick_interval: None,
            poll: Duration::from_millis(20),
        },
        clock.clone(),
        stopping,
    );
    Node {
        pipeline,
        stop,
        scheduler,
    }
}

/// Waits (a minute at most, or the cluster is broken) for `check` on
/// whichever node leads and has caught up.
async fn on_leader<T>(
    nodes: &[Option<Node>],
    mut check: impl FnMut(&Handle) -> Option<T>,
    what: &str,
) -> T {
    for _ in 0..3_000 {
        for node in nodes.iter().flatten() {
            let handle = &node.pipeline.handle;
            if handle.is_leader() && handle.settled() {
                if let Some(found) = check(handle) {
                    return found;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no leader reached: {what}");
}

async fn phase_on_leader(nodes: &[Option<Node>], symbol: Symbol, phase: Phase) {
    for _ in 0..3_000 {
        for node in nodes.iter().flatten() {
            let handle = &node.pipeline.handle;
            if handle.is_leader() {
                if let Ok(view) = handle.phases().await {
                    if view.phases.get(&symbol) == Some(&phase) {
                        return;
                    }
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the leader never reached {phase:?}");
}

/// Every `set_phase` in a node's committed log, with its time.
fn logged_phases(dir: &Path, id: u64, peers: &BTreeMap<u64, SocketAddr>) -> Vec<(u64, Phase)> {
    let (node, _, _) = ReplicaNode::open(
        &journal_dir(dir),
        &snapshot_dir(dir),
        &settings(id, peers).replica_config(),
    )
    .expect("open log");
    let mut out = Vec::new();
    for committed in node.read_committed(1, usize::MAX).expect("read log") {
        if let CommittedKind::Normal(data) = committed.kind {
            if data.is_empty() {
                continue;
            }
            for entry in decode_batch(&data).expect("batch") {
                if let LogEntry::Core(stamped) = entry {
                    if let Command::SetPhase { symbol, phase } = stamped.command {
                        assert_eq!(symbol.as_str(), "SAP-EUR");
                        out.push((stamped.ts, phase));
                    }
                }
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_stopped_before_the_open_leaves_each_change_logged_once_in_order() {
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().expect("dir")).collect();
    let peers: BTreeMap<u64, SocketAddr> = (1..=3).map(|id| (id, free_port())).collect();
    // A Tuesday morning before the pre-open.
    let clock = Arc::new(ManualClock::new(berlin("2026-12-01T07:00")));
    let mut nodes: Vec<Option<Node>> = (1..=3)
        .map(|id| Some(start(dirs[id - 1].path(), id as u64, &peers, &clock)))
        .collect();
    let symbol = Symbol::new("SAP-EUR").unwrap();

    // Not listed yet: the scheduler waits for it.
    let leader = on_leader(&nodes, |handle| Some(handle.clone()), "a leader").await;
    let mut listing: exchange_types::Stamped = exchange_codec::decode_command(concat!(
        r#"{"cmd":"add_instrument","symbol":"SAP-EUR","base":"SAP","quote":"EUR","#,
        r#""tick_size":"0.01","lot_size":"1","maker_fee_bps":0,"taker_fee_bps":0}"#,
    ))
    .expect("listing");
    listing.ts = 0;
    leader
        .submit(LogEntry::Core(listing))
        .await
        .expect("listed");
    drop(leader);
    // Listed at night: continuous (every instrument's start) to closed.
    phase_on_leader(&nodes, symbol, Phase::Closed).await;
    clock.set(berlin("2026-12-01T08:30"));
    phase_on_leader(&nodes, symbol, Phase::PreOpen).await;

    // The leader stops a moment before the open, and the clock passes it
    // while the others elect a new one.
    let index = nodes
        .iter()
        .position(|n| n.as_ref().is_some_and(|n| n.pipeline.handle.is_leader()))
        .expect("a leader");
    clock.set(berlin("2026-12-01T08:59:59"));
    nodes[index].take().expect("leader").stop().await;
    clock.set(berlin("2026-12-01T09:00:01"));
    phase_on_leader(&nodes, symbol, Phase::Continuous).await;
    // And through the close, in one go.
    clock.set(berlin("2026-12-01T17:40"));
    phase_on_leader(&nodes, symbol, Phase::PostClose).await;

    for node in nodes.into_iter().flatten() {
        node.stop().await;
    }
    let logs: Vec<Vec<(u64, Phase)>> = (1..=3)
        .map(|id| logged_phases(dirs[id - 1].path(), id as u64, &peers))
        .collect();
    let longest = logs.iter().max_by_key(|log| log.len()).expect("logs");
    use Phase::*;
    let phases: Vec<Phase> = longest.iter().map(|(_, phase)| *phase).collect();
    assert_eq!(
        phases,
        [
            ClosingCall,
            ClosingAuction,
            Closed,
            PreOpen,
            OpeningAuction,
            ClosingCall,
            ClosingAuction,
        ],
        "each change once, in the day's order; none the core made itself (an \
         auction settles in continuous trading or post-close)"
    );
    // The log's clock stamps them, and never runs backwards.
    assert!(longest.windows(2).all(|pair| pair[0].0 <= pair[1].0));
    // The stopped leader's log is the start of the same log.
    for log in &logs {
        assert_eq!(log[..], longest[..log.len()]);
    }
    assert_eq!(
        logs[index].len(),
        4,
        "the old leader stopped after the pre-open"
    );
}

/// An idle leader logs a tick an interval after the last entry, no more
/// often; a leader with no schedules still does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_leader_ticks_once_an_interval_at_most() {
    let dir = tempfile::tempdir().expect("dir");
    let config = PipelineConfig {
        submit_queue: 1_024,
        core_queue: 64,
        events_buffer: 1_024,
        snapshot_every: 0,
        snapshot_dir: dir.path().join("unused"),
        master_key: MasterKey::from_bytes([7; 32]),
    };
    let (pipeline, _) = recovery::start(dir.path(), config).expect("start");
    let mut applied = pipeline.handle.subscribe();
    let interval = Duration::from_millis(40);
    let started = std::time::Instant::now();
    let (stop, stopping) = watch::channel(false);
    let task = scheduler::spawn(
        pipeline.handle.clone(),
        SchedulerConfig {
            schedules: Vec::new(),
            tick_interval: Some(interval),
            poll: Duration::from_millis(5),
        },
        Arc::new(scheduler::SystemClock),
        stopping,
    );
    let mut ticks = Vec::new();
    while ticks.len() < 3 {
        let entry = tokio::time::timeout(Duration::from_secs(60), applied.recv())
            .await
            .expect("a tick within a minute")
            .expect("applied");
        assert_eq!(entry.command, "tick");
        assert!(entry.events.is_empty());
        ticks.push(entry.ts);
    }
    let elapsed = started.elapsed();
    let _ = stop.send(true);
    let _ = task.await;
    assert!(ticks.windows(2).all(|pair| pair[0] < pair[1]));
    // However slow the machine, never more than one per interval.
    let most = elapsed.as_millis() / interval.as_millis() + 1;
    assert!(
        ticks.len() as u128 <= most,
        "{} ticks in {elapsed:?}",
        ticks.len()
    );
    tokio::task::spawn_blocking(move || pipeline.join())
        .await
        .expect("join");
}

/// The core leaves the schedule's phases by itself: a halt is the
/// operator's and the scheduler waits it out (logging no step that would
/// end it), and a resume reopens into continuous trading, from where the
/// scheduler takes the day on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_halt_holds_the_schedule_until_the_resume() {
    let dir = tempfile::tempdir().expect("dir");
    let config = PipelineConfig {
        submit_queue: 1_024,
        core_queue: 64,
        events_buffer: 1_024,
        snapshot_every: 0,
        snapshot_dir: dir.path().join("unused"),
        master_key: MasterKey::from_bytes([7; 32]),
    };
    let (pipeline, _) = recovery::start(dir.path(), config).expect("start");
    let handle = pipeline.handle.clone();
    let mut applied = handle.subscribe();
    // A Tuesday in continuous trading: a new listing is where it should be.
    let clock = Arc::new(ManualClock::new(berlin("2026-12-01T10:00")));
    let (stop, stopping) = watch::channel(false);
    let task = scheduler::spawn(
        handle.clone(),
        SchedulerConfig {
            schedules: schedule::build(&[xetra()]).expect("schedule"),
            // The ticks show that rounds ran.
            tick_interval: Some(Duration::from_millis(10)),
            poll: Duration::from_millis(5),
        },
        clock.clone(),
        stopping,
    );
    let symbol = Symbol::new("SAP-EUR").unwrap();
    let command = |command| LogEntry::Core(exchange_types::Stamped { ts: 0, command });
    list_sap_eur(&handle).await;
    handle
        .submit(command(Command::Halt { symbol }))
        .await
        .expect("halted");
    // The closing call falls due while halted.
    clock.set(berlin("2026-12-01T17:31"));
    let moved = handle.position().await.expect("position").applied_index;
    let commands = commands_through_a_round_after(&mut applied, moved).await;
    assert!(
        !commands.contains(&"set_phase"),
        "nothing logged while halted: {commands:?}"
    );
    assert_eq!(
        handle.phases().await.expect("phases").phases.get(&symbol),
        Some(&Phase::Halted)
    );
    // The resume reopens into continuous trading, and the closing call
    // follows.
    handle
        .submit(command(Command::Resume { symbol }))
        .await
        .expect("resumed");
    let set = first_set_phase(&mut applied).await;
    assert!(
        matches!(
            set[0].first().map(|e| &e.kind),
            Some(exchange_types::EventKind::Phase(p)) if p.phase == Phase::ClosingCall
        ),
        "{set:?}"
    );
    let _ = stop.send(true);
    let _ = task.await;
    // The pipeline stops once no handle is left.
    drop(handle);
    tokio::task::spawn_blocking(move || pipeline.join())
        .await
        .expect("join");
}

/// Lists SAP-EUR with the log's clock at zero.
async fn list_sap_eur(handle: &Handle) {
    let mut listing: exchange_types::Stamped = exchange_codec::decode_command(concat!(
        r#"{"cmd":"add_instrument","symbol":"SAP-EUR","base":"SAP","quote":"EUR","#,
        r#""tick_size":"0.01","lot_size":"1","maker_fee_bps":0,"taker_fee_bps":0}"#,
    ))
    .expect("listing");
    listing.ts = 0;
    handle
        .submit(LogEntry::Core(listing))
        .await
        .expect("listed");
}

/// The commands applied until a scheduler round has run that read the
/// clock after it moved (applied index `moved`).
async fn commands_through_a_round_after(
    applied: &mut broadcast::Receiver<Arc<Applied>>,
    moved: u64,
) -> Vec<&'static str> {
    let mut commands = Vec::new();
    let mut ticks = 0;
    // A tick applied after the clock moved was logged by a loop that then
    // starts another round, which reads the new time: the second such
    // tick follows that round.
    while ticks < 2 {
        let entry = tokio::time::timeout(Duration::from_secs(60), applied.recv())
            .await
            .expect("an entry within a minute")
            .expect("applied");
        if entry.command == "tick" && entry.index > moved {
            ticks += 1;
        }
        commands.push(entry.command);
    }
    commands
}

/// The events of the next `set_phase` applied, alone in a list.
async fn first_set_phase(
    applied: &mut broadcast::Receiver<Arc<Applied>>,
) -> Vec<Vec<exchange_types::Event>> {
    let mut set = Vec::new();
    while set.is_empty() {
        let entry = tokio::time::timeout(Duration::from_secs(60), applied.recv())
            .await
            .expect("an entry within a minute")
            .expect("applied");
        if entry.command == "set_phase" {
            set.push(entry.events.clone());
        }
    }
    set
}
