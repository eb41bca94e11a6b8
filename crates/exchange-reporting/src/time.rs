//! UTC dates and times for reports, without a calendar dependency: the
//! store keeps nanoseconds since the Unix epoch; people write dates.

use exchange_types::calendar::{civil_from_days, days_from_civil};

const NS_PER_SEC: u64 = 1_000_000_000;
const SECS_PER_DAY: u64 = 86_400;

/// `2026-11-29`
pub fn format_date(ns: u64) -> String {
    let (y, m, d) = civil_from_days((ns / NS_PER_SEC / SECS_PER_DAY) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// `2026-11-29T12:38:59.123456789Z`
pub fn format_time(ns: u64) -> String {
    let secs = ns / NS_PER_SEC;
    let of_day = secs % SECS_PER_DAY;
    format!(
        "{}T{:02}:{:02}:{:02}.{:09}Z",
        format_date(ns),
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60,
        ns % NS_PER_SEC
    )
}

fn number<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{what} {text:?} is not a number"))
}

/// Reads a bound of a date range: `YYYY-MM-DD` (a whole UTC day: its start
/// for `--from`, the end of it when `end_of_day`, so `--to` is inclusive),
/// `YYYY-MM-DDTHH:MM:SS[Z]`, or nanoseconds since the epoch.
pub fn parse_bound(text: &str, end_of_day: bool) -> Result<u64, String> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return number(text, "timestamp");
    }
    let (date, time) = match text.split_once(['T', ' ']) {
        Some((date, time)) => (date, Some(time.trim_end_matches('Z'))),
        None => (text, None),
    };
    let parts: Vec<&str> = date.split('-').collect();
    let [year, month, day] = parts.as_slice() else {
        return Err(format!("{text:?} is not a date (YYYY-MM-DD)"));
    };
    let (year, month, day): (i64, u32, u32) = (
        number(year, "year")?,
        number(month, "month")?,
        number(day, "day")?,
    );
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => return Err(format!("{text:?}: month {month} does not exist")),
    };
    if !(1970..=2262).contains(&year) || day == 0 || day > days_in_month {
        return Err(format!("{text:?} is not a date between 1970 and 2262"));
    }
    let days = days_from_civil(year, month, day) as u64;
    let mut secs = days * SECS_PER_DAY;
    match time {
        None if end_of_day => secs += SECS_PER_DAY,
        None => {}
        Some(time) => {
            let parts: Vec<&str> = time.split(':').collect();
            let [h, m, s] = parts.as_slice() else {
                return Err(format!("{text:?}: time must be HH:MM:SS"));
            };
            let (h, m, s): (u64, u64, u64) = (
                number(h, "hour")?,
                number(m, "minute")?,
                number(s, "second")?,
            );
            if h > 23 || m > 59 || s > 59 {
                return Err(format!("{text:?}: time out of range"));
            }
            secs += h * 3600 + m * 60 + s;
        }
    }
    secs.checked_mul(NS_PER_SEC)
        .ok_or_else(|| format!("{text:?} is out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip() {
        let ns = parse_bound("2026-11-29", false).expect("date");
        assert_eq!(ns, 1_795_910_400 * NS_PER_SEC);
        assert_eq!(format_date(ns), "2026-11-29");
        assert_eq!(
            parse_bound("2026-11-29", true).expect("date"),
            ns + SECS_PER_DAY * NS_PER_SEC
        );
        let t = parse_bound("2024-02-29T12:38:59Z", false).expect("time");
        assert_eq!(format_time(t + 5), "2024-02-29T12:38:59.000000005Z");
        assert_eq!(parse_bound("1970-01-01", false), Ok(0));
        assert_eq!(parse_bound("42", false), Ok(42));
    }

    #[test]
    fn bad_dates_are_refused() {
        for bad in [
            "2023-02-29",
            "2026-13-01",
            "2026-1",
            "yesterday",
            "2026-11-29T25:00:00",
            "",
        ] {
            assert!(parse_bound(bad, false).is_err(), "{bad}");
        }
    }
}
