//! The worker's pipeline: how its rounds overlap ([`Lane`]). Without it a worker runs
//! claim, fetch, store in sequence; with it, a store round trip hides behind the next
//! fetch, and a store that can claim with its store call claims the next target with it.
//!
//! # Rules
//!
//! 1. A result's store finishes beside the next claim and the next fetch ([`Overlap`]): once
//!    fetched, a target's store call, hooks and eviction check (its *finish*) run while the
//!    worker claims and fetches its next target, and the worker waits for a finish before
//!    it starts the next one, so at most one store per worker is out. The finish is polled
//!    first, so a store that answers at once (memory, or SQLite's thread, which runs calls
//!    in order) has stored before the claim runs, as in sequence (its hooks and eviction
//!    check come after the claim); a shared store, or any store retrying a failed call,
//!    runs the round trips side by side. A worker thus holds up to two claims (one being
//!    stored, one fetched), and the next target's hooks may come before the last one's. A
//!    claim made beside a finish cannot take the stored job's next target (that job is
//!    still in flight until the store commits), so when it finds nothing the worker waits
//!    for the finish and claims as in step 2, and claims after the finish for a while (a
//!    single serial job would otherwise cost an empty claim per target). A fetched target
//!    whose worker still waits for the last finish keeps its lease renewed (it is abandoned
//!    if the lease is lost). After waiting for a finish the worker checks for close before
//!    it claims. The worker never sleeps, and never returns (close), with a finish out.
//! 2. A worker whose last fetch took at most [`AHEAD_FOR_FETCHES_UNDER`] asks the store to
//!    take the target after next with each result it stores ([`WorkerStore::finish`](crate::store::WorkerStore::finish) with
//!    `take_next`). Whether to is the store's choice; once a store has handed a claim back
//!    (the PostgreSQL store, where a claim is a round trip and a commit of its own), the
//!    worker fetches that claim once the fetch it runs now ends (the finish ends beside that
//!    fetch). To get two claims into the pipeline, the first claim ahead is a plain claim
//!    beside a fetch, made only when no finish is out, so a worker's claims are never two
//!    at once and it fetches in the order it claimed (token order, which is the rotation's
//!    order; a claim the store takes ahead with a finish the worker overlapped before it
//!    knew the store does is fetched before a later claim made beside it). While the finish that is out claims ahead, the worker waits for it instead of
//!    claiming beside it. A claim ahead that found nothing pauses claiming ahead as an
//!    overlapping claim that found nothing pauses rule 1. A claim held ahead longer than a
//!    heartbeat's interval is renewed before its fetch (and dropped if its lease is lost);
//!    one whose job may have been cancelled since it was asked for (the runner counts the
//!    cancels it learns of, its own and, through the store's events, other runners') is
//!    checked against the store and released if the job is no longer live, so no target
//!    starts after a cancel through this runner returned; at close it is released
//!    unfetched, its target pending for the next runner. A worker thus holds up to three
//!    claims: one being stored, one fetched, one ahead.
//!
//! # Invariants
//!
//! - At most one finish per worker is out; the worker never sleeps, and never returns, with
//!   one out.
//! - A worker holds at most three claims (one being stored, one fetched, one ahead), and
//!   fetches them in token order.
//! - A claim held ahead is fetched, released at close, released because its job ended, or
//!   dropped because its lease was lost (it is someone else's then); never left behind
//!   (`claim_ahead` tests, `close_races`).

use std::pin::{Pin, pin};
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::shared::Shared;
use crate::store::{Claim, ClaimEnd, Store};
use crate::time::Timestamp;

use super::fetch::{Attempt, Fetched, heartbeat_every, with_heartbeat};
use super::store_call;

/// Rule 2 claims ahead only after a fetch at most this long: the claim waits for the next
/// fetch to end, which is likely as short, while no other worker can take its target.
const AHEAD_FOR_FETCHES_UNDER: Duration = Duration::from_millis(100);

/// What a worker carries from round to round besides the finish that is out.
#[derive(Default)]
struct Pipeline {
    /// A claim the last finish took ahead, to fetch next (pipeline rule 2).
    ahead: Option<Ahead>,
    /// The finish that is out claims ahead.
    claiming: bool,
    /// Rule 1, which rule 2's claims ahead follow too.
    overlap: Overlap,
    /// The store has handed a next claim back from a finish: it claims with its store
    /// call, and rule 2 runs (learned, never asked: see `WorkerStore::finish`).
    store_claims_ahead: bool,
}

