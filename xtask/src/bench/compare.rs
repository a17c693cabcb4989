//! From criterion's results to side-by-side comparisons: one per criterion group (and
//! parameter), our subject against its peers, each with its ratio to ours.
//!
//! # Which subject is ours
//!
//! A subject is ours when its id is the crate's folder name or starts with it and `_`
//! (`worker`, `worker_buffer_1M`, `pdfpool_run`, `batch_memory`); every other subject is a
//! peer (another crate, or a bare floor built from tokio or std). When a comparison has
//! several of ours (a variant, or the same code on other stores), the *reference* is the first
//! of them in alphabetical order: the plain name before its variants (`worker` before
//! `worker_buffer_1M`). The benches name their subjects to fit.
//!
//! # Ratio
//!
//! Each subject's median time divided by the reference's: above 1 the subject is slower than
//! ours, below 1 it is faster.

use crate::bench::results::Measurement;

/// One subject of a comparison.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Subject {
    /// Its id within the comparison (`tower_concurrency_limit`).
    pub(crate) name: String,
    /// Median time per iteration, in nanoseconds.
    pub(crate) median_ns: f64,
    /// Whether it is our code (see the module docs).
    pub(crate) ours: bool,
}

/// Subjects measured side by side in one criterion group (and parameter).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Comparison {
    /// The group, with `/<parameter>` when the ids carry one (`fanout_end_to_last_wake/10000`).
    pub(crate) name: String,
    /// The reference first, then our other subjects, then the peers; fastest first within each.
    pub(crate) subjects: Vec<Subject>,
    /// Whether `subjects[0]` is the reference (false when no subject is ours).
    pub(crate) has_reference: bool,
}

impl Comparison {
    /// The subject's time ÷ the reference's; `None` without a reference or when the
    /// reference's time is zero.
    pub(crate) fn ratio(&self, subject: &Subject) -> Option<f64> {
        let reference = self.subjects.first().filter(|_| self.has_reference)?;
        (reference.median_ns > 0.0).then(|| subject.median_ns / reference.median_ns)
    }

    /// The reference subject, if any.
    pub(crate) fn reference(&self) -> Option<&Subject> {
        self.subjects.first().filter(|_| self.has_reference)
    }
}

/// Whether `id` names our code in the crate `folder` (see the module docs).
pub(crate) fn is_ours(folder: &str, id: &str) -> bool {
    id == folder
        || id
            .strip_prefix(folder)
            .is_some_and(|rest| rest.starts_with('_'))
}

/// Groups one crate's measurements into comparisons, in the order their first measurement
/// appears (the order the benches ran them in).
pub(crate) fn build(folder: &str, measurements: &[Measurement]) -> Vec<Comparison> {
    let mut comparisons: Vec<Comparison> = Vec::new();
    for measurement in measurements {
        // `BenchmarkId::new(function, value)`: the value is the comparison's parameter;
        // `BenchmarkId::from_parameter(value)`: the value is the subject.
        let (name, subject) = match (&measurement.function, &measurement.value) {
            (Some(function), Some(value)) => {
                (format!("{}/{value}", measurement.group), function.clone())
            }
            (Some(function), None) => (measurement.group.clone(), function.clone()),
            (None, Some(value)) => (measurement.group.clone(), value.clone()),
            (None, None) => (measurement.group.clone(), measurement.group.clone()),
        };
        let subject = Subject {
            ours: is_ours(folder, &subject),
            name: subject,
            median_ns: measurement.median_ns,
        };
        match comparisons.iter_mut().find(|c| c.name == name) {
            Some(comparison) => comparison.subjects.push(subject),
            None => comparisons.push(Comparison {
                name,
                subjects: vec![subject],
                has_reference: false,
            }),
        }
    }
    for comparison in &mut comparisons {
        order(comparison);
    }
    comparisons
}

