//! The value a caught panic becomes.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// The text of a payload that is neither a `&'static str` nor a `String`.
const UNKNOWN: &str = "panic of unknown type";

/// A caught panic, reduced to its message.
///
/// The payload of a panic is a `Box<dyn Any + Send>`, which is neither `Clone` nor `Sync`.
/// `Panic` keeps only the payload's text, so it can be cloned to every party that waited on
/// the panicking work and sent across threads freely. Cloning is cheap (a reference count).
///
/// # Examples
///
/// ```
/// use lockgate_panicguard::Panic;
///
/// let from_str = Panic::from_payload(Box::new("static text"));
/// assert_eq!(from_str.message(), "static text");
///
/// let from_string = Panic::from_payload(Box::new(format!("code {}", 42)));
/// assert_eq!(from_string.message(), "code 42");
///
/// let from_other = Panic::from_payload(Box::new(42_u8));
/// assert_eq!(from_other.message(), "panic of unknown type");
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Panic {
    message: Arc<str>,
}

impl Panic {
    /// Builds a `Panic` from the payload `std::panic::catch_unwind` returned.
    ///
    /// `&'static str` and `String` payloads (everything `panic!` makes) keep their text; any
    /// other payload becomes `"panic of unknown type"`. The payload is dropped here; if its
    /// `Drop` panics, that panic is caught and dropped too, so this never panics.
    pub fn from_payload(payload: Box<dyn Any + Send>) -> Self {
        let message: Arc<str> = if let Some(text) = payload.downcast_ref::<&'static str>() {
            Arc::from(*text)
        } else if let Some(text) = payload.downcast_ref::<String>() {
            Arc::from(text.as_str())
        } else {
            Arc::from(UNKNOWN)
        };
        drop_quietly(payload);
        Self { message }
    }

    /// The panic's message: the payload's text, or `"panic of unknown type"`.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Drops a payload before the `Panic` is built: a panic while dropping it must neither escape
/// nor leak the returned value (rust-lang/rust#47949). The panic of a drop carries a payload of
/// its own, dropped the same way; there is nothing to learn from it.
fn drop_quietly(mut payload: Box<dyn Any + Send>) {
    while let Err(next) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(payload))) {
        payload = next;
    }
}

impl fmt::Debug for Panic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Panic").field(&self.message()).finish()
    }
}

impl fmt::Display for Panic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "panicked: {}", self.message())
    }
}

impl std::error::Error for Panic {}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_traits<T: Clone + Send + Sync + 'static + std::error::Error>() {}

    #[test]
    fn is_clone_send_sync_error() {
        assert_traits::<Panic>();
    }

    #[test]
    fn static_str_payload_keeps_text() {
        assert_eq!(Panic::from_payload(Box::new("boom")).message(), "boom");
    }

    #[test]
    fn string_payload_keeps_text() {
        let panic = Panic::from_payload(Box::new(String::from("owned boom")));
        assert_eq!(panic.message(), "owned boom");
    }

    #[test]
    fn other_payload_is_unknown() {
        assert_eq!(Panic::from_payload(Box::new(7_i32)).message(), UNKNOWN);
        assert_eq!(Panic::from_payload(Box::new(())).message(), UNKNOWN);
    }

    #[test]
    fn payload_whose_drop_panics_does_not_escape() {
        struct PanicsOnDrop;
        impl Drop for PanicsOnDrop {
            fn drop(&mut self) {
                panic!("from the payload's drop");
            }
        }
        let caught = crate::catch(|| std::panic::panic_any(PanicsOnDrop));
        assert_eq!(caught.unwrap_err().message(), UNKNOWN);
    }

    #[test]
    fn display_and_debug_name_the_message() {
        let panic = Panic::from_payload(Box::new("boom"));
        assert_eq!(panic.to_string(), "panicked: boom");
        assert_eq!(format!("{panic:?}"), "Panic(\"boom\")");
    }

    #[test]
    fn clones_are_equal() {
        let panic = Panic::from_payload(Box::new("boom"));
        assert_eq!(panic.clone(), panic);
        assert_ne!(panic, Panic::from_payload(Box::new("other")));
    }
}
