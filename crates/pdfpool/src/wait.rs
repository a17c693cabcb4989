//! Waiting for a job's outcome: the waiter's drop guard, the wait limit, and the fan-out.
//!
//! Each waiter owns a oneshot receiver; its sender (the mailbox) sits in the job's waiter slab
//! in the table. The outcome reaches every waiter by one `send` per mailbox, done after the
//! table's lock is released, so waking 10,000 sharers takes one lock acquisition, not 10,000.
//!
//! # Cancel safety
//!
//! The awaits that can be cancelled are all in `Waiter::wait`: the `select!` over the mailbox and
//! the deadline `Sleep`, and the final mailbox await. Admission itself happens synchronously in
//! the first poll, and each `run` arm wraps its `WaiterId` in a `Waiter` guard before anything
//! else can unwind or await. Hence:
//!
//! - Dropped before the first poll: nothing was registered.
//! - Dropped while registered: `Waiter::drop` calls `leave` under the lock, which removes the
//!   mailbox (so `waiting(key)` drops by one) and, if that was the last waiter of a Queued job,
//!   removes the job, its queue entry and its owner (the table's invariant 6), returning the
//!   launch to be dropped unrun. A Running job stays: its task owns it, not the waiter (rule 4).
//! - Dropped after the mailbox was handed out (ended, expired, closed): `leave` finds nothing;
//!   the outcome is sent to a dropped receiver and freed with it.
//! - The `Sleep` of a dropped waiter is dropped with it; a waiter whose job started meanwhile
//!   still wakes at the deadline once, finds the job no longer queued (`expire` is `None`), and
//!   goes on waiting without a timer.

use std::hash::Hash;

use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::pool::{Mailbox, Outcome, Shared};
use crate::slab::Slab;
use crate::table::WaiterId;
use crate::{BusyCause, Error};

/// Sends `outcome` to every mailbox: clones to all but the last, which gets the original.
///
/// A panic in `V::clone` becomes that waiter's `Panicked` and the others still get theirs.
/// A mailbox whose receiver is gone (its waiter gave up meanwhile) is skipped.
pub(crate) fn deliver<V: Clone>(mailboxes: Slab<Mailbox<V>>, outcome: Outcome<V>) {
    let mut mailboxes = mailboxes.into_iter().peekable();
    while let Some(mailbox) = mailboxes.next() {
        if mailboxes.peek().is_none() {
            let _gone = mailbox.send(outcome);
            return;
        }
        let copy = match &outcome {
            Ok(value) => lockgate_panicguard::catch(|| value.clone()).map_err(Error::Panicked),
            Err(error) => Err(error.clone()),
        };
        let _gone = mailbox.send(copy);
    }
}

/// A registered waiter of one job. Dropping it before the outcome arrived takes it off the
/// job (the table's `leave`): that is what makes every await in `wait` cancel safe.
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
                        deliver(expired.waiters, Err(busy));
                        drop(expired.launch);
                    }
                }
            }
        }
        let received = (&mut outcome).await;
        self.received(received)
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
