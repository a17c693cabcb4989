//! `SystemTime` as RFC 3339 text in UTC (`2026-12-08T00:10:41.123456Z`): how the crate's
//! serde output writes times, so that a browser's `new Date(…)` or any JSON client reads them
//! as they are.
//!
//! # Rules
//!
//! 1. **Written in UTC with microseconds** (the stores' precision), or with nanoseconds when
//!    a time has a part finer than a microsecond, so that every time round-trips exactly.
//! 2. **Read from any RFC 3339 time**: `Z` or a numeric offset, `T` or `t`, any number of
//!    fraction digits (kept to the nanosecond).
//! 3. **Years 1970 to 9999 only.** RFC 3339 has four year digits, and a `SystemTime` before
//!    the Unix epoch is no time a store keeps: either is an error of the serializer or the
//!    deserializer, never a panic.
//!
//! The calendar arithmetic is Howard Hinnant's `days_from_civil` / `civil_from_days`
//! (proleptic Gregorian), checked below against known dates and by a round-trip property.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serializer};

const SECONDS_PER_DAY: u64 = 86_400;
/// 10000-01-01T00:00:00Z: the first time with a five-digit year.
const END_OF_YEAR_9999: u64 = 253_402_300_800;

/// Why a time could not be written or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TimeError {
    /// Before 1970-01-01T00:00:00Z, or from the year 10000 on.
    #[error("time out of range (RFC 3339 times here are from 1970 to 9999)")]
    OutOfRange,
    /// Not an RFC 3339 date-time.
    #[error("not an RFC 3339 date-time such as 2026-12-08T00:10:41Z")]
    Malformed,
}

/// `time` as RFC 3339 text (rule 1).
pub(crate) fn format(time: SystemTime) -> Result<String, TimeError> {
    let since = time
        .duration_since(UNIX_EPOCH)
        .map_err(|_| TimeError::OutOfRange)?;
    let seconds = since.as_secs();
    if seconds >= END_OF_YEAR_9999 {
        return Err(TimeError::OutOfRange);
    }
    let days = i64::try_from(seconds / SECONDS_PER_DAY).map_err(|_| TimeError::OutOfRange)?;
    let (year, month, day) = civil_from_days(days);
    let of_day = seconds % SECONDS_PER_DAY;
    let (hour, minute, second) = (of_day / 3600, of_day / 60 % 60, of_day % 60);
    let mut text = format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}");
    let nanos = since.subsec_nanos();
    if nanos.is_multiple_of(1000) {
        let _ = write!(text, ".{:06}Z", nanos / 1000);
    } else {
        let _ = write!(text, ".{nanos:09}Z");
    }
    Ok(text)
}

/// The time RFC 3339 `text` names (rule 2).
pub(crate) fn parse(text: &str) -> Result<SystemTime, TimeError> {
    let bytes = text.as_bytes();
    let number = |from: usize, len: usize| -> Result<u64, TimeError> {
        let digits = bytes.get(from..from + len).ok_or(TimeError::Malformed)?;
        digits.iter().try_fold(0u64, |n, &b| {
            b.is_ascii_digit()
                .then(|| n * 10 + u64::from(b - b'0'))
                .ok_or(TimeError::Malformed)
        })
    };
    let expect = |at: usize, allowed: &[u8]| -> Result<(), TimeError> {
        match bytes.get(at) {
            Some(b) if allowed.contains(b) => Ok(()),
            _ => Err(TimeError::Malformed),
        }
    };
    let (year, month, day) = (number(0, 4)?, number(5, 2)?, number(8, 2)?);
    expect(4, b"-")?;
    expect(7, b"-")?;
    expect(10, b"Tt ")?;
    let (hour, minute, second) = (number(11, 2)?, number(14, 2)?, number(17, 2)?);
    expect(13, b":")?;
    expect(16, b":")?;
    if !(1..=12).contains(&month)
        || day == 0
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return Err(TimeError::Malformed);
    }
    let mut at = 19;
    let mut nanos = 0u32;
    if bytes.get(at) == Some(&b'.') {
        at += 1;
        let start = at;
        while bytes.get(at).is_some_and(u8::is_ascii_digit) {
            if at - start < 9 {
                nanos = nanos * 10 + u32::from(bytes[at] - b'0');
            }
            at += 1;
        }
        if at == start {
            return Err(TimeError::Malformed);
        }
        for _ in (at - start)..9 {
            nanos *= 10;
        }
    }
    let offset_seconds: i64 = match bytes.get(at) {
        Some(b'Z' | b'z') if at + 1 == bytes.len() => 0,
        Some(sign @ (b'+' | b'-')) if at + 6 == bytes.len() => {
            expect(at + 3, b":")?;
            let (hours, minutes) = (number(at + 1, 2)?, number(at + 4, 2)?);
            if hours > 23 || minutes > 59 {
                return Err(TimeError::Malformed);
            }
            let offset = i64::try_from(hours * 3600 + minutes * 60).unwrap_or(0);
            if *sign == b'+' { offset } else { -offset }
        }
        _ => return Err(TimeError::Malformed),
    };
    let days = days_from_civil(year, month, day);
    let local = days * 86_400 + i64::try_from(hour * 3600 + minute * 60 + second).unwrap_or(0);
    let utc = u64::try_from(local - offset_seconds).map_err(|_| TimeError::OutOfRange)?;
    if utc >= END_OF_YEAR_9999 {
        return Err(TimeError::OutOfRange);
    }
    Ok(UNIX_EPOCH + Duration::new(utc, nanos))
}

