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

/// Builds every example first, with cargo's progress shown (a first build compiles every
/// dependency: minutes, which a quiet build spent in silence), then runs each; stops at the
/// first that fails.
pub(crate) fn run(root: &Path) -> ExitCode {
    println!(
        "==> building the demo's {} examples (a first build compiles every dependency and \
         takes a few minutes; later ones take seconds)",
        EXAMPLES.len()
    );
    for (folder, example) in EXAMPLES {
        let mut cmd = example_command(root, "build", folder, example);
        if let Err(why) = util::run(&mut cmd) {
            eprintln!("FAILED: {why}");
            return ExitCode::FAILURE;
        }
    }
    for (folder, example) in EXAMPLES {
        println!("\n==> crates/{folder}: example `{example}`");
        let mut cmd = example_command(root, "run", folder, example);
        cmd.arg("--quiet");
        if let Err(why) = util::run(&mut cmd) {
            eprintln!("FAILED: {why}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

/// `cargo <verb> --example <example>` of the crate in `crates/<folder>`.
fn example_command(root: &Path, verb: &str, folder: &str, example: &str) -> std::process::Command {
    let manifest = format!("crates/{folder}/Cargo.toml");
    let mut cmd = cargo();
    cmd.current_dir(root)
        .args([verb, "--manifest-path", &manifest])
        .args(["--example", example]);
    cmd
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
