//! [`Rules`]: what a store under test promises where the contract leaves it a choice.

use std::time::Duration;

/// Where the [`Store`](crate::store::Store) contract lets stores differ, what the store under
/// test does: the reference follows these, and the kit compares against it.
///
/// Start from [`Rules::owned`] (a store owned by one process, as the in-memory and SQLite
/// stores are) or [`Rules::shared`] (one that several processes share), then adjust:
///
/// ```
/// use std::time::Duration;
/// use lockgate_batch::spec::Rules;
///
/// // Claims lapse a second after their claim or renew, on the clock the calls pass.
/// let leased = Rules::owned().lease(Duration::from_secs(1));
/// # let _ = leased;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rules {
    /// Claims lapse this long after their claim or last renew, judged on the `now` the calls
    /// pass (the store's [`lease_ttl`](crate::store::WorkerStore::lease_ttl)): the kit then
    /// checks lapses, rescues and lease ends in `next_wakeup`. `None`: no claim lapses within
    /// a sequence.
    pub lease: Option<Duration>,
    /// [`recover`](crate::store::WorkerStore::recover) frees every claim (their holder is
    /// gone); otherwise it leaves them to their leases.
    pub recover_frees_claims: bool,
    /// `next_wakeup` may answer a fallback poll time up to this far ahead in place of a
    /// later wake-up, or of none.
    pub fallback_poll: Option<Duration>,
    /// Claims hold a lease of this length judged on a clock of the store's own (a database
    /// server's), which the kit cannot follow: while a claim is out, `next_wakeup` may answer
    /// any time from now to this far ahead (no later than the reference's own wake-up). Make
    /// it far longer than a sequence runs: no claim may lapse within one.
    pub lease_on_store_clock: Option<Duration>,
    /// A finish that stores a result for a claim whose result the store already stored under
    /// that claim (a retried call whose first answer was lost after its commit) answers as
    /// that store again, the job as it is now, instead of
    /// [`Completion::Stale`](crate::store::Completion::Stale): so the runner reports the
    /// target once. A store whose answers are never lost after a commit need not.
    pub replays_stores: bool,
}

impl Rules {
    /// A store owned by one process: claims never lapse, `recover` frees them all, and
    /// `next_wakeup` answers exactly what the contract asks.
    pub const fn owned() -> Self {
        Self {
            lease: None,
            recover_frees_claims: true,
            fallback_poll: None,
            lease_on_store_clock: None,
            replays_stores: false,
        }
    }

    /// A store several processes share: as [`owned`](Self::owned), except that `recover`
    /// leaves claims to their leases. Add its lease with [`lease`](Self::lease) or
    /// [`lease_on_store_clock`](Self::lease_on_store_clock).
    pub const fn shared() -> Self {
        Self {
            recover_frees_claims: false,
            ..Self::owned()
        }
    }

    /// The same rules with claims lapsing `ttl` after their claim or renew, on the callers'
    /// clock (see the field of the same name).
    #[must_use]
    pub const fn lease(mut self, ttl: Duration) -> Self {
        self.lease = Some(ttl);
        self
    }

    /// The same rules with `recover` freeing every claim, or not.
    #[must_use]
    pub const fn recover_frees_claims(mut self, frees: bool) -> Self {
        self.recover_frees_claims = frees;
        self
    }

    /// The same rules with a fallback poll of `poll` allowed in `next_wakeup` (see
    /// the field of the same name).
    #[must_use]
    pub const fn fallback_poll(mut self, poll: Duration) -> Self {
        self.fallback_poll = Some(poll);
        self
    }

    /// The same rules with stores replayed, or not (see the field of the same name).
    #[must_use]
    pub const fn replays_stores(mut self, replays: bool) -> Self {
        self.replays_stores = replays;
        self
    }

    /// The same rules with leases of `ttl` on the store's own clock (see the field
    /// of the same name).
    #[must_use]
    pub const fn lease_on_store_clock(mut self, ttl: Duration) -> Self {
        self.lease_on_store_clock = Some(ttl);
        self
    }
}

impl Default for Rules {
    /// [`Rules::owned`].
    fn default() -> Self {
        Self::owned()
    }
}
