//! loom: `InFlight` reports every change exactly once, in change order, never under its lock
//! (`inflight.rs`, invariants 1 to 3).
//!
//! Two workers and the main thread each move a target into flight and out again. The hook
//! records what it gets (on its own mutex, as a gauge would take its own atomic). Whatever the
//! interleaving, the recorded counts must be a path that starts at 1 and moves by one at each
//! step (reports in change order), have one entry per change (exactly once), and end at the
//! final count (the last report carries the latest count).

use loom::sync::{Arc, Mutex};
use loom::thread;

use crate::inflight::InFlight;

fn one_target(in_flight: &InFlight, seen: &Mutex<Vec<usize>>) {
    let report = |count| seen.lock().unwrap().push(count);
    in_flight.add(report);
    in_flight.remove(report);
}

#[test]
fn reports_arrive_in_change_order() {
    loom::model(|| {
        let in_flight = Arc::new(InFlight::new());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (in_flight, seen) = (Arc::clone(&in_flight), Arc::clone(&seen));
                thread::spawn(move || one_target(&in_flight, &seen))
            })
            .collect();
        one_target(&in_flight, &seen);
        for worker in workers {
            worker.join().unwrap();
        }
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 6, "one report per change: {seen:?}");
        let mut last = 0;
        for &count in seen.iter() {
            assert_eq!(count.abs_diff(last), 1, "out of order: {seen:?}");
            last = count;
        }
        assert_eq!((last, in_flight.count()), (0, 0));
    });
}
