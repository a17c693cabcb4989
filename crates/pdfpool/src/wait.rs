//! Waiting for a job's outcome: the waiter's drop guard, the wait limit, and the fan-out.
//!
//! Each waiter owns a oneshot receiver; its sender (the mailbox) sits in the job's waiter slab
//! in the table. The outcome reaches every waiter by one `send` per mailbox, done after the
//! table's lock is released, so waking every sharer takes one lock acquisition, not one per
//! sharer.
//! The one exception is a fast entry (the seam is `fast.rs`): the request that starts a job at
//! once gets a placeholder mailbox ([`Mailbox::Task`], from [`task_mailbox`]), `deliver`
//! hands the outcome back to the job's task, and the request awaits the task's `JoinHandle`,
//! as a plain `tokio::spawn` would (no channel to allocate, send and free for the most common
//! request). In the reference build it gets a channel like every other waiter.
//!
//! # Cancel safety
//!
//! The awaits that can be cancelled are all in `Waiter::wait` and `Waiter::wait_for_task`: the
//! `select!` over the mailbox and the deadline `Sleep`, the final mailbox await, and the
//! `JoinHandle` await (dropping a `JoinHandle` detaches the task; it does not cancel the job).
//! Admission itself happens synchronously in the first poll, and each `run` arm wraps its
//! `WaiterId` in a `Waiter` guard before anything else can unwind or await. Hence:
//!
//! - Dropped before the first poll: nothing was registered.
//! - Dropped while registered: `Waiter::drop` calls `leave` under the lock, which removes the
//!   mailbox (so `waiting(key)` drops by one) and, if that was the last waiter of a Queued job,
//!   removes the job, its queue entry and its owner (the table's invariant 6), returning the
//!   launch to be dropped unrun. A Running job stays: its task owns it, not the waiter (rule 4).
//! - Dropped after the mailbox was handed out (ended, expired, closed): `leave` finds nothing;
//!   the outcome is sent to a dropped receiver and freed with it (or, for a starter, is the
//!   output of a task nobody awaits, freed when the task ends).
//! - The `Sleep` of a dropped waiter is dropped with it; a waiter whose job started meanwhile
//!   still wakes at the deadline once, finds the job no longer queued (`expire` is `None`), and
//!   goes on waiting without a timer.

use std::hash::Hash;

use lockgate_panicguard::Panic;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::error::{BusyCause, Error};
use crate::fast::{Fast, REFERENCE};
use crate::shared::{Mailbox, Outcome, Shared};
use crate::slab::Slab;
use crate::table::{NewWaiter, WaiterId};

/// Fast entry: the mailbox of a request that starts its job at once is [`Mailbox::Task`], no
/// channel; `Pool::run` then awaits the job's task ([`Waiter::wait_for_task`]). Falls back
/// (the caller makes a channel and waits on it, as every other waiter does) for any other
/// request, and always in the reference build.
///
/// Equivalent to a channel: the table never looks inside a mailbox, so admission, `leave`,
/// `waiting` and every count are the same; only the outcome's way after the lock differs.
/// [`deliver`] hands a `Task` mailbox's outcome back to the finisher instead of sending it,
/// the finisher returns it as the task's output, and the starter reads it from the
/// `JoinHandle`: the same value a channel would carry. Where a channel would be dropped
/// unsent, the task has no output either: a task dropped by its runtime (its finisher
/// delivers `Closed`, and the `JoinHandle` says cancelled) and a job that could not be spawned
/// both read as `Closed`. Dropping the starter's future drops the `JoinHandle`, which detaches
/// the task without cancelling it, as dropping a receiver leaves the job running. The one
/// difference is a panic in the task's own bookkeeping (a bug; the job's panics are caught
/// inside): the `JoinHandle` reports it as `Panicked`, a channel would read `Closed`.
pub(crate) fn task_mailbox<V>(new_waiter: NewWaiter) -> Fast<Mailbox<V>> {
    if REFERENCE || new_waiter != NewWaiter::StartsNow {
        return Fast::FallBack;
    }
    Fast::Done(Mailbox::Task)
}

