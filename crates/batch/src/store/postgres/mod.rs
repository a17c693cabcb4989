//! [`PostgresStore`]: jobs in a PostgreSQL database that several runner processes share.
//!
//! Files: `options.rs` (settings, checked before anything connects, and the constructors),
//! `connect.rs` (plain or TLS connections under the connect timeout, and the pool's),
//! `carry.rs` (what a call leaves for later: notes to send, the stored total), `notifier.rs`
//! (the notes of claims and stores, sent after their commits), `cursor.rs` (this store's place in
//! the rotation, where its claims' walks start), `tls.rs` (rustls, feature
//! `postgres-tls`), `listen.rs` (the `LISTEN` connection), `schema.rs` (migrations),
//! `queries.rs` (every call's SQL but the pages'), `pages.rs` (the pages' SQL), `error.rs`.
//!
//! Invariants:
//!
//! 1. Every call is one transaction on one pooled connection, committed only if the call
//!    succeeds: a failed or dropped call changes nothing.
//! 2. Every transaction runs in the store's schema, with the store's planner settings
//!    (`options::PLANNER_SETTINGS`: bitmap scans off, as the claim must walk its index in
//!    order, and generic plans from the first execution): the pool the store builds sets
//!    them at connection start-up; on an application's pool each transaction sets them with
//!    `SET LOCAL` first (`connect.rs`, `Connections`).
//! 3. The schema name entering SQL was validated (no quote can occur in it) and is quoted.
//! 4. Nothing waits on the server without a bound, except a statement a live server delays
//!    (see the type's guarantees).

mod carry;
mod connect;
mod cursor;
mod error;
mod listen;
mod notifier;
mod options;
mod pages;
mod queries;
mod schema;
#[cfg(feature = "postgres-tls")]
mod tls;

use std::future::Future;
use std::time::Duration;

use deadpool_postgres::{Object, Pool, Transaction};
use tokio::sync::broadcast;

use connect::Connections;
pub use error::PostgresError;
pub use options::PostgresOptions;

use crate::error::{StoreError, SubmitError};
use crate::job::{Caller, Job, JobId, TargetState};
use crate::page::{JobListing, JobsPage, JobsQuery, Scope, TargetsPage, TargetsQuery};
use crate::store::{
    BoxFuture, CallerStore, CancelOutcome, Claim, ClaimEnd, Completion, Evicted, Finished, NewJob,
    StoreEvent, Submitted, WorkerStore,
};
use crate::summary::JobSummary;
use crate::time::Timestamp;

