//! Every documented panic blames the caller: its location is the caller's line.
//!
//! Its own test binary, because it installs a process-wide panic hook.

use std::sync::{Arc, Mutex};

/// Runs `f`, expecting a panic, and returns (message, file of the reported location).
fn panic_site(f: impl FnOnce() + std::panic::UnwindSafe) -> (String, String) {
    let seen: Arc<Mutex<Option<(String, String)>>> = Arc::default();
    let record = Arc::clone(&seen);
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let file = info
            .location()
            .map(|l| l.file().to_string())
            .unwrap_or_default();
        *record.lock().unwrap() = Some((message, file));
    }));
    let result = std::panic::catch_unwind(f);
    std::panic::set_hook(previous);
    assert!(result.is_err(), "expected a panic");
    seen.lock().unwrap().take().expect("the hook saw the panic")
}

#[test]
fn thread_name_with_nul_blames_the_caller() {
    let (message, file) = panic_site(|| {
        let _ = lockgate_worker::Pool::builder(1, 1).thread_name("bad\0name");
    });
    assert_eq!(message, "a thread name cannot contain a NUL byte");
    assert!(file.ends_with("tests/panics.rs"), "blamed {file}");
}

#[test]
fn join_after_awaiting_to_completion_blames_the_caller() {
    use std::future::Future;
    use std::task::{Context, Waker};

    let pool = lockgate_worker::Pool::new(1, 1).unwrap();
    let mut handle = pool.spawn(|| 1);
    pool.join().unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    assert!(std::pin::Pin::new(&mut handle).poll(&mut cx).is_ready());
    let (message, file) = panic_site(std::panic::AssertUnwindSafe(move || {
        let _ = handle.join();
    }));
    assert_eq!(
        message,
        "the TaskHandle's result was already taken by awaiting it"
    );
    assert!(file.ends_with("tests/panics.rs"), "blamed {file}");
}
