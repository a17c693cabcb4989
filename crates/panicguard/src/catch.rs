//! Catching a panic in a closure.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::Panic;

/// Runs `f`, turning a panic inside it into `Err(Panic)`.
///
/// Unwind safety is asserted for `f` (see the crate docs, "Unwind safety"): the caller
/// promises that state `f` shares with others stays usable if `f` panics halfway.
///
/// The panic hook still runs first, so the standard "thread panicked at" line is printed as
/// usual; silence it with `std::panic::set_hook` if that is unwanted.
///
/// With `panic = "abort"` the process aborts instead and this function never returns `Err`.
///
/// # Examples
///
/// ```
/// let caught = lockgate_panicguard::catch(|| {
///     let v: Vec<u8> = Vec::new();
///     v[3]
/// });
/// assert!(caught.unwrap_err().message().contains("index out of bounds"));
/// ```
pub fn catch<R>(f: impl FnOnce() -> R) -> Result<R, Panic> {
    catch_unwind(AssertUnwindSafe(f)).map_err(Panic::from_payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_the_value_when_nothing_panics() {
        assert_eq!(catch(|| "fine"), Ok("fine"));
    }

    #[test]
    fn formatted_panic_keeps_its_message() {
        let id = 12;
        let caught = catch(|| -> () { panic!("job {id} exploded") }).unwrap_err();
        assert_eq!(caught.message(), "job 12 exploded");
    }

    #[test]
    fn panic_any_with_foreign_payload_is_unknown() {
        let caught = catch(|| std::panic::panic_any(3.5_f64)).unwrap_err();
        assert_eq!(caught.message(), "panic of unknown type");
    }

    #[test]
    fn nested_catch_only_sees_its_own_panic() {
        let outer = catch(|| {
            let inner = catch(|| -> () { panic!("inner") });
            assert_eq!(inner.unwrap_err().message(), "inner");
            "outer survived"
        });
        assert_eq!(outer, Ok("outer survived"));
    }
}
