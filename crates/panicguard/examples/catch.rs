//! Panics becoming values: in a closure, in a future, and with payloads of every kind.
//!
//! Run with `cargo run -p lockgate-panicguard --example catch`.

use std::future::Future;
use std::task::{Context, Poll, Waker};

use lockgate_panicguard::{FutureExt, Panic, catch};

fn main() {
    // The default hook would print a backtrace line for each deliberate panic below.
    std::panic::set_hook(Box::new(|_| {}));

    println!("closure that returns: {:?}", catch(|| 6 * 7));
    println!(
        "closure that panics:  {:?}",
        catch(|| -> u8 { panic!("out of paper") })
    );

    let job = async {
        let pages = 3;
        if pages > 2 {
            panic!("page {pages} is corrupt");
        }
        pages
    };
    match block_on(job.catch_panic()) {
        Ok(pages) => println!("future returned {pages}"),
        Err(panic) => println!("future panicked: {panic}"),
    }

    let unknown = Panic::from_payload(Box::new(404_u16));
    println!("a payload of another type: {}", unknown.message());
}

/// Enough of an executor for futures that never wait on anything.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut cx = Context::from_waker(Waker::noop());
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
}
