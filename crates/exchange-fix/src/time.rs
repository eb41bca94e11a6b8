//! FIX UTCTimestamp (`YYYYMMDD-HH:MM:SS[.fff...]`) to and from
//! nanoseconds since the Unix epoch, without a calendar library: the
//! civil-date arithmetic is Howard Hinnant's `days_from_civil`.

use std::time::{SystemTime, UNIX_EPOCH};

use exchange_types::calendar::{civil_from_days, days_from_civil};

const NANOS_PER_SEC: u64 = 1_000_000_000;
const SECS_PER_DAY: u64 = 86_400;

pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// `YYYYMMDD-HH:MM:SS.sss` (milliseconds, as FIX 4.4 allows).
pub fn format(ns: u64) -> String {
    let secs = ns / NANOS_PER_SEC;
    let millis = (ns % NANOS_PER_SEC) / 1_000_000;
    let (year, month, day) = civil_from_days((secs / SECS_PER_DAY) as i64);
    let rem = secs % SECS_PER_DAY;
    format!(
        "{year:04}{month:02}{day:02}-{:02}:{:02}:{:02}.{millis:03}",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

fn number(bytes: &[u8]) -> Option<u32> {
    if bytes.is_empty() || !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(bytes.iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0')))
}

/// Parses a UTCTimestamp with 0 to 9 fractional digits; `None` for
/// anything else, including impossible dates and times.
pub fn parse(value: &[u8]) -> Option<u64> {
    if value.len() < 17 || value[8] != b'-' || value[11] != b':' || value[14] != b':' {
        return None;
    }
    let year = number(&value[0..4])?;
    let month = number(&value[4..6])?;
    let day = number(&value[6..8])?;
    let hour = number(&value[9..11])?;
    let minute = number(&value[12..14])?;
    let second = number(&value[15..17])?;
    let fraction = match &value[17..] {
        [] => 0,
        [b'.', digits @ ..] if (1..=9).contains(&digits.len()) => {
            number(digits)? * 10u32.pow(9 - digits.len() as u32)
        }
        _ => return None,
    };
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => return None,
    };
    // Second 60 is a leap second, which FIX allows.
    if year < 1970 || day == 0 || day > days_in_month || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let days = u64::try_from(days_from_civil(i64::from(year), month, day)).ok()?;
    let secs = days * SECS_PER_DAY + u64::from(hour * 3600 + minute * 60 + second);
    secs.checked_mul(NANOS_PER_SEC)?
        .checked_add(u64::from(fraction))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants() {
        assert_eq!(format(0), "19700101-00:00:00.000");
        // 2024-02-29T12:34:56.789Z
        let ns = 1_709_210_096_789_000_000;
        assert_eq!(format(ns), "20240229-12:34:56.789");
        assert_eq!(parse(b"20240229-12:34:56.789"), Some(ns));
        assert_eq!(parse(b"20240229-12:34:56"), Some(ns - 789_000_000));
        assert_eq!(parse(b"20240229-12:34:56.789000001"), Some(ns + 1));
    }

    #[test]
    fn refuses_malformed_and_impossible() {
        for bad in [
            &b""[..],
            b"2024022912:34:56",
            b"20230229-12:34:56",
            b"20241301-00:00:00",
            b"20240101-24:00:00",
            b"20240101-00:00:00.",
            b"20240101-00:00:00.1234567890",
            b"2024a101-00:00:00",
            b"19691231-23:59:59",
        ] {
            assert_eq!(parse(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn format_parse_round_trip_over_years() {
        let mut ns = 0u64;
        while ns < 4_102_444_800 * NANOS_PER_SEC {
            let millis = ns - ns % 1_000_000;
            assert_eq!(parse(format(ns).as_bytes()), Some(millis));
            ns += 7_777_777_777_777_777;
        }
    }
}
