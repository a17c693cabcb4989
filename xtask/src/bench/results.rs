//! Reading what criterion wrote: for each benchmark, `<home>/<group>/<function>[/<value>]/new/`
//! holds `benchmark.json` (its ids) and `estimates.json` (point estimates in nanoseconds per
//! iteration).
//!
//! The folder names are criterion's filename-safe versions of the ids (`/` becomes `_`, long
//! names are cut), so the ids are taken from `benchmark.json`, never from the path. Only files
//! written since a given instant are read: a result an earlier run left behind (a bench that
//! was skipped or failed this time) never reaches the page.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

/// One benchmark's result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Measurement {
    /// The criterion group (`benchmark_group`'s name).
    pub(crate) group: String,
    /// The function id (`bench_function`'s name, or `BenchmarkId::new`'s first part); `None`
    /// for `BenchmarkId::from_parameter`.
    pub(crate) function: Option<String>,
    /// The parameter (`BenchmarkId`'s value), if any.
    pub(crate) value: Option<String>,
    /// Median time per iteration, in nanoseconds.
    pub(crate) median_ns: f64,
    /// Mean time per iteration, in nanoseconds.
    pub(crate) mean_ns: f64,
}

/// Parses a `benchmark.json` and the `estimates.json` beside it.
pub(crate) fn parse(benchmark: &str, estimates: &str) -> Result<Measurement, String> {
    let benchmark: Value =
        serde_json::from_str(benchmark).map_err(|err| format!("benchmark.json: {err}"))?;
    let estimates: Value =
        serde_json::from_str(estimates).map_err(|err| format!("estimates.json: {err}"))?;
    let text = |key: &str| benchmark.get(key).and_then(Value::as_str).map(String::from);
    let group = text("group_id").ok_or("benchmark.json has no `group_id`")?;
    let point = |statistic: &str| {
        estimates
            .get(statistic)
            .and_then(|estimate| estimate.get("point_estimate"))
            .and_then(Value::as_f64)
            .filter(|ns| ns.is_finite() && *ns >= 0.0)
            .ok_or_else(|| format!("estimates.json has no usable `{statistic}.point_estimate`"))
    };
    Ok(Measurement {
        group,
        function: text("function_id"),
        value: text("value_str"),
        median_ns: point("median")?,
        mean_ns: point("mean")?,
    })
}

/// Every result under `home` written at or after `since`, oldest first (the order the bench
/// ran them in), and a message for each result that could not be read.
pub(crate) fn collect(home: &Path, since: SystemTime) -> (Vec<Measurement>, Vec<String>) {
    let mut found: Vec<(SystemTime, PathBuf)> = Vec::new();
    find_new_dirs(home, &mut found);
    found.retain(|(written, _)| *written >= since);
    found.sort();
    let mut measurements = Vec::new();
    let mut problems = Vec::new();
    for (_, dir) in found {
        let read = |file: &str| {
            std::fs::read_to_string(dir.join(file))
                .map_err(|err| format!("{}: {err}", dir.join(file).display()))
        };
        match read("benchmark.json")
            .and_then(|benchmark| Ok((benchmark, read("estimates.json")?)))
            .and_then(|(benchmark, estimates)| parse(&benchmark, &estimates))
        {
            Ok(measurement) => measurements.push(measurement),
            Err(why) => problems.push(format!("{}: {why}", dir.display())),
        }
    }
    (measurements, problems)
}

