//! The loaded machine of a bench's `_loaded` group: threads that busy-loop beside the bench,
//! in its process and at its priority, until dropped. Included by path (`#[path]`) by each
//! bench that has a loaded case, so they all load the machine the same way.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

/// `count` busy-looping threads, stopped and joined on drop.
pub struct BusyLoops {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl BusyLoops {
    /// Starts `count` threads (none for 0: the quiet case).
    pub fn start(count: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..count)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        Self { stop, threads }
    }
}

impl Drop for BusyLoops {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// How many cores the machine has (2 if it cannot tell).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, usize::from)
}