/// Sends `outcome` to every channel mailbox and hands it back if the job's starter awaits the
/// task ([`Mailbox::Task`]), to be the task's output. Clones go to every channel but the last,
/// which gets the original unless it is handed back.
///
/// A panic in `V::clone` becomes that waiter's `Panicked` and the others still get theirs.
/// A mailbox whose receiver is gone (its waiter gave up meanwhile) is skipped. Only a job
/// started at once has a `Task` mailbox, so for a queued job (expired, closed) this is `None`.
pub(crate) fn deliver<V: Clone>(
    mailboxes: Slab<Mailbox<V>>,
    outcome: Outcome<V>,
) -> Option<Outcome<V>> {
    let copy = |outcome: &Outcome<V>| match outcome {
        Ok(value) => lockgate_panicguard::catch(|| value.clone()).map_err(Error::Panicked),
        Err(error) => Err(error.clone()),
    };
    // The usual job has one waiter: its starter, or one channel.
    let mailboxes = match mailboxes.into_only() {
        Ok(Mailbox::Task) => return Some(outcome),
        Ok(Mailbox::Channel(channel)) => {
            let _gone = channel.send(outcome);
            return None;
        }
        Err(mailboxes) => mailboxes,
    };
    let mut task_waits = false;
    // Each channel gets a copy once the next one is seen, so the last gets the outcome itself
    // unless the task's own waiter takes it.
    let mut held = None;
    for mailbox in mailboxes {
        match mailbox {
            Mailbox::Task => task_waits = true,
            Mailbox::Channel(channel) => {
                if let Some(previous) = held.replace(channel) {
                    let _gone = previous.send(copy(&outcome));
                }
            }
        }
    }
    match held {
        Some(last) if task_waits => {
            let _gone = last.send(copy(&outcome));
            Some(outcome)
        }
        Some(last) => {
            let _gone = last.send(outcome);
            None
        }
        None => task_waits.then_some(outcome),
    }
}

pub(crate) struct Waiter<'a, K, C, V>
where
    K: Hash + Eq + Clone,
    C: Hash + Eq + Clone,
{
    shared: &'a Shared<K, C, V>,
    id: WaiterId,
    /// Whether the table may still hold this waiter's mailbox.
    registered: bool,
}

impl<'a, K, C, V> Waiter<'a, K, C, V>
where
    K: Hash + Eq + Clone,
    C: Hash + Eq + Clone,
    V: Clone,
{
    /// Guards the registration `id`; create it right after the table returned `id`.
    pub(crate) fn new(shared: &'a Shared<K, C, V>, id: WaiterId) -> Self {
        Self {
            shared,
            id,
            registered: true,
        }
    }

    /// Waits for the outcome. With a `deadline` (the job was queued), whoever of the job's
    /// waiters wakes first at the deadline expires the job if it is still queued: every waiter
    /// then gets `Busy`, including this one. A job that started meanwhile is waited for in
    /// full.
    pub(crate) async fn wait(
        mut self,
        mut outcome: oneshot::Receiver<Outcome<V>>,
        deadline: Option<Instant>,
    ) -> Outcome<V> {
        if let Some(deadline) = deadline {
            tokio::select! {
                biased;
                received = &mut outcome => return self.received(received),
                () = tokio::time::sleep_until(deadline) => {
                    if let Some(expired) = self.shared.table.expire(self.id.job) {
                        tracing::debug!("a queued job waited past its limit: Busy");
                        let queue_wait = expired.launch.queued_for();
                        self.shared.hooks.call(|hooks| hooks.expired(queue_wait));
                        let busy = Error::Busy {
                            cause: BusyCause::WaitExpired,
                            retry_after: self.shared.wait,
                        };
                        let _none = deliver(expired.waiters, Err(busy));
                        drop(expired.launch);
                    }
                }
            }
        }
        let received = (&mut outcome).await;
        self.received(received)
    }

    /// Awaits the task of a job this request started at once: the task's output is the
    /// outcome [`deliver`] handed back for this waiter's [`Mailbox::Task`]. `None` (no
    /// runtime to spawn on: the job was torn down at once) and a task that ended without an
    /// output (its runtime shut down) mean `Closed`, as a dropped channel does.
    pub(crate) async fn wait_for_task(
        mut self,
        task: Option<JoinHandle<Option<Outcome<V>>>>,
    ) -> Outcome<V> {
        let output = match task {
            Some(task) => task.await,
            None => Ok(None),
        };
        self.registered = false;
        match output {
            Ok(Some(outcome)) => outcome,
            // The job's panics are caught inside the task; one here came from the task's own
            // bookkeeping.
            Err(error) if error.is_panic() => {
                Err(Error::Panicked(Panic::from_payload(error.into_panic())))
            }
            Ok(None) | Err(_) => Err(Error::Closed),
        }
    }

    /// The mailbox was sent to or dropped: either way the table let go of it (invariant 8).
    fn received(&mut self, received: Result<Outcome<V>, oneshot::error::RecvError>) -> Outcome<V> {
        self.registered = false;
        // A mailbox dropped unsent means its job was torn down without an outcome.
        received.unwrap_or(Err(Error::Closed))
    }
}

impl<K, C, V> Drop for Waiter<'_, K, C, V>
where
    K: Hash + Eq + Clone,
    C: Hash + Eq + Clone,
{
    fn drop(&mut self) {
        if self.registered {
            // Leaving may abandon a queued job: its closure (a user value) is dropped here,
            // after the table's lock was released.
            let left = self.shared.table.leave(self.id);
            if let Some(abandoned) = &left.abandoned {
                tracing::debug!("the last waiter of a queued job left: the job is dropped");
                self.shared
                    .hooks
                    .call(|hooks| hooks.abandoned(abandoned.queued_for()));
            }
            drop((left.mailbox, left.abandoned));
        }
    }
}
