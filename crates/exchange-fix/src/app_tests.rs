//! FIX in, the real core, FIX out: the application layer end to end,
//! without the session layer or sockets.

use super::*;
use crate::inbound::{translate, Inbound};
use crate::message::Message;
use crate::testkit::{fix, Core};

/// A trading session for `account` over a shared core.
struct Client {
    app: App,
    seq: u64,
}

impl Client {
    fn new(account: AccountId) -> Client {
        Client {
            app: App::new(Role::Trading { account }),
            seq: 1,
        }
    }

    /// Sends one message; returns this session's answers. `others` see the
    /// same entry as not theirs.
    fn send(
        &mut self,
        core: &mut Core,
        msg_type: &str,
        body: &str,
        others: &mut [&mut App],
    ) -> Vec<Outgoing> {
        self.seq += 1;
        let message: Message = fix(msg_type, self.seq, body);
        match translate(&message, &self.app.role, 0) {
            Inbound::Submit(submission) => {
                let events = core.apply(submission.command);
                for other in others.iter_mut() {
                    other.on_applied(self.seq, &events, None, 0);
                }
                self.app
                    .on_applied(self.seq, &events, Some(&submission.request), 0)
            }
            Inbound::Reply(out) => vec![out],
            Inbound::Reject(problem) => panic!("session reject: {problem:?}"),
            Inbound::Status => vec![self.app.order_status(&message, 0)],
            Inbound::SecurityStatus => panic!("not an order-entry message"),
        }
    }
}

fn get(out: &Outgoing, tag: u32) -> String {
    out.get(tag).unwrap_or_default()
}

fn summary(out: &Outgoing) -> (String, String, String) {
    (out.msg_type.to_string(), get(out, 150), get(out, 39))
}

const ORDER: &str = "55=BTC-USD|60=20240101-00:00:00|40=2|";

#[test]
fn an_order_is_acknowledged_with_its_fields() {
    let mut core = Core::new();
    let mut alice = Client::new(1);
    let out = alice.send(
        &mut core,
        "D",
        &format!("11=a1|54=1|38=0.5|44=100.25|{ORDER}"),
        &mut [],
    );
    assert_eq!(out.len(), 1);
    let ack = &out[0];
    assert_eq!(summary(ack), ("8".into(), "0".into(), "0".into()));
    assert_eq!(
        (get(ack, 11), get(ack, 54), get(ack, 38), get(ack, 44)),
        ("a1".into(), "1".into(), "0.5".into(), "100.25".into())
    );
    assert_eq!(
        (get(ack, 151), get(ack, 14), get(ack, 6), get(ack, 59)),
        ("0.5".into(), "0".into(), "0".into(), "1".into())
    );
    assert!(get(ack, 37).parse::<u64>().is_ok());
    assert_eq!(get(ack, 1), "1");
}

#[test]
fn core_refusals_map_to_ord_rej_reason_and_text() {
    let mut core = Core::new();
    let mut alice = Client::new(1);
    let out = alice.send(
        &mut core,
        "D",
        &format!("11=a1|54=1|38=1000|44=100000|{ORDER}"),
        &mut [],
    );
    let reject = &out[0];
    assert_eq!(summary(reject), ("8".into(), "8".into(), "8".into()));
    assert_eq!(
        (get(reject, 103), get(reject, 37)),
        ("3".into(), "NONE".into())
    );
    assert!(
        get(reject, 58).starts_with("insufficient_funds (201)"),
        "{}",
        get(reject, 58)
    );
    let off_tick = alice.send(
        &mut core,
        "D",
        &format!("11=a2|54=1|38=1|44=100.001|{ORDER}"),
        &mut [],
    );
    assert!(get(&off_tick[0], 58).starts_with("price_not_on_tick"));
    let unknown = alice.send(
        &mut core,
        "D",
        "11=a3|54=1|38=1|44=1|55=NOPE|60=20240101-00:00:00|40=2|",
        &mut [],
    );
    assert_eq!(get(&unknown[0], 103), "1");
}

