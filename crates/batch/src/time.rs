//! Timestamps that cross the store boundary, and the runner's clock.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A point in wall-clock time: microseconds since the Unix epoch.
///
/// Stores keep these (a database column, a field in memory), so they are plain integers, not
/// `Instant`s. The runner reads them from its clock, which follows tokio's clock: under a
/// paused test clock, timestamps advance exactly as `tokio::time` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The timestamp `micros` microseconds after the Unix epoch.
    pub const fn from_micros(micros: u64) -> Self {
        Self(micros)
    }

    /// Microseconds since the Unix epoch.
    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// The same point as a [`SystemTime`].
    pub fn to_system_time(self) -> SystemTime {
        UNIX_EPOCH + Duration::from_micros(self.0)
    }

    /// `self + by`, saturating at the far future.
    pub fn saturating_add(self, by: Duration) -> Self {
        let micros = u64::try_from(by.as_micros()).unwrap_or(u64::MAX);
        Self(self.0.saturating_add(micros))
    }

    /// How long after `earlier` this is; zero if it is not after.
    pub fn saturating_since(self, earlier: Self) -> Duration {
        Duration::from_micros(self.0.saturating_sub(earlier.0))
    }
}

impl From<SystemTime> for Timestamp {
    fn from(time: SystemTime) -> Self {
        let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
        Self(u64::try_from(since.as_micros()).unwrap_or(u64::MAX))
    }
}

/// The runner's clock: wall-clock time read once at start, advanced by tokio's clock.
///
/// Reading tokio's clock (not `SystemTime::now()` each time) keeps every timestamp monotonic
/// and lets tests drive retries with a paused clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    origin_wall: Timestamp,
    origin: tokio::time::Instant,
}

impl Clock {
    pub(crate) fn start() -> Self {
        Self {
            origin_wall: Timestamp::from(SystemTime::now()),
            origin: tokio::time::Instant::now(),
        }
    }

    pub(crate) fn now(&self) -> Timestamp {
        self.origin_wall.saturating_add(self.origin.elapsed())
    }

    /// The tokio instant at which this clock reads `at`.
    pub(crate) fn instant_of(&self, at: Timestamp) -> tokio::time::Instant {
        self.origin + at.saturating_since(self.origin_wall)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let t = Timestamp::from_micros(10);
        assert_eq!(t.saturating_add(Duration::from_micros(5)).as_micros(), 15);
        assert_eq!(
            t.saturating_since(Timestamp::from_micros(20)),
            Duration::ZERO
        );
        assert_eq!(
            Timestamp::from_micros(u64::MAX - 1).saturating_add(Duration::MAX),
            Timestamp::from_micros(u64::MAX)
        );
    }

    #[test]
    fn round_trips_through_system_time() {
        let t = Timestamp::from_micros(1_700_000_000_123_456);
        assert_eq!(Timestamp::from(t.to_system_time()), t);
    }
}