fn is_leap(year: u64) -> bool {
    year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400))
}

fn days_in_month(year: u64, month: u64) -> u64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a date of the years 0 to 9999.
fn days_from_civil(year: u64, month: u64, day: u64) -> i64 {
    let year = i64::try_from(year).unwrap_or(0) - i64::from(month <= 2);
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month = i64::try_from(month).unwrap_or(1);
    let shifted_month = if month > 2 { month - 3 } else { month + 9 };
    let day_of_year = (153 * shifted_month + 2) / 5 + i64::try_from(day).unwrap_or(1) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date `days` days after 1970-01-01 (`days >= 0`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `#[serde(with = "crate::rfc3339")]` for a `SystemTime` field.
pub(crate) fn serialize<S: Serializer>(
    time: &SystemTime,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let text = format(*time).map_err(serde::ser::Error::custom)?;
    serializer.serialize_str(&text)
}

/// `#[serde(with = "crate::rfc3339")]` for a `SystemTime` field.
pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<SystemTime, D::Error> {
    let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
    parse(&text).map_err(serde::de::Error::custom)
}

// Not under loom: its build has no proptest, and nothing here is shared state.
#[cfg(all(test, not(loom)))]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn at(seconds: u64, nanos: u32) -> SystemTime {
        UNIX_EPOCH + Duration::new(seconds, nanos)
    }

    #[test]
    fn known_times_are_written_as_rfc_3339() {
        assert_eq!(format(at(0, 0)).unwrap(), "1970-01-01T00:00:00.000000Z");
        // `date -u -d @951782400` → Tue Feb 29 00:00:00 UTC 2000 (a leap day of a 400th year).
        assert_eq!(
            format(at(951_782_400, 0)).unwrap(),
            "2000-02-29T00:00:00.000000Z"
        );
        assert_eq!(
            format(at(1_796_688_641, 123_456_000)).unwrap(),
            "2026-12-08T00:10:41.123456Z"
        );
        assert_eq!(
            format(at(4_102_444_800, 7)).unwrap(),
            "2100-01-01T00:00:00.000000007Z"
        );
        assert_eq!(
            format(at(END_OF_YEAR_9999 - 1, 0)).unwrap(),
            "9999-12-31T23:59:59.000000Z"
        );
    }

    #[test]
    fn times_out_of_range_are_errors_not_panics() {
        let before_epoch = UNIX_EPOCH - Duration::from_secs(1);
        assert_eq!(format(before_epoch), Err(TimeError::OutOfRange));
        assert_eq!(format(at(END_OF_YEAR_9999, 0)), Err(TimeError::OutOfRange));
        assert_eq!(parse("1969-12-31T23:59:59Z"), Err(TimeError::OutOfRange));
        assert_eq!(
            parse("1970-01-01T00:30:00+01:00"),
            Err(TimeError::OutOfRange)
        );
    }

    #[test]
    fn offsets_and_fractions_are_read() {
        let utc = parse("2026-12-08T00:10:41.5Z").unwrap();
        assert_eq!(utc, at(1_796_688_641, 500_000_000));
        assert_eq!(parse("2026-12-08T01:10:41.5+01:00").unwrap(), utc);
        assert_eq!(
            parse("2026-12-07t23:40:41.500000000000-00:30").unwrap(),
            utc
        );
        assert_eq!(parse("2026-12-08T00:10:41z").unwrap(), at(1_796_688_641, 0));
    }

    #[test]
    fn malformed_text_is_an_error() {
        for text in [
            "",
            "2026-12-08",
            "2026-12-08T00:10:41",
            "2026-13-08T00:10:41Z",
            "2026-02-29T00:10:41Z",
            "2026-12-08T24:00:00Z",
            "2026-12-08T00:10:41.Z",
            "2026-12-08T00:10:41+0100",
            "2026-12-08T00:10:41Zjunk",
            "２026-12-08T00:10:41Z",
        ] {
            assert_eq!(parse(text), Err(TimeError::Malformed), "{text:?}");
        }
    }

    proptest! {
        #[test]
        fn every_time_round_trips(seconds in 0..END_OF_YEAR_9999, nanos in 0..1_000_000_000u32) {
            let time = at(seconds, nanos);
            let text = format(time).unwrap();
            prop_assert_eq!(parse(&text).unwrap(), time);
            // Text order is time order (fixed width), as a sort of RFC 3339 strings expects.
            let later = format(at(seconds, nanos) + Duration::from_secs(1));
            if let Ok(later) = later {
                prop_assert!(later > text);
            }
        }

        #[test]
        fn dates_match_the_day_count(days in 0..(END_OF_YEAR_9999 / SECONDS_PER_DAY)) {
            let (year, month, day) = civil_from_days(i64::try_from(days).unwrap());
            let (year, month, day) = (year as u64, month as u64, day as u64);
            prop_assert!((1..=12).contains(&month) && day >= 1 && day <= days_in_month(year, month));
            prop_assert_eq!(days_from_civil(year, month, day), i64::try_from(days).unwrap());
        }
    }
}
