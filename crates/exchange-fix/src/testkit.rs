//! Test helpers: a real core engine to produce events, and FIX messages
//! written in the `tag=value|` notation.

use exchange_core::Engine;
pub use exchange_testkit::engine::dec;
use exchange_testkit::engine::{asset, btc_usd};
use exchange_types::{AddInstrument, Command, Event, Stamped, Transfer};

use crate::frame::seal;
use crate::message::Message;
use crate::time;

pub const T0: u64 = 1_700_000_000_000_000_000;

/// The exchange's core with BTC-USD listed (tick 0.01, lot 0.0001, maker
/// -1 bps, taker 5 bps) and accounts 1, 2 and 3 funded.
pub struct Core {
    engine: Engine,
    ts: u64,
}

impl Core {
    pub fn new() -> Core {
        let mut core = Core {
            engine: Engine::new(),
            ts: T0,
        };
        // Taking hidden orders worth 1,000 USD or more.
        core.apply(Command::AddInstrument(Box::new(AddInstrument {
            hidden_min_notional: Some(dec("1000")),
            ..btc_usd()
        })));
        for account in [1, 2, 3] {
            for (code, amount) in [("USD", "1000000"), ("BTC", "100")] {
                core.apply(Command::Deposit(Transfer {
                    account,
                    asset: asset(code),
                    amount: dec(amount),
                }));
            }
        }
        core
    }

    pub fn apply(&mut self, command: Command) -> Vec<Event> {
        self.ts += 1_000;
        let mut events = Vec::new();
        self.engine.apply(
            &Stamped {
                ts: self.ts,
                command,
            },
            &mut events,
        );
        events
    }
}

/// A message from CLIENT to EX with this type and `|`-separated body.
pub fn fix(msg_type: &str, seq: u64, body: &str) -> Message {
    let fields = format!(
        "35={msg_type}|49=CLIENT|56=EX|34={seq}|52={}|{body}",
        time::format(T0)
    );
    Message::parse(seal(&fields.replace('|', "\x01").into_bytes()))
}
