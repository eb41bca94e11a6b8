//! Test helpers: a real core engine to produce events, and FIX messages
//! written in the `tag=value|` notation.

use exchange_core::Engine;
use exchange_types::{AddInstrument, AssetCode, Command, Dec, Event, Stamped, Symbol, Transfer};

use crate::frame::seal;
use crate::message::Message;
use crate::time;

pub const T0: u64 = 1_700_000_000_000_000_000;

pub fn dec(text: &str) -> Dec {
    Dec::parse(text).expect("test decimal")
}

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
        core.apply(Command::AddInstrument(Box::new(AddInstrument {
            symbol: Symbol::new("BTC-USD").expect("symbol"),
            base: AssetCode::new("BTC").expect("asset"),
            quote: AssetCode::new("USD").expect("asset"),
            tick_size: dec("0.01"),
            lot_size: dec("0.0001"),
            min_qty: None,
            max_qty: None,
            collar_bps: None,
            reference_price: None,
            maker_fee_bps: -1,
            taker_fee_bps: 5,
        })));
        for account in [1, 2, 3] {
            for (asset, amount) in [("USD", "1000000"), ("BTC", "100")] {
                core.apply(Command::Deposit(Transfer {
                    account,
                    asset: AssetCode::new(asset).expect("asset"),
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
