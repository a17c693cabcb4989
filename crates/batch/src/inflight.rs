//! [`InFlight`]: the runner's count of targets in flight, reported to
//! [`Hooks::inflight`](crate::hooks::Hooks::inflight) in the order it changed.
//!
//! Workers change the count concurrently; a gauge set from the hook calls must end at the
//! latest count, so the calls must arrive in the order of the changes, one per change. A hook
//! is user code and never runs under a lock, so one task at a time (the *reporter*) makes the
//! calls, outside any lock, and a change made while another task reports is queued for it.
//! The common case, no other task reporting, takes no lock: one compare-and-swap to change the
//! count and become the reporter, one to stop reporting.
//!
//! # State
//!
//! - `word` (atomic): `count` (bits 0..32), the targets in flight now; `queued` (bits 32..63),
//!   how many counts wait in `queue`; `REPORTING` (bit 63), a task is reporting.
//! - `queue` (a [`Mutex`]): the counts after each change not yet reported, oldest first.
//!
//! # Transitions
//!
//! 1. *Change, nobody reporting* (no lock): a CAS moves `count` by one and sets `REPORTING`;
//!    this task is the reporter, and its first report is the new count.
//! 2. *Change while someone reports* (under `queue`'s lock): a CAS moves `count` and adds one
//!    to `queued`, then the new count is pushed on `queue`, before the lock is dropped. If
//!    `REPORTING` was cleared meanwhile, the CAS sets it instead, as in step 1.
//! 3. *Report* (no lock): the reporter calls the hook with its count.
//! 4. *Next* : with `queued` zero, a CAS clears `REPORTING` and the reporter returns; a CAS
//!    that fails (a change of step 2 came first) tries again. Otherwise, under `queue`'s lock,
//!    it pops the oldest count and subtracts one from `queued`, then goes to step 3.
//!
//! # Invariants
//!
//! 1. With `queue`'s lock free, `queued` is the length of `queue`. Why: step 4 pops only
//!    after seeing `queued` above zero, and step 2 raises it and pushes within one critical
//!    section, so the count it pops is there.
//! 2. `queue`, in order, holds the counts of the changes after the one the reporter holds, in
//!    change order; the last is `count`. Why: the hook then sees every change exactly once,
//!    in order, and its last call carries the latest count.
//! 3. `REPORTING` is set while, and only while, one task is between steps 1 (or 2) and the end
//!    of step 4. Why: two reporters could hand their counts to the hook in either order.
//! 4. `REPORTING` is cleared only by a CAS that sees `queued` zero. Why: a count queued in
//!    step 2 is never left with nobody to report it.
//!
//! Changes of step 1 happen only with `REPORTING` clear, and changes of step 2 under the lock,
//! so change order is the order of the CASes on `word`, which is the order of the pushes.
//! Successive reporters are ordered too: the CAS that clears `REPORTING` (release) comes before
//! the CAS that sets it again (acquire), so a hook's effects (a gauge's store) are seen by the
//! next reporter's.
//!
//! # After the lock is dropped
//!
//! Only the reporter runs the hook, with no lock held. The report loop never awaits, so a task
//! cannot be cancelled inside it; a hook that panics is caught by
//! [`GuardedHooks`](crate::hooks::GuardedHooks) before it reaches the loop. The cost: the
//! reporter makes the calls of every change that arrives before its queue runs dry (a slow
//! hook holds up that one task, never the others).

use std::collections::VecDeque;

use crate::sync::{AtomicU64, Mutex, Ordering};

/// `word`'s bit set while a task reports.
const REPORTING: u64 = 1 << 63;
/// One count waiting in `queue`, in `word`.
const ONE_QUEUED: u64 = 1 << 32;
/// `word`'s count bits.
const COUNT: u64 = ONE_QUEUED - 1;
/// `word`'s queued bits.
const QUEUED: u64 = REPORTING - ONE_QUEUED;

/// The in-flight count and its ordered reports.
#[derive(Debug)]
pub(crate) struct InFlight {
    word: AtomicU64,
    queue: Mutex<VecDeque<usize>>,
}

/// `word` after one change: the count moved by one, the rest unchanged.
fn moved(word: u64, up: bool) -> u64 {
    let count = word & COUNT;
    let count = if up {
        debug_assert!(count < COUNT, "more targets in flight than a u32 counts");
        count + 1
    } else {
        debug_assert!(count > 0, "a target left flight that never entered it");
        count.saturating_sub(1)
    };
    (word & !COUNT) | count
}

/// The count in `word`.
fn count_of(word: u64) -> usize {
    // Below 2^32: fits a usize on every target tokio supports.
    (word & COUNT) as usize
}

