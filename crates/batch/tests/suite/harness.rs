//! The test harness: a scripted fetch that records what it saw, and recording hooks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lockgate_batch::hooks::{Hooks, JobEvent, TargetEvent};
use lockgate_batch::{Fetch, FetchContext, FetchError, JobId, JobStatus, TargetOutcome};
use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;

/// What the scripted fetch does with a target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Plan {
    /// Succeeds with `got <name>`.
    Ok,
    /// Fails with `Target { msg: "no <name>", hint: "check <name>" }`.
    Fail,
    /// Fails with `Other("other <name>")`.
    Other,
    /// Panics with `secret <name>`.
    Panic,
    /// Busy this many times, then succeeds.
    Busy(u32),
    /// Busy every time.
    BusyForever,
    /// On its first attempt waits for a permit from `Recorder::release` (or the cancel token,
    /// then fails); succeeds at once on later attempts.
    Hold,
    /// Sleeps this many milliseconds (virtual), then succeeds.
    Sleep(u64),
}

/// One target of a test job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    pub job: String,
    pub name: String,
    pub plan: Plan,
}

/// Targets `<job>1`, `<job>2`, … with these plans.
pub fn targets(job: &str, plans: &[Plan]) -> Vec<Target> {
    plans
        .iter()
        .enumerate()
        .map(|(i, plan)| Target {
            job: job.to_owned(),
            name: format!("{job}{}", i + 1),
            plan: plan.clone(),
        })
        .collect()
}

/// `n` targets that succeed.
pub fn oks(job: &str, n: usize) -> Vec<Target> {
    targets(job, &vec![Plan::Ok; n])
}

/// What the scripted fetch saw.
pub struct Recorder {
    /// Every fetch start, in order, by target name.
    log: Mutex<Vec<String>>,
    attempts: Mutex<HashMap<String, u32>>,
    /// Fetches in flight per job.
    running: Mutex<HashMap<String, usize>>,
    /// Set if two fetches of one job ever overlapped.
    overlap: Mutex<Option<String>>,
    /// Permits for `Plan::Hold`.
    pub release: Semaphore,
    /// Fetches that ran to their end.
    finished: Mutex<Vec<String>>,
}

impl Default for Recorder {
    fn default() -> Self {
        Self {
            log: Mutex::default(),
            attempts: Mutex::default(),
            running: Mutex::default(),
            overlap: Mutex::default(),
            release: Semaphore::new(0),
            finished: Mutex::default(),
        }
    }
}

impl Recorder {
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    pub fn finished(&self) -> Vec<String> {
        self.finished.lock().unwrap().clone()
    }

    pub fn attempts(&self, name: &str) -> u32 {
        self.attempts
            .lock()
            .unwrap()
            .get(name)
            .copied()
            .unwrap_or(0)
    }

    pub fn overlap(&self) -> Option<String> {
        self.overlap.lock().unwrap().clone()
    }

    fn start(&self, target: &Target) -> u32 {
        self.log.lock().unwrap().push(target.name.clone());
        let mut running = self.running.lock().unwrap();
        let count = running.entry(target.job.clone()).or_default();
        *count += 1;
        if *count > 1 {
            *self.overlap.lock().unwrap() = Some(target.name.clone());
        }
        let mut attempts = self.attempts.lock().unwrap();
        let attempt = attempts.entry(target.name.clone()).or_default();
        *attempt += 1;
        *attempt
    }

    fn end(&self, target: &Target) {
        *self.running.lock().unwrap().get_mut(&target.job).unwrap() -= 1;
        self.finished.lock().unwrap().push(target.name.clone());
    }
}

/// Ends a fetch's bookkeeping even when the fetch panics or is dropped.
struct EndGuard(Arc<Recorder>, Target);

impl Drop for EndGuard {
    fn drop(&mut self) {
        self.0.end(&self.1);
    }
}

/// The scripted fetch over `recorder`.
pub fn fetcher(recorder: Arc<Recorder>) -> impl Fetch<Target, String> {
    move |ctx: FetchContext, target: Target| {
        let (recorder, target) = (Arc::clone(&recorder), target.clone());
        async move {
            let attempt = recorder.start(&target);
            let _end = EndGuard(Arc::clone(&recorder), target.clone());
            let name = &target.name;
            match target.plan {
                Plan::Ok => Ok(format!("got {name}")),
                Plan::Fail => Err(FetchError::target_with_hint(
                    format!("no {name}"),
                    format!("check {name}"),
                )),
                Plan::Other => Err(FetchError::Other(format!("other {name}").into())),
                Plan::Panic => panic!("secret {name}"),
                Plan::Busy(times) if attempt <= times => Err(FetchError::retry_later("busy")),
                Plan::Busy(_) => Ok(format!("got {name}")),
                Plan::BusyForever => Err(FetchError::retry_later("busy")),
                Plan::Hold if attempt == 1 => {
                    tokio::select! {
                        permit = recorder.release.acquire() => {
                            permit.unwrap().forget();
                            Ok(format!("got {name}"))
                        }
                        () = ctx.cancelled() => Err(FetchError::Other("cancelled".into())),
                    }
                }
                Plan::Hold => Ok(format!("got {name}")),
                Plan::Sleep(ms) => {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    Ok(format!("got {name}"))
                }
            }
        }
    }
}

/// One hook call.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Depth(usize),
    Inflight(usize),
    /// Job, index, outcome, result bytes.
    Target(JobId, usize, TargetOutcome, u64),
    Job(JobId, JobStatus),
}

/// Hooks that record every call.
#[derive(Default)]
pub struct RecordingHooks {
    events: Mutex<Vec<Event>>,
}

impl RecordingHooks {
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }

    pub fn jobs(&self) -> Vec<JobStatus> {
        let events = self.events();
        events
            .into_iter()
            .filter_map(|e| match e {
                Event::Job(_, status) => Some(status),
                _ => None,
            })
            .collect()
    }

    pub fn count(&self, pick: impl Fn(&Event) -> bool) -> usize {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| pick(e))
            .count()
    }

    fn push(&self, event: Event) {
        self.events.lock().unwrap().push(event);
    }
}

impl Hooks for RecordingHooks {
    fn depth(&self, live_jobs: usize) {
        self.push(Event::Depth(live_jobs));
    }
    fn inflight(&self, in_flight: usize) {
        self.push(Event::Inflight(in_flight));
    }
    fn target(&self, event: &TargetEvent) {
        self.push(Event::Target(
            event.job,
            event.index,
            event.outcome,
            event.result_bytes,
        ));
    }
    fn job(&self, event: &JobEvent) {
        self.push(Event::Job(event.job, event.status));
    }
}

/// `TEST_SCALE=small` (TSan, Miri) shrinks loops.
pub fn small() -> bool {
    std::env::var("TEST_SCALE").is_ok_and(|v| v == "small")
}