/// A [`Store`](super::Store) in a PostgreSQL database, shared by several runner processes (replicas).
///
/// Every replica points its runner at the same database and schema; their workers drain the
/// jobs together under the rules of one runner. Each call is one transaction over a pooled
/// connection (`deadpool-postgres`).
///
/// # Guarantees
///
/// - **One rotation across replicas, claims in parallel.** The live jobs are one list in
///   submit order, shared by every replica; each `PostgresStore` keeps its own cursor in it
///   (in memory). A claim takes the first ready job from that cursor on, wrapping once, in
///   one statement, `FOR UPDATE SKIP LOCKED`: no row is locked or written by every claim, so
///   replicas claim side by side. With one process claiming, the order is exactly the rule
///   of [`Store`](super::Store)'s docs; with several, each other job is claimed at most once per claiming
///   process before a ready job (plus once by a claim already on its way), the bound those
///   docs give.
/// - **Leases and fencing.** A claim holds a lease of [`PostgresOptions::lease_ttl`], renewed
///   by the runner every third of it while the fetch runs; a slow fetch that keeps renewing is
///   never fetched twice. Leases are stamped and judged by the server's clock (`now()`), so
///   the replicas' clocks need not agree. A claim whose lease lapsed is taken back by the next
///   claim anywhere
///   (reported through [`Hooks::rescued`](crate::hooks::Hooks::rescued) and `tracing`); every write
///   matches the claim's fencing token, so the replica that lost it can never overwrite what
///   the new owner stored.
/// - **A replica dies** (SIGKILL, a lost machine): its targets are fetched again by the others
///   after `lease_ttl` (at-least-once fetch), and each result is stored exactly once.
/// - **The server crashes**: every acknowledged submit, stored result and cancel survives, as
///   durable as the server's `synchronous_commit` makes them. Claims, renewals, busy retries
///   and releases commit without waiting for the disk (a claim is half of every target's
///   commits): one out at the crash may be lost with it, and its target is then fetched
///   again (at-least-once fetch, as when a replica dies) and stored once.
/// - **Retry times** are the runners' own clocks (a busy target's wait): replicas whose
///   clocks disagree shift a retry by the difference, never run a target twice.
/// - **Wake-ups**: submit, a retry, a release and a cancel send `NOTIFY` in their
///   transactions; idle workers of every replica `LISTEN` and claim at once, and claim again
///   at least every [`PostgresOptions::poll_interval`] regardless.
/// - **Events**: each of those `NOTIFY`s, and the notes of a job's start, its stored targets
///   and its end, carry the job's status and counts right after the change;
///   [`CallerStore::events`] receivers get each as a [`StoreEvent::Progress`] (from every replica,
///   this one included). Starts, stored targets and ends are announced by the process
///   right after their commits, in statements of their own that do not wait for the disk
///   (inside a durable store, PostgreSQL's notify lock would be held through the flush, one
///   announcing store after another): starts and ends at once, stored targets of jobs that
///   go on newest per job at most every [`PostgresOptions::progress_interval`] (100 ms by
///   default: every `NOTIFY` costs every replica's listener work). A process that dies
///   right after a change may leave it unannounced, so receivers also get a
///   [`StoreEvent::Missed`] at least every poll interval, and whenever the listening
///   connection was (re)opened (changes made while it was not listening are not announced
///   either): the runner then re-reads the jobs it watches. The listener starts at the
///   first `events` call made inside a tokio runtime, or at the first idle wait.
/// - **A lost connection** is a [`StoreError::Unavailable`]: the runner retries the call on a
///   fresh connection; the transaction rolled back, so nothing is lost or stored twice.
/// - `max_live_jobs` and one live job per caller hold across replicas (`submit` takes an
///   advisory lock), and so does the byte budget (eviction takes one), with one slack: the
///   check after a stored target reads the store's total from the table at most every
///   100 ms per process and adds the process's own results in between, so targets stored or
///   jobs submitted through other replicas within that time can leave the store over
///   `max_bytes` by their bytes until a check reads the table again.
/// - **No hang on an unanswering server.** Opening a connection, waiting for a pooled one and
///   checking one before reuse are each bounded ([`PostgresOptions::connect_timeout`] and
///   [`PostgresOptions::pool_wait_timeout`]), and TCP keepalive notices a peer that died under an open connection: each
///   ends as [`StoreError::Unavailable`], which the runner retries. Not bounded: a statement
///   that a live server keeps waiting (a lock); put `statement_timeout` in the URL's `options`
///   for that. On tokio's paused clock these timeouts fire as soon as the runtime waits for the
///   server (virtual time jumps to them): in such tests, run the store's calls on a runtime
///   whose clock runs.
///
/// # Examples
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
///
/// use lockgate_batch::{Caller, Config, FetchError, Runner, store::PostgresStore};
///
/// let store = PostgresStore::options()
///     .lease_ttl(Duration::from_secs(30))
///     .connect("postgres://batch@db.internal/app")
///     .await?;
/// let fetch = lockgate_batch::fetch_fn(|_ctx, n: u32| async move { Ok::<u32, FetchError>(n + 1) });
/// let runner = Runner::new(Config::default(), store, fetch).await?;
/// runner.submit(&Caller::new("ann"), &[1, 2, 3]).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct PostgresStore {
    connections: Connections,
    wakeups: listen::Wakeups,
    channel: String,
    lease_ttl: Duration,
    poll_interval: Duration,
    /// Sends the notes of claims and stores after their commits.
    notifier: notifier::Notifier,
    /// The stored bytes, read at most every 100 ms, for the budget check after each store.
    stored_total: carry::StoredTotal,
    /// This store's place in the rotation (`cursor.rs`).
    cursor: cursor::Cursor,
}

