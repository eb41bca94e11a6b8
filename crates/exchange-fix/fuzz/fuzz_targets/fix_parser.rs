//! Arbitrary bytes as a FIX connection's stream and as a message body:
//! framing, field splitting, validation, the session state machine and the
//! order-entry translation must never panic (see `exchange_fix::fuzzing`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    exchange_fix::fuzzing::exercise(data);
});
