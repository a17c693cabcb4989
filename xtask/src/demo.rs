//! `cargo xtask demo`: every crate's example, one after another (the dashboard's in its
//! serve-one-request-and-exit mode).

use std::path::Path;
use std::process::ExitCode;

use crate::util::{self, cargo};

/// One example the demo runs.
pub(crate) struct Example {
    /// The crate's folder under `crates/`.
    pub(crate) folder: &'static str,
    /// The example's name.
    pub(crate) name: &'static str,
    /// The features it needs (`--features`), comma-separated; empty for the defaults.
    pub(crate) features: &'static str,
    /// Its arguments (after `--`) when the demo runs it.
    pub(crate) args: &'static [&'static str],
}

const fn example(folder: &'static str, name: &'static str) -> Example {
    Example {
        folder,
        name,
        features: "",
        args: &[],
    }
}

/// The examples, in the order the demo runs them. The dashboard's serves on an ephemeral
/// port, drives one request of its board, and exits (`--once`).
pub(crate) const EXAMPLES: &[Example] = &[
    example("pdfpool", "service"),
    example("batch", "demo"),
    Example {
        folder: "batch",
        name: "dashboard",
        features: "dashboard",
        args: &["--once"],
    },
    example("worker", "pool"),
    example("panicguard", "catch"),
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
    for example in EXAMPLES {
        let mut cmd = example_command(root, "build", example);
        if let Err(why) = util::run(&mut cmd) {
            eprintln!("FAILED: {why}");
            return ExitCode::FAILURE;
        }
    }
    for example in EXAMPLES {
        println!(
            "\n==> crates/{}: example `{}`",
            example.folder, example.name
        );
        let mut cmd = example_command(root, "run", example);
        cmd.arg("--quiet");
        if !example.args.is_empty() {
            cmd.arg("--").args(example.args);
        }
        if let Err(why) = util::run(&mut cmd) {
            eprintln!("FAILED: {why}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

/// `cargo <verb> --example <name> [--features <features>]` of the crate in
/// `crates/<folder>`.
fn example_command(root: &Path, verb: &str, example: &Example) -> std::process::Command {
    let manifest = format!("crates/{}/Cargo.toml", example.folder);
    let mut cmd = cargo();
    cmd.current_dir(root)
        .args([verb, "--manifest-path", &manifest])
        .args(["--example", example.name]);
    if !example.features.is_empty() {
        cmd.args(["--features", example.features]);
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_demo_example_exists() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        for example in EXAMPLES {
            let path = root
                .join("crates")
                .join(example.folder)
                .join("examples")
                .join(format!("{}.rs", example.name));
            assert!(path.is_file(), "{} is missing", path.display());
        }
    }
}
