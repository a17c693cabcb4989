//! The programs the browser test needs (`crates/batch/tests/browser`): chromedriver and the
//! Chromium it drives. The gate looks for them once, names them to the test through
//! environment variables, and says `SKIPPED: browser: <why>` in its own output when they are
//! missing (a passing test's output is hidden by nextest). In CI (`CI` set) a missing browser
//! fails the gate instead: `.ci/run` installs both, so a skip there would hide a broken setup.

use std::path::PathBuf;

/// The variable naming chromedriver to the test.
pub(crate) const CHROMEDRIVER_VAR: &str = "BATCH_TEST_CHROMEDRIVER";
/// The variable naming Chromium.
pub(crate) const CHROMIUM_VAR: &str = "BATCH_TEST_CHROMIUM";

/// How to get them, for the skip message.
pub(crate) const INSTALL_HINT: &str =
    "install them with `apt-get install chromium chromium-driver` (Debian/Ubuntu)";

/// Where the two programs are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Programs {
    pub(crate) chromedriver: PathBuf,
    pub(crate) chromium: PathBuf,
}

impl Programs {
    /// The variables the test reads.
    pub(crate) fn env(&self) -> [(&'static str, PathBuf); 2] {
        [
            (CHROMEDRIVER_VAR, self.chromedriver.clone()),
            (CHROMIUM_VAR, self.chromium.clone()),
        ]
    }
}

/// Finds chromedriver and Chromium on `PATH` or in `/usr/bin`; `Err` names what is missing.
pub(crate) fn find() -> Result<Programs, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin")])
        .collect();
    find_in(&dirs)
}

/// [`find`] in the given folders, in order.
pub(crate) fn find_in(dirs: &[PathBuf]) -> Result<Programs, String> {
    let first = |names: &[&str]| {
        names.iter().find_map(|name| {
            dirs.iter()
                .map(|dir| dir.join(name))
                .find(|candidate| candidate.is_file())
        })
    };
    let chromedriver = first(&["chromedriver"]);
    let chromium = first(&["chromium", "chromium-browser", "google-chrome"]);
    match (chromedriver, chromium) {
        (Some(chromedriver), Some(chromium)) => Ok(Programs {
            chromedriver,
            chromium,
        }),
        (chromedriver, chromium) => {
            let missing: Vec<&str> = [
                chromedriver.is_none().then_some("chromedriver"),
                chromium.is_none().then_some("chromium"),
            ]
            .into_iter()
            .flatten()
            .collect();
            Err(format!(
                "{} not found; {INSTALL_HINT}",
                missing.join(" and ")
            ))
        }
    }
}

/// Whether this is a CI run: CI services set `CI=true`.
pub(crate) fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| !matches!(value.as_str(), "" | "0" | "false"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_both_or_names_what_is_missing() {
        let root = std::env::temp_dir().join(format!("xtask-browser-find-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (a, b) = (root.join("a"), root.join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(b.join("chromedriver"), "").unwrap();
        let dirs = [a.clone(), b.clone()];
        let missing = find_in(&dirs).unwrap_err();
        assert!(missing.starts_with("chromium not found;"), "{missing}");
        std::fs::write(a.join("chromium-browser"), "").unwrap();
        assert_eq!(
            find_in(&dirs),
            Ok(Programs {
                chromedriver: b.join("chromedriver"),
                chromium: a.join("chromium-browser"),
            })
        );
        let none = find_in(&[root.join("c")]).unwrap_err();
        assert!(
            none.starts_with("chromedriver and chromium not found;"),
            "{none}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