impl PostgresStore {
    /// The store over `pool`, from checked `options`; `listen` opens the LISTEN connection.
    fn new(
        options: &PostgresOptions,
        pool: Pool,
        listen: tokio_postgres::Config,
        connector: connect::Connector,
        foreign_pool: bool,
    ) -> Self {
        let schema = options.schema_name();
        let channel = format!("batch_{schema}");
        let connections = Connections::new(
            pool,
            foreign_pool.then(|| {
                let mut per_call = format!("SET LOCAL search_path TO \"{schema}\"");
                for (name, value) in options.settings() {
                    per_call += &format!("; SET LOCAL {name} TO '{value}'");
                }
                per_call
            }),
            foreign_pool.then(|| options.get_timeout()),
            options.call(),
            connector.clone(),
            options.open_timeout(),
        );
        Self {
            notifier: notifier::Notifier::new(
                connections.clone(),
                channel.clone(),
                options.progress(),
            ),
            connections,
            wakeups: listen::Wakeups::new(
                listen,
                connector,
                options.open_timeout(),
                channel.clone(),
                options.poll(),
            ),
            channel,
            lease_ttl: options.lease(),
            poll_interval: options.poll(),
            stored_total: carry::StoredTotal::default(),
            cursor: cursor::Cursor::default(),
        }
    }

    /// A pooled connection, within the timeouts.
    async fn client(&self) -> Result<Object, PostgresError> {
        self.connections.client().await
    }

    /// Opens a transaction on `client`, in the store's schema and planner settings.
    async fn begin<'a>(&self, client: &'a mut Object) -> Result<Transaction<'a>, PostgresError> {
        self.connections.begin(client).await
    }

    /// Moves the cursor after a claim's job (`from` is where the claim's walk started), hands
    /// its start note to the notifier, and answers the claim.
    fn claimed(&self, from: cursor::Position, claimed: Option<queries::Claimed>) -> Option<Claim> {
        let claimed = claimed?;
        self.cursor
            .claimed(from, claimed.claim.job.get() as i64, claimed.claim.token);
        if let Some(note) = claimed.start_note {
            self.notifier.push(claimed.claim.job, note, true);
        }
        Some(claimed.claim)
    }

    /// Default options, to change before connecting.
    pub fn options() -> PostgresOptions {
        PostgresOptions::default()
    }

    /// Connects with default options; see [`PostgresOptions::connect`].
    ///
    /// # Cancel safety
    ///
    /// As [`PostgresOptions::connect`].
    ///
    /// # Errors
    ///
    /// As [`PostgresOptions::connect`].
    pub async fn connect(url: &str) -> Result<Self, PostgresError> {
        PostgresOptions::default().connect(url).await
    }

    /// Live (queued or running) jobs now, across every replica.
    ///
    /// # Cancel safety
    ///
    /// Reads only: dropping the future changes nothing.
    ///
    /// # Errors
    ///
    /// The database could not be read.
    pub async fn live_jobs(&self) -> Result<usize, PostgresError> {
        let mut client = self.client().await?;
        let within = tokio::time::timeout(self.connections.call_timeout(), async {
            let tx = self.begin(&mut client).await?;
            let live = queries::live_jobs(&tx).await?;
            tx.commit().await?;
            Ok(live)
        })
        .await;
        within.unwrap_or_else(|_| Err(self.connections.abandon(client)))
    }
}

