//! `cargo xtask gate`: everything CI checks, as an ordered list of named steps.
//!
//! The gate stops at the first failing step and names it. A step that cannot run on this
//! machine (no nightly toolchain, no crate with loom models yet) prints
//! `SKIPPED: <step>: <why>` and the gate goes on: a skip is never a silent pass. However it
//! ends, the gate prints a [`summary`]: each step run with its status and time, the steps a
//! failure left unrun, and the total.
//!
//! Tests that are slow under a sanitizer or Miri read `TEST_SCALE=small` (set by those steps)
//! and shrink their counts; proptest reads `PROPTEST_CASES`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use crate::browser;
use crate::flags::GateOptions;
use crate::postgres;
use crate::util::{self, cargo, nightly_cargo};

/// What a step came to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Passed,
    Skipped(String),
    Failed(String),
}

/// One named step of the gate.
#[derive(Debug)]
pub(crate) struct Step {
    pub(crate) name: &'static str,
    /// Runs only with `--full` (needs the nightly toolchain).
    pub(crate) full_only: bool,
    run: fn(&Path) -> Outcome,
}

/// The gate, in order.
pub(crate) const STEPS: &[Step] = &[
    Step {
        name: "fmt",
        full_only: false,
        run: fmt,
    },
    Step {
        name: "clippy",
        full_only: false,
        run: clippy,
    },
    Step {
        name: "test",
        full_only: false,
        run: test,
    },
    Step {
        name: "reference",
        full_only: false,
        run: reference,
    },
    Step {
        name: "loom",
        full_only: false,
        run: loom,
    },
    Step {
        name: "tidy",
        full_only: false,
        run: tidy::run,
    },
    Step {
        name: "package",
        full_only: false,
        run: package,
    },
    Step {
        name: "tsan",
        full_only: true,
        run: tsan,
    },
    Step {
        name: "miri",
        full_only: true,
        run: miri,
    },
];

/// A crate opts into Miri with this table in its `Cargo.toml`, naming the `cargo miri test`
/// arguments that select its tests Miri can run (those without a tokio runtime or host I/O):
///
/// ```toml
/// [package.metadata.gate]
/// miri = "--lib --test stress"
/// ```
const GATE_TABLE: &str = "[package.metadata.gate]";

/// Flags every Miri run uses.
const MIRIFLAGS: &str = "-Zmiri-strict-provenance";

/// Where the reference, loom, TSan and Miri builds go, so the normal build is never thrown
/// away.
const TARGET_REFERENCE: &str = "target/reference";
const TARGET_LOOM: &str = "target/loom";
const TARGET_TSAN: &str = "target/tsan";
const TARGET_MIRI: &str = "target/miri";

