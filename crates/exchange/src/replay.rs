//! `exchange replay FILE|-`: JSON Lines commands in, JSON Lines events out.
//!
//! Applies every line to a fresh engine and prints each event as it is
//! emitted. A line that is not a command becomes an `error` event numbered
//! in sequence with the others, and the replay goes on: a replay is a record
//! of what the core saw, and skipping bad input silently would hide it.
//! Output goes to stdout only; the summary and the progress bar go to
//! stderr, so the events can be piped and compared byte for byte.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, IsTerminal, Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use exchange_codec::{decode_command, encode_event_into, final_state, CodecError};
use exchange_core::Engine;
use exchange_types::limits::MAX_COMMAND_BYTES;
use exchange_types::Event;
use indicatif::{ProgressBar, ProgressStyle};

/// Inputs smaller than this finish before a progress bar would help.
const PROGRESS_MIN_BYTES: u64 = 16 << 20;
/// Lines between progress updates, so the bar costs nothing measurable.
const PROGRESS_EVERY_LINES: u64 = 16_384;
const IO_BUFFER_BYTES: usize = 1 << 16;

#[derive(Debug, Default)]
struct Stats {
    lines: u64,
    commands: u64,
    errors: u64,
    events: u64,
}

pub fn run(file: &Path, final_state_path: Option<&Path>) -> anyhow::Result<()> {
    let started = Instant::now();
    let (input, size): (Box<dyn Read>, Option<u64>) = if file == Path::new("-") {
        (Box::new(io::stdin().lock()), None)
    } else {
        let f = File::open(file).with_context(|| format!("opening {}", file.display()))?;
        let size = f.metadata().ok().map(|m| m.len());
        (Box::new(f), size)
    };
    let mut reader = BufReader::with_capacity(IO_BUFFER_BYTES, input);
    let mut out = BufWriter::with_capacity(IO_BUFFER_BYTES, io::stdout().lock());
    let progress = size
        .filter(|&s| s >= PROGRESS_MIN_BYTES && io::stderr().is_terminal())
        .map(bar);

    let mut engine = Engine::new();
    let stats = replay(&mut reader, &mut out, &mut engine, progress.as_ref())
        .with_context(|| format!("replaying {}", file.display()))?;
    out.flush().context("writing events to stdout")?;
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }

    if let Some(path) = final_state_path {
        write_final_state(&engine, path)
            .with_context(|| format!("writing the final state to {}", path.display()))?;
    }
    eprintln!("{}", summary(&stats, started.elapsed()));
    Ok(())
}

/// Applies every line of `reader` to `engine`, writing events to `out`.
fn replay(
    reader: &mut impl BufRead,
    out: &mut impl Write,
    engine: &mut Engine,
    progress: Option<&ProgressBar>,
) -> io::Result<Stats> {
    let mut stats = Stats::default();
    let mut raw = Vec::with_capacity(MAX_COMMAND_BYTES + 1);
    let mut events: Vec<Event> = Vec::with_capacity(64);
    let mut encoded = Vec::with_capacity(8192);
    let mut last_ts = 0u64;
    let mut bytes_read = 0u64;
    while let Some(len) = read_bounded_line(reader, &mut raw, MAX_COMMAND_BYTES)? {
        stats.lines += 1;
        bytes_read += len as u64 + 1;
        if let Some(bar) = progress.filter(|_| stats.lines % PROGRESS_EVERY_LINES == 0) {
            bar.set_position(bytes_read);
        }
        let decoded = if len > MAX_COMMAND_BYTES {
            Err(CodecError::TooLong { len })
        } else {
            match std::str::from_utf8(&raw) {
                Ok(line) if line.trim().is_empty() => continue,
                Ok(line) => decode_command(line),
                Err(_) => Err(CodecError::NotUtf8),
            }
        };
        match decoded {
            Ok(stamped) => {
                stats.commands += 1;
                last_ts = stamped.ts;
                engine.apply(&stamped, &mut events);
            }
            Err(e) => {
                stats.errors += 1;
                engine.record_error(last_ts, stats.lines, e.to_string(), &mut events);
            }
        }
        stats.events += events.len() as u64;
        // By reference and in one write per line: moving each event out and
        // writing each separately showed up as memcpy in the profile.
        encoded.clear();
        for event in &events {
            encode_event_into(event, &mut encoded);
            encoded.push(b'\n');
        }
        events.clear();
        out.write_all(&encoded)?;
    }
    Ok(stats)
}