/// Runs `$body` (which uses the open transaction `$tx`) on a pooled connection, committing
/// only if it succeeds; a dropped call rolls back. Within the call deadline, or the
/// connection is abandoned (`connect.rs`, "Every call has a deadline").
macro_rules! transaction {
    ($store:expr, |$tx:ident| $body:expr) => {{
        let call = async {
            let mut client = $store.client().await?;
            let deadline = $store.connections.call_timeout();
            let within = tokio::time::timeout(deadline, async {
                let $tx: Transaction<'_> = $store.begin(&mut client).await?;
                let value = $body.await?;
                $tx.commit().await?;
                Ok::<_, PostgresError>(value)
            })
            .await;
            match within {
                Ok(result) => result,
                Err(_) => Err($store.connections.abandon(client)),
            }
        };
        call.await.map_err(StoreError::from)
    }};
}

/// Runs `$body`, a call that is one SQL statement, on a pooled connection `$c`: on the
/// store's own pool in autocommit (one round trip: the statement is its own transaction), on
/// an application's pool inside a transaction that sets `search_path` and the planner
/// setting first. Within the call deadline, as `transaction!`.
macro_rules! one_statement {
    ($store:expr, |$c:ident| $body:expr) => {{
        let call = async {
            let mut client = $store.client().await?;
            let deadline = $store.connections.call_timeout();
            let within = tokio::time::timeout(deadline, async {
                if $store.connections.autocommit() {
                    let $c = &client;
                    Ok::<_, PostgresError>($body.await?)
                } else {
                    let tx: Transaction<'_> = $store.begin(&mut client).await?;
                    let value = {
                        let $c = &tx;
                        $body.await?
                    };
                    tx.commit().await?;
                    Ok(value)
                }
            })
            .await;
            match within {
                Ok(value) => Ok::<_, PostgresError>((value?, client)),
                Err(_) => Err($store.connections.abandon(client)),
            }
        };
        call.await.map_err(StoreError::from)
    }};
}

impl PostgresStore {
    /// Keeps what a store statement left for later (its note, at once if it ended the job;
    /// its bytes in the total) and answers its completion.
    ///
    /// A store refused by the claim's token may be this claim's own, committed by an earlier
    /// try whose answer was lost: then it is answered as that store (`queries::replayed`), so
    /// the target is reported once; else `Stale` or `Lost` (`refused`).
    async fn stored(
        &self,
        claim: &Claim,
        stored: queries::Stored,
        bytes: u64,
    ) -> Result<Completion, StoreError> {
        let (stored, new_bytes) = match stored.completion {
            Completion::Stale => {
                // Each follow-up call returns its connection before the next takes one: a
                // small pool must never wait on itself.
                let (replayed, client) =
                    one_statement!(self, |c| queries::replayed(c, claim, bytes))?;
                drop(client);
                match replayed {
                    // Not added to the running total: it may have been read from the
                    // database since the commit; the next reading (within 100 ms) has it.
                    Some(replayed) => (replayed, 0),
                    None => return self.refused(claim).await,
                }
            }
            _ => (stored, bytes),
        };
        if let Some(note) = stored.note {
            let ended = matches!(stored.completion, Completion::Stored { ended: Some(_), .. });
            self.notifier.push(claim.job, note, ended);
        }
        if matches!(stored.completion, Completion::Stored { .. }) {
            self.stored_total.add(new_bytes);
        }
        Ok(stored.completion)
    }

    /// The answer to a finish after a fetch that the claim's token refused: `Lost` if no
    /// rescue took the claim over and its target is fetched again ([`queries::lost`]), else
    /// `Stale`. One more statement, only on this rare path.
    async fn refused(&self, claim: &Claim) -> Result<Completion, StoreError> {
        let (lost, _client) = one_statement!(self, |c| queries::lost(c, claim))?;
        Ok(if lost {
            Completion::Lost
        } else {
            Completion::Stale
        })
    }

