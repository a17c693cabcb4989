//! What the page says about where and when the numbers were taken: the machine (from
//! `/proc`), the toolchain, the date in UTC and the commit.

use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// The machine and the code a run measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stamp {
    /// CPU model and count (`AMD EPYC 7B13, 2 CPUs`).
    pub(crate) cpu: String,
    /// Total memory (`23.4 GiB`).
    pub(crate) memory: String,
    /// Kernel release (`6.8.0-45-generic`).
    pub(crate) kernel: String,
    /// `rustc -V`.
    pub(crate) rustc: String,
    /// When the run started, `YYYY-MM-DD HH:MM UTC`.
    pub(crate) date: String,
    /// `git rev-parse --short HEAD`, with ` (dirty)` when the tree had changes.
    pub(crate) commit: String,
}

const UNKNOWN: &str = "unknown";

impl Stamp {
    /// Reads everything from this machine and the repository at `root`.
    pub(crate) fn here(root: &Path, started: SystemTime) -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|release| release.trim().to_string())
            .unwrap_or_else(|_| UNKNOWN.into());
        let rustc = output(
            Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()))
                .arg("-V")
                .current_dir(root),
        )
        .unwrap_or_else(|| UNKNOWN.into());
        let seconds = started
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        Self {
            cpu: cpu(&cpuinfo),
            memory: memory(&meminfo),
            kernel,
            rustc,
            date: utc(seconds),
            commit: commit(root),
        }
    }
}

/// The stdout of a command that succeeded, trimmed.
fn output(cmd: &mut Command) -> Option<String> {
    let out = cmd.output().ok().filter(|out| out.status.success())?;
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// `model name` of the first processor and the number of processors in `/proc/cpuinfo`.
fn cpu(cpuinfo: &str) -> String {
    let field = |line: &str, name: &str| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == name).then(|| value.trim().to_string())
    };
    let model = cpuinfo
        .lines()
        .find_map(|line| field(line, "model name"))
        .unwrap_or_else(|| UNKNOWN.into());
    let count = cpuinfo
        .lines()
        .filter(|line| field(line, "processor").is_some())
        .count();
    match count {
        0 => model,
        1 => format!("{model}, 1 CPU"),
        n => format!("{model}, {n} CPUs"),
    }
}

/// `MemTotal` of `/proc/meminfo`, in GiB.
fn memory(meminfo: &str) -> String {
    meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map_or_else(
            || UNKNOWN.into(),
            |kib| format!("{:.1} GiB", kib as f64 / (1024.0 * 1024.0)),
        )
}

/// The short commit, and whether the work tree differs from it. The page and its charts do
/// not count: a run rewrites them, so the next run would otherwise always be "dirty".
fn commit(root: &Path) -> String {
    let git = |args: &[&str]| output(Command::new("git").args(args).current_dir(root));
    let Some(hash) = git(&["rev-parse", "--short", "HEAD"]) else {
        return UNKNOWN.into();
    };
    let page = format!(":(exclude){}", crate::bench::page::PAGE);
    let charts = format!(":(exclude){}", crate::bench::page::CHARTS);
    match git(&["status", "--porcelain", "--", ".", &page, &charts]) {
        Some(changes) if changes.is_empty() => hash,
        Some(_) => format!("{hash} (dirty)"),
        None => format!("{hash} (status unknown)"),
    }
}

/// `YYYY-MM-DD HH:MM UTC` of a Unix time.
pub(crate) fn utc(seconds: u64) -> String {
    let days = seconds / 86_400;
    let (hour, minute) = (seconds % 86_400 / 3600, seconds % 3600 / 60);
    let (year, month, day) = civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02} UTC")
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`,
/// for non-negative days).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_calendar_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        // 2000-02-29 (a leap day of a century leap year) 12:34:56.
        assert_eq!(utc(951_827_696), "2000-02-29 12:34 UTC");
        // 2024-12-31 23:59:59, the last second of a leap year.
        assert_eq!(utc(1_735_689_599), "2024-12-31 23:59 UTC");
        assert_eq!(utc(1_735_689_600), "2025-01-01 00:00 UTC");
    }

    #[test]
    fn cpu_and_memory_come_from_proc() {
        let cpuinfo = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t: fpu\n\n\
                       processor\t: 1\nmodel name\t: AMD EPYC 7B13\n";
        assert_eq!(cpu(cpuinfo), "AMD EPYC 7B13, 2 CPUs");
        assert_eq!(cpu(""), "unknown");
        assert_eq!(
            memory("MemTotal:       24523460 kB\nMemFree: 1 kB\n"),
            "23.4 GiB"
        );
        assert_eq!(memory("nothing"), "unknown");
    }

    #[test]
    fn the_generated_page_does_not_make_the_tree_dirty() {
        let repo = std::env::temp_dir().join(format!("xtask-bench-git-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&repo);
        std::fs::create_dir_all(repo.join("docs/benchmarks")).unwrap();
        std::fs::write(repo.join("lib.rs"), "// code\n").unwrap();
        let git = |args: &[&str]| {
            let status = Command::new("git")
                .args([
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@t",
                    "-c",
                    "init.defaultBranch=main",
                ])
                .args(args)
                .current_dir(&repo)
                .output()
                .unwrap();
            assert!(status.status.success(), "git {args:?}: {status:?}");
        };
        git(&["init", "-q"]);
        git(&["add", "lib.rs"]);
        git(&["commit", "-q", "-m", "code"]);
        std::fs::write(repo.join("docs/benchmarks.md"), "page").unwrap();
        std::fs::write(repo.join("docs/benchmarks/a.svg"), "<svg/>").unwrap();
        let clean = commit(&repo);
        assert!(!clean.contains("dirty") && clean.len() >= 7, "{clean}");
        std::fs::write(repo.join("lib.rs"), "// changed\n").unwrap();
        assert_eq!(commit(&repo), format!("{clean} (dirty)"));
        std::fs::remove_dir_all(&repo).unwrap();
    }
}
