//! `cargo xtask bench`: runs every crate's criterion benches, gathers the side-by-side
//! comparisons they measure, and writes `docs/benchmarks.md` with one table and one SVG chart
//! (`docs/benchmarks/<crate>-<group>.svg`) per comparison, stamped with the machine, the date
//! and the commit. The page is only ever written by this command.
//!
//! Steps:
//! 1. The benches are the `[[bench]]` targets of `crates/*/Cargo.toml` ([`manifest`]), run one
//!    at a time as `cargo bench -p <package> --bench <name> --all-features -- [--quick]`, so
//!    optional subjects (the `metrics` runs) are measured too. A bench without
//!    `criterion_main!` is not a criterion bench (`batch/lateness` prints a latency table)
//!    and is skipped with `SKIPPED: <bench>: <why>`. A bench that reads the PostgreSQL URL
//!    variable gets a throwaway cluster ([`postgres`], with `fsync` on, as in production), or
//!    is skipped when no server binaries are installed.
//! 2. criterion writes into `CRITERION_HOME` (set to `<target>/criterion`); only results
//!    written after the bench started are read ([`results`]), so nothing stale reaches the page.
//! 3. Each criterion group (and parameter) is a comparison; which subject is ours and what
//!    the ratio means: [`compare`].
//! 4. The page ([`page`]) and the charts ([`chart`]) are rewritten; old charts are removed.
//!
//! # How long it takes
//!
//! Counted from the benches (benchmark ids × warm-up + measurement) for a full run, measured
//! for `--quick` on a busy 2-CPU machine; builds not included:
//!
//! | crate | ids | full: per id | full | quick |
//! |---|---:|---|---:|---:|
//! | pdfpool (4 benches) | 11 | 1 s + 3 s (the benches' config) | ≈ 45 s | ≈ 10 s |
//! | worker (throughput) | 84 (12 groups × 7) | 3 s + 5 s (criterion's defaults) | ≈ 11.5 min | ≈ 1.5 min |
//! | batch (runner, readers, postgres, streams) | 7 + 2 + 5 + 3 | 3 s + 5 s; the PostgreSQL ids (0.7–1.2 s an iteration) need 10 iterations, ≈ 12 s; the streams ids (0.2–0.6 s an iteration) ≈ 8 s | ≈ 3 min | ≈ 30 s |
//!
//! So a full run takes about 14–15 minutes and `--quick` about 2. A cold bench-profile build
//! of the three crates adds about 9 minutes on that machine, a warm one seconds. criterion's
//! quick mode skips the warm-up and stops each id once two samples agree within 5 %, or at
//! the measurement time, which `--quick` sets to 1 s (without that cap the noise of a busy
//! machine kept every worker id going for the full 5 s: 10 minutes instead of 1.5). Its
//! numbers are for a first look only.
//!
//! `batch/lateness` is not a criterion bench and is skipped.

mod chart;
mod compare;
mod machine;
mod manifest;
mod page;
mod results;
mod units;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use crate::flags::BenchOptions;
use crate::postgres;
use crate::util::{self, cargo};

use manifest::Bench;
use results::Measurement;

/// The measurement time (in seconds) that caps each benchmark id in `--quick` mode.
const QUICK_MEASUREMENT_SECONDS: &str = "1";

/// What one bench came to.
enum Outcome {
    /// Its results (possibly none, when the bench itself decided to measure nothing).
    Measured(Vec<Measurement>),
    /// It could not run here; the reason.
    Skipped(String),
    /// It failed; the reason.
    Failed(String),
}

