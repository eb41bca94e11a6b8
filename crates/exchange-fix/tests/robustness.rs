//! Malformed input never panics: the fuzz target's regression corpus, and
//! property tests that feed random and mutated bytes through the parser,
//! the session and order entry (the same checks as `cargo fuzz run
//! fix_parser`, on the stable toolchain CI has).

use std::path::PathBuf;

use exchange_fix::fuzzing::{exercise, exercise_body, exercise_stream};
use proptest::prelude::*;

fn corpus() -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/fix_parser");
    let mut files: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.expect("corpus entry").path();
            let bytes = std::fs::read(&path).expect("corpus file");
            (path, bytes)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn regression_corpus_runs_clean() {
    let files = corpus();
    assert!(
        files.len() >= 20,
        "the corpus is missing: {} files",
        files.len()
    );
    for (path, bytes) in &files {
        let run = std::panic::catch_unwind(|| exercise(bytes));
        assert!(run.is_ok(), "corpus file {} panicked", path.display());
    }
}

/// One of the corpus's well-formed messages, to mutate.
fn seed() -> impl Strategy<Value = Vec<u8>> {
    let seeds: Vec<Vec<u8>> = corpus().into_iter().map(|(_, bytes)| bytes).collect();
    proptest::sample::select(seeds)
}

#[derive(Clone, Debug)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Mutation::Flip(at, b)),
        (
            any::<usize>(),
            prop_oneof![Just(1u8), Just(b'='), Just(b'0'), any::<u8>()]
        )
            .prop_map(|(at, b)| Mutation::Insert(at, b)),
        any::<usize>().prop_map(Mutation::Delete),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let len = bytes.len().max(1);
        match *m {
            Mutation::Flip(at, b) => {
                if let Some(byte) = bytes.get_mut(at % len) {
                    *byte ^= b | 1;
                }
            }
            Mutation::Insert(at, b) => bytes.insert((at % len).min(bytes.len()), b),
            Mutation::Delete(at) => {
                if !bytes.is_empty() {
                    bytes.remove(at % len);
                }
            }
            Mutation::Truncate(at) => bytes.truncate(at % len),
        }
    }
    bytes
}

/// Fields a gateway reads, with values of every shape.
fn field() -> impl Strategy<Value = Vec<u8>> {
    let tag = prop_oneof![
        proptest::sample::select(vec![
            7u32, 11, 16, 18, 34, 35, 36, 37, 38, 40, 41, 43, 44, 45, 49, 52, 54, 55, 56, 59, 60,
            98, 108, 112, 122, 123, 141, 371, 373, 530, 554, 7928, 9, 8, 10
        ]),
        any::<u32>(),
    ];
    let value = prop_oneof![
        "[0-9]{1,20}",
        "-?[0-9]{0,12}\\.?[0-9]{0,12}",
        "[A-Za-z]{1,3}",
        "(19|20)[0-9]{6}-[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?",
        "[ -~]{0,40}",
        Just(String::new()),
    ];
    (tag, value).prop_map(|(tag, value)| format!("{tag}={value}\x01").into_bytes())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        exercise(&bytes);
    }

    #[test]
    fn mutated_messages_never_panic(
        bytes in seed(),
        mutations in proptest::collection::vec(mutation(), 1..6),
    ) {
        exercise_stream(&apply(bytes, &mutations));
    }

    #[test]
    fn random_field_lists_reach_the_session_and_never_panic(
        msg_type in proptest::sample::select(
            vec!["0", "1", "2", "3", "4", "5", "A", "D", "F", "G", "q", "V", "ZZ"],
        ),
        seq in 0u64..5,
        fields in proptest::collection::vec(field(), 0..14),
    ) {
        let mut body = format!(
            "35={msg_type}\x0149=CLIENT\x0156=EX\x01\
             34={seq}\x0152=20231114-22:13:20\x01"
        )
        .into_bytes();
        for f in fields {
            body.extend(f);
        }
        exercise_body(&body);
    }
}
