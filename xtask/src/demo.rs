//! `cargo xtask demo`: every crate's example, one after another.

use std::path::Path;
use std::process::ExitCode;

use crate::util::{self, cargo};

/// (crate folder under `crates/`, example) in the order the demo runs them.
pub(crate) const EXAMPLES: &[(&str, &str)] = &[
    ("pdfpool", "service"),
    ("batch", "demo"),
    ("worker", "pool"),
    ("panicguard", "catch"),
];

/// Runs each example; stops at the first that fails.
pub(crate) fn run(root: &Path) -> ExitCode {
    for (folder, example) in EXAMPLES {
        println!("\n==> crates/{folder}: example `{example}`");
        let manifest = format!("crates/{folder}/Cargo.toml");
        let mut cmd = cargo();
        cmd.current_dir(root)
            .args(["run", "--quiet", "--manifest-path", &manifest])
            .args(["--example", example]);
        if let Err(why) = util::run(&mut cmd) {
            eprintln!("FAILED: {why}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_demo_example_exists() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        for (folder, example) in EXAMPLES {
            let path = root
                .join("crates")
                .join(folder)
                .join("examples")
                .join(format!("{example}.rs"));
            assert!(path.is_file(), "{} is missing", path.display());
        }
    }
}