/// Reads one line into `buf` without its `\n` (and without a `\r` before
/// it), keeping at most `limit + 1` bytes so that a huge line cannot
/// exhaust memory. Returns the line's full length, or `None` at the end.
fn read_bounded_line(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    limit: usize,
) -> io::Result<Option<usize>> {
    buf.clear();
    let mut len = 0usize;
    let mut seen_any = false;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(chunk) => chunk,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            break;
        }
        seen_any = true;
        let newline = chunk.iter().position(|&b| b == b'\n');
        let take = newline.unwrap_or(chunk.len());
        let room = (limit + 1).saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..take.min(room)]);
        len += take;
        reader.consume(take + usize::from(newline.is_some()));
        if newline.is_some() {
            break;
        }
    }
    if !seen_any {
        return Ok(None);
    }
    if len == buf.len() && buf.last() == Some(&b'\r') {
        buf.pop();
        len -= 1;
    }
    Ok(Some(len))
}

fn bar(total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template(
        "{elapsed_precise} [{wide_bar}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    ) {
        bar.set_style(style);
    }
    bar
}

fn write_final_state(engine: &Engine, path: &Path) -> anyhow::Result<()> {
    let mut file = BufWriter::new(File::create(path)?);
    serde_json::to_writer_pretty(&mut file, &final_state(engine))?;
    file.write_all(b"\n")?;
    file.flush()?;
    Ok(())
}

fn summary(stats: &Stats, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 {
        stats.lines as f64 / secs
    } else {
        0.0
    };
    format!(
        "replay: {} lines read, {} commands applied, {} errors, \
         {} events in {:.3}s ({:.0} lines/s)",
        stats.lines, stats.commands, stats.errors, stats.events, secs, rate
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], limit: usize) -> Vec<(usize, Vec<u8>)> {
        // A tiny buffer makes lines straddle refills.
        let mut reader = BufReader::with_capacity(3, input);
        let mut buf = Vec::new();
        let mut all = Vec::new();
        while let Some(len) = read_bounded_line(&mut reader, &mut buf, limit).expect("in memory") {
            all.push((len, buf.clone()));
        }
        all
    }

    #[test]
    fn bounded_lines_split_strip_and_truncate() {
        let got = lines(b"ab\r\n\ncdefgh\nij", 4);
        assert_eq!(
            got,
            vec![
                (2, b"ab".to_vec()),
                (0, Vec::new()),
                (6, b"cdefg".to_vec()),
                (2, b"ij".to_vec())
            ]
        );
        assert!(lines(b"", 4).is_empty());
    }

    #[test]
    fn replay_numbers_errors_among_events_and_goes_on() {
        let input = concat!(
            r#"{"cmd":"add_instrument","symbol":"A-B","base":"A","quote":"B","#,
            r#""tick_size":"1","lot_size":"1","maker_fee_bps":0,"taker_fee_bps":0,"ts":5}"#,
            "\n\n   \nnot json\n\u{ff}\n",
            r#"{"cmd":"halt","symbol":"A-B"}"#,
            "\n"
        );
        let mut bytes = input.as_bytes().to_vec();
        // Replace the UTF-8 encoded U+00FF with a lone invalid byte.
        let pos = bytes
            .windows(2)
            .position(|w| w == [0xc3, 0xbf])
            .expect("marker");
        bytes.splice(pos..pos + 2, [0xff]);
        let mut out = Vec::new();
        let mut engine = Engine::new();
        let stats = replay(&mut &bytes[..], &mut out, &mut engine, None).expect("in memory");
        let text = String::from_utf8(out).expect("utf-8 output");
        let events: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        assert_eq!((stats.lines, stats.commands, stats.errors), (6, 2, 2));
        assert_eq!(stats.events, events.len() as u64);
        assert_eq!(events[1]["event"], "instrument_rules");
        assert_eq!(events[2]["event"], "error");
        assert_eq!(events[2]["line"], 4);
        assert_eq!(events[2]["ts"], 5);
        assert_eq!(events[3]["line"], 5);
        assert_eq!(events[3]["message"], "line is not valid UTF-8");
        assert_eq!(events[4]["event"], "status");
        let seqs: Vec<u64> = events.iter().filter_map(|e| e["seq"].as_u64()).collect();
        assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
    }
}
