//! What the `worker.task` span costs a task: one submitter hands 10,000 empty tasks to a pool
//! with a worker per core and waits for them (`join`), with no subscriber listening, and with
//! the submitter under a `tracing` subscriber listening at INFO (a fmt subscriber writing to
//! `io::sink`), so every task's span is built at submit and entered and left around the task.
//!
//! Run: `cargo bench -p lockgate-worker --bench spans`. `cargo xtask bench` takes the first
//! subject in alphabetical order, `worker_pool`, as the reference of its ratio.

use criterion::{Criterion, Throughput, criterion_main};
use lockgate_worker::Pool;

const TASKS: u64 = 10_000;

fn submit_all(pool: &Pool) {
    for _ in 0..TASKS {
        pool.submit(|| {}).unwrap();
    }
    pool.join().unwrap();
}

fn bench(c: &mut Criterion) {
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let pool = Pool::new(cores, cores).unwrap();
    let mut group = c.benchmark_group("spans/10k_empty_tasks_1_submitter");
    group.throughput(Throughput::Elements(TASKS));
    group.bench_function("worker_pool", |b| b.iter(|| submit_all(&pool)));
    group.bench_function("worker_pool_traced", |b| {
        let subscriber = tracing_subscriber::fmt()
            .with_writer(std::io::sink)
            .with_max_level(tracing::Level::INFO)
            .finish();
        // The spans are made on this thread, under this subscriber; each carries it to the
        // worker that enters it.
        tracing::subscriber::with_default(subscriber, || b.iter(|| submit_all(&pool)));
    });
    group.finish();
    pool.close().unwrap();
}

mod benches {
    //! criterion's macros define undocumented items; they live here.
    #![allow(missing_docs)]
    criterion::criterion_group!(benches, super::bench);
}

criterion_main!(benches::benches);
