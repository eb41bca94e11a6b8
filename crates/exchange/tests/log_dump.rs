//! `exchange log dump`: a journal, whose commands are binary, printed as
//! the JSON Lines `exchange replay` reads; and a journal written when
//! commands were JSON lines, printed the same way.

use std::path::Path;
use std::process::{Command, Output};

use exchange_testkit::{limit, Server};

const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

fn run(args: &[&str], stdin_file: Option<&Path>) -> Output {
    let mut command = Command::new(EXCHANGE);
    command.args(args);
    if let Some(file) = stdin_file {
        command.stdin(std::fs::File::open(file).expect("open input"));
    }
    command.output().expect("run exchange")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Dumps the core's commands of `data` and replays them: every line must
/// be a command `exchange replay` applies.
fn dump_and_replay(data: &Path, scratch: &Path) -> String {
    let dumped = run(
        &["log", "dump", "--core-only", data.to_str().unwrap()],
        None,
    );
    assert!(dumped.status.success(), "{}", text(&dumped.stderr));
    let lines = text(&dumped.stdout);
    let file = scratch.join("dump.jsonl");
    std::fs::write(&file, &lines).expect("write dump");
    let replayed = run(&["replay", "-"], Some(&file));
    let stderr = text(&replayed.stderr);
    assert!(replayed.status.success(), "{stderr}");
    let count = lines.lines().count();
    assert!(
        stderr.contains(&format!(
            "{count} lines read, {count} commands applied, 0 errors"
        )),
        "{stderr}"
    );
    lines
}

#[test]
fn a_binary_journal_dumps_as_json_lines_that_replay() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let mut server = Server::start(EXCHANGE, &data);
    let (alice, bob) = (server.api.funded_account(), server.api.funded_account());
    server
        .api
        .place(&alice, &limit("buy", "59990", "0.5", "dump-a1"));
    server
        .api
        .place(&bob, &limit("sell", "59990", "0.2", "dump-b1"));
    assert!(server.stop_with(libc::SIGTERM).success());

    let journal: Vec<u8> = exchange_testkit::segments(&data.join("journal"))
        .iter()
        .flat_map(|segment| std::fs::read(segment).expect("read segment"))
        .collect();
    // API-key entries stay JSON; the core's commands are binary.
    for json in [&br#""cmd":"place""#[..], br#""cmd":"deposit""#] {
        assert!(
            !journal.windows(json.len()).any(|w| w == json),
            "commands are binary in the journal"
        );
    }
    assert!(journal.windows(7).any(|w| w == b"dump-a1"));

    let lines = dump_and_replay(&data, dir.path());
    for order in ["dump-a1", "dump-b1"] {
        assert!(
            lines
                .lines()
                .any(|l| l.contains(r#""cmd":"place""#) && l.contains(order)),
            "{order} in\n{lines}"
        );
    }
    let with_keys = run(&["log", "dump", data.to_str().unwrap()], None);
    assert!(text(&with_keys.stdout).contains(r#""cmd":"create_account""#));
}

#[test]
fn a_journal_of_json_lines_dumps_the_same_way() {
    let dir = tempfile::tempdir().expect("temp dir");
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../exchange-node/tests/fixtures/json-journal");
    let lines = dump_and_replay(&fixture, dir.path());
    assert!(lines.lines().any(|l| l.contains(r#""cmd":"place""#)));
    let missing = run(
        &["log", "dump", dir.path().join("none").to_str().unwrap()],
        None,
    );
    assert!(!missing.status.success());
    assert!(text(&missing.stderr).contains("no journal directory"));
}
