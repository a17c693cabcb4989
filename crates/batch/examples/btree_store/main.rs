//! A [`Runner`] over a store of its own: [`store::BTreeStore`] (`store.rs`), a complete
//! store over a `Mutex<BTreeMap>` written from the `WorkerStore` and `CallerStore` docs,
//! which the conformance kit holds to the contract (`tests/spec/custom_store.rs`).
//!
//! Run: `cargo run -p lockgate-batch --example btree_store`.

mod store;

use lockgate_batch::{Caller, Config, FetchError, Runner, fetch_fn};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let fetch = fetch_fn(|_ctx, word: String| async move {
        if word.is_empty() {
            return Err(FetchError::target_with_hint(
                "nothing to shout",
                "give a word",
            ));
        }
        Ok(word.to_uppercase())
    });
    let config = Config::default().workers(2);
    let runner: Runner<String, String> =
        Runner::new(config, store::BTreeStore::new(), fetch).await?;

    let ann = Caller::new("ann");
    let words = ["alpha", "", "gamma"].map(String::from);
    let id = runner.submit(&ann, &words).await?;
    let job = runner.wait(&ann, id).await?;
    println!("job {id}: {}", job.status);
    for entry in &job.targets {
        let word: String = entry.target()?;
        match &entry.state {
            lockgate_batch::TargetState::Done { .. } => {
                let shout: String = entry.output().expect("a done target has an output")?;
                println!("  {word:?} -> {shout:?}");
            }
            other => println!("  {word:?} -> {other:?}"),
        }
    }
    runner.close().await;
    Ok(())
}
