//! The gate step `tidy`: the repository's text agrees with its files.
//!
//! Five checks, each failure named by file and line:
//! - [`paths`]: every repository path the Markdown files and the Rust doc comments mention
//!   exists, and a `:N` or `:N-M` line suffix is within the file;
//! - [`modules`]: every `.rs` file of a package is reached by `mod` declarations from a
//!   target root, so no file is silently left out of the build;
//! - [`stamps`]: a doc section stamped with the hash of the file it describes still matches
//!   that file (`cargo xtask tidy --restamp` rewrites the stamps after a re-read);
//! - [`snippets`]: every Rust snippet of the Markdown files is compiled as a doc test, every
//!   TOML snippet names packages the workspace has, and no two packages share an example
//!   name;
//! - rustdoc with `-D warnings`, which fails on a broken intra-doc link (and on every other
//!   rustdoc warning). This is the gate's only `cargo doc` run.
//!
//! `cargo xtask tidy` runs this step alone ([`main`]).

mod modules;
mod paths;
mod snippets;
mod stamps;

#[cfg(test)]
mod tests;

use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use super::{Outcome, in_root};
use crate::flags::{GateOptions, TidyOptions};
use crate::util::{self, cargo};

/// One thing the checks found wrong: where, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    /// Relative to the repository root.
    pub(crate) file: PathBuf,
    /// 1-based.
    pub(crate) line: usize,
    pub(crate) message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file.display(), self.line, self.message)
    }
}

/// `cargo xtask tidy`: the gate's `tidy` step alone; with `--restamp`, rewrites every stale
/// stamp to its file's current hash instead, and prints each one it rewrote.
pub(crate) fn main(root: &Path, options: &TidyOptions) -> ExitCode {
    if !options.restamp {
        let only = GateOptions {
            only: vec!["tidy".into()],
            ..GateOptions::default()
        };
        return super::run(root, &only);
    }
    match stamps::restamp(root, &files(root)) {
        Ok(done) => {
            for restamped in &done {
                println!("restamped {restamped}");
            }
            println!("{} stamp(s) restamped; the others are current", done.len());
            ExitCode::SUCCESS
        }
        Err(findings) => {
            for finding in &findings {
                println!("{finding}");
            }
            println!("nothing restamped: fix the stamps above first");
            ExitCode::FAILURE
        }
    }
}

/// Runs the text checks, then rustdoc; fails if either found something.
pub(crate) fn run(root: &Path) -> Outcome {
    let findings = check(root);
    for finding in &findings {
        println!("{finding}");
    }
    let doc = rustdoc(root);
    match (findings.len(), doc) {
        (0, Ok(())) => Outcome::Passed,
        (0, Err(why)) => Outcome::Failed(why),
        (n, doc) => {
            let also = doc
                .err()
                .map_or_else(String::new, |why| format!("; and {why}"));
            Outcome::Failed(format!(
                "{n} finding(s) (stale paths, unreached files, stale stamps, snippets), listed \
                 above{also}"
            ))
        }
    }
}

/// The path, module and stamp checks, without rustdoc.
pub(crate) fn check(root: &Path) -> Vec<Finding> {
    let files = files(root);
    let mut findings = paths::check(root, &files);
    findings.extend(modules::check(root, &files));
    findings.extend(stamps::check(root, &files));
    findings.extend(snippets::check(root, &files));
    findings
}

/// Builds the docs with warnings denied: a broken intra-doc link fails here.
pub(crate) fn rustdoc(root: &Path) -> Result<(), String> {
    util::run(
        in_root(cargo(), root)
            .env("RUSTDOCFLAGS", "-D warnings")
            .args(["doc", "--workspace", "--no-deps", "--all-features"]),
    )
}

/// Every file under `root`, relative to it and sorted, leaving out build output (`target`)
/// and hidden folders (`.git`, `.cargo`).
pub(crate) fn files(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![PathBuf::new()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&dir)) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let path = dir.join(&*name);
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => {
                    if name != "target" && !name.starts_with('.') {
                        dirs.push(path);
                    }
                }
                Ok(_) => found.push(path),
                Err(_) => {}
            }
        }
    }
    found.sort();
    found
}

/// A Markdown file a `.rs` file includes with `include_str!`, and whether only doc tests
/// see it (`#![cfg_attr(doctest, doc = include_str!(…))]`: compiled, never published).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Included {
    pub(crate) path: PathBuf,
    pub(crate) doctest_only: bool,
}

/// The Markdown files the `.rs` files include (`include_str!("…md")`), resolved from each
/// including file's folder.
pub(crate) fn included_markdown(root: &Path, files: &[PathBuf]) -> Vec<Included> {
    let mut included = Vec::new();
    for file in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "rs"))
    {
        let Ok(text) = std::fs::read_to_string(root.join(file)) else {
            continue;
        };
        let dir = file.parent().unwrap_or(Path::new(""));
        for line in text.lines() {
            for piece in line.split("include_str!(\"").skip(1) {
                if let Some(name) = piece.split('"').next()
                    && name.ends_with(".md")
                    && let Some(path) = normalize(&dir.join(name))
                {
                    let doctest_only = line.contains("cfg_attr(doctest");
                    included.push(Included { path, doctest_only });
                }
            }
        }
    }
    included
}

/// `path` with `.` and `..` resolved lexically; `None` if it climbs above its start.
pub(crate) fn normalize(path: &Path) -> Option<PathBuf> {
    let mut parts: Vec<Component<'_>> = Vec::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    Some(parts.iter().collect())
}
