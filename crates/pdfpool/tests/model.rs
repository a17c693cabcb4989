//! proptest: random sequences of run / join / finish / panic / cancel / advance / close,
//! applied both to a `Pool` (on a current-thread runtime with a paused clock, settled after
//! every step) and to a plain reference model of rules 1 to 5. After every step the pool's
//! `running`, `queued` and `waiting` must match the model, every request the model says has
//! ended must have ended with exactly the model's outcome, every other must still wait, and
//! each key's closure must have been called as often as the model started a job for it.

mod common;

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::settle;
use lockgate_pdfpool::{BusyCause, Error, Pool};
use proptest::prelude::*;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

const KEYS: u8 = 3;
const CALLERS: u8 = 3;
const WAIT_MS: u64 = 10;

#[derive(Debug, Clone)]
enum Op {
    Run {
        key: u8,
        caller: u8,
    },
    Join {
        key: u8,
    },
    Finish {
        key: u8,
    },
    Panic {
        key: u8,
    },
    /// Drops the `n`-th (modulo) request that still waits.
    Cancel {
        n: usize,
    },
    Advance {
        ms: u64,
    },
    Close,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..KEYS, 0..CALLERS).prop_map(|(key, caller)| Op::Run { key, caller }),
        1 => (0..KEYS).prop_map(|key| Op::Join { key }),
        3 => (0..KEYS).prop_map(|key| Op::Finish { key }),
        1 => (0..KEYS).prop_map(|key| Op::Panic { key }),
        2 => any::<usize>().prop_map(|n| Op::Cancel { n }),
        2 => (1..=12_u64).prop_map(|ms| Op::Advance { ms }),
        1 => Just(Op::Close),
    ]
}

/// How a request ended, as the model predicts and as the pool reports.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ended {
    Value(u64),
    /// `Busy`, refused at once.
    QueueFull,
    /// `Busy`, after waiting past the limit.
    WaitExpired,
    CallerBusy,
    Panicked,
    Closed,
    /// `join` found no job in flight.
    NoJob,
}