#[test]
fn fills_reach_both_sides_with_cumulative_quantity_and_average_price() {
    let mut core = Core::new();
    let mut maker = Client::new(1);
    let mut taker = Client::new(2);
    maker.send(
        &mut core,
        "D",
        &format!("11=m1|54=2|38=1|44=100|{ORDER}"),
        &mut [&mut taker.app],
    );
    maker.send(
        &mut core,
        "D",
        &format!("11=m2|54=2|38=1|44=101|{ORDER}"),
        &mut [&mut taker.app],
    );
    let out = taker.send(
        &mut core,
        "D",
        &format!("11=t1|54=1|38=1.5|44=101|{ORDER}"),
        &mut [&mut maker.app],
    );
    let kinds: Vec<(String, String, String)> = out.iter().map(summary).collect();
    assert_eq!(
        kinds,
        vec![
            ("8".into(), "0".into(), "0".into()),
            ("8".into(), "F".into(), "1".into()),
            ("8".into(), "F".into(), "2".into())
        ]
    );
    let last = &out[2];
    assert_eq!(
        (get(last, 32), get(last, 31), get(last, 14), get(last, 151)),
        ("0.5".into(), "101".into(), "1.5".into(), "0".into())
    );
    // (1 × 100 + 0.5 × 101) / 1.5 = 100.33333333 (rounded down to 1e-8).
    assert_eq!(get(last, 6), "100.33333333");
    assert_eq!((get(last, 851), get(last, 13)), ("2".into(), "3".into()));
    // Taker fee 5 bps of 50.5 is 0.02525.
    assert_eq!(get(last, 12), "0.02525");
    assert!(
        get(last, 527).parse::<u64>().is_ok(),
        "trade id in SecondaryExecID"
    );
}

#[test]
fn the_maker_sees_its_fills_from_someone_elses_order() {
    let mut core = Core::new();
    let mut maker = Client::new(1);
    maker.send(
        &mut core,
        "D",
        &format!("11=m1|54=2|38=1|44=100|{ORDER}"),
        &mut [],
    );
    let events = apply(
        &mut core,
        2,
        "D",
        &format!("11=t1|54=1|38=0.4|44=100|{ORDER}"),
    );
    let out = maker.app.on_applied(99, &events, None, 0);
    assert_eq!(out.len(), 1, "only the maker's own fill: {out:?}");
    let fill = &out[0];
    assert_eq!(
        (get(fill, 11), get(fill, 150), get(fill, 39), get(fill, 851)),
        ("m1".into(), "F".into(), "1".into(), "1".into())
    );
    assert_eq!(
        (get(fill, 14), get(fill, 151), get(fill, 12)),
        ("0.4".into(), "0.6".into(), "-0.004".into())
    );
}

#[test]
fn cancel_answers_with_the_cancel_requests_ids() {
    let mut core = Core::new();
    let mut alice = Client::new(1);
    alice.send(
        &mut core,
        "D",
        &format!("11=a1|54=1|38=1|44=100|{ORDER}"),
        &mut [],
    );
    let out = alice.send(
        &mut core,
        "F",
        "41=a1|11=x1|55=BTC-USD|54=1|60=20240101-00:00:00|",
        &mut [],
    );
    assert_eq!(out.len(), 1);
    assert_eq!(summary(&out[0]), ("8".into(), "4".into(), "4".into()));
    assert_eq!(
        (get(&out[0], 11), get(&out[0], 41), get(&out[0], 151)),
        ("x1".into(), "a1".into(), "0".into())
    );
    // Too late: the order is closed, and the reject says what it is.
    let again = alice.send(
        &mut core,
        "F",
        "41=a1|11=x2|55=BTC-USD|54=1|60=20240101-00:00:00|",
        &mut [],
    );
    let reject = &again[0];
    assert_eq!(
        (
            reject.msg_type,
            get(reject, 102),
            get(reject, 39),
            get(reject, 434)
        ),
        ("9", "0".into(), "4".into(), "1".into())
    );
    assert!(get(reject, 37).parse::<u64>().is_ok());
    let unknown = alice.send(
        &mut core,
        "F",
        "41=zz|11=x3|55=BTC-USD|54=1|60=20240101-00:00:00|",
        &mut [],
    );
    let reject = &unknown[0];
    assert_eq!(
        (get(reject, 102), get(reject, 39), get(reject, 37)),
        ("1".into(), "8".into(), "NONE".into())
    );
    assert!(get(reject, 58).starts_with("unknown_order"));
}