/// Runs the gate; the exit code is non-zero when a step failed.
pub(crate) fn run(root: &Path, options: &GateOptions) -> ExitCode {
    if options.list {
        for step in STEPS {
            let note = if step.full_only { " (--full)" } else { "" };
            println!("{}{note}", step.name);
        }
        return ExitCode::SUCCESS;
    }
    let steps = match select(options) {
        Ok(steps) => steps,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    let mut report: Vec<(&str, &str, Duration)> = Vec::new();
    let (failed, total) = util::timed(|| {
        for (index, step) in steps.iter().enumerate() {
            println!("\n==> gate step `{}`", step.name);
            let (outcome, took) = util::timed(|| (step.run)(root));
            match outcome {
                Outcome::Passed => {
                    println!("<== `{}` passed in {took:.1?}", step.name);
                    report.push((step.name, "passed", took));
                }
                Outcome::Skipped(why) => {
                    println!("SKIPPED: {}: {why}", step.name);
                    report.push((step.name, "SKIPPED", took));
                }
                Outcome::Failed(why) => {
                    println!("FAILED: gate step `{}` ({took:.1?}): {why}", step.name);
                    report.push((step.name, "FAILED", took));
                    return Some((step.name, &steps[index + 1..]));
                }
            }
        }
        None
    });
    let not_run: Vec<&str> = failed
        .iter()
        .flat_map(|(_, rest)| rest.iter().map(|step| step.name))
        .collect();
    print!("\n{}", summary(&report, &not_run, total));
    match failed {
        Some((name, _)) => {
            println!("gate FAILED at step `{name}`");
            ExitCode::FAILURE
        }
        None => {
            println!("gate passed");
            ExitCode::SUCCESS
        }
    }
}

/// What the gate prints at its end, pass or fail: each step run so far with its status and
/// wall time (a skipped step too), the steps a failure left unrun, and the total.
pub(crate) fn summary(
    report: &[(&str, &str, Duration)],
    not_run: &[&str],
    total: Duration,
) -> String {
    // Names padded to the longest, so every column lines up whatever the steps are called.
    let names = report
        .iter()
        .map(|(name, ..)| *name)
        .chain(not_run.iter().copied());
    let width = names.chain(["total"]).map(str::len).max().unwrap_or(0);
    let mut out = String::from("gate summary:\n");
    for (name, status, took) in report {
        out.push_str(&format!("  {name:<width$} {status:<8} {took:>8.1?}\n"));
    }
    for name in not_run {
        out.push_str(&format!("  {name:<width$} not run\n"));
    }
    out.push_str(&format!("  {:<width$} {:<8} {total:>8.1?}\n", "total", ""));
    out
}

/// The steps the options select, in gate order.
pub(crate) fn select(options: &GateOptions) -> Result<Vec<&'static Step>, String> {
    if let Some(unknown) = options
        .only
        .iter()
        .find(|n| !STEPS.iter().any(|s| s.name == *n))
    {
        return Err(format!("no gate step is named `{unknown}`"));
    }
    Ok(STEPS
        .iter()
        .filter(|step| {
            if options.only.is_empty() {
                options.full || !step.full_only
            } else {
                options.only.iter().any(|n| n == step.name)
            }
        })
        .collect())
}

fn outcome(result: Result<(), String>) -> Outcome {
    match result {
        Ok(()) => Outcome::Passed,
        Err(why) => Outcome::Failed(why),
    }
}

fn in_root(mut cmd: Command, root: &Path) -> Command {
    cmd.current_dir(root);
    cmd
}

fn fmt(root: &Path) -> Outcome {
    outcome(util::run(
        in_root(cargo(), root).args(["fmt", "--all", "--check"]),
    ))
}

/// Clippy with every feature, then with each crate's defaults: code used only under a feature
/// (an import, a helper) warns only in the build that leaves the feature out.
fn clippy(root: &Path) -> Outcome {
    for features in [&["--all-features"][..], &[][..]] {
        let mut cmd = in_root(cargo(), root);
        cmd.args(["clippy", "--workspace", "--all-targets"])
            .args(features)
            .args(["--", "-D", "warnings"]);
        if let Err(why) = util::run(&mut cmd) {
            return Outcome::Failed(why);
        }
    }
    Outcome::Passed
}

/// Runs every test, with a throwaway PostgreSQL cluster for the tests that need one when the
/// server is installed, and with the browser test's chromedriver and Chromium when they are
/// (otherwise those tests skip, and the gate says so; in CI a missing browser is a failure,
/// see [`browser`]).
fn test(root: &Path) -> Outcome {
    let programs = match browser::find() {
        Ok(programs) => Some(programs),
        Err(why) if browser::in_ci() => {
            return Outcome::Failed(format!(
                "the browser test cannot run in CI: {why} (.ci/run installs them when missing)"
            ));
        }
        Err(why) => {
            println!("SKIPPED: browser: {why}");
            None
        }
    };
    let clusters = match postgres::Cluster::start_both() {
        Ok(clusters) => Some(clusters),
        Err(postgres::NoCluster::Missing(why)) => {
            println!("SKIPPED: postgres: {why}");
            None
        }
        Err(postgres::NoCluster::Failed(why)) => {
            return Outcome::Failed(format!("the PostgreSQL test cluster: {why}"));
        }
    };
    let with_db = |mut cmd: Command| {
        for var in postgres::ALL_VARS {
            cmd.env_remove(var);
        }
        if let Some((fast, durable)) = &clusters {
            cmd.envs(fast.env()).envs(durable.env());
        }
        cmd.env_remove(browser::CHROMEDRIVER_VAR)
            .env_remove(browser::CHROMIUM_VAR);
        if let Some(programs) = &programs {
            cmd.envs(programs.env());
        }
        in_root(cmd, root)
    };
    let nextest = util::succeeds(cargo().args(["nextest", "--version"]));
    let result = if nextest {
        util::run(with_db(cargo()).args([
            "nextest",
            "run",
            "--workspace",
            "--all-features",
            "--no-fail-fast",
        ]))
        .and_then(|()| {
            // nextest does not run doc tests.
            util::run(with_db(cargo()).args(["test", "--workspace", "--all-features", "--doc"]))
        })
    } else {
        util::run(with_db(cargo()).args(["test", "--workspace", "--all-features"]))
    };
    // Stops the clusters whatever the tests did.
    drop(clusters);
    outcome(result)
}