impl Pipeline {
    /// Which claim to fetch now, given `claim`, just made: a claim held ahead with an
    /// earlier token goes first, and `claim` is then held ahead in its place (read against
    /// cancels before its fetch, as a claim ahead is). The clock is read only then: one
    /// read per claim was measurable on the hot path.
    fn first_of(&mut self, claim: Claim, now: impl FnOnce() -> Timestamp) -> First {
        match self.ahead.take() {
            Some(held) if held.claim.token < claim.token => {
                self.ahead = Some(Ahead {
                    claim,
                    at: now(),
                    cancels: u64::MAX, // never equal: its job is read before its fetch
                });
                First::Held(held)
            }
            held => {
                self.ahead = held;
                First::Fresh(claim)
            }
        }
    }

    /// Takes in what a finish that ended brings: `Some` if it tried to claim ahead, with
    /// the claim if it found one.
    fn finished(&mut self, tried: Option<Option<Ahead>>) {
        self.claiming = false;
        let Some(next) = tried else {
            return;
        };
        self.overlap.claimed(next.is_some());
        debug_assert!(
            self.ahead.is_none() || next.is_none(),
            "a claim ahead is fetched before the next finish ends"
        );
        if next.is_some() {
            self.store_claims_ahead = true;
            self.ahead = next;
        }
    }
}

/// What [`Pipeline::first_of`] chose to fetch now.
enum First {
    /// The claim just made.
    Fresh(Claim),
    /// A claim held ahead, made before it.
    Held(Ahead),
}

/// A claim a finish took ahead (pipeline rule 2), when it arrived, and [`Shared::cancels`] as it was
/// before the claim was asked for.
pub(super) struct Ahead {
    pub(super) claim: Claim,
    pub(super) at: Timestamp,
    pub(super) cancels: u64,
}

impl Ahead {
    /// The claim to fetch now; `None` if its job was cancelled meanwhile (the claim is then
    /// released: no target of a cancelled job starts) or its lease was lost. Its job is read
    /// again only if a cancel came since the claim was asked for, and the claim renewed
    /// first only if it waited a heartbeat's interval.
    pub(super) async fn keep<T, O, S: Store>(
        self,
        shared: &Shared<T, O>,
        store: &S,
    ) -> Option<Claim> {
        if shared.cancels.load(Ordering::SeqCst) != self.cancels {
            let claim = &self.claim;
            let read = store_call(shared, || store.summary(claim.job, &claim.caller)).await;
            // Not live, gone, or unknown because the runner is closing: not fetched.
            if !matches!(read, Some(Some(job)) if job.status.is_live()) {
                let now = shared.clock.now();
                let end = || store.finish(claim, ClaimEnd::Released, now, false);
                let _ = store_call(shared, end).await;
                return None;
            }
        }
        let Some(ttl) = store.lease_ttl() else {
            return Some(self.claim);
        };
        let now = shared.clock.now();
        if now.saturating_since(self.at) < heartbeat_every(ttl) {
            return Some(self.claim);
        }
        match store.renew(&self.claim, now).await {
            Ok(false) => {
                tracing::warn!(
                    job = %self.claim.job,
                    target = self.claim.index,
                    "lease of a claim taken ahead lost before its fetch; dropped"
                );
                None
            }
            // A failed renewal is retried by the fetch's heartbeat.
            Ok(true) | Err(_) => Some(self.claim),
        }
    }
}

/// What a worker's finish does (started by [`Lane`] through the worker's `start`).
pub(super) enum Round {
    /// Stores a fetched target (rule 1), letting the store claim the target after next with
    /// it when `take_next` (rule 2).
    Store {
        claim: Claim,
        fetched: Fetched,
        take_next: bool,
        /// The store is known to take one when asked (`Pipeline::store_claims_ahead`).
        expects_next: bool,
    },
    /// Rule 2's first claim ahead, with nothing to store.
    ClaimAhead,
}

/// What [`Lane::next_claim`] found.
pub(super) enum Next {
    /// A claim to fetch now.
    Fetch(Claim),
    /// Nothing to fetch: the worker claims once more as idle (step 2), then sleeps.
    Idle,
    /// A held claim was dropped (its job ended, its lease was lost), or a claim came ahead:
    /// start the round again.
    Again,
    /// The runner closed.
    Closed,
}

/// One worker's pipeline: the finish that is out (`Fut`, started by `start`), the claim
/// held ahead, and the rules above. The worker loop asks it for the next claim, runs each
/// fetch beside it, and hands it each result to store; everything that overlaps is here.
pub(super) struct Lane<'p, Fut, Start> {
    /// Rule 1: the last target's finish (or rule 2's first claim ahead), while it is out.
    finishing: Pin<&'p mut Option<Fut>>,
    pipe: Pipeline,
    /// The last fetch was short (rule 2).
    short: bool,
    start: Start,
}