#[test]
fn replace_reports_new_and_old_ids_and_refusals_are_cancel_rejects() {
    let mut core = Core::new();
    let mut alice = Client::new(1);
    alice.send(
        &mut core,
        "D",
        &format!("11=a1|54=1|38=1|44=100|{ORDER}"),
        &mut [],
    );
    let out = alice.send(
        &mut core,
        "G",
        "41=a1|11=a2|55=BTC-USD|54=1|60=20240101-00:00:00|38=2|40=2|44=99|",
        &mut [],
    );
    let replaced = &out[0];
    assert_eq!(summary(replaced), ("8".into(), "5".into(), "0".into()));
    assert_eq!(
        (
            get(replaced, 11),
            get(replaced, 41),
            get(replaced, 38),
            get(replaced, 44)
        ),
        ("a2".into(), "a1".into(), "2".into(), "99".into())
    );
    let refused = alice.send(
        &mut core,
        "G",
        "41=a2|11=a3|55=BTC-USD|54=1|60=20240101-00:00:00|38=2|40=2|44=99.001|",
        &mut [],
    );
    let reject = &refused[0];
    assert_eq!(
        (
            reject.msg_type,
            get(reject, 434),
            get(reject, 39),
            get(reject, 102)
        ),
        ("9", "2".into(), "0".into(), "99".into())
    );
    assert!(get(reject, 58).starts_with("price_not_on_tick"));
}

#[test]
fn mass_cancel_reports_every_order_then_each_cancel() {
    let mut core = Core::new();
    let mut alice = Client::new(1);
    for id in ["a1", "a2"] {
        alice.send(
            &mut core,
            "D",
            &format!("11={id}|54=1|38=1|44=100|{ORDER}"),
            &mut [],
        );
    }
    let out = alice.send(&mut core, "q", "11=m1|530=7|60=20240101-00:00:00|", &mut []);
    assert_eq!(out.len(), 3);
    assert_eq!(
        (out[0].msg_type, get(&out[0], 531), get(&out[0], 533)),
        ("r", "7".into(), "2".into())
    );
    assert!(out[1..].iter().all(|o| get(o, 150) == "4"));
    let nothing = alice.send(&mut core, "q", "11=m2|530=7|60=20240101-00:00:00|", &mut []);
    assert_eq!((nothing.len(), get(&nothing[0], 533)), (1, "0".into()));
    let unknown = alice.send(
        &mut core,
        "q",
        "11=m3|530=1|55=NOPE|60=20240101-00:00:00|",
        &mut [],
    );
    assert_eq!(
        (get(&unknown[0], 531), get(&unknown[0], 532)),
        ("0".into(), "1".into())
    );
}

