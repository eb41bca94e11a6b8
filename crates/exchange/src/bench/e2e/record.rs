//! What each connection measured: ack latency (HdrHistogram) and answers
//! by kind, counted only inside the measured window; merged at the end.
//!
//! An answer is *acknowledged* when the command went through the log: the
//! core accepted it, or refused it (404 `unknown_order`, 409, 422: a cancel
//! that found its order already filled is one). Refusals by the gateway
//! (overloaded, rate limited, malformed) never reached the log and are
//! counted apart as errors.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use hdrhistogram::Histogram;

/// Latencies from 1 µs to 60 s at 3 significant figures (nanoseconds).
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1_000, 60_000_000_000, 3).expect("static bounds")
}

/// How the server answered one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome<'a> {
    Ok,
    /// Refused with this code and HTTP status.
    Refused {
        code: &'a str,
        status: u16,
    },
}

/// The part of the run that counts: answers arriving in `[from, to)`.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub from: Instant,
    pub to: Instant,
}

#[derive(Clone)]
pub struct Totals {
    pub latency: Histogram<u64>,
    /// Latency counted from when each order was due rather than sent: the
    /// same as `latency` unless paced, where an order that waited for a
    /// free in-flight slot also counts its wait (coordinated omission).
    pub from_due: Histogram<u64>,
    pub places: u64,
    pub cancels: u64,
    /// The core's refusals by code (acknowledged).
    pub rejects: BTreeMap<String, u64>,
    /// The gateway's refusals by code (not acknowledged).
    pub errors: BTreeMap<String, u64>,
    /// Every acknowledgement's send time and latency, when kept
    /// (`--latency-log`): what the histogram cannot say is *when* the
    /// slow ones happened, together or spread out.
    pub samples: Vec<Sample>,
}

/// One acknowledged order: when it was sent, in microseconds from the
/// window's opening (negative for those sent during the warm-up), and
/// how long its answer took, in microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Sample {
    pub sent_us: i64,
    pub latency_us: u64,
}

impl Default for Totals {
    fn default() -> Self {
        Totals {
            latency: histogram(),
            from_due: histogram(),
            places: 0,
            cancels: 0,
            rejects: BTreeMap::new(),
            errors: BTreeMap::new(),
            samples: Vec::new(),
        }
    }
}

impl Totals {
    pub fn acked(&self) -> u64 {
        self.places + self.cancels
    }

    pub fn merge(&mut self, other: &Totals) {
        // Both histograms have the same bounds, so adding cannot fail.
        let _ = self.latency.add(&other.latency);
        let _ = self.from_due.add(&other.from_due);
        self.places += other.places;
        self.cancels += other.cancels;
        for (code, n) in &other.rejects {
            *self.rejects.entry(code.clone()).or_default() += n;
        }
        for (code, n) in &other.errors {
            *self.errors.entry(code.clone()).or_default() += n;
        }
        self.samples.extend_from_slice(&other.samples);
    }

    /// Writes the samples, oldest first, one `sent_us latency_us` line each.
    pub fn write_samples(&mut self, out: impl std::io::Write) -> std::io::Result<()> {
        use std::io::Write as _;
        self.samples.sort_unstable();
        let mut out = std::io::BufWriter::new(out);
        writeln!(out, "# sent_us latency_us")?;
        for sample in &self.samples {
            writeln!(out, "{} {}", sample.sent_us, sample.latency_us)?;
        }
        out.flush()
    }
}

/// One connection's recorder.
pub struct Recorder {
    window: Window,
    pub totals: Totals,
    /// Every answer, in or out of the window: drives the progress bar.
    answered: Arc<AtomicU64>,
    keep_samples: bool,
}

impl Recorder {
    pub fn new(window: Window, answered: Arc<AtomicU64>) -> Recorder {
        Recorder {
            window,
            totals: Totals::default(),
            answered,
            keep_samples: false,
        }
    }

    /// Keeps every acknowledgement's [`Sample`] too, with room for
    /// `expected` of them: every client's list would otherwise double at
    /// the same moment (they run at the same pace), and the copies showed
    /// up as a 20-80 ms stall in the latencies at 2^13, 2^14 and 2^15
    /// samples each.
    pub fn keeping_samples(mut self, keep: bool, expected: usize) -> Recorder {
        self.keep_samples = keep;
        if keep {
            self.totals.samples.reserve(expected);
        }
        self
    }

    pub fn record(&mut self, sent: Instant, now: Instant, place: bool, outcome: Outcome<'_>) {
        self.record_paced(sent, sent, now, place, outcome);
    }

