//! Runner behaviour beyond the store suite: panics while building the fetch future, and
//! dropping a runner without `close`.

use std::sync::Arc;
use std::time::Duration;

use lockgate_batch::store::MemoryStore;
use lockgate_batch::{Caller, Config, FetchContext, FetchError, JobStatus, Runner};

use crate::suite;

#[tokio::test(start_paused = true)]
async fn a_panic_while_building_the_future_is_an_internal_error() {
    let fetch = |_ctx: FetchContext, target: String| {
        assert!(target != "boom", "secret detail");
        let target = target.clone();
        async move { Ok::<_, FetchError>(target) }
    };
    let runner = Runner::new(Config::default().workers(1), MemoryStore::new(), fetch)
        .await
        .unwrap();
    let ann = Caller::new("ann");
    let id = runner
        .submit(&ann, &["boom".to_string(), "fine".to_string()])
        .await
        .unwrap();
    suite::ended(&runner, id, &ann).await;
    let job = runner.status(&ann, id).await.unwrap();
    assert_eq!(job.status, JobStatus::Partial);
    assert_eq!(
        job.targets[0].state,
        lockgate_batch::TargetState::Failed {
            error: "internal error".into(),
            hint: None
        }
    );
    runner.close().await;
}

#[tokio::test(start_paused = true)]
async fn dropping_a_runner_stops_its_workers() {
    let alive = Arc::new(());
    let fetch = {
        let alive = Arc::clone(&alive);
        move |_ctx: FetchContext, target: String| {
            let _ = &alive;
            let target = target.clone();
            async move { Ok::<_, FetchError>(target) }
        }
    };
    let runner = Runner::new(Config::default().workers(3), MemoryStore::new(), fetch)
        .await
        .unwrap();
    assert_eq!(Arc::strong_count(&alive), 2);
    drop(runner);
    // The workers see the close token and exit, dropping the last handle on the fetch.
    for _ in 0..100 {
        if Arc::strong_count(&alive) == 1 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("the workers outlived their runner");
}

#[test]
#[should_panic(expected = "Tokio 1.x runtime")]
fn new_outside_a_tokio_runtime_panics() {
    let fetch = |_ctx: FetchContext, target: String| {
        let target = target.clone();
        async move { Ok::<_, FetchError>(target) }
    };
    let new = std::pin::pin!(Runner::new(Config::default(), MemoryStore::new(), fetch));
    // The memory store answers at once, so the first poll reaches the spawning of workers.
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let _ = std::future::Future::poll(new, &mut cx);
}
