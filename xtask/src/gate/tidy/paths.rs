//! Check (a): every repository path that the Markdown files and the Rust doc comments mention
//! exists, and a `:N` or `:N-M` line suffix is within the file.
//!
//! What counts as a mention:
//! - in Markdown and in `///` / `//!` lines, a word starting with one of [`ROOTS`]
//!   (`crates/batch/src/lib.rs`, `docs/gate.md:12-20`), read from the repository root;
//! - in Markdown only, the target of a relative link (`[notes](../docs/batch.md#leases)`),
//!   read from the Markdown file's folder as GitHub does. Links in doc comments, and
//!   Markdown links to a Rust item (`[Runner](Runner)`, in a README included as the crate
//!   docs), are left to rustdoc.
//!
//! A Markdown file that a `.rs` file includes into its docs (`include_str!`, as a crate README
//! is) may hold no relative link at all: GitHub reads it from the file's folder, rustdoc from
//! the page's URL, so at least one of them is broken.
//!
//! A word that continues into a pattern (`crates/*/README.md`, `src/**/loom_*.rs`,
//! `crates/<name>`) names no single file and is skipped up to the pattern.

use std::path::{Path, PathBuf};

use super::stamps::is_stamp_line;
use super::{Finding, included_markdown, normalize};

/// Where a path in prose must start to be read as a path into this repository.
pub(crate) const ROOTS: &[&str] = &["crates/", "docs/", "xtask/", "bench/"];

/// A path as written, and the line range after it, if any.
#[derive(Debug, PartialEq, Eq)]
struct Mention {
    /// Relative to the repository root, normalized.
    path: Option<PathBuf>,
    written: String,
    lines: Option<(usize, usize)>,
}

/// Checks the mentions of every Markdown and Rust file in `files`.
pub(crate) fn check(root: &Path, files: &[PathBuf]) -> Vec<Finding> {
    // Crate docs only: a file only doc tests include is never rendered by rustdoc.
    let included: Vec<PathBuf> = included_markdown(root, files)
        .into_iter()
        .filter(|included| !included.doctest_only)
        .map(|included| included.path)
        .collect();
    let mut findings = Vec::new();
    for file in files {
        let markdown = match file.extension().and_then(|e| e.to_str()) {
            Some("md") => true,
            Some("rs") => false,
            _ => continue,
        };
        let Ok(text) = std::fs::read_to_string(root.join(file)) else {
            continue;
        };
        let dir = file.parent().unwrap_or(Path::new(""));
        for (index, line) in text.lines().enumerate() {
            if is_stamp_line(line) {
                // The stamp check reads these, and names a missing file itself.
                continue;
            }
            let mut mentions = Vec::new();
            if markdown {
                mentions.extend(root_mentions(line));
                let links = link_mentions(line, dir);
                if included.contains(file) {
                    // The page is also rustdoc's, where a relative link resolves against the
                    // page's URL, not the file's folder.
                    for link in &links {
                        findings.push(Finding {
                            file: file.clone(),
                            line: index + 1,
                            message: format!(
                                "`{}`: a relative link in Markdown that rustdoc includes points \
                                 elsewhere on docs.rs; link an item or a full URL",
                                link.written
                            ),
                        });
                    }
                }
                mentions.extend(links);
            } else if is_doc_comment(line) {
                mentions.extend(root_mentions(line));
            }
            for mention in mentions {
                if let Some(message) = problem(root, &mention) {
                    findings.push(Finding {
                        file: file.clone(),
                        line: index + 1,
                        message,
                    });
                }
            }
        }
    }
    findings
}

fn is_doc_comment(line: &str) -> bool {
    let line = line.trim_start();
    line.starts_with("///") || line.starts_with("//!")
}

/// What is wrong with one mention, if anything.
fn problem(root: &Path, mention: &Mention) -> Option<String> {
    let written = &mention.written;
    let Some(path) = &mention.path else {
        return Some(format!("`{written}` points outside the repository"));
    };
    let full = root.join(path);
    if !full.exists() {
        return Some(format!("`{written}`: no such file or folder"));
    }
    let (first, last) = mention.lines?;
    let Ok(text) = std::fs::read_to_string(&full) else {
        return Some(format!(
            "`{written}`: a line number on something that is not a text file"
        ));
    };
    let count = text.lines().count();
    if first == 0 || first > last || last > count {
        return Some(format!("`{written}`: the file has {count} lines"));
    }
    None
}

fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')
}

