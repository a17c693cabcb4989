//! Threads asleep on one condvar, and the notifications sent to them that no waking thread
//! has taken up yet: the bookkeeping that lets a notifier skip a `notify_one` that could only
//! reach a thread already notified (with std's futex condvar every `notify_one` is a
//! syscall, whether or not anyone is left to wake).
//!
//! Invariant: `signalled <= asleep`. A notification is recorded only while a sleeper is left
//! that none was sent to, and every thread that wakes, whatever woke it (a notification, a
//! timeout, a spurious wake-up, `notify_all`), takes one up. So `signalled` can only
//! undercount the notifications still on their way, which costs a spare notification, never
//! a lost one: it never counts a notification that no sleeper will take up.

/// One condvar's sleepers and the notifications they have not taken up (guarded by the
/// pool's lock, like the rest of `State`).
#[derive(Debug, Default)]
pub(super) struct Sleepers {
    asleep: usize,
    signalled: usize,
}

impl Sleepers {
    /// Threads waiting on the condvar now (counted before they wait, uncounted on waking).
    pub(super) fn asleep(&self) -> usize {
        self.asleep
    }

    /// Notifications sent and not taken up yet by a waking sleeper.
    pub(super) fn signalled(&self) -> usize {
        self.signalled
    }

    /// A thread is about to wait on the condvar.
    pub(super) fn fall_asleep(&mut self) {
        self.asleep += 1;
    }

    /// A thread woke from the condvar, for whatever reason, and takes up one notification.
    pub(super) fn woke(&mut self) {
        self.asleep -= 1;
        self.signalled = self.signalled.saturating_sub(1);
    }

    /// Records a notification if some sleeper has none on its way; the caller then calls
    /// `notify_one` once, after this returned `true`.
    pub(super) fn signal_one(&mut self) -> bool {
        let needed = self.asleep > self.signalled;
        if needed {
            self.signalled += 1;
        }
        needed
    }

    /// Asserts the invariant (debug builds only).
    pub(super) fn check(&self, what: &str) {
        debug_assert!(
            self.signalled <= self.asleep,
            "{what}: more notifications outstanding than sleepers"
        );
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Sleepers;

    #[test]
    fn one_notification_per_sleeper_until_one_wakes() {
        let mut sleepers = Sleepers::default();
        assert!(!sleepers.signal_one(), "nobody to wake");
        sleepers.fall_asleep();
        sleepers.fall_asleep();
        assert!(sleepers.signal_one());
        assert!(sleepers.signal_one());
        assert!(!sleepers.signal_one(), "both have one on its way");
        sleepers.woke();
        assert_eq!((sleepers.asleep(), sleepers.signalled()), (1, 1));
        sleepers.check("test");
    }

    #[test]
    fn a_spurious_wake_takes_up_a_notification_so_it_only_undercounts() {
        let mut sleepers = Sleepers::default();
        sleepers.fall_asleep();
        sleepers.fall_asleep();
        assert!(sleepers.signal_one());
        // The other sleeper wakes spuriously first and takes the notification up.
        sleepers.woke();
        assert_eq!(sleepers.signalled(), 0);
        // The notified one is still counted asleep without a notification: a spare one is
        // sent rather than none.
        assert!(sleepers.signal_one());
        sleepers.check("test");
    }
}