    /// As [`Recorder::record`], for an order that was due at `due` (paced
    /// runs) and went out at `sent`, no earlier.
    pub fn record_paced(
        &mut self,
        due: Instant,
        sent: Instant,
        now: Instant,
        place: bool,
        outcome: Outcome<'_>,
    ) {
        self.answered.fetch_add(1, Ordering::Relaxed);
        if now < self.window.from || now >= self.window.to {
            return;
        }
        if let Outcome::Refused { code, status } = outcome {
            let acked = matches!(status, 404 | 409 | 422);
            let tally = if acked {
                &mut self.totals.rejects
            } else {
                &mut self.totals.errors
            };
            match tally.get_mut(code) {
                Some(n) => *n += 1,
                None => {
                    tally.insert(code.to_owned(), 1);
                }
            }
            if !acked {
                return;
            }
        }
        if place {
            self.totals.places += 1;
        } else {
            self.totals.cancels += 1;
        }
        let nanos = now.saturating_duration_since(sent).as_nanos() as u64;
        self.totals.latency.saturating_record(nanos.max(1_000));
        // Lateness the warm-up left is forgiven when the window opens (see
        // `Schedule`): an order still in flight then counts from the opening.
        let due = due.max(self.window.from).min(sent);
        let from_due = now.saturating_duration_since(due).as_nanos() as u64;
        self.totals.from_due.saturating_record(from_due.max(1_000));
        if self.keep_samples {
            let sent_us = if sent >= self.window.from {
                sent.duration_since(self.window.from).as_micros() as i64
            } else {
                -(self.window.from.duration_since(sent).as_micros() as i64)
            };
            self.totals.samples.push(Sample {
                sent_us,
                latency_us: nanos / 1_000,
            });
        }
    }
}

/// The text after `"field":` in `text`.
fn after<'a>(text: &'a str, field: &str) -> Option<&'a str> {
    let at = text.find(field)? + field.len();
    Some(&text[at..])
}

fn leading_number(text: &str) -> Option<u64> {
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    text[..end].parse().ok()
}

/// The `code` of an error body (`{"code":"...",...}`), or `unknown`.
pub fn error_code(body: &str) -> &str {
    after(body, "\"code\":\"")
        .and_then(|rest| rest.split('"').next())
        .unwrap_or("unknown")
}

/// How this server starts its answers; other messages it starts with
/// `{"type":"` too.
const ANSWER_HEAD: &str = "{\"type\":\"response\",\"request_id\":";
const TYPED: &str = "{\"type\":\"";

/// A WebSocket order-entry answer: its request id and outcome. Other
/// messages (the private stream) give `None`. Reads only the few bytes it
/// needs: the bench shares the machine with the server. Messages whose
/// fields come in another order are searched.
pub fn ws_response(text: &str) -> Option<(u64, Outcome<'_>)> {
    if let Some(rest) = text.strip_prefix(ANSWER_HEAD) {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let id = rest[..digits].parse().ok()?;
        if rest[digits..].starts_with(",\"ok\":true") {
            return Some((id, Outcome::Ok));
        }
        return Some((id, refusal(text)));
    }
    if text.starts_with(TYPED) {
        return None;
    }
    let id = leading_number(after(text, "\"request_id\":")?)?;
    if !text.contains("\"ok\":false") {
        return Some((id, Outcome::Ok));
    }
    Some((id, refusal(text)))
}

fn refusal(text: &str) -> Outcome<'_> {
    let status = after(text, "\"status\":")
        .and_then(leading_number)
        .unwrap_or(0) as u16;
    Outcome::Refused {
        code: error_code(text),
        status,
    }
}