/// Words starting with one of [`ROOTS`] at a word boundary.
fn root_mentions(line: &str) -> Vec<Mention> {
    let mut mentions = Vec::new();
    for (start, _) in line.char_indices() {
        let before = line[..start].chars().next_back();
        if before.is_some_and(is_path_char) || !ROOTS.iter().any(|r| line[start..].starts_with(r)) {
            continue;
        }
        let rest = &line[start..];
        let len = rest.find(|c| !is_path_char(c)).unwrap_or(rest.len());
        let after = rest[len..].chars().next();
        // A sentence may end right after a path.
        let mut word = rest[..len].trim_end_matches('.');
        if matches!(after, Some('*' | '<' | '{' | '$')) {
            // A pattern: only the folder before it is a real path.
            word = &word[..word.rfind('/').map_or(0, |i| i + 1)];
        }
        let (lines, suffix) = if word.len() == len {
            line_range(&rest[len..])
        } else {
            (None, "")
        };
        mentions.push(Mention {
            path: normalize(Path::new(word)),
            written: format!("{word}{suffix}"),
            lines,
        });
    }
    mentions
}

/// A `:N` or `:N-M` suffix at the start of `rest`, and the text it took.
fn line_range(rest: &str) -> (Option<(usize, usize)>, &str) {
    let Some(digits) = rest.strip_prefix(':') else {
        return (None, "");
    };
    let number = |s: &str| {
        let len = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        s[..len].parse::<usize>().ok().map(|n| (n, len))
    };
    let Some((first, len)) = number(digits) else {
        return (None, "");
    };
    let mut taken = 1 + len;
    let mut last = first;
    if let Some(tail) = digits[len..].strip_prefix('-')
        && let Some((end, end_len)) = number(tail)
    {
        last = end;
        taken += 1 + end_len;
    }
    (Some((first, last)), &rest[..taken])
}

/// Whether a link target reads as a Rust item (`Runner`, `Vec<T>`, `store::MemoryStore`):
/// a crate README included as the crate docs links items that way, and rustdoc checks those.
fn is_item_path(target: &str) -> bool {
    target
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '<' | '>' | ',' | '!'))
}

/// Targets of relative Markdown links (`[text](target)` and `[label]: target`), resolved
/// from `dir`, the linking file's folder.
fn link_mentions(line: &str, dir: &Path) -> Vec<Mention> {
    let mut targets: Vec<&str> = Vec::new();
    let mut rest = line;
    while let Some(open) = rest.find("](") {
        let tail = &rest[open + 2..];
        let end = tail.find([')', ' ']).unwrap_or(tail.len());
        targets.push(tail[..end].trim_matches(['<', '>']));
        rest = &tail[end..];
    }
    let trimmed = line.trim_start();
    if trimmed.starts_with('[')
        && let Some(close) = trimmed.find("]: ")
    {
        targets.extend(trimmed[close + 3..].split_whitespace().next());
    }
    targets
        .into_iter()
        .filter(|t| !t.is_empty() && !t.starts_with('#') && !t.contains(':'))
        .filter(|t| !is_item_path(t))
        .map(|target| {
            let file = target.split('#').next().unwrap_or(target);
            let path = match file.strip_prefix('/') {
                Some(from_root) => normalize(Path::new(from_root)),
                None => normalize(&dir.join(file)),
            };
            Mention {
                path,
                written: target.to_string(),
                lines: None,
            }
        })
        .collect()
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn root_mentions_take_the_path_and_its_line_range() {
        let found =
            root_mentions("see `crates/a/src/lib.rs:3-5`, docs/b.md. and crates/*/README.md");
        let written: Vec<&str> = found.iter().map(|m| m.written.as_str()).collect();
        assert_eq!(written, ["crates/a/src/lib.rs:3-5", "docs/b.md", "crates/"]);
        assert_eq!(found[0].lines, Some((3, 5)));
        assert!(root_mentions("../crates/a and mycrates/b and https://x/docs/y").is_empty());
    }

    #[test]
    fn links_resolve_from_the_linking_file_and_skip_urls_and_anchors() {
        let found = link_mentions(
            "[a](../crates/x.md#top) [b](https://e.org) [c](#here) [d](y.md \"t\") [`R`](R)",
            Path::new("docs"),
        );
        let paths: Vec<_> = found.iter().map(|m| m.path.clone().unwrap()).collect();
        assert_eq!(
            paths,
            [PathBuf::from("crates/x.md"), PathBuf::from("docs/y.md")]
        );
        assert_eq!(
            link_mentions("[a](../../out.md)", Path::new("docs"))[0].path,
            None
        );
    }
}
