//! Check (b): every `.rs` file of a package is reached by `mod` declarations from one of its
//! target roots, so no file sits in the tree that the compiler never reads.
//!
//! Roots follow Cargo's auto-discovery: `src/lib.rs`, `src/main.rs`, `build.rs`,
//! `src/bin/*.rs` and `src/bin/*/main.rs`; in `tests/`, `benches/` and `examples/`, each
//! top-level `*.rs` and each `*/main.rs`; and any `path = "…"` of a target table in the
//! manifest. The declarations are read as text, ignoring `cfg`, so a module compiled only
//! under loom or a feature counts; `#[path = "…"]` and inline `mod name { … }` blocks are
//! followed as rustc does.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use super::{Finding, normalize};

/// Folders of a package whose `.rs` files must all be reached.
const TARGET_DIRS: &[&str] = &["src", "tests", "benches", "examples"];

/// Checks every package (a folder whose `Cargo.toml` has a `[package]` table) in `files`.
pub(crate) fn check(root: &Path, files: &[PathBuf]) -> Vec<Finding> {
    let packages: Vec<&Path> = files
        .iter()
        .filter(|f| f.file_name().is_some_and(|n| n == "Cargo.toml"))
        .filter(|f| {
            std::fs::read_to_string(root.join(f))
                .is_ok_and(|text| text.lines().any(|l| l.trim() == "[package]"))
        })
        .map(|f| f.parent().unwrap_or(Path::new("")))
        .collect();
    let mut findings = Vec::new();
    for package in &packages {
        // A file belongs to the innermost package holding it.
        let owner = |file: &Path| {
            packages
                .iter()
                .filter(|p| file.starts_with(p))
                .max_by_key(|p| p.components().count())
                .is_some_and(|p| p == package)
        };
        let sources: BTreeSet<&PathBuf> = files
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == "rs") && owner(f))
            .filter(|f| {
                TARGET_DIRS
                    .iter()
                    .any(|dir| f.starts_with(package.join(dir)))
            })
            .collect();
        let roots = roots(root, package, &sources);
        let (reached, missing) = reach(root, roots);
        findings.extend(missing);
        for file in sources {
            if !reached.contains(file) {
                findings.push(Finding {
                    file: file.clone(),
                    line: 1,
                    message: format!(
                        "no `mod` declaration reaches `{}` from a target root of `{}`",
                        file.display(),
                        package.join("Cargo.toml").display()
                    ),
                });
            }
        }
    }
    findings
}

/// The package's target roots: Cargo's auto-discovered ones and its manifest's `path`s.
fn roots(root: &Path, package: &Path, sources: &BTreeSet<&PathBuf>) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = sources
        .iter()
        .filter(|file| {
            let Ok(inner) = file.strip_prefix(package) else {
                return false;
            };
            let parts: Vec<&str> = inner.iter().filter_map(|p| p.to_str()).collect();
            matches!(
                parts.as_slice(),
                ["src", "lib.rs" | "main.rs"]
                    | ["src", "bin", _]
                    | ["src", "bin", _, "main.rs"]
                    | ["tests" | "benches" | "examples", _]
                    | ["tests" | "benches" | "examples", _, "main.rs"]
            )
        })
        .map(|file| (*file).clone())
        .collect();
    let build = package.join("build.rs");
    if root.join(&build).is_file() {
        roots.push(build);
    }
    let manifest =
        std::fs::read_to_string(root.join(package).join("Cargo.toml")).unwrap_or_default();
    let mut in_target = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_target = matches!(
                line,
                "[lib]" | "[[bin]]" | "[[test]]" | "[[bench]]" | "[[example]]"
            );
        } else if in_target
            && let Some((key, value)) = line.split_once('=')
            && key.trim() == "path"
            && let Some(path) = normalize(&package.join(value.trim().trim_matches('"')))
        {
            roots.push(path);
        }
    }
    roots
}

