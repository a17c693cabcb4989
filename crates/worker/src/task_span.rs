//! Each task runs in a `worker.task` span, opened where it is submitted: its parent is the
//! span current in the submitter (`submit`, `spawn`, their `try_`, `_timeout` and `_async`
//! forms), so a task's own logs carry the context of the request that handed it off, on
//! whichever worker thread it runs.
//!
//! # Rules
//!
//! 1. **Nothing when nobody listens.** The span is made at submit; when no subscriber wants
//!    it (no subscriber, or one that filters INFO out for this crate), `tracing` hands back a
//!    disabled span after a cached check of its callsite, and the task is boxed bare, exactly
//!    as without spans: no wrapper, no bigger box.
//! 2. **Entered around the task only.** The worker enters the span right before the task
//!    runs and leaves it right after (also when the task panics: the guard drops while the
//!    panic unwinds to the worker's catch).
//! 3. **Handing back is unchanged.** A refused task is handed back as the caller's own type:
//!    the wrapper's `into_any` is its inner task's.

use std::any::Any;

use crate::core::{Ran, Runnable, Task};

/// A task the worker can run by value (a `Runnable` runs from its box).
pub(crate) trait RunNow: Send + 'static {
    /// Runs it; whether it panicked, for a task that catches its own panic.
    fn run_now(self) -> Ran;
}

impl<F: FnOnce() + Send + 'static> RunNow for F {
    fn run_now(self) -> Ran {
        self();
        Ran::Returned
    }
}

/// A task and the span it runs in (rule 2).
struct Traced<R> {
    span: tracing::Span,
    inner: R,
}

impl<R: RunNow> Runnable for Traced<R> {
    fn run(self: Box<Self>) -> Ran {
        let Traced { span, inner } = *self;
        let _entered = span.enter();
        inner.run_now()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        // Rule 3: the caller's own task, not the wrapper.
        Box::new(self.inner)
    }
}

/// Boxes `task` for the core: in its `worker.task` span when a subscriber wants it (rule 1).
pub(crate) fn boxed<R: RunNow + Runnable>(task: R) -> Task {
    let span = tracing::info_span!("worker.task");
    if span.is_disabled() {
        Box::new(task)
    } else {
        Box::new(Traced { span, inner: task })
    }
}
