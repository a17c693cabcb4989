//! [`InFlight`]: the runner's count of targets in flight, reported to
//! [`Hooks::inflight`](crate::hooks::Hooks::inflight) in the order it changed.
//!
//! Workers change the count concurrently; a gauge set from the hook calls must end at the
//! latest count, so the calls must arrive in the order of the changes. A hook is user code and
//! never runs under a lock, so the changes are queued under the lock and one task at a time
//! (the *reporter*) makes the calls, outside it.
//!
//! # State (one [`Mutex`])
//!
//! - `count`: the targets in flight now.
//! - `unreported`: the count after each change not yet handed to a hook, oldest first.
//! - `reporting`: a task is in the report loop.
//!
//! # Transitions
//!
//! A change (under the lock): `count` moves by one and its new value joins `unreported`. If no
//! task is reporting, this one becomes the reporter: it pops the oldest value, drops the lock,
//! calls the hook, takes the lock again, and repeats until `unreported` is empty, when it clears
//! `reporting` (under the lock) and returns. Otherwise it returns at once: the reporter makes
//! its call.
//!
//! # Invariants
//!
//! 1. `unreported`, followed by `count`, is the sequence of counts after each change not yet
//!    reported, in change order; its last value equals `count` when it is not empty. Why: the
//!    hook then sees every change exactly once, in order, and its last call carries the
//!    latest count.
//! 2. `reporting` is set while, and only while, a task is in the report loop; at most one is.
//!    Why: two reporters could hand their values to the hook in either order.
//! 3. `reporting` is cleared only under the lock with `unreported` empty, and a change that
//!    finds `reporting` set leaves its value to the reporter. Why: that decision and the push
//!    happen under one lock, so no value is left behind with nobody to report it.
//!
//! # After the lock is dropped
//!
//! Only the reporter runs the hook, with the lock released. The report loop never awaits, so a
//! task cannot be cancelled inside it; a hook that panics is caught by
//! [`GuardedHooks`](crate::hooks::GuardedHooks) before it reaches the loop. The cost: a task
//! that changes the count while another reports returns at once, and the reporter makes the
//! calls of every change that arrives before its queue runs dry (a slow hook holds up that
//! one task, never the others).

use std::collections::VecDeque;

use crate::sync::Mutex;

/// The in-flight count and its ordered reports.
#[derive(Debug)]
pub(crate) struct InFlight {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    count: usize,
    unreported: VecDeque<usize>,
    reporting: bool,
}

impl InFlight {
    pub(crate) fn new() -> Self {
        Self {
            state: Mutex::new(State {
                count: 0,
                unreported: VecDeque::new(),
                reporting: false,
            }),
        }
    }

    /// One more target in flight; `report` gets each count in change order (maybe this task's
    /// and other tasks' counts, maybe none: see the module docs).
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
        self.state.lock().count
    }

    fn change(&self, up: bool, report: impl Fn(usize)) {
        let mut state = self.state.lock();
        state.count = if up {
            state.count + 1
        } else {
            debug_assert!(
                state.count > 0,
                "a target left flight that never entered it"
            );
            state.count.saturating_sub(1)
        };
        let count = state.count;
        state.unreported.push_back(count);
        debug_assert_eq!(state.unreported.back(), Some(&state.count)); // invariant 1
        if state.reporting {
            return; // invariant 3: the reporter reports this count after the earlier ones
        }
        state.reporting = true; // invariant 2: this task is the reporter
        while let Some(count) = state.unreported.pop_front() {
            drop(state);
            report(count);
            state = self.state.lock();
            debug_assert!(state.reporting, "only the reporter clears `reporting`");
        }
        state.reporting = false; // invariant 3: under the lock, nothing left
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