/// Applies a FIX message of `account` straight to the core.
fn apply(
    core: &mut Core,
    account: AccountId,
    msg_type: &str,
    body: &str,
) -> Vec<exchange_types::Event> {
    match translate(&fix(msg_type, 2, body), &Role::Trading { account }, 0) {
        Inbound::Submit(submission) => core.apply(submission.command),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_maker_sees_its_fills_from_someone_elses_order_via_drop_copy_too() {
    let mut core = Core::new();
    let mut drop_copy = App::new(Role::DropCopy {
        accounts: vec![1, 2],
    });
    let mut unrelated = App::new(Role::DropCopy { accounts: vec![3] });
    let mut seen = Vec::new();
    for (account, body) in [
        (1, "11=a1|54=2|38=1|44=100|"),
        (2, "11=b1|54=1|38=1|44=100|"),
    ] {
        let events = apply(&mut core, account, "D", &format!("{body}{ORDER}"));
        seen.extend(drop_copy.on_applied(1, &events, None, 0));
        assert!(unrelated.on_applied(1, &events, None, 0).is_empty());
    }
    let view: Vec<(String, String, String, String)> = seen
        .iter()
        .map(|o| (get(o, 1), get(o, 11), get(o, 150), get(o, 39)))
        .collect();
    let row = |a: &str, c: &str, e: &str, s: &str| {
        (a.to_string(), c.to_string(), e.to_string(), s.to_string())
    };
    assert_eq!(
        view,
        vec![
            row("1", "a1", "0", "0"),
            row("2", "b1", "0", "0"),
            row("1", "a1", "F", "2"),
            row("2", "b1", "F", "2")
        ]
    );
}

/// A drop-copy session gets what the trading session of the account
/// gets for a stop: the stop price on its acceptance, the trigger
/// (ExecType L, with the stop price reached), the fill; and an order that
/// expires (ExecType C).
#[test]
fn drop_copy_reports_stop_triggers_and_expiries() {
    let mut core = Core::new();
    let mut drop_copy = App::new(Role::DropCopy { accounts: vec![1] });
    let mut seen = Vec::new();
    for (account, body) in [
        // Account 1's stop sell at 95, a bid at 90 for it to sell into.
        (
            1,
            "11=stop|54=2|38=1|40=3|99=95|55=BTC-USD|60=20240101-00:00:00|",
        ),
        (2, "11=bid|54=1|38=2|44=90|"),
        // A trade at 94 between two other accounts reaches it.
        (3, "11=s94|54=2|38=0.1|44=94|"),
        (2, "11=b94|54=1|38=0.1|44=94|"),
        // Immediate or cancel, below every ask: acknowledged, then expires.
        (1, "11=ioc|54=1|38=1|44=80|59=3|"),
    ] {
        let body = if body.contains("40=") {
            body.to_string()
        } else {
            format!("{body}{ORDER}")
        };
        let events = apply(&mut core, account, "D", &body);
        seen.extend(drop_copy.on_applied(1, &events, None, 0));
    }
    let view: Vec<(String, String, String, String)> = seen
        .iter()
        .map(|o| (get(o, 11), get(o, 150), get(o, 39), get(o, 99)))
        .collect();
    let row = |c: &str, e: &str, s: &str, stop: &str| {
        (
            c.to_string(),
            e.to_string(),
            s.to_string(),
            stop.to_string(),
        )
    };
    assert_eq!(
        view,
        vec![
            row("stop", "0", "0", "95"),
            row("stop", "L", "0", "95"),
            row("stop", "F", "2", ""),
            row("ioc", "0", "0", ""),
            row("ioc", "C", "C", ""),
        ]
    );
    let fill = &seen[2];
    assert_eq!(
        (get(fill, 31), get(fill, 32), get(fill, 40)),
        ("90".into(), "1".into(), "3".into())
    );
}

/// An order refused at the edge by the core's shape rules is answered with
/// the report the core's own refusal gives, field for field, but for the
/// execution id: nothing was logged.
#[test]
fn an_edge_refusal_reads_as_the_core_refusal() {
    let body = format!("11=p1|54=1|38=1|44=100|59=3|18=6|{ORDER}");
    let mut core = Core::new();
    let mut alice = Client::new(1);
    let from_core = alice.send(&mut core, "D", &body, &mut []);
    let mut edge = Client::new(1);
    let message: Message = fix("D", alice.seq, &body);
    let Inbound::Submit(submission) = translate(&message, &edge.app.role, 0) else {
        panic!("an order to submit");
    };
    let exchange_types::Command::Place(place) = &submission.command else {
        panic!("a place");
    };
    let reason = exchange_types::validate::place(place).expect_err("post-only IOC");
    let at_edge = edge.app.refused_at_edge(&submission.request, reason, 0);
    let fields = |out: &Outgoing| [11, 39, 150, 103, 58, 37, 54, 38].map(|tag| get(out, tag));
    assert_eq!(summary(&at_edge), ("8".into(), "8".into(), "8".into()));
    assert_eq!(fields(&at_edge), fields(&from_core[0]));
    assert!(
        get(&at_edge, 58).starts_with("post_only_not_allowed"),
        "{}",
        get(&at_edge, 58)
    );
}