/// Follows `mod` declarations from `roots`: every file reached, and a finding for each
/// declaration whose file does not exist.
///
/// A file reached two ways (as `gate.rs` beside `mod.rs`, and through a `#[path]` that makes
/// it own its folder) is read in both, and a declaration counts as missing only if it finds
/// its file in neither: the other way is usually behind a `cfg` this check does not read.
fn reach(root: &Path, roots: Vec<PathBuf>) -> (BTreeSet<PathBuf>, Vec<Finding>) {
    let mut visited: BTreeSet<(PathBuf, bool)> = BTreeSet::new();
    let mut found: BTreeSet<(PathBuf, usize)> = BTreeSet::new();
    let mut missing: BTreeMap<(PathBuf, usize), Finding> = BTreeMap::new();
    // A root, `mod.rs` or a `#[path]` file owns its folder: its modules sit beside it.
    let mut queue: VecDeque<(PathBuf, bool)> = roots.into_iter().map(|r| (r, true)).collect();
    while let Some((file, owns_dir)) = queue.pop_front() {
        if !visited.insert((file.clone(), owns_dir)) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(root.join(&file)) else {
            continue;
        };
        let here = file.parent().unwrap_or(Path::new("")).to_path_buf();
        let base = if owns_dir || file.file_name().is_some_and(|n| n == "mod.rs") {
            here.clone()
        } else {
            here.join(file.file_stem().unwrap_or_default())
        };
        for decl in declarations(&text) {
            let nested: PathBuf = decl.inline.iter().collect();
            let candidates: Vec<(PathBuf, bool)> = match &decl.path {
                Some(path) if decl.inline.is_empty() => vec![(here.join(path), true)],
                Some(path) => vec![(base.join(&nested).join(path), true)],
                None => {
                    let dir = base.join(&nested);
                    vec![
                        (dir.join(format!("{}.rs", decl.name)), false),
                        (dir.join(&decl.name).join("mod.rs"), true),
                    ]
                }
            };
            let next = candidates.iter().find_map(|(path, owns)| {
                let path = normalize(path)?;
                root.join(&path).is_file().then_some((path, *owns))
            });
            let at = (file.clone(), decl.line);
            match next {
                Some(next) => {
                    queue.push_back(next);
                    found.insert(at);
                }
                None => {
                    missing.entry(at).or_insert_with(|| Finding {
                        file: file.clone(),
                        line: decl.line,
                        message: format!(
                            "`mod {}` names a file that does not exist: `{}`",
                            decl.name,
                            candidates[0].0.display()
                        ),
                    });
                }
            }
        }
    }
    let reached = visited.into_iter().map(|(file, _)| file).collect();
    let missing = missing
        .into_iter()
        .filter(|(at, _)| !found.contains(at))
        .map(|(_, finding)| finding)
        .collect();
    (reached, missing)
}

/// One `mod name;` as written.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Declaration {
    pub(crate) name: String,
    /// The `#[path = "…"]` on it, if any.
    pub(crate) path: Option<String>,
    /// The inline modules (`mod a { … }`) it sits in, outermost first.
    pub(crate) inline: Vec<String>,
    pub(crate) line: usize,
}

/// Every out-of-line `mod` declaration in `source`, `cfg` ignored.
pub(crate) fn declarations(source: &str) -> Vec<Declaration> {
    let tokens = tokens(source);
    let mut found = Vec::new();
    // One entry per open brace: the inline module it opened, if any.
    let mut braces: Vec<Option<String>> = Vec::new();
    let mut path_attr: Option<String> = None;
    let mut i = 0;
    while i < tokens.len() {
        let (line, token) = &tokens[i];
        match token {
            Token::Punct('#') => {
                let open = i
                    + 1
                    + usize::from(tokens.get(i + 1).map(|t| &t.1) == Some(&Token::Punct('!')));
                if tokens.get(open).map(|t| &t.1) == Some(&Token::Punct('[')) {
                    let close = matching(&tokens, open, '[', ']');
                    if let [
                        (_, Token::Ident(key)),
                        (_, Token::Punct('=')),
                        (_, Token::Str(value)),
                        ..,
                    ] = &tokens[open + 1..close]
                        && key == "path"
                    {
                        path_attr = Some(value.clone());
                    }
                    i = close + 1;
                    continue;
                }
            }
            Token::Ident(word) if word == "mod" => {
                if let Some((_, Token::Ident(name))) = tokens.get(i + 1) {
                    match tokens.get(i + 2).map(|t| &t.1) {
                        Some(Token::Punct(';')) => {
                            found.push(Declaration {
                                name: name.clone(),
                                path: path_attr.take(),
                                inline: braces.iter().flatten().cloned().collect(),
                                line: *line,
                            });
                            i += 3;
                            continue;
                        }
                        Some(Token::Punct('{')) => {
                            braces.push(Some(name.clone()));
                            path_attr = None;
                            i += 3;
                            continue;
                        }
                        _ => {}
                    }
                }
            }
            Token::Punct('{') => {
                braces.push(None);
                path_attr = None;
            }
            Token::Punct('}') => {
                braces.pop();
            }
            Token::Punct(';') => path_attr = None,
            _ => {}
        }
        i += 1;
    }
    found
}