/// The crates whose fast paths have a reference build, and the cfg that selects it: every
/// fast entry falls back, so the pool runs on its locked state machine alone. A crate that
/// does not honour the cfg (yet) runs its normal code, and the step still passes for it.
const REFERENCE_CRATES: &[&str] = &["lockgate-worker", "lockgate-pdfpool"];
const REFERENCE_RUSTFLAGS: &str = "--cfg lockgate_reference";

/// The reference build: the lib tests (the proptest models among them) and the integration
/// tests (the stress tests among them) of [`REFERENCE_CRATES`] with [`REFERENCE_RUSTFLAGS`],
/// default features, in its own target dir. No bench, doc test or example is built.
fn reference(root: &Path) -> Outcome {
    let nextest = util::succeeds(cargo().args(["nextest", "--version"]));
    let mut cmd = in_root(cargo(), root);
    cmd.env("CARGO_TARGET_DIR", TARGET_REFERENCE)
        .env("RUSTFLAGS", REFERENCE_RUSTFLAGS);
    if nextest {
        cmd.args(["nextest", "run", "--no-fail-fast"]);
    } else {
        cmd.arg("test");
    }
    for name in REFERENCE_CRATES {
        cmd.args(["-p", name]);
    }
    cmd.args(["--lib", "--tests"]);
    outcome(util::run(&mut cmd))
}

fn loom(root: &Path) -> Outcome {
    let crates = crates_with_loom_models(root);
    if crates.is_empty() {
        return Outcome::Skipped("no crate has loom models (src/**/loom_*.rs) yet".into());
    }
    for name in crates {
        let mut cmd = in_root(cargo(), root);
        cmd.env("CARGO_TARGET_DIR", TARGET_LOOM)
            .env("RUSTFLAGS", "--cfg loom -C debug-assertions")
            .env("LOOM_MAX_PREEMPTIONS", "2")
            .env("LOOM_MAX_BRANCHES", "10000")
            .args(["test", "--release", "-p", &name, "--lib", "loom_"]);
        if let Err(why) = util::run(&mut cmd) {
            return Outcome::Failed(why);
        }
    }
    Outcome::Passed
}

/// `cargo package` for every crate under `crates/` in one run, which packages them in
/// dependency order and verifies each tarball by building it against the others' tarballs
/// (crates.io is asked only for outside dependencies). `--allow-dirty`: the step checks what
/// would be published, not whether it is committed.
fn package(root: &Path) -> Outcome {
    let mut cmd = in_root(cargo(), root);
    cmd.args(["package", "--allow-dirty"]);
    let mut names: Vec<String> = crate_dirs(root).into_iter().map(|(name, _)| name).collect();
    names.sort();
    for name in &names {
        cmd.args(["-p", name]);
    }
    outcome(util::run(&mut cmd))
}

fn tsan(root: &Path) -> Outcome {
    let target = match nightly_host(&["rust-src"]) {
        Ok(target) => target,
        Err(why) => return Outcome::Skipped(why),
    };
    let mut cmd = in_root(nightly_cargo(), root);
    cmd.env("CARGO_TARGET_DIR", TARGET_TSAN)
        .env("RUSTFLAGS", "-Zsanitizer=thread")
        .env("RUSTDOCFLAGS", "-Zsanitizer=thread")
        .env("TSAN_OPTIONS", "halt_on_error=1")
        .env("TEST_SCALE", "small")
        .env("PROPTEST_CASES", "16")
        .args(["test", "-Zbuild-std", "--target", &target, "--release"])
        .args([
            "--workspace",
            "--exclude",
            "xtask",
            "--all-features",
            "--lib",
            "--tests",
        ])
        .args(["--", "--test-threads=1"]);
    outcome(util::run(&mut cmd))
}

