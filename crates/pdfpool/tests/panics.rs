//! Each documented panic blames the caller: the panic's location is the caller's line, not a
//! line inside this crate (`#[track_caller]`).

use std::panic;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lockgate_pdfpool::Pool;

/// Runs `f`, which must panic, and returns the file the panic was reported at.
fn panic_location(f: impl FnOnce() + panic::UnwindSafe) -> String {
    let location = Arc::new(Mutex::new(None));
    let seen = Arc::clone(&location);
    let previous = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        *seen.lock().unwrap() = info.location().map(|l| l.file().to_owned());
    }));
    let outcome = panic::catch_unwind(f);
    panic::set_hook(previous);
    assert!(outcome.is_err(), "expected a panic");
    location
        .lock()
        .unwrap()
        .take()
        .expect("the panic had a location")
}

#[test]
fn zero_slots_panics_at_the_callers_line() {
    let file = panic_location(|| {
        let _pool: Pool<u8, u8, u8> = Pool::new(0, 1, Duration::from_secs(1));
    });
    assert_eq!(file, file!());
}

#[test]
fn zero_slots_with_hooks_panics_at_the_callers_line() {
    struct NoHooks;
    impl lockgate_pdfpool::Hooks for NoHooks {}
    let file = panic_location(|| {
        let _pool: Pool<u8, u8, u8> = Pool::with_hooks(0, 1, Duration::from_secs(1), NoHooks);
    });
    assert_eq!(file, file!());
}

#[cfg(feature = "tower")]
#[test]
fn zero_slots_in_the_admission_layer_panics_at_the_callers_line() {
    let file = panic_location(|| {
        let _layer = lockgate_pdfpool::AdmissionLayer::new(0, 1, Duration::from_secs(1));
    });
    assert_eq!(file, file!());
}
