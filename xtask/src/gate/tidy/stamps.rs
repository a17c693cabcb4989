//! Check (c): a doc section that describes a file carries a stamp of that file's contents, so
//! the file cannot change without the section being re-read (rust-analyzer's tidy does this
//! for its LSP extensions doc).
//!
//! A stamp is a line of its own holding an HTML comment, `<!-- stamp: PATH HASH -->`, in
//! Markdown or after `//!` in a module doc block; Markdown and rustdoc both hide it. `PATH` is
//! the described file from the repository root, `HASH` the [`hash`] of its contents. A stamp
//! written without a hash is stale until `cargo xtask tidy --restamp` fills it in. Stamps
//! inside a fenced code block are examples, not stamps.
//!
//! The check fails, naming the doc's file, line and section (the heading above the stamp)
//! and the described file, when the hash no longer matches or the file does not exist.
//! `--restamp` ([`restamp`]) rewrites every stamp to the current hash, to be run once a human
//! has re-read the section against the file.

use std::path::{Path, PathBuf};

use super::{Finding, normalize};

/// How a stamp comment opens and closes.
const OPEN: &str = "<!-- stamp:";
const CLOSE: &str = "-->";

/// One stamp as written, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stamp {
    /// The doc holding the stamp, relative to the repository root.
    pub(crate) doc: PathBuf,
    /// 1-based.
    pub(crate) line: usize,
    /// The heading the stamp sits under (or, before any heading, the doc's first line).
    pub(crate) section: String,
    /// The described file as written.
    pub(crate) described: String,
    /// The hash as written (empty when the stamp has none yet).
    pub(crate) hash: String,
}

/// What a stamp is worth now.
#[derive(Debug, PartialEq, Eq)]
enum State {
    Current,
    /// The described file's hash now.
    Stale(String),
    /// Why the described file cannot be hashed.
    Broken(String),
}

/// One stamp rewritten by [`restamp`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Restamped {
    pub(crate) stamp: Stamp,
    pub(crate) new_hash: String,
}

impl std::fmt::Display for Restamped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = &self.stamp;
        let old = if s.hash.is_empty() { "(none)" } else { &s.hash };
        write!(
            f,
            "{}:{}: section `{}`: `{}` {old} -> {}",
            s.doc.display(),
            s.line,
            s.section,
            s.described,
            self.new_hash
        )
    }
}

/// The stamps whose described file changed or is missing, as findings.
pub(crate) fn check(root: &Path, files: &[PathBuf]) -> Vec<Finding> {
    let mut findings = Vec::new();
    for stamp in stamps(root, files) {
        let message = match state(root, &stamp) {
            State::Current => continue,
            State::Stale(now) => format!(
                "section `{}` is stamped against `{}`, which changed (hash {}, stamp {}): \
                 re-read the section against the file, then run `cargo xtask tidy --restamp`",
                stamp.section,
                stamp.described,
                now,
                if stamp.hash.is_empty() {
                    "(none)"
                } else {
                    &stamp.hash
                },
            ),
            State::Broken(why) => format!(
                "section `{}` is stamped against `{}`: {why}",
                stamp.section, stamp.described
            ),
        };
        findings.push(Finding {
            file: stamp.doc,
            line: stamp.line,
            message,
        });
    }
    findings
}

/// Rewrites every stale stamp to its file's current hash. Returns what it rewrote, or the
/// stamps it could not rewrite (their described file is missing) as findings; in that case
/// nothing is written.
pub(crate) fn restamp(root: &Path, files: &[PathBuf]) -> Result<Vec<Restamped>, Vec<Finding>> {
    let mut done = Vec::new();
    let mut broken = Vec::new();
    for stamp in stamps(root, files) {
        match state(root, &stamp) {
            State::Current => {}
            State::Stale(new_hash) => done.push(Restamped { stamp, new_hash }),
            State::Broken(why) => broken.push(Finding {
                message: format!(
                    "section `{}` is stamped against `{}`: {why}; cannot restamp",
                    stamp.section, stamp.described
                ),
                file: stamp.doc,
                line: stamp.line,
            }),
        }
    }
    if !broken.is_empty() {
        return Err(broken);
    }
    let mut docs: Vec<&PathBuf> = done.iter().map(|r| &r.stamp.doc).collect();
    docs.dedup();
    for doc in docs {
        let path = root.join(doc);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let mut out = String::with_capacity(text.len());
        for (index, line) in text.split_inclusive('\n').enumerate() {
            let redo = done
                .iter()
                .find(|r| &r.stamp.doc == doc && r.stamp.line == index + 1);
            match (redo, line.find(OPEN)) {
                (Some(redo), Some(at)) => {
                    let ending = &line[line.trim_end_matches(['\r', '\n']).len()..];
                    out.push_str(&line[..at]);
                    out.push_str(&format!(
                        "{OPEN} {} {} {CLOSE}{ending}",
                        redo.stamp.described, redo.new_hash
                    ));
                }
                _ => out.push_str(line),
            }
        }
        if let Err(err) = std::fs::write(&path, out) {
            return Err(vec![Finding {
                file: doc.clone(),
                line: 1,
                message: format!("cannot rewrite: {err}"),
            }]);
        }
    }
    Ok(done)
}