fn miri(root: &Path) -> Outcome {
    if let Err(why) = nightly_host(&["rust-src", "miri"]) {
        return Outcome::Skipped(why);
    }
    let runs = miri_runs(root);
    if runs.is_empty() {
        return Outcome::Skipped(
            "no crate opts into Miri (`miri` in [package.metadata.gate])".into(),
        );
    }
    for (package, extra) in &runs {
        let mut cmd = in_root(nightly_cargo(), root);
        cmd.env("CARGO_TARGET_DIR", TARGET_MIRI)
            .env("MIRIFLAGS", MIRIFLAGS)
            .env("TEST_SCALE", "small")
            .env("PROPTEST_CASES", "4")
            .args(["miri", "test", "-p", package])
            .args(extra);
        if let Err(why) = util::run(&mut cmd) {
            return Outcome::Failed(why);
        }
    }
    Outcome::Passed
}

/// Makes sure the nightly toolchain has `components`, installing them if needed, and returns
/// its host triple; `Err` says why the nightly steps cannot run here.
fn nightly_host(components: &[&str]) -> Result<String, String> {
    let output = Command::new("rustup")
        .args(["run", "nightly", "rustc", "-vV"])
        .output()
        .map_err(|err| {
            format!("rustup is not available ({err}); install rustup and a nightly toolchain")
        })?;
    if !output.status.success() {
        return Err(
            "no nightly toolchain; install it with `rustup toolchain install nightly`".into(),
        );
    }
    let version = String::from_utf8_lossy(&output.stdout);
    let host = version
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .ok_or("`rustc +nightly -vV` printed no host line")?
        .trim()
        .to_string();
    let mut add = Command::new("rustup");
    add.args(["component", "add", "--toolchain", "nightly"])
        .args(components);
    util::run(&mut add).map_err(|why| {
        format!("could not install nightly components {components:?} ({why}); the machine may be offline")
    })?;
    Ok(host)
}

/// Each crate under `crates/` that opts into Miri, with its `cargo miri test` arguments,
/// sorted by name.
pub(crate) fn miri_runs(root: &Path) -> Vec<(String, Vec<String>)> {
    let mut runs: Vec<(String, Vec<String>)> = crate_dirs(root)
        .into_iter()
        .filter_map(|(name, dir)| {
            let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).ok()?;
            let args = gate_value(&manifest, "miri")?;
            Some((name, args.split_whitespace().map(String::from).collect()))
        })
        .collect();
    runs.sort();
    runs
}

/// The string value of `key` in the manifest's `[package.metadata.gate]` table.
fn gate_value(manifest: &str, key: &str) -> Option<String> {
    table_value(manifest, GATE_TABLE, key)
}

/// The string value of `key` in the manifest's `table` (a header line such as `[package]`).
fn table_value(manifest: &str, table: &str, key: &str) -> Option<String> {
    let lines = manifest
        .lines()
        .skip_while(|line| line.trim() != table)
        .skip(1);
    for line in lines.take_while(|line| !line.trim_start().starts_with('[')) {
        if let Some((k, v)) = line.split_once('=')
            && k.trim() == key
        {
            return Some(v.trim().trim_matches('"').to_string());
        }
    }
    None
}

/// Every crate under `crates/`, as (package name, folder). Package names differ from folder
/// names (`crates/batch` is `lockgate-batch`), and `cargo -p` wants the package name.
fn crate_dirs(root: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(root.join("crates")) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let manifest = std::fs::read_to_string(entry.path().join("Cargo.toml")).ok()?;
            let name = table_value(&manifest, "[package]", "name")?;
            Some((name, entry.path()))
        })
        .collect()
}

/// Names of the crates under `crates/` with a loom model file (`loom_*.rs`) in `src/`.
pub(crate) fn crates_with_loom_models(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = crate_dirs(root)
        .into_iter()
        .filter(|(_, dir)| has_loom_file(&dir.join("src")))
        .map(|(name, _)| name)
        .collect();
    names.sort();
    names
}

fn has_loom_file(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.filter_map(Result::ok).any(|entry| {
        let path: PathBuf = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            has_loom_file(&path)
        } else {
            name.starts_with("loom_") && name.ends_with(".rs")
        }
    })
}

pub(crate) mod tidy;

#[cfg(test)]
mod tests;
