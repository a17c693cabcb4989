//! proptest: a plain reference model of rules 2 (capacity, FIFO start), 3 (exit policy) and
//! 5 (close drains what was accepted), run step by step beside a real pool whose tasks the
//! test finishes one at a time; after each step `join` must return at once exactly when the
//! model has no accepted task left.
//!
//! After every step the test waits until the real pool is quiescent (see
//! [`Counters::quiescent`]) with the counters the model predicts, then compares the start
//! log. Quiescent states only change when the test acts, so this is deterministic.

use std::collections::VecDeque;
use std::sync::Arc;

use proptest::prelude::*;

use super::Counters;
use crate::Pool;
use crate::tests::support::Gates;

/// The rules, with nothing but counters and queues.
#[derive(Debug)]
struct Model {
    min: usize,
    max: usize,
    capacity: usize,
    workers: usize,
    idle: usize,
    running: Vec<usize>,
    queue: VecDeque<usize>,
    started: Vec<usize>,
    finished: u64,
    closing: bool,
}

impl Model {
    fn new(min: usize, max: usize, buffer: usize) -> Self {
        Self {
            min,
            max,
            capacity: max / 2 + buffer,
            workers: min,
            idle: min,
            running: Vec::new(),
            queue: VecDeque::new(),
            started: Vec::new(),
            finished: 0,
            closing: false,
        }
    }

    fn start(&mut self, id: usize) {
        self.running.push(id);
        self.started.push(id);
    }

    /// Rule 2 then rule 1: accepted while unfinished tasks stay within `max + capacity`;
    /// an idle worker takes it, else a new worker below `max`, else it queues.
    fn submit(&mut self, id: usize) -> bool {
        if self.running.len() + self.queue.len() >= self.max + self.capacity {
            return false;
        }
        if self.idle > 0 {
            self.idle -= 1;
            self.start(id);
        } else if self.workers < self.max {
            self.workers += 1;
            self.start(id);
        } else {
            self.queue.push_back(id);
        }
        true
    }

    /// Finishes the running task at `pick` (modulo); rule 3 decides the worker's fate.
    fn finish(&mut self, pick: usize) -> Option<usize> {
        if self.running.is_empty() {
            return None;
        }
        let id = self.running.remove(pick % self.running.len());
        self.finished += 1;
        if let Some(next) = self.queue.pop_front() {
            self.start(next);
        } else if self.closing || (self.workers > self.min && self.idle > self.min / 2) {
            self.workers -= 1;
        } else {
            self.idle += 1;
        }
        Some(id)
    }

    /// Close begins: idle workers leave at once.
    fn close(&mut self) {
        self.closing = true;
        self.workers -= self.idle;
        self.idle = 0;
    }

    fn matches(&self, c: &Counters) -> bool {
        c.quiescent()
            && c.closing == self.closing
            && (c.workers, c.idle, c.running, c.queued, c.finished)
                == (
                    self.workers,
                    self.idle,
                    self.running.len(),
                    self.queue.len(),
                    self.finished,
                )
    }
}

#[derive(Debug, Clone)]
enum Op {
    Submit,
    Finish(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![3 => Just(Op::Submit), 2 => any::<usize>().prop_map(Op::Finish)]
}

fn settle(pool: &Pool, gates: &Gates, model: &Model) {
    pool.shared()
        .wait_until(&format!("the model's state {model:?}"), |c| {
            model.matches(c)
        });
    assert_eq!(gates.wait_started(model.started.len()), model.started);
    // `join` returns at once exactly when the model has no accepted task left.
    let out_of_work = model.running.is_empty() && model.queue.is_empty();
    assert_eq!(
        pool.join_timeout(std::time::Duration::ZERO).is_ok(),
        out_of_work,
        "join against {model:?}"
    );
}

fn run(min: usize, max: usize, buffer: usize, ops: &[Op]) {
    let pool = Arc::new(
        Pool::builder(min, max)
            .submit_buffer(buffer)
            .build()
            .unwrap(),
    );
    let gates = Gates::default();
    let mut model = Model::new(min, max, buffer);
    settle(&pool, &gates, &model);
    let mut next_id = 0;
    for op in ops {
        match op {
            Op::Submit => {
                let accepted = pool.try_submit(gates.task(next_id)).is_ok();
                assert_eq!(
                    accepted,
                    model.submit(next_id),
                    "submit {next_id}: {model:?}"
                );
                if !accepted {
                    gates.forget(next_id);
                }
                next_id += 1;
            }
            Op::Finish(pick) => {
                if let Some(id) = model.finish(*pick) {
                    gates.release(id);
                }
            }
        }
        settle(&pool, &gates, &model);
    }
    // Rule 5 against the model: close stops intake at once and drains the rest in order.
    let closer = {
        let pool = Arc::clone(&pool);
        std::thread::spawn(move || pool.close())
    };
    model.close();
    settle(&pool, &gates, &model);
    assert!(pool.try_submit(|| ()).unwrap_err().is_closed());
    while let Some(id) = model.finish(0) {
        gates.release(id);
        settle(&pool, &gates, &model);
    }
    closer.join().unwrap().unwrap();
    let accepted: Vec<usize> = model.started.clone();
    assert!(
        accepted.windows(2).all(|w| w[0] < w[1]),
        "FIFO start: {accepted:?}"
    );
    assert_eq!(pool.completed(), accepted.len() as u64);
    assert_eq!(
        (pool.workers(), pool.idle(), pool.running(), pool.queued()),
        (0, 0, 0, 0)
    );
}

fn config() -> impl Strategy<Value = (usize, usize, usize)> {
    (1usize..=4, 0usize..=3).prop_flat_map(|(max, buffer)| (0..=max, Just(max), Just(buffer)))
}

/// The default config (it reads `PROPTEST_CASES`), without failure files under Miri, whose
/// isolation forbids the file system.
fn proptest_config() -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if cfg!(miri) {
        config.failure_persistence = None;
    }
    config
}

proptest! {
    #![proptest_config(proptest_config())]

    #[test]
    #[cfg_attr(miri, ignore = "proptest's runner takes minutes per case under Miri; the fixed sequences below run there")]
    fn pool_follows_the_reference_model(
        (min, max, buffer) in config(),
        ops in proptest::collection::vec(op(), 0..30),
    ) {
        run(min, max, buffer, &ops);
    }
}

#[test]
fn model_example_two_workers_one_waiting_place() {
    use Op::{Finish, Submit};
    run(
        1,
        2,
        0,
        &[Submit, Submit, Submit, Submit, Finish(0), Finish(0), Submit],
    );
}

#[test]
fn model_example_exit_policy_with_min_two() {
    use Op::{Finish, Submit};
    let ops = [
        Submit,
        Submit,
        Submit,
        Submit,
        Submit,
        Finish(0),
        Finish(0),
        Finish(0),
    ];
    run(2, 4, 1, &[&ops[..], &[Finish(0), Submit, Submit]].concat());
}