fn ended(outcome: Result<u64, Error>) -> Ended {
    match outcome {
        Ok(value) => Ended::Value(value),
        Err(Error::Busy {
            cause: BusyCause::QueueFull,
            retry_after,
        }) if retry_after == Duration::from_millis(WAIT_MS) => Ended::QueueFull,
        Err(Error::Busy {
            cause: BusyCause::WaitExpired,
            retry_after,
        }) if retry_after == Duration::from_millis(WAIT_MS) => Ended::WaitExpired,
        Err(Error::CallerBusy) => Ended::CallerBusy,
        Err(Error::Panicked(_)) => Ended::Panicked,
        Err(Error::Closed) => Ended::Closed,
        Err(other) => panic!("unexpected error {other:?}"),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Expect {
    Waiting,
    Ended(Ended),
    Cancelled,
}

#[derive(Debug)]
enum Phase {
    Queued { deadline: u64 },
    Running,
}

#[derive(Debug)]
struct ModelJob {
    phase: Phase,
    owner: u8,
    /// The request that started the job (it counts in `waiters` while it waits).
    starter: usize,
    waiters: Vec<usize>,
}

/// The reference model: rules 1 to 5 written as plainly as possible.
#[derive(Debug)]
struct Model {
    slots: usize,
    queue_limit: usize,
    now: u64,
    closed: bool,
    jobs: HashMap<u8, ModelJob>,
    queue: VecDeque<u8>,
    callers: HashSet<u8>,
    requests: Vec<Expect>,
    started: [usize; KEYS as usize],
}

impl Model {
    fn new(slots: usize, queue_limit: usize) -> Self {
        Self {
            slots,
            queue_limit,
            now: 0,
            closed: false,
            jobs: HashMap::new(),
            queue: VecDeque::new(),
            callers: HashSet::new(),
            requests: Vec::new(),
            started: [0; KEYS as usize],
        }
    }

    fn running(&self) -> usize {
        self.jobs
            .values()
            .filter(|job| matches!(job.phase, Phase::Running))
            .count()
    }

    fn waiting(&self, key: u8) -> usize {
        self.jobs.get(&key).map_or(0, |job| {
            job.waiters.iter().filter(|&&r| r != job.starter).count()
        })
    }

    fn new_request(&mut self, expect: Expect) -> usize {
        self.requests.push(expect);
        self.requests.len() - 1
    }

    fn run(&mut self, key: u8, caller: u8) {
        let request = self.new_request(Expect::Waiting);
        if let Some(job) = self.jobs.get_mut(&key) {
            job.waiters.push(request);
            return;
        }
        let refusal = if self.closed {
            Some(Ended::Closed)
        } else if self.callers.contains(&caller) {
            Some(Ended::CallerBusy)
        } else if self.running() >= self.slots && self.queue.len() >= self.queue_limit {
            Some(Ended::QueueFull)
        } else {
            None
        };
        if let Some(refusal) = refusal {
            self.requests[request] = Expect::Ended(refusal);
            return;
        }
        let phase = if self.running() < self.slots {
            self.started[usize::from(key)] += 1;
            Phase::Running
        } else {
            self.queue.push_back(key);
            Phase::Queued {
                deadline: self.now + WAIT_MS,
            }
        };
        self.callers.insert(caller);
        self.jobs.insert(
            key,
            ModelJob {
                phase,
                owner: caller,
                starter: request,
                waiters: vec![request],
            },
        );
    }

    fn join(&mut self, key: u8) {
        let request = self.new_request(Expect::Ended(Ended::NoJob));
        if let Some(job) = self.jobs.get_mut(&key) {
            job.waiters.push(request);
            self.requests[request] = Expect::Waiting;
        }
    }

    /// Takes `key`'s job out and tells its waiters `outcome`.
    fn end_job(&mut self, key: u8, outcome: Ended) {
        let job = self.jobs.remove(&key).expect("job exists");
        self.callers.remove(&job.owner);
        self.queue.retain(|&queued| queued != key);
        for request in job.waiters {
            self.requests[request] = Expect::Ended(outcome.clone());
        }
    }

    fn is_running(&self, key: u8) -> bool {
        self.jobs
            .get(&key)
            .is_some_and(|job| matches!(job.phase, Phase::Running))
    }

    fn finish(&mut self, key: u8, outcome: Ended) {
        assert!(self.is_running(key));
        self.end_job(key, outcome);
        if let Some(next) = self.queue.pop_front() {
            self.jobs.get_mut(&next).unwrap().phase = Phase::Running;
            self.started[usize::from(next)] += 1;
        }
    }

    fn cancel(&mut self, request: usize) {
        self.requests[request] = Expect::Cancelled;
        let (&key, job) = self
            .jobs
            .iter_mut()
            .find(|(_, job)| job.waiters.contains(&request))
            .expect("a waiting request waits on a job");
        job.waiters.retain(|&r| r != request);
        if job.waiters.is_empty() && matches!(job.phase, Phase::Queued { .. }) {
            self.end_job(key, Ended::WaitExpired); // no waiter is left to be told
        }
    }

    fn advance(&mut self, ms: u64) {
        self.now += ms;
        let expired: Vec<u8> = self
            .queue
            .iter()
            .copied()
            .filter(|key| {
                matches!(self.jobs[key].phase, Phase::Queued { deadline } if deadline <= self.now)
            })
            .collect();
        for key in expired {
            self.end_job(key, Ended::WaitExpired);
        }
    }

    fn close(&mut self) {
        self.closed = true;
        let queued: Vec<u8> = self.queue.iter().copied().collect();
        for key in queued {
            self.end_job(key, Ended::Closed);
        }
    }

    fn waiting_requests(&self) -> Vec<usize> {
        (0..self.requests.len())
            .filter(|&r| self.requests[r] == Expect::Waiting)
            .collect()
    }
}

/// How the test ends a running job: a value, or a panic.
enum End {
    Value(u64),
    Panic,
}

/// The pool under test, its requests, and the gates of its running jobs.
struct System {
    pool: Pool<u8, u8, u64>,
    requests: Vec<Option<JoinHandle<Result<u64, Error>>>>,
    results: Vec<Option<Ended>>,
    gates: Arc<Mutex<HashMap<u8, oneshot::Sender<End>>>>,
    calls: Arc<Mutex<[usize; KEYS as usize]>>,
}

impl System {
    fn run(&mut self, key: u8, caller: u8) {
        let pool = self.pool.clone();
        let gates = Arc::clone(&self.gates);
        let calls = Arc::clone(&self.calls);
        let job = move || {
            let (tx, rx) = oneshot::channel();
            let replaced = gates.lock().unwrap().insert(key, tx);
            assert!(replaced.is_none(), "two jobs ran for one key");
            calls.lock().unwrap()[usize::from(key)] += 1;
            async move {
                match rx.await {
                    Ok(End::Value(value)) => value,
                    Ok(End::Panic) => panic!("job {key} panics on purpose"),
                    Err(_) => std::future::pending().await,
                }
            }
        };
        self.requests.push(Some(tokio::spawn(async move {
            pool.run(key, caller, job).await
        })));
        self.results.push(None);
    }

    fn join(&mut self, key: u8) {
        let pool = self.pool.clone();
        self.requests.push(Some(tokio::spawn(async move {
            match pool.join(&key).await {
                Some(outcome) => outcome,
                // Encoded as a value no job produces.
                None => Ok(u64::MAX),
            }
        })));
        self.results.push(None);
    }

    fn end(&mut self, key: u8, end: End) {
        let gate = self.gates.lock().unwrap().remove(&key);
        let sent = gate.expect("a running job has a gate").send(end);
        assert!(sent.is_ok());
    }

    /// Collects the outcome of every request that has ended.
    async fn collect(&mut self) {
        for (slot, result) in self.requests.iter_mut().zip(&mut self.results) {
            if slot.as_ref().is_some_and(JoinHandle::is_finished) {
                let outcome = slot.take().unwrap().await.expect("requests do not panic");
                *result = Some(match outcome {
                    Ok(u64::MAX) => Ended::NoJob,
                    other => ended(other),
                });
            }
        }
    }
}

async fn check(system: &mut System, model: &Model) {
    settle().await;
    system.collect().await;
    assert_eq!(system.pool.running(), model.running(), "running");
    assert_eq!(system.pool.queued(), model.queue.len(), "queued");
    for key in 0..KEYS {
        assert_eq!(
            system.pool.waiting(&key),
            model.waiting(key),
            "waiting({key})"
        );
        let gate = system.gates.lock().unwrap().contains_key(&key);
        assert_eq!(gate, model.is_running(key), "job {key} runs");
    }
    assert_eq!(
        *system.calls.lock().unwrap(),
        model.started,
        "closure calls per key"
    );
    for (request, expect) in model.requests.iter().enumerate() {
        match expect {
            Expect::Waiting => assert!(
                system.results[request].is_none() && system.requests[request].is_some(),
                "request {request} should still wait, got {:?}",
                system.results[request]
            ),
            Expect::Ended(outcome) => assert_eq!(
                system.results[request].as_ref(),
                Some(outcome),
                "request {request}"
            ),
            Expect::Cancelled => {}
        }
    }
}

async fn run_case(slots: usize, queue: usize, ops: Vec<Op>) {
    let mut model = Model::new(slots, queue);
    let mut system = System {
        pool: Pool::new(slots, queue, Duration::from_millis(WAIT_MS)),
        requests: Vec::new(),
        results: Vec::new(),
        gates: Arc::default(),
        calls: Arc::default(),
    };
    let mut next_value = 0;
    for op in ops {
        match op {
            Op::Run { key, caller } => {
                model.run(key, caller);
                system.run(key, caller);
            }
            Op::Join { key } => {
                model.join(key);
                system.join(key);
            }
            Op::Finish { key } if model.is_running(key) => {
                next_value += 1;
                model.finish(key, Ended::Value(next_value));
                system.end(key, End::Value(next_value));
            }
            Op::Panic { key } if model.is_running(key) => {
                model.finish(key, Ended::Panicked);
                system.end(key, End::Panic);
            }
            Op::Finish { .. } | Op::Panic { .. } => {}
            Op::Cancel { n } => {
                let waiting = model.waiting_requests();
                if !waiting.is_empty() {
                    let request = waiting[n % waiting.len()];
                    model.cancel(request);
                    system.requests[request].take().unwrap().abort();
                }
            }
            Op::Advance { ms } => {
                model.advance(ms);
                tokio::time::advance(Duration::from_millis(ms)).await;
            }
            Op::Close => {
                model.close();
                system.pool.close();
            }
        }
        check(&mut system, &model).await;
    }
    // Tear down: end every job, then nothing may be left.
    while let Some(key) = (0..KEYS).find(|&key| model.is_running(key)) {
        next_value += 1;
        model.finish(key, Ended::Value(next_value));
        system.end(key, End::Value(next_value));
        check(&mut system, &model).await;
    }
    assert_eq!((system.pool.running(), system.pool.queued()), (0, 0));
}

proptest! {
    #[test]
    fn pool_matches_the_reference_model(
        slots in 1..=2_usize,
        // A queue of 32 never fills with three keys, but puts the table past the size it
        // scans: its jobs are then found through hash maps.
        queue in prop_oneof![3 => 0..=2_usize, 1 => Just(32_usize)],
        ops in prop::collection::vec(op(), 1..40),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        runtime.block_on(run_case(slots, queue, ops));
    }
}
