//! Check (d): what a newcomer copies from the Markdown files works.
//!
//! - Every Markdown file with a `rust` code block is included (`include_str!`) by a Rust file
//!   of the workspace, as the crates include their READMEs as crate docs and
//!   `xtask/readme` includes the workspace README: so rustdoc compiles every snippet as a doc
//!   test (`ignore` blocks excepted: they say they are not code to run).
//! - In every `toml` code block, each dependency that names one of this workspace's packages
//!   (a key, or its `package = "…"`, starting with `lockgate` or equal to a crate folder's
//!   name) is a package the workspace has: `batch = "0.1"` resolves to an unrelated crate on
//!   crates.io.
//! - No two packages have an example of the same name: cargo puts every example of the
//!   workspace in one folder, and two of a name collide (a warning today, an error to come).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::{Finding, included_markdown};

/// Runs the three checks over `files` (relative to `root`).
pub(crate) fn check(root: &Path, files: &[PathBuf]) -> Vec<Finding> {
    let manifests: Vec<(PathBuf, String)> = files
        .iter()
        .filter(|f| f.file_name().is_some_and(|n| n == "Cargo.toml"))
        .filter_map(|f| Some((f.clone(), std::fs::read_to_string(root.join(f)).ok()?)))
        .filter(|(_, text)| text.lines().any(|l| l.trim() == "[package]"))
        .collect();
    let packages: BTreeSet<String> = manifests
        .iter()
        .filter_map(|(_, text)| package_name(text))
        .collect();
    let folders: BTreeSet<String> = files
        .iter()
        .filter_map(|f| match f.components().collect::<Vec<_>>().as_slice() {
            [first, name, ..] if first.as_os_str() == "crates" => {
                Some(name.as_os_str().to_string_lossy().into_owned())
            }
            _ => None,
        })
        .collect();
    let included: BTreeSet<PathBuf> = included_markdown(root, files)
        .into_iter()
        .map(|included| included.path)
        .collect();
    let mut findings = Vec::new();
    for file in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "md"))
    {
        let Ok(text) = std::fs::read_to_string(root.join(file)) else {
            continue;
        };
        for block in blocks(&text) {
            if block.is_rust() && !included.contains(file) {
                findings.push(Finding {
                    file: file.clone(),
                    line: block.line,
                    message: "a Rust snippet no doc test compiles: include this file in a \
                              crate's docs (`#![doc = include_str!(…)]`), or mark the block \
                              `ignore`"
                        .into(),
                });
            }
            if block.lang == "toml" {
                findings.extend(wrong_packages(file, &block, &packages, &folders));
            }
        }
    }
    findings.extend(example_collisions(&manifests, files));
    findings
}

/// A fenced code block: its language word, its first line's number, its lines.
struct Block {
    lang: String,
    attrs: Vec<String>,
    line: usize,
    lines: Vec<(usize, String)>,
}

impl Block {
    /// A block rustdoc runs or compiles: `rust` (or no language, as rustdoc reads it), not
    /// `ignore`d.
    fn is_rust(&self) -> bool {
        self.lang == "rust" && !self.attrs.iter().any(|a| a == "ignore")
    }
}

/// The fenced blocks of a Markdown text. A fence with no language is not counted as Rust
/// here (Markdown pages use bare fences for output and trees).
fn blocks(text: &str) -> Vec<Block> {
    let mut found = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            match open.take() {
                Some(block) => found.push(block),
                None => {
                    let mut words = info.split(',').map(|w| w.trim().to_owned());
                    let lang = words.next().unwrap_or_default();
                    open = Some(Block {
                        lang,
                        attrs: words.collect(),
                        line: i + 1,
                        lines: Vec::new(),
                    });
                }
            }
        } else if let Some(block) = &mut open {
            block.lines.push((i + 1, trimmed.to_owned()));
        }
    }
    found
}

