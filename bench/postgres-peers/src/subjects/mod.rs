//! The subjects: what each one puts in the database, how its worker processes run, and how
//! the parent asks the database whether every item is finished.

pub mod apalis;
pub mod bare;
pub mod ours;
pub mod river;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::Case;
use crate::child::Control;

/// One job queue under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// `batch`'s `PostgresStore` under its `Runner`.
    Ours,
    /// A bare `FOR UPDATE SKIP LOCKED` loop.
    Bare,
    /// `apalis-postgres`.
    Apalis,
    /// `riverqueue`, River's Rust client (fetch cooldown at its minimum).
    River,
    /// `riverqueue` with River's default fetch cooldown (100 ms); only with `--only`.
    RiverDefault,
}

impl Subject {
    /// The subjects `run` measures unless `--only` names others, in table order.
    pub const DEFAULT: [Subject; 4] = [
        Subject::Ours,
        Subject::Bare,
        Subject::Apalis,
        Subject::River,
    ];

    /// Every subject `--only` accepts.
    pub const ALL: [Subject; 5] = [
        Subject::Ours,
        Subject::Bare,
        Subject::Apalis,
        Subject::River,
        Subject::RiverDefault,
    ];

    /// Its name on the command line, in the table and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Subject::Ours => "ours",
            Subject::Bare => "bare",
            Subject::Apalis => "apalis",
            Subject::River => "river",
            Subject::RiverDefault => "river-default",
        }
    }

    /// Creates the subject's schema in the (fresh, empty) database at `url` and submits the
    /// case's items, before any worker process starts. Not timed.
    pub async fn prepare(self, url: &str, case: &Case) -> Result<(), String> {
        match self {
            Subject::Ours => ours::prepare(url, case).await,
            Subject::Bare => bare::prepare(url, case).await,
            Subject::Apalis => apalis::prepare(url, case).await,
            Subject::River | Subject::RiverDefault => river::prepare(url, case).await,
        }
    }

    /// A connection that tells how many items are not finished yet, opened before `go`.
    pub async fn probe(self, url: &str) -> Result<Probe, String> {
        match self {
            Subject::Ours => ours::probe(url).await,
            Subject::Bare => Probe::sql(url, bare::UNFINISHED).await,
            Subject::Apalis => Probe::sql(url, apalis::UNFINISHED).await,
            Subject::River | Subject::RiverDefault => Probe::sql(url, river::UNFINISHED).await,
        }
    }

    /// After the run: checks that every item finished once and nothing else is left.
    pub async fn verify(self, url: &str, case: &Case) -> Result<(), String> {
        match self {
            Subject::Ours => ours::verify(url, case).await,
            Subject::Bare => verify_sql(url, bare::FINISHED, case.items).await,
            Subject::Apalis => verify_sql(url, apalis::FINISHED, case.items).await,
            Subject::River | Subject::RiverDefault => {
                verify_sql(url, river::FINISHED, case.items).await
            }
        }
    }

    /// One worker process: connect, build the workers, then (see [`Control`]) `ready`, `go`,
    /// work until `stop`, shut down gracefully.
    pub async fn child(
        self,
        url: &str,
        work: Duration,
        index: usize,
        control: &mut Control,
    ) -> Result<(), String> {
        match self {
            Subject::Ours => ours::child(url, work, control).await,
            Subject::Bare => bare::child(url, work, control).await,
            Subject::Apalis => apalis::child(url, work, index, control).await,
            Subject::River => river::child(url, work, index, false, control).await,
            Subject::RiverDefault => river::child(url, work, index, true, control).await,
        }
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Subject {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        Subject::ALL
            .into_iter()
            .find(|subject| subject.name() == name)
            .ok_or_else(|| {
                format!("unknown subject {name:?} (ours, bare, apalis, river, river-default)")
            })
    }
}

/// How the parent asks the database how many items are left.
pub enum Probe {
    /// `batch`: its store's count of live jobs (a job is live until its last target is stored).
    Ours(Box<lockgate_batch::store::PostgresStore>),
    /// A `SELECT count(*)` of unfinished rows on a connection of its own.
    Sql {
        /// The connection.
        client: tokio_postgres::Client,
        /// The count query.
        query: &'static str,
    },
}

impl Probe {
    async fn sql(url: &str, query: &'static str) -> Result<Self, String> {
        Ok(Probe::Sql {
            client: connect(url).await?,
            query,
        })
    }

    /// Items (for `ours`: jobs) not finished yet, as committed in the database.
    pub async fn unfinished(&self) -> Result<u64, String> {
        match self {
            Probe::Ours(store) => store
                .live_jobs()
                .await
                .map(|n| n as u64)
                .map_err(|err| err.to_string()),
            Probe::Sql { client, query } => count(client, query).await,
        }
    }
}

/// A plain tokio-postgres connection (its driver on a task of its own).
pub async fn connect(url: &str) -> Result<tokio_postgres::Client, String> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .map_err(|err| format!("connecting to {url}: {err}"))?;
    // A failure shows up in the client's next call; the parent drops each run's database
    // with `FORCE`, which ends connections whose clients were just dropped.
    tokio::spawn(connection);
    Ok(client)
}

/// The single `bigint` a count query returns.
async fn count(client: &tokio_postgres::Client, query: &str) -> Result<u64, String> {
    let row = client
        .query_one(query, &[])
        .await
        .map_err(|err| format!("{query}: {err}"))?;
    let n: i64 = row.get(0);
    Ok(n as u64)
}

/// Checks that `finished` (a query of finished rows, and of all rows) gives `items` twice.
async fn verify_sql(url: &str, finished: &str, items: usize) -> Result<(), String> {
    let client = connect(url).await?;
    let row = client
        .query_one(finished, &[])
        .await
        .map_err(|err| format!("{finished}: {err}"))?;
    let (done, all): (i64, i64) = (row.get(0), row.get(1));
    if done as usize == items && all as usize == items {
        Ok(())
    } else {
        Err(format!(
            "{done} of {all} rows finished, expected {items} of {items}"
        ))
    }
}
