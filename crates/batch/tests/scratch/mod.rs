//! [`Scratch`]: a fresh folder per test under the system temp dir, removed on drop.

use std::path::PathBuf;

/// A fresh folder, named after the test binary's `prefix`, the test's `name` and the process.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(prefix: &str, name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("batch-{prefix}-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    /// The database file inside.
    pub fn db(&self) -> PathBuf {
        self.0.join("jobs.db")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