/// Pushes every `new` folder below `dir` that holds an `estimates.json`, with that file's
/// modification time (criterion writes it last of the two the page reads).
fn find_new_dirs(dir: &Path, found: &mut Vec<(SystemTime, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if !entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            continue;
        }
        if entry.file_name() == "new" {
            if let Ok(written) =
                std::fs::metadata(path.join("estimates.json")).and_then(|meta| meta.modified())
            {
                found.push((written, path));
            }
        } else {
            find_new_dirs(&path, found);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A `benchmark.json` as criterion 0.7 writes it (from `BenchmarkId::new("pdfpool", 10000)`
    /// in group `fanout_end_to_last_wake`).
    pub(crate) const BENCHMARK_JSON: &str = r#"{"group_id":"fanout_end_to_last_wake","function_id":"pdfpool","value_str":"10000","throughput":null,"full_id":"fanout_end_to_last_wake/pdfpool/10000","directory_name":"fanout_end_to_last_wake/pdfpool/10000","title":"fanout_end_to_last_wake/pdfpool/10000"}"#;

    /// An `estimates.json` as criterion 0.7 writes it (`slope` is null in flat sampling).
    pub(crate) const ESTIMATES_JSON: &str = r#"{"mean":{"confidence_interval":{"confidence_level":0.95,"lower_bound":1510000.5,"upper_bound":1620000.25},"point_estimate":1560000.0,"standard_error":28000.1},"median":{"confidence_interval":{"confidence_level":0.95,"lower_bound":1490000.0,"upper_bound":1580000.0},"point_estimate":1530000.0,"standard_error":25000.0},"median_abs_dev":{"confidence_interval":{"confidence_level":0.95,"lower_bound":10000.0,"upper_bound":90000.0},"point_estimate":40000.0,"standard_error":20000.0},"slope":null,"std_dev":{"confidence_interval":{"confidence_level":0.95,"lower_bound":30000.0,"upper_bound":120000.0},"point_estimate":80000.0,"standard_error":25000.0}}"#;

    #[test]
    fn criterion_files_parse_into_ids_and_nanoseconds() {
        let measurement = parse(BENCHMARK_JSON, ESTIMATES_JSON).unwrap();
        assert_eq!(
            measurement,
            Measurement {
                group: "fanout_end_to_last_wake".into(),
                function: Some("pdfpool".into()),
                value: Some("10000".into()),
                median_ns: 1_530_000.0,
                mean_ns: 1_560_000.0,
            }
        );
    }

    #[test]
    fn a_parameter_only_id_has_no_function() {
        let benchmark = r#"{"group_id":"quiet/empty_x100000_from_1","function_id":null,"value_str":"worker","throughput":{"Elements":100000}}"#;
        let measurement = parse(benchmark, ESTIMATES_JSON).unwrap();
        assert_eq!(measurement.group, "quiet/empty_x100000_from_1");
        assert_eq!(measurement.function, None);
        assert_eq!(measurement.value.as_deref(), Some("worker"));
    }

    #[test]
    fn broken_files_are_errors_not_zeros() {
        assert!(
            parse("{", ESTIMATES_JSON)
                .unwrap_err()
                .contains("benchmark.json")
        );
        assert!(
            parse("{}", ESTIMATES_JSON)
                .unwrap_err()
                .contains("group_id")
        );
        let no_median = r#"{"mean":{"point_estimate":1.0}}"#;
        assert!(
            parse(BENCHMARK_JSON, no_median)
                .unwrap_err()
                .contains("median")
        );
    }

    #[test]
    fn only_results_written_since_the_start_are_collected() {
        let home = std::env::temp_dir().join(format!("xtask-bench-results-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&home);
        let write = |dir: &str| {
            let new = home.join(dir).join("new");
            std::fs::create_dir_all(&new).unwrap();
            std::fs::write(new.join("benchmark.json"), BENCHMARK_JSON).unwrap();
            std::fs::write(new.join("estimates.json"), ESTIMATES_JSON).unwrap();
        };
        write("old/pdfpool");
        // The stale result's time, set explicitly instead of waiting for the clock to move.
        let stale = SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(home.join("old/pdfpool/new/estimates.json"))
            .unwrap()
            .set_modified(stale)
            .unwrap();
        let since = SystemTime::now() - std::time::Duration::from_secs(60);
        write("fanout_end_to_last_wake/pdfpool/10000");
        // criterion's previous result sits in `base`, which is never read.
        let base = home.join("fanout_end_to_last_wake/pdfpool/10000/base");
        std::fs::create_dir_all(&base).unwrap();
        std::fs::write(base.join("estimates.json"), "not json").unwrap();

        let (measurements, problems) = collect(&home, since);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(measurements.len(), 1, "the stale result is left out");
        assert_eq!(measurements[0].function.as_deref(), Some("pdfpool"));
        std::fs::remove_dir_all(&home).unwrap();
    }
}