    /// Stores a result and claims the next target in the same statement (`finish` with
    /// `take_next`).
    async fn complete_and_claim(
        &self,
        claim: &Claim,
        result: TargetState,
        now: Timestamp,
    ) -> Result<Finished, StoreError> {
        self.wakeups.claiming();
        let from = self.cursor.start();
        let bytes = result.stored_bytes();
        let ((stored, next), client) = one_statement!(self, |c| queries::complete_and_claim(
            c,
            claim,
            result,
            now,
            self.lease_ttl,
            from.id()
        ))?;
        let next = self.claimed(from, next);
        // Back to the pool before `stored`, which may need a connection of its own.
        drop(client);
        Ok(Finished {
            completion: self.stored(claim, stored, bytes).await?,
            next,
        })
    }
}

/// A claim is a round trip and a commit of its own: a `finish` asked to take the next
/// claim carries it in the store statement, so a busy worker never claims alone.
impl WorkerStore for PostgresStore {
    fn lease_ttl(&self) -> Option<Duration> {
        Some(self.lease_ttl)
    }

    async fn recover(&self, _now: Timestamp) -> Result<usize, StoreError> {
        // Claims out belong to other replicas (or a dead one): their leases decide.
        transaction!(self, |tx| queries::live_jobs(&tx))
    }

    async fn claim(&self, now: Timestamp) -> Result<Option<Claim>, StoreError> {
        self.wakeups.claiming();
        // A statement skips a job claimed or stored after its snapshot (`claim_sql`), which
        // may have been the only work: a second statement, with a fresh snapshot, sees it. An
        // idle worker pays this one statement more; a busy one never does.
        for _ in 0..2 {
            let from = self.cursor.start();
            let (claimed, _client) =
                one_statement!(self, |c| queries::claim(c, now, self.lease_ttl, from.id()))?;
            if let Some(claim) = self.claimed(from, claimed) {
                return Ok(Some(claim));
            }
        }
        Ok(None)
    }

    async fn renew(&self, claim: &Claim, now: Timestamp) -> Result<bool, StoreError> {
        let _ = now; // Leases are judged by the server's clock.
        transaction!(self, |tx| queries::renew(&tx, claim, self.lease_ttl))
    }

    async fn finish(
        &self,
        claim: &Claim,
        end: ClaimEnd,
        now: Timestamp,
        take_next: bool,
    ) -> Result<Finished, StoreError> {
        if end != ClaimEnd::Released {
            // A claim that served its target (or found it busy) keeps its turn.
            self.cursor.ended(claim.token);
        }
        let ended = match end {
            ClaimEnd::Stored(result) if take_next => {
                return self.complete_and_claim(claim, result, now).await;
            }
            ClaimEnd::Stored(result) => {
                let bytes = result.stored_bytes();
                let (stored, client) =
                    one_statement!(self, |c| queries::complete(c, claim, result, now))?;
                // Back to the pool before `stored`, which may need a connection of its own.
                drop(client);
                return self.stored(claim, stored, bytes).await.map(Finished::from);
            }
            ClaimEnd::RetryLater { busy_since, at } => transaction!(self, |tx| {
                queries::retry_later(&tx, &self.channel, claim, busy_since, at, now)
            })?,
            ClaimEnd::Released => {
                let released =
                    transaction!(self, |tx| queries::release(&tx, &self.channel, claim, now))?;
                // Hands its turn back if it still holds it (`cursor.rs`); a stale one only ends.
                if released {
                    self.cursor.released(claim.token);
                    return Ok(Completion::Pending.into());
                }
                self.cursor.ended(claim.token);
                // A release follows no fetch (or one the runner gave up), so a lost claim
                // causes no second fetch: stale, not lost.
                return Ok(Completion::Stale.into());
            }
        };
        Ok(if ended {
            Completion::Pending
        } else {
            self.refused(claim).await?
        }
        .into())
    }

    async fn next_wakeup(&self, now: Timestamp) -> Result<Option<Timestamp>, StoreError> {
        let due = transaction!(self, |tx| queries::next_wakeup(&tx, now))?;
        // The bounded fallback poll.
        let poll = now.saturating_add(self.poll_interval);
        Ok(Some(due.map_or(poll, |due| due.min(poll))))
    }