/// Runs the benches the options select and writes the page; non-zero when a bench failed.
pub(crate) fn run(root: &Path, options: &BenchOptions) -> ExitCode {
    let all = manifest::benches(root);
    let folders: BTreeSet<&str> = all.iter().map(|bench| bench.folder.as_str()).collect();
    if let Some(unknown) = options
        .only
        .iter()
        .find(|name| !folders.contains(name.as_str()))
    {
        eprintln!(
            "error: no crate folder with benches is named `{unknown}` (there are: {})",
            folders.into_iter().collect::<Vec<_>>().join(", ")
        );
        return ExitCode::from(2);
    }
    let selected: Vec<&Bench> = all
        .iter()
        .filter(|bench| options.only.is_empty() || options.only.contains(&bench.folder))
        .collect();

    let started = SystemTime::now();
    // Taken before the run: the commit and its dirtiness are those of the code measured.
    let stamp = machine::Stamp::here(root, started);
    let home = criterion_home(root);
    let mut by_crate: Vec<(String, Vec<Measurement>)> = Vec::new();
    let mut not_measured = Vec::new();
    let mut failed = false;
    let ((), took) = util::timed(|| {
        for bench in &selected {
            println!("\n==> bench {}", bench.label());
            let (outcome, bench_took) = util::timed(|| run_one(root, &home, bench, options.quick));
            let measurements = match outcome {
                Outcome::Measured(measurements) => {
                    println!(
                        "<== {}: {} results in {bench_took:.1?}",
                        bench.label(),
                        measurements.len()
                    );
                    if measurements.is_empty() {
                        not_measured.push(format!(
                            "{}: the bench wrote no results (its output says why)",
                            bench.label()
                        ));
                    }
                    measurements
                }
                Outcome::Skipped(why) => {
                    println!("SKIPPED: {}: {why}", bench.label());
                    not_measured.push(format!("{}: skipped: {why}", bench.label()));
                    Vec::new()
                }
                Outcome::Failed(why) => {
                    println!("FAILED: {}: {why}", bench.label());
                    not_measured.push(format!("{}: failed: {why}", bench.label()));
                    failed = true;
                    Vec::new()
                }
            };
            match by_crate
                .iter_mut()
                .find(|(folder, _)| *folder == bench.folder)
            {
                Some((_, all)) => all.extend(measurements),
                None => by_crate.push((bench.folder.clone(), measurements)),
            }
        }
    });

    if by_crate
        .iter()
        .all(|(_, measurements)| measurements.is_empty())
    {
        println!("\nno results: {} is left as it was", page::PAGE);
        return ExitCode::FAILURE;
    }
    let report = page::Report {
        stamp,
        quick: options.quick,
        took,
        crates: Vec::new(),
        not_measured,
    };
    match write(root, report, &by_crate) {
        Ok(()) => println!("\nwrote {} and its charts in {}", page::PAGE, page::CHARTS),
        Err(why) => {
            eprintln!("FAILED: writing the page: {why}");
            return ExitCode::FAILURE;
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Where criterion writes: `$CARGO_TARGET_DIR/criterion`, else `target/criterion`.
fn criterion_home(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), PathBuf::from)
        .join("criterion")
}

/// Runs one bench and reads what it wrote.
fn run_one(root: &Path, home: &Path, bench: &Bench, quick: bool) -> Outcome {
    let source = match std::fs::read_to_string(&bench.source) {
        Ok(source) => source,
        Err(err) => return Outcome::Failed(format!("read {}: {err}", bench.source.display())),
    };
    if !source.contains("criterion_main!") {
        return Outcome::Skipped(format!(
            "not a criterion bench (no `criterion_main!`); run it with `cargo bench -p {} \
             --bench {}`",
            bench.package, bench.name
        ));
    }
    let mut cmd = cargo();
    cmd.current_dir(root).env("CRITERION_HOME", home).args([
        "bench",
        "-p",
        &bench.package,
        "--bench",
        &bench.name,
    ]);
    // All features: a bench's optional subjects (the `metrics` runs) are measured too, and
    // a bench's `required-features` are always met.
    cmd.arg("--all-features");
    cmd.arg("--");
    if quick {
        // Quick mode measures until two samples agree within 5 % or the measurement time is
        // up; on a busy machine that is always the latter, so the time is capped too.
        cmd.args(["--quick", "--measurement-time", QUICK_MEASUREMENT_SECONDS]);
    }
    for var in postgres::ALL_VARS {
        cmd.env_remove(var);
    }
    // Kept until the bench is done; dropping it stops the server.
    let cluster = if source.contains(postgres::URL_VAR) {
        match postgres::Cluster::start(postgres::Kind::Durable) {
            Ok(cluster) => Some(cluster),
            Err(postgres::NoCluster::Missing(why)) => return Outcome::Skipped(why),
            Err(postgres::NoCluster::Failed(why)) => {
                return Outcome::Failed(format!("the PostgreSQL cluster: {why}"));
            }
        }
    } else {
        None
    };
    if let Some(cluster) = &cluster {
        cmd.env(postgres::URL_VAR, cluster.url());
    }
    let since = SystemTime::now();
    if let Err(why) = util::run(&mut cmd) {
        return Outcome::Failed(why);
    }
    let (measurements, problems) = results::collect(home, since);
    for problem in problems {
        println!("WARNING: an unreadable result: {problem}");
    }
    Outcome::Measured(measurements)
}

/// Builds the comparisons, writes their charts (removing the old ones) and the page.
fn write(
    root: &Path,
    mut report: page::Report,
    by_crate: &[(String, Vec<Measurement>)],
) -> Result<(), String> {
    let charts = root.join(page::CHARTS);
    std::fs::create_dir_all(&charts)
        .map_err(|err| format!("create {}: {err}", charts.display()))?;
    for entry in std::fs::read_dir(&charts)
        .map_err(|err| format!("read {}: {err}", charts.display()))?
        .filter_map(Result::ok)
    {
        let path = entry.path();
        if path.extension().is_some_and(|ext| ext == "svg") {
            std::fs::remove_file(&path)
                .map_err(|err| format!("remove {}: {err}", path.display()))?;
        }
    }
    let mut used = BTreeSet::new();
    for (folder, measurements) in by_crate {
        let mut comparisons = Vec::new();
        for comparison in compare::build(folder, measurements) {
            let mut file = page::chart_file(folder, &comparison.name);
            // Two names that differ only in replaced characters get a counter.
            let mut counter = 1;
            while !used.insert(file.clone()) {
                counter += 1;
                file = page::chart_file(folder, &format!("{}-{counter}", comparison.name));
            }
            let path = charts.join(&file);
            std::fs::write(&path, chart::svg(&comparison)?)
                .map_err(|err| format!("write {}: {err}", path.display()))?;
            comparisons.push((comparison, file));
        }
        report.crates.push(page::CrateResults {
            folder: folder.clone(),
            comparisons,
        });
    }
    let path = root.join(page::PAGE);
    std::fs::write(&path, page::render(&report))
        .map_err(|err| format!("write {}: {err}", path.display()))
}