impl<'p, Fut, Start> Lane<'p, Fut, Start>
where
    Fut: Future<Output = Option<Option<Ahead>>>,
    Start: Fn(Round) -> Fut,
{
    /// A lane over `finishing` (empty), whose finishes `start` runs.
    pub(super) fn new(finishing: Pin<&'p mut Option<Fut>>, start: Start) -> Self {
        Self {
            finishing,
            pipe: Pipeline::default(),
            short: false,
            start,
        }
    }

    /// The next claim to fetch: a claim held ahead, or a fresh claim made beside the finish
    /// that is out (rule 1), in token order (rule 2).
    pub(super) async fn next_claim<T, O, S: Store>(
        &mut self,
        shared: &Shared<T, O>,
        store: &S,
        now: Timestamp,
    ) -> Next {
        let pipe = &self.pipe;
        if (!pipe.overlap.active() || pipe.claiming) && pipe.ahead.is_none() {
            // The finish may free the job this worker can take next, or bring its claim.
            self.finish().await;
            if shared.closed.load(Ordering::Acquire) {
                return Next::Closed; // closed while it waited: claim nothing more
            }
        }
        if let Some(next) = self.pipe.ahead.take() {
            // Boxed: a claim is held ahead only over a store where a claim is a round trip,
            // and unboxed its reads and release would grow this future, which every round
            // moves into place.
            return match Box::pin(next.keep(shared, store)).await {
                Some(claim) => Next::Fetch(claim),
                None => Next::Again, // its job was cancelled or its lease lost: claim afresh
            };
        }
        let overlapping = self.finishing.is_some();
        let call = store_call(shared, || store.claim(now));
        let Some(claim) = self.beside(pin!(call)).await else {
            return Next::Closed;
        };
        if overlapping {
            self.pipe.overlap.claimed(claim.is_some());
        } else {
            self.pipe.overlap.sequential();
        }
        match claim {
            // The finish beside this claim may have taken one ahead, made first (the store's
            // first, before the worker knew it takes them): token order.
            Some(claim) => match self.pipe.first_of(claim, || shared.clock.now()) {
                First::Fresh(claim) => Next::Fetch(claim),
                First::Held(earlier) => match Box::pin(earlier.keep(shared, store)).await {
                    Some(claim) => Next::Fetch(claim),
                    None => Next::Again,
                },
            },
            None if overlapping => {
                // The store beside it may free the very job this worker can take next, or
                // have taken a claim ahead (the store's first, before the worker knew it
                // takes them): that claim is fetched next.
                self.finish().await;
                if shared.closed.load(Ordering::Acquire) {
                    Next::Closed
                } else if self.pipe.ahead.is_some() {
                    Next::Again
                } else {
                    Next::Idle
                }
            }
            None => Next::Idle,
        }
    }

    /// Runs `fetch` beside the finish that is out, first starting rule 2's first claim
    /// ahead beside it when due.
    ///
    /// Not an `async fn` of its own, and `fetch` comes pinned (see [`beside`](Self::beside)).
    pub(super) fn fetch<R, F: Future<Output = R>>(
        &mut self,
        fetch: Pin<&mut F>,
    ) -> impl Future<Output = R> {
        let pipe = &self.pipe;
        let ahead_now = pipe.store_claims_ahead && self.short && pipe.overlap.active();
        if ahead_now && self.finishing.is_none() && pipe.ahead.is_none() {
            // Rule 2's first claim ahead, beside this fetch (so after its claim in token
            // order): from now on each store brings the claim after next.
            self.pipe.claiming = true;
            let round = (self.start)(Round::ClaimAhead);
            self.finishing.set(Some(round));
        }
        self.beside(fetch)
    }

    /// Once `claim` is fetched, waits for the finish still out, renewing `claim`'s lease
    /// meanwhile as during its fetch (under `token`): a lost lease abandons the result.
    pub(super) async fn settle<T, O, S: Store>(
        &mut self,
        shared: &Shared<T, O>,
        store: &S,
        claim: &Claim,
        token: &CancellationToken,
        mut fetched: Fetched,
    ) -> Fetched {
        // The last store may still be out (retrying a failing store, say): this claim's
        // lease is renewed while the worker waits for it, as during its fetch.
        let waited = match store.lease_ttl() {
            Some(ttl) if self.finishing.is_some() => {
                let (finishing, pipe) = (self.finishing.as_mut(), &mut self.pipe);
                let wait = finish(finishing, pipe);
                let lost = token.child_token(); // cancelled if the lease is lost
                with_heartbeat(shared, store, claim, ttl, &lost, wait).await
            }
            _ => {
                self.finish().await;
                Some(())
            }
        };
        if waited.is_none() {
            // The lease was lost meanwhile: another worker may hold the target now.
            self.finish().await;
            fetched.attempt = Attempt::Abandon;
        }
        fetched
    }

    /// Starts `claim`'s finish (rule 1), asking the store for the target after next with it
    /// when rule 2 says so.
    pub(super) fn store(&mut self, claim: Claim, fetched: Fetched) {
        debug_assert!(
            self.finishing.is_none(),
            "at most one finish out per worker"
        );
        self.short = fetched.elapsed <= AHEAD_FOR_FETCHES_UNDER;
        // Rule 2: this store may claim the target after next (a claim held now is fetched
        // next, before this finish can end).
        let take_next = self.short && self.pipe.overlap.active();
        self.pipe.claiming = take_next && self.pipe.store_claims_ahead;
        let round = Round::Store {
            claim,
            fetched,
            take_next,
            expects_next: self.pipe.claiming,
        };
        let round = (self.start)(round);
        self.finishing.set(Some(round));
    }

    /// Starts the finish of a claim made as idle (step 2), with nothing out and nothing held:
    /// no claim ahead with it.
    pub(super) fn store_after_idle(&mut self, claim: Claim, fetched: Fetched) {
        debug_assert!(
            self.finishing.is_none() && self.pipe.ahead.is_none(),
            "the worker claimed again only after its finish"
        );
        self.short = fetched.elapsed <= AHEAD_FOR_FETCHES_UNDER;
        let round = Round::Store {
            claim,
            fetched,
            take_next: false,
            expects_next: false,
        };
        let round = (self.start)(round);
        self.finishing.set(Some(round));
    }

    /// Whether nothing is out or held: the worker may sleep.
    pub(super) fn is_empty(&self) -> bool {
        self.finishing.is_none() && self.pipe.ahead.is_none()
    }

    /// Closing: runs the finish that is out to its end and releases a claim held ahead
    /// unfetched (its target stays pending for the next runner over the store).
    pub(super) async fn close<T, O, S: Store>(mut self, shared: &Shared<T, O>, store: &S) {
        self.finish().await;
        if let Some(unfetched) = self.pipe.ahead.take() {
            let claim = unfetched.claim;
            let now = shared.clock.now();
            let _ = store_call(shared, || {
                store.finish(&claim, ClaimEnd::Released, now, false)
            })
            .await;
        }
    }

    /// Runs the finish that is out, if one is, to its end.
    async fn finish(&mut self) {
        finish(self.finishing.as_mut(), &mut self.pipe).await;
    }

    /// Runs `main` to its end while the finish that is out, if one is, makes progress (and
    /// is cleared once it ends); the finish is polled first.
    ///
    /// `main` comes pinned: the caller's future holds it once, instead of this one holding
    /// it as an argument and again pinned (each round moves a future into place, and a
    /// fetch's is large).
    async fn beside<R, F: Future<Output = R>>(&mut self, mut main: Pin<&mut F>) -> R {
        loop {
            let Some(out) = self.finishing.as_mut().as_pin_mut() else {
                return main.as_mut().await;
            };
            tokio::select! {
                biased;
                tried = out => {
                    self.finishing.set(None);
                    self.pipe.finished(tried);
                }
                value = main.as_mut() => return value,
            }
        }
    }
}

/// Runs the finish that is out, if one is, to its end, into `pipe`.
async fn finish<Fut: Future<Output = Option<Option<Ahead>>>>(
    mut finishing: Pin<&mut Option<Fut>>,
    pipe: &mut Pipeline,
) {
    if let Some(out) = finishing.as_mut().as_pin_mut() {
        let tried = out.await;
        finishing.set(None);
        pipe.finished(tried);
    }
}

/// Rule 1: claim while the last target finishes, unless doing so found nothing
/// lately (a single serial job, whose next target waits for that very store).
#[derive(Debug, Default)]
struct Overlap {
    /// Claims still to make after the finish.
    paused_for: u32,
}

impl Overlap {
    /// How many claims wait for the finish after an overlapping claim found nothing.
    const PAUSE: u32 = 16;

    fn active(&self) -> bool {
        self.paused_for == 0
    }

    /// An overlapping claim found a target, or found nothing.
    fn claimed(&mut self, found: bool) {
        if !found {
            self.paused_for = Self::PAUSE;
        }
    }

    /// One claim made after the finish.
    fn sequential(&mut self) {
        self.paused_for = self.paused_for.saturating_sub(1);
    }
}