/// Every stamp in the Markdown files and `//!` blocks of `files`, in file and line order.
/// A malformed stamp (a path and a hash, no more) is reported as described file "".
pub(crate) fn stamps(root: &Path, files: &[PathBuf]) -> Vec<Stamp> {
    let mut found = Vec::new();
    for file in files {
        let markdown = match file.extension().and_then(|e| e.to_str()) {
            Some("md") => true,
            Some("rs") => false,
            _ => continue,
        };
        let Ok(text) = std::fs::read_to_string(root.join(file)) else {
            continue;
        };
        let mut fenced = false;
        let mut first_line: Option<String> = None;
        let mut heading: Option<String> = None;
        for (index, line) in text.lines().enumerate() {
            let content = if markdown {
                line
            } else {
                match line.trim_start().strip_prefix("//!") {
                    Some(rest) => rest.strip_prefix(' ').unwrap_or(rest),
                    None => continue,
                }
            };
            let trimmed = content.trim();
            if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
                fenced = !fenced;
                continue;
            }
            if fenced || trimmed.is_empty() {
                continue;
            }
            if let Some(words) = stamp_words(content) {
                let section = heading
                    .clone()
                    .or_else(|| first_line.clone())
                    .unwrap_or_else(|| "(top)".into());
                let mut words = words.split_whitespace();
                let (described, hash, extra) = (words.next(), words.next(), words.next());
                found.push(Stamp {
                    doc: file.clone(),
                    line: index + 1,
                    section,
                    described: if extra.is_some() {
                        String::new()
                    } else {
                        described.unwrap_or_default().to_string()
                    },
                    hash: hash.unwrap_or_default().to_string(),
                });
                continue;
            }
            if let Some(title) = heading_text(trimmed) {
                heading = Some(title.to_string());
            }
            first_line.get_or_insert_with(|| short(trimmed));
        }
    }
    found
}

/// Whether the described file still has the stamped hash.
fn state(root: &Path, stamp: &Stamp) -> State {
    if stamp.described.is_empty() {
        return State::Broken(format!(
            "a stamp is `{OPEN} PATH HASH {CLOSE}`, one path and one hash"
        ));
    }
    let Some(path) = normalize(Path::new(&stamp.described)) else {
        return State::Broken("the path points outside the repository".into());
    };
    match std::fs::read(root.join(path)) {
        Ok(bytes) => {
            let now = hash(&bytes);
            if now == stamp.hash {
                State::Current
            } else {
                State::Stale(now)
            }
        }
        Err(_) => State::Broken("no such file".into()),
    }
}

/// The words inside a stamp comment, if `line` (Markdown, or a `//!` line's text) is one.
fn stamp_words(line: &str) -> Option<&str> {
    line.trim()
        .strip_prefix(OPEN)?
        .strip_suffix(CLOSE)
        .map(str::trim)
}

/// Whether a line of any file is a stamp line, in Markdown or in a `//!` block (so the other
/// checks and [`hash`] leave it alone).
pub(crate) fn is_stamp_line(line: &str) -> bool {
    let line = line.trim();
    let line = line.strip_prefix("//!").unwrap_or(line);
    stamp_words(line).is_some()
}

/// A Markdown heading's text (`## Grow` is `Grow`).
fn heading_text(line: &str) -> Option<&str> {
    let rest = line.trim_start_matches('#');
    let level = line.len() - rest.len();
    ((1..=6).contains(&level) && rest.starts_with(' ')).then(|| rest.trim())
}

/// A line cut to a readable length, for a section without a heading.
fn short(line: &str) -> String {
    const MAX: usize = 60;
    match line.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

/// A file's stamp: FNV-1a 64 over its bytes, with `\r\n` read as `\n` and stamp lines left
/// out (so a stamp may sit in the file it describes, and restamping one file never stales
/// another), as 16 hex digits.
pub(crate) fn hash(bytes: &[u8]) -> String {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut state = OFFSET;
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        if std::str::from_utf8(line).is_ok_and(is_stamp_line) {
            continue;
        }
        let (body, newline) = match line.strip_suffix(b"\n") {
            Some(body) => (body.strip_suffix(b"\r").unwrap_or(body), &b"\n"[..]),
            None => (line, &b""[..]),
        };
        for &byte in body.iter().chain(newline) {
            state ^= u64::from(byte);
            state = state.wrapping_mul(PRIME);
        }
    }
    format!("{state:016x}")
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn the_hash_is_fnv1a_and_ignores_line_endings_and_stamp_lines() {
        // FNV-1a 64's published values.
        assert_eq!(hash(b""), "cbf29ce484222325");
        assert_eq!(hash(b"a"), "af63dc4c8601ec8c");
        assert_eq!(hash(b"x\r\ny\n"), hash(b"x\ny\n"));
        assert_ne!(hash(b"x\ny\n"), hash(b"x\ny"));
        let stamped = "//! Doc.\n//! <!-- stamp: crates/a/src/lib.rs 0123 -->\nfn f() {}\n";
        assert_eq!(hash(stamped.as_bytes()), hash(b"//! Doc.\nfn f() {}\n"));
    }

    #[test]
    fn stamp_lines_and_headings_are_read_as_written() {
        assert_eq!(
            stamp_words("  <!-- stamp: crates/a/b.rs 00ff -->"),
            Some("crates/a/b.rs 00ff")
        );
        assert!(is_stamp_line("//! <!-- stamp: crates/a/b.rs -->"));
        assert!(!is_stamp_line(
            "see `<!-- stamp: crates/a/b.rs 00ff -->` above"
        ));
        assert_eq!(heading_text("## Grow (a submit)"), Some("Grow (a submit)"));
        assert_eq!(heading_text("#[cfg(test)]"), None);
    }
}