/// Whether a message that is not an answer is the server giving up on
/// the socket (`slow_consumer`).
pub fn is_slow_consumer(text: &str) -> bool {
    (text.starts_with("{\"type\":\"error\"") || !text.starts_with(TYPED))
        && text.contains("\"slow_consumer\"")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn reads_answers_whatever_the_key_order() {
        let ok = concat!(
            r#"{"ok":true,"order":{"order_id":5,"status":"new"},"#,
            r#""request_id":17,"type":"response"}"#
        );
        assert_eq!(ws_response(ok), Some((17, Outcome::Ok)));
        let refused = concat!(
            r#"{"type":"response","request_id":3,"ok":false,"#,
            r#""error":{"code":"order_not_open","message":"m","status":422}}"#
        );
        assert_eq!(
            ws_response(refused),
            Some((
                3,
                Outcome::Refused {
                    code: "order_not_open",
                    status: 422
                }
            ))
        );
        assert_eq!(
            ws_response(r#"{"type":"order","event":"accepted","seq":5}"#),
            None
        );
        let fast = r#"{"type":"response","request_id":12,"ok":true,"order":{"order_id":5}}"#;
        assert_eq!(ws_response(fast), Some((12, Outcome::Ok)));
        let refused = concat!(
            r#"{"type":"response","request_id":4,"ok":false,"#,
            r#""error":{"code":"overloaded","message":"m","status":503,"retry_after":1}}"#
        );
        let outcome = Outcome::Refused {
            code: "overloaded",
            status: 503,
        };
        assert_eq!(ws_response(refused), Some((4, outcome)));
        assert!(is_slow_consumer(
            r#"{"type":"error","code":"slow_consumer","message":"m"}"#
        ));
        assert!(is_slow_consumer(
            r#"{"code":"slow_consumer","message":"m","type":"error"}"#
        ));
        let update = r#"{"type":"order","event":"accepted","client_order_id":"slow_consumer"}"#;
        assert!(!is_slow_consumer(update));
        assert_eq!(
            error_code(r#"{"code":"overloaded","message":"x"}"#),
            "overloaded"
        );
    }

    /// A window over the run's second second, and a fresh answer count.
    fn second_second(start: Instant) -> (Window, Arc<AtomicU64>) {
        let window = Window {
            from: start + Duration::from_secs(1),
            to: start + Duration::from_secs(2),
        };
        (window, Arc::new(AtomicU64::new(0)))
    }

    #[test]
    fn a_late_order_counts_its_wait_from_when_it_was_due() {
        let start = Instant::now();
        let (window, answered) = second_second(start);
        let mut recorder = Recorder::new(window, answered);
        let at = |ms: u64| start + Duration::from_millis(ms);
        // Due at 1,200 ms, out at 1,205 (no free slot before), answered at 1,206.
        recorder.record_paced(at(1_200), at(1_205), at(1_206), true, Outcome::Ok);
        // Due in the warm-up, 400 ms before the window opened, and sent
        // before it opened: the warm-up's lateness is forgiven, its 4 ms
        // from the send count.
        recorder.record_paced(at(600), at(998), at(1_002), false, Outcome::Ok);
        // Unpaced: both clocks start at the send.
        recorder.record(at(1_300), at(1_301), true, Outcome::Ok);
        let totals = &recorder.totals;
        assert_eq!(totals.latency.len(), 3);
        assert!(totals.latency.max() >= 3_990_000 && totals.latency.max() <= 4_010_000);
        assert!(totals.from_due.max() >= 5_990_000 && totals.from_due.max() <= 6_010_000);
        assert!(totals.from_due.min() < 1_100_000);
        assert_eq!(totals.from_due.count_between(3_900_000, 4_100_000), 1);
    }

    #[test]
    fn counts_only_inside_the_window_and_splits_refusals() {
        let start = Instant::now();
        let (window, answered) = second_second(start);
        let mut recorder = Recorder::new(window, answered.clone());
        let inside = start + Duration::from_millis(1_500);
        recorder.record(start, start + Duration::from_millis(10), true, Outcome::Ok);
        recorder.record(
            inside - Duration::from_micros(300),
            inside,
            true,
            Outcome::Ok,
        );
        recorder.record(
            inside,
            inside,
            false,
            Outcome::Refused {
                code: "order_not_open",
                status: 422,
            },
        );
        recorder.record(
            inside,
            inside,
            true,
            Outcome::Refused {
                code: "overloaded",
                status: 503,
            },
        );
        assert_eq!(answered.load(Ordering::Relaxed), 4);
        let totals = &recorder.totals;
        assert_eq!((totals.places, totals.cancels, totals.acked()), (1, 1, 2));
        assert_eq!(totals.rejects.get("order_not_open"), Some(&1));
        assert_eq!(totals.errors.get("overloaded"), Some(&1));
        assert_eq!(totals.latency.len(), 2);
        assert!(totals.latency.max() >= 299_000 && totals.latency.max() <= 301_000);
        let mut merged = Totals::default();
        merged.merge(totals);
        merged.merge(totals);
        assert_eq!(
            (
                merged.acked(),
                merged.latency.len(),
                merged.rejects["order_not_open"]
            ),
            (4, 4, 2)
        );
    }

    #[test]
    fn keeps_samples_only_when_asked_and_writes_them_in_send_order() {
        let start = Instant::now();
        let (window, answered) = second_second(start);
        let mut plain = Recorder::new(window, answered.clone());
        let mut keeping = Recorder::new(window, answered).keeping_samples(true, 16);
        assert!(
            keeping.totals.samples.capacity() >= 16,
            "room for the expected samples up front"
        );
        let at = |ms: u64| start + Duration::from_millis(ms);
        for recorder in [&mut plain, &mut keeping] {
            // Answered out of send order, as pipelined orders can be.
            recorder.record(at(1_500), at(1_502), false, Outcome::Ok);
            // Sent during the warm-up, answered inside: counted.
            recorder.record(at(990), at(1_004), true, Outcome::Ok);
            // Answered after the window: not counted.
            recorder.record(at(1_999), at(2_001), true, Outcome::Ok);
            // Refused by the gateway: not acknowledged, no sample.
            recorder.record(
                at(1_200),
                at(1_201),
                true,
                Outcome::Refused {
                    code: "overloaded",
                    status: 503,
                },
            );
        }
        assert!(plain.totals.samples.is_empty());
        let mut merged = Totals::default();
        merged.merge(&keeping.totals);
        merged.merge(&plain.totals);
        let mut text = Vec::new();
        merged.write_samples(&mut text).unwrap();
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "# sent_us latency_us\n-10000 14000\n500000 2000\n"
        );
    }
}