    fn changed(&self) -> impl Future<Output = ()> + Send {
        self.wakeups.changed()
    }

    async fn evict_oldest(&self, max_bytes: u64) -> Result<Evicted, StoreError> {
        // The runner asks after every stored target, and nearly every time the store is under
        // its budget: a recent total answers that (`carry.rs`), or else one statement,
        // without a transaction's two more round trips.
        let bytes = match self.stored_total.current() {
            Some(bytes) => bytes,
            None => {
                let bytes = one_statement!(self, |c| queries::stored_bytes(c))?.0;
                self.stored_total.read(bytes);
                bytes
            }
        };
        if bytes <= max_bytes {
            return Ok(Evicted::default());
        }
        // Over: eviction reads the table under its lock, and changes the total.
        self.stored_total.forget();
        let evicted = transaction!(self, |tx| queries::evict_oldest(&tx, max_bytes));
        self.stored_total.forget();
        evicted
    }
}

impl CallerStore for PostgresStore {
    fn submit(&self, job: NewJob) -> BoxFuture<'_, Result<Submitted, SubmitError>> {
        Box::pin(async move {
            // The job's targets count against the budget: a total read before it is stale.
            // Dropped before (a commit whose answer is lost still counts) and after (a
            // reading taken meanwhile may not include it).
            self.stored_total.forget();
            let mut client = self.client().await?;
            let within = tokio::time::timeout(self.connections.call_timeout(), async {
                let tx = self.begin(&mut client).await?;
                let submitted = queries::submit(&tx, &self.channel, job).await?;
                tx.commit().await.map_err(PostgresError::from)?;
                Ok(submitted)
            })
            .await;
            let submitted = within.unwrap_or_else(|_| Err(self.connections.abandon(client).into()));
            self.stored_total.forget();
            submitted
        })
    }

    fn status<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<Option<Job>, StoreError>> {
        Box::pin(async move { transaction!(self, |tx| queries::status(&tx, id, caller)) })
    }

    fn summary<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<Option<JobSummary>, StoreError>> {
        Box::pin(async move { transaction!(self, |tx| queries::summary(&tx, id, caller)) })
    }

    fn jobs<'a>(
        &'a self,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<Vec<JobSummary>, StoreError>> {
        Box::pin(async move { transaction!(self, |tx| queries::jobs(&tx, caller)) })
    }

    fn touch<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move { transaction!(self, |tx| queries::touch(&tx, id, caller, now)) })
    }

    fn cancel<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<CancelOutcome, StoreError>> {
        Box::pin(async move {
            transaction!(self, |tx| queries::cancel(
                &tx,
                &self.channel,
                id,
                caller,
                now
            ))
        })
    }

    fn events(&self) -> Option<broadcast::Receiver<StoreEvent>> {
        Some(self.wakeups.events())
    }

    fn jobs_page<'a>(
        &'a self,
        scope: &'a Scope,
        query: &'a JobsQuery,
    ) -> BoxFuture<'a, Result<JobsPage, StoreError>> {
        Box::pin(async move {
            let (page, _client) = one_statement!(self, |c| pages::jobs_page(c, scope, query))?;
            Ok(page)
        })
    }

    fn job<'a>(
        &'a self,
        scope: &'a Scope,
        id: JobId,
    ) -> BoxFuture<'a, Result<Option<JobListing>, StoreError>> {
        Box::pin(async move {
            let (job, _client) = one_statement!(self, |c| pages::job(c, scope, id))?;
            Ok(job)
        })
    }

    fn targets_page<'a>(
        &'a self,
        scope: &'a Scope,
        id: JobId,
        query: &'a TargetsQuery,
    ) -> BoxFuture<'a, Result<Option<TargetsPage>, StoreError>> {
        Box::pin(async move {
            let (page, _client) =
                one_statement!(self, |c| pages::targets_page(c, scope, id, query))?;
            Ok(page)
        })
    }
}

#[cfg(test)]
mod tests;