impl InFlight {
    pub(crate) fn new() -> Self {
        Self {
            word: AtomicU64::new(0),
            queue: Mutex::new(VecDeque::new()),
        }
    }

    /// One more target in flight; `report` gets counts in change order (this task's, other
    /// tasks' queued meanwhile, or none when another task reports: see the module docs).
    pub(crate) fn add(&self, report: impl Fn(usize)) {
        self.change(true, report);
    }

    /// One target fewer in flight; reported as [`add`](Self::add).
    pub(crate) fn remove(&self, report: impl Fn(usize)) {
        self.change(false, report);
    }

    /// The targets in flight now.
    #[cfg(test)]
    pub(crate) fn count(&self) -> usize {
        count_of(self.word.load(Ordering::Acquire))
    }

    fn change(&self, up: bool, report: impl Fn(usize)) {
        // Step 1: nobody reporting, no lock.
        let mut word = self.word.load(Ordering::Acquire);
        while word & REPORTING == 0 {
            let new = moved(word, up) | REPORTING;
            match self
                .word
                .compare_exchange_weak(word, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return self.report_all(count_of(new), report),
                Err(now) => word = now,
            }
        }
        // Step 2: someone reports; queue the count under the lock.
        let mut queue = self.queue.lock();
        let mut word = self.word.load(Ordering::Acquire);
        loop {
            let reporting = word & REPORTING != 0;
            let new = if reporting {
                moved(word, up) + ONE_QUEUED
            } else {
                debug_assert_eq!(word & QUEUED, 0, "invariant 4");
                moved(word, up) | REPORTING
            };
            match self
                .word
                .compare_exchange_weak(word, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if reporting => {
                    queue.push_back(count_of(new));
                    debug_assert_eq!(queue.len() as u64, (new & QUEUED) >> 32, "invariant 1");
                    return;
                }
                Ok(_) => {
                    drop(queue);
                    return self.report_all(count_of(new), report);
                }
                Err(now) => word = now,
            }
        }
    }

    /// Steps 3 and 4: reports `first`, then every count queued meanwhile, then stops reporting.
    fn report_all(&self, first: usize, report: impl Fn(usize)) {
        let mut count = first;
        loop {
            report(count);
            count = loop {
                let word = self.word.load(Ordering::Acquire);
                debug_assert_ne!(
                    word & REPORTING,
                    0,
                    "invariant 3: only the reporter clears it"
                );
                if word & QUEUED == 0 {
                    let idle = word & !REPORTING;
                    let stopped =
                        self.word
                            .compare_exchange(word, idle, Ordering::AcqRel, Ordering::Acquire);
                    if stopped.is_ok() {
                        return;
                    }
                    continue; // a change of step 2 came first: `queued` is above zero now
                }
                let mut queue = self.queue.lock();
                // Invariant 1: the change that raised `queued` pushed under this lock.
                if let Some(next) = queue.pop_front() {
                    self.word.fetch_sub(ONE_QUEUED, Ordering::AcqRel);
                    break next;
                }
                debug_assert!(false, "invariant 1: `queued` above zero, `queue` empty");
            };
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::InFlight;

    /// Threads moving targets in and out of flight at once: the reports form one path in change
    /// order and end at the final count (the loom model checks every interleaving of a small
    /// case; this one runs many changes).
    #[test]
    fn reports_from_many_threads_end_at_the_count() {
        let in_flight = Arc::new(InFlight::new());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (in_flight, seen) = (Arc::clone(&in_flight), Arc::clone(&seen));
                std::thread::spawn(move || {
                    let report = |count| seen.lock().unwrap().push(count);
                    for _ in 0..1_000 {
                        in_flight.add(report);
                        in_flight.add(report);
                        in_flight.remove(report);
                        in_flight.remove(report);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 16_000);
        let mut last = 0;
        for &count in seen.iter() {
            assert_eq!(count.abs_diff(last), 1);
            last = count;
        }
        assert_eq!((last, in_flight.count()), (0, 0));
    }

    /// A report made while another is running is left to that reporter: it is not lost, and
    /// the reporter makes it after its own.
    #[test]
    fn a_change_during_a_report_is_reported_after_it() {
        let in_flight = InFlight::new();
        let seen = Mutex::new(Vec::new());
        in_flight.add(|count| {
            seen.lock().unwrap().push(count);
            if count == 1 {
                // A second task's change, arriving while this report runs.
                in_flight.add(|count| seen.lock().unwrap().push(count + 100));
            }
        });
        // The nested change was reported by the outer reporter, through the outer closure.
        assert_eq!(*seen.lock().unwrap(), [1, 2]);
        assert_eq!(in_flight.count(), 2);
    }
}