/// The dependencies of a TOML snippet that name a package of ours the workspace lacks.
fn wrong_packages(
    file: &Path,
    block: &Block,
    packages: &BTreeSet<String>,
    folders: &BTreeSet<String>,
) -> Vec<Finding> {
    let ours = |name: &str| name.starts_with("lockgate") || folders.contains(name);
    let mut findings = Vec::new();
    let mut in_dependencies = false;
    for (line, text) in &block.lines {
        if let Some(table) = text.strip_prefix('[') {
            let table = table.trim_end_matches(']');
            in_dependencies = table.ends_with("dependencies");
            // `[dependencies.name]`
            if let Some((_, name)) = table.split_once("dependencies.") {
                check_name(file, *line, name, packages, &ours, &mut findings);
            }
            continue;
        }
        if !in_dependencies {
            continue;
        }
        let Some((key, value)) = text.split_once('=') else {
            continue;
        };
        let key = key.trim().trim_matches('"');
        // `alias = { package = "real-name", … }` installs `real-name`.
        let name = value
            .split("package")
            .nth(1)
            .and_then(|rest| rest.split('"').nth(1))
            .unwrap_or(key);
        check_name(file, *line, name, packages, &ours, &mut findings);
    }
    findings
}

fn check_name(
    file: &Path,
    line: usize,
    name: &str,
    packages: &BTreeSet<String>,
    ours: &impl Fn(&str) -> bool,
    findings: &mut Vec<Finding>,
) {
    if ours(name) && !packages.contains(name) {
        let names: Vec<&str> = packages
            .iter()
            .map(String::as_str)
            .filter(|p| p.starts_with("lockgate"))
            .collect();
        findings.push(Finding {
            file: file.to_path_buf(),
            line,
            message: format!(
                "the snippet depends on `{name}`, which is not a package of this workspace \
                 (they are: {})",
                names.join(", ")
            ),
        });
    }
}

/// A manifest's `[package]` name.
fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package && let Some(value) = line.strip_prefix("name") {
            return value
                .trim_start()
                .strip_prefix('=')
                .map(|v| v.trim().trim_matches('"').to_owned());
        }
    }
    None
}

/// Examples of one name in more than one package: each `examples/<name>.rs` or
/// `examples/<name>/main.rs`, and each `[[example]]` `name`.
fn example_collisions(manifests: &[(PathBuf, String)], files: &[PathBuf]) -> Vec<Finding> {
    let mut owners: BTreeMap<String, BTreeSet<PathBuf>> = BTreeMap::new();
    for (manifest, text) in manifests {
        let package = manifest.parent().unwrap_or(Path::new(""));
        let examples = package.join("examples");
        for file in files.iter().filter(|f| f.starts_with(&examples)) {
            let relative = file.strip_prefix(&examples).unwrap_or(file);
            let name = match relative.components().count() {
                1 if file.extension().is_some_and(|e| e == "rs") => file.file_stem(),
                2 if file.file_name().is_some_and(|n| n == "main.rs") => {
                    relative.components().next().map(|c| c.as_os_str())
                }
                _ => None,
            };
            if let Some(name) = name {
                owners
                    .entry(name.to_string_lossy().into_owned())
                    .or_default()
                    .insert(manifest.clone());
            }
        }
        let mut in_example = false;
        for line in text.lines().map(str::trim) {
            if line.starts_with('[') {
                in_example = line == "[[example]]";
            } else if in_example
                && let Some(value) = line.strip_prefix("name")
                && let Some(value) = value.trim_start().strip_prefix('=')
            {
                owners
                    .entry(value.trim().trim_matches('"').to_owned())
                    .or_default()
                    .insert(manifest.clone());
            }
        }
    }
    owners
        .into_iter()
        .filter(|(_, manifests)| manifests.len() > 1)
        .map(|(name, manifests)| {
            let all: Vec<String> = manifests.iter().map(|m| m.display().to_string()).collect();
            Finding {
                file: manifests.first().cloned().unwrap_or_default(),
                line: 1,
                message: format!(
                    "the example `{name}` is in more than one package ({}): cargo builds every \
                     example into one folder, so give each a name of its own",
                    all.join(", ")
                ),
            }
        })
        .collect()
}