/// The index of the token closing the bracket opened at `open` (or the last token).
fn matching(tokens: &[(usize, Token)], open: usize, left: char, right: char) -> usize {
    let mut depth = 0usize;
    for (index, (_, token)) in tokens.iter().enumerate().skip(open) {
        if *token == Token::Punct(left) {
            depth += 1;
        } else if *token == Token::Punct(right) {
            depth -= 1;
            if depth == 0 {
                return index;
            }
        }
    }
    tokens.len().saturating_sub(1)
}

#[derive(Debug, PartialEq, Eq)]
enum Token {
    Ident(String),
    Str(String),
    Punct(char),
}

/// Rust source as identifiers, string literals and punctuation, each with its line. Comments,
/// numbers, char literals and lifetimes are dropped, so braces inside them are not counted.
fn tokens(source: &str) -> Vec<(usize, Token)> {
    let chars: Vec<char> = source.chars().collect();
    let mut tokens = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(chars[i] == '\n');
                    i += 1;
                }
            }
        } else if c == '"' {
            let start_line = line;
            let mut value = String::new();
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    value.push(chars[i]);
                    i += 1;
                }
                line += usize::from(at(i) == '\n');
                value.push(at(i));
                i += 1;
            }
            i += 1;
            tokens.push((start_line, Token::Str(value)));
        } else if c == '\'' {
            if at(i + 1) == '\\' {
                // An escaped char literal: skip to its closing quote.
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                // A lifetime or label: its name follows as an identifier.
                i += 1;
            }
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let raw_prefix = matches!(word.as_str(), "r" | "br" | "cr");
            let hashes = chars[i..].iter().take_while(|&&h| h == '#').count();
            if raw_prefix && at(i + hashes) == '"' {
                // A raw string: ends at a quote followed by as many hashes.
                let start_line = line;
                i += hashes + 1;
                let body = i;
                while i < chars.len()
                    && !(chars[i] == '"'
                        && chars[i + 1..]
                            .iter()
                            .take(hashes)
                            .filter(|&&h| h == '#')
                            .count()
                            == hashes)
                {
                    line += usize::from(chars[i] == '\n');
                    i += 1;
                }
                let value: String = chars[body..i.min(chars.len())].iter().collect();
                i += 1 + hashes;
                tokens.push((start_line, Token::Str(value)));
            } else if matches!(word.as_str(), "b" | "c") && at(i) == '"' {
                // A byte or C string: the quote starts it on the next turn.
            } else if word == "r" && hashes == 1 {
                // A raw identifier (`r#type`).
                i += 1;
            } else {
                tokens.push((line, Token::Ident(word)));
            }
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
        } else {
            tokens.push((line, Token::Punct(c)));
            i += 1;
        }
    }
    tokens
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn declarations_are_found_whatever_their_cfg_and_strings_and_comments_around_them() {
        let source = r##"
//! mod not_this;
#[cfg(all(test, loom))]
mod loom_only;
pub(crate) mod shown;
#[path = "elsewhere/impl.rs"]
mod moved;
const BRACE: char = '{';
const TEXT: &str = "mod nope; {";
const RAW: &str = r#"}"#;
fn f<'a>(x: &'a str) -> &'a str { x }
mod outer {
    mod nested;
    /* } */
}
mod after;
"##;
        let found = declarations(source);
        let names: Vec<(&str, Option<&str>, Vec<String>, usize)> = found
            .iter()
            .map(|d| (d.name.as_str(), d.path.as_deref(), d.inline.clone(), d.line))
            .collect();
        assert_eq!(
            names,
            [
                ("loom_only", None, vec![], 4),
                ("shown", None, vec![], 5),
                ("moved", Some("elsewhere/impl.rs"), vec![], 7),
                ("nested", None, vec!["outer".to_string()], 13),
                ("after", None, vec![], 16),
            ]
        );
    }
}