/// Puts the reference first, then our other subjects, then the peers, fastest first.
fn order(comparison: &mut Comparison) {
    let subjects = &mut comparison.subjects;
    subjects.sort_by(|a, b| {
        b.ours
            .cmp(&a.ours)
            .then(a.median_ns.total_cmp(&b.median_ns))
    });
    let reference = subjects
        .iter()
        .enumerate()
        .filter(|(_, subject)| subject.ours)
        .min_by(|(_, a), (_, b)| a.name.cmp(&b.name))
        .map(|(index, _)| index);
    if let Some(index) = reference {
        let subject = subjects.remove(index);
        subjects.insert(0, subject);
    }
    comparison.has_reference = reference.is_some();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measurement(
        group: &str,
        function: Option<&str>,
        value: Option<&str>,
        ns: f64,
    ) -> Measurement {
        Measurement {
            group: group.into(),
            function: function.map(String::from),
            value: value.map(String::from),
            median_ns: ns,
            mean_ns: ns,
        }
    }

    fn names(comparison: &Comparison) -> Vec<&str> {
        comparison
            .subjects
            .iter()
            .map(|s| s.name.as_str())
            .collect()
    }

    #[test]
    fn ours_is_the_folder_name_or_its_prefix() {
        assert!(is_ours("worker", "worker"));
        assert!(is_ours("worker", "worker_buffer_1M"));
        assert!(is_ours("pdfpool", "pdfpool_run"));
        assert!(!is_ours("worker", "workers_elsewhere"));
        assert!(!is_ours("worker", "rayon_spawn"));
        assert!(!is_ours("pdfpool", "tower_concurrency_limit"));
    }

    #[test]
    fn one_comparison_per_group_and_parameter_with_ratios_to_ours() {
        let measurements = [
            measurement("fanout", Some("oneshot_floor"), Some("10000"), 500.0),
            measurement("fanout", Some("pdfpool"), Some("10000"), 1000.0),
            measurement("fanout", Some("async_singleflight"), Some("10000"), 3000.0),
            measurement("fanout", Some("pdfpool"), Some("10"), 10.0),
            measurement("uncontended_run", Some("spawn_plus_semaphore"), None, 40.0),
            measurement("uncontended_run", Some("pdfpool_run"), None, 80.0),
        ];
        let comparisons = build("pdfpool", &measurements);
        let found: Vec<&str> = comparisons.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(found, ["fanout/10000", "fanout/10", "uncontended_run"]);

        let fanout = &comparisons[0];
        assert_eq!(
            names(fanout),
            ["pdfpool", "oneshot_floor", "async_singleflight"]
        );
        let ratios: Vec<Option<f64>> = fanout.subjects.iter().map(|s| fanout.ratio(s)).collect();
        assert_eq!(ratios, [Some(1.0), Some(0.5), Some(3.0)]);

        let run = &comparisons[2];
        assert_eq!(run.reference().unwrap().name, "pdfpool_run");
        assert_eq!(
            run.ratio(&run.subjects[1]),
            Some(0.5),
            "the floor is faster"
        );
    }

    #[test]
    fn parameter_only_ids_are_the_subjects_and_the_plain_name_is_the_reference() {
        let measurements = [
            measurement("quiet/empty", None, Some("worker"), 300.0),
            measurement("quiet/empty", None, Some("rayon_spawn"), 450.0),
            measurement("quiet/empty", None, Some("worker_buffer_1M"), 200.0),
        ];
        let comparisons = build("worker", &measurements);
        assert_eq!(comparisons.len(), 1);
        let quiet = &comparisons[0];
        assert_eq!(quiet.name, "quiet/empty");
        assert_eq!(names(quiet), ["worker", "worker_buffer_1M", "rayon_spawn"]);
        assert!(quiet.subjects[1].ours && !quiet.subjects[2].ours);
        assert_eq!(quiet.ratio(&quiet.subjects[2]), Some(1.5));
    }

    #[test]
    fn a_comparison_without_ours_has_no_ratio() {
        let measurements = [
            measurement("floors", Some("bare_watch_floor"), None, 2.0),
            measurement("floors", Some("oneshot_floor"), None, 1.0),
        ];
        let comparisons = build("pdfpool", &measurements);
        let floors = &comparisons[0];
        assert!(!floors.has_reference);
        assert_eq!(floors.reference(), None);
        assert_eq!(names(floors), ["oneshot_floor", "bare_watch_floor"]);
        assert_eq!(floors.ratio(&floors.subjects[0]), None);
    }
}
