//! Each check on throwaway trees: it fails on a bad input, naming the file and line, and
//! passes on the fixed one.

use super::*;

/// A throwaway folder of files, removed on drop.
struct Tree(PathBuf);

impl Tree {
    fn new(tag: &str, files: &[(&str, &str)]) -> Self {
        let dir = std::env::temp_dir().join(format!("xtask-tidy-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, text) in files {
            let path = dir.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        Self(dir)
    }

    /// The findings, as `file:line: message` lines.
    fn findings(&self) -> Vec<String> {
        check(&self.0).iter().map(ToString::to_string).collect()
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const MANIFEST: &str = "[package]\nname = \"a\"\nversion = \"0.0.0\"\nedition = \"2024\"\n";

/// A crate `a` in the `crates` folder, its library three lines long, plus `files`.
fn crate_with(tag: &str, files: &[(&str, &str)]) -> Tree {
    let mut all = vec![
        ("crates/a/Cargo.toml", MANIFEST),
        ("crates/a/src/lib.rs", "//! A.\n\npub fn f() {}\n"),
    ];
    all.extend_from_slice(files);
    Tree::new(tag, &all)
}

#[test]
fn paths_that_do_not_exist_or_lines_past_the_end_fail_with_file_and_line() {
    let bad = crate_with(
        "paths-bad",
        &[
            (
                "docs/notes.md",
                "# Notes\n\nThe rule is in `crates/a/src/gone.rs`.\nSee crates/a/src/lib.rs:4 and crates/a/src/lib.rs:2-9.\n[more](../crates/a/README.md)\n",
            ),
            (
                "crates/a/src/extra.rs",
                "/// As `docs/missing.md` says.\npub fn g() {}\n",
            ),
            ("README.md", "[out](../elsewhere.md)\n"),
        ],
    );
    // `extra.rs` is also unreached; only the path findings matter here.
    let findings: Vec<String> = bad
        .findings()
        .into_iter()
        .filter(|f| !f.contains("`mod`"))
        .collect();
    assert_eq!(
        findings,
        [
            "README.md:1: `../elsewhere.md` points outside the repository",
            "crates/a/src/extra.rs:1: `docs/missing.md`: no such file or folder",
            "docs/notes.md:3: `crates/a/src/gone.rs`: no such file or folder",
            "docs/notes.md:4: `crates/a/src/lib.rs:4`: the file has 3 lines",
            "docs/notes.md:4: `crates/a/src/lib.rs:2-9`: the file has 3 lines",
            "docs/notes.md:5: `../crates/a/README.md`: no such file or folder",
        ]
    );
}

#[test]
fn a_relative_link_in_markdown_that_rustdoc_includes_fails() {
    let lib = "#![doc = include_str!(\"../README.md\")]\n";
    let bad = crate_with(
        "included-bad",
        &[
            ("crates/a/src/lib.rs", lib),
            ("crates/a/README.md", "[`f`](f), [notes](../../docs/n.md)\n"),
            ("docs/n.md", "# N\n"),
        ],
    );
    assert_eq!(
        bad.findings(),
        [
            "crates/a/README.md:1: `../../docs/n.md`: a relative link in Markdown that rustdoc \
          includes points elsewhere on docs.rs; link an item or a full URL"
        ]
    );
    let good = crate_with(
        "included-good",
        &[
            ("crates/a/src/lib.rs", lib),
            (
                "crates/a/README.md",
                "[`f`](f), [notes](https://example.org/docs/n.md)\n",
            ),
        ],
    );
    assert_eq!(good.findings(), Vec::<String>::new());
}

#[test]
fn paths_that_exist_pass() {
    let good = crate_with(
        "paths-good",
        &[
            (
                "docs/notes.md",
                "The rule is in `crates/a/src/lib.rs:1-3` ([code](../crates/a/src/lib.rs#L3)).\nEvery crates/*/README.md, `crates/<name>/src`, [web](https://example.org/docs/x.md), [top](#notes).\n",
            ),
            ("crates/a/README.md", "[notes](../../docs/notes.md)\n"),
        ],
    );
    assert_eq!(good.findings(), Vec::<String>::new());
}

#[test]
fn a_file_no_mod_reaches_fails_and_passes_once_declared() {
    let files = |lib: &'static str, pg: &'static str, db: &'static str| {
        vec![
            ("crates/a/src/lib.rs", lib),
            ("crates/a/src/core/mod.rs", "mod worker;\n"),
            ("crates/a/src/core/worker.rs", ""),
            ("crates/a/src/tests/loom_x.rs", ""),
            ("crates/a/src/tests/mod.rs", "#[cfg(loom)]\nmod loom_x;\n"),
            ("crates/a/src/gate_impl.rs", ""),
            ("crates/a/src/orphan.rs", ""),
            ("crates/a/tests/api.rs", "mod common;\n"),
            ("crates/a/tests/common/mod.rs", ""),
            ("crates/a/tests/suite/main.rs", "mod model;\n"),
            ("crates/a/tests/suite/model.rs", ""),
            ("crates/a/tests/pg/mod.rs", pg),
            ("crates/a/tests/shared/frozen.rs", ""),
            ("crates/a/tests/db.rs", db),
            ("crates/a/examples/demo.rs", ""),
        ]
    };
    let lib_bad = "mod core;\n#[cfg(test)]\nmod tests;\n#[path = \"gate_impl.rs\"]\nmod gate;\nmod missing;\n";
    let bad = crate_with("modules-bad", &files(lib_bad, "", ""));
    assert_eq!(
        bad.findings(),
        [
            "crates/a/src/lib.rs:6: `mod missing` names a file that does not exist: `crates/a/src/missing.rs`",
            "crates/a/src/orphan.rs:1: no `mod` declaration reaches `crates/a/src/orphan.rs` from a target root of `crates/a/Cargo.toml`",
            "crates/a/tests/pg/mod.rs:1: no `mod` declaration reaches `crates/a/tests/pg/mod.rs` from a target root of `crates/a/Cargo.toml`",
            "crates/a/tests/shared/frozen.rs:1: no `mod` declaration reaches `crates/a/tests/shared/frozen.rs` from a target root of `crates/a/Cargo.toml`",
        ]
    );
    let lib_good =
        "mod core;\n#[cfg(test)]\nmod tests;\n#[path = \"gate_impl.rs\"]\nmod gate;\nmod orphan;\n";
    let pg_good = "#[path = \"../shared/frozen.rs\"]\nmod frozen;\n";
    let good = crate_with("modules-good", &files(lib_good, pg_good, "mod pg;\n"));
    assert_eq!(good.findings(), Vec::<String>::new());
}

#[test]
fn rustdoc_fails_on_a_broken_intra_doc_link_and_passes_on_a_good_one() {
    let lib = |doc: &str| format!("//! {doc}\n\n/// Present.\npub struct Present;\n");
    let bad = Tree::new(
        "rustdoc-bad",
        &[
            ("Cargo.toml", &format!("{MANIFEST}\n[workspace]\n")),
            ("src/lib.rs", &lib("See [`Missing`].")),
        ],
    );
    let why = rustdoc(&bad.0).unwrap_err();
    assert!(why.contains("cargo") && why.contains("doc"), "{why}");
    let good = Tree::new(
        "rustdoc-good",
        &[
            ("Cargo.toml", &format!("{MANIFEST}\n[workspace]\n")),
            ("src/lib.rs", &lib("See [`Present`].")),
        ],
    );
    assert_eq!(rustdoc(&good.0), Ok(()));
}

/// A notes page whose section `The rule` is stamped against `described` with `hash`, and a
/// fenced example of a stamp that is not one.
fn stamped_notes(described: &str, hash: &str) -> String {
    format!(
        "# Notes\n\n## The rule\n\n<!-- stamp: {described} {hash} -->\nThe rule is `f`.\n\n\
         ```md\n<!-- stamp: crates/a/src/gone.rs 0 -->\n```\n"
    )
}

#[test]
fn a_stamped_section_fails_once_its_file_changes_and_restamp_fixes_it() {
    let lib = "//! A.\n\npub fn f() {}\n";
    let old = stamps::hash(lib.as_bytes());
    let notes = stamped_notes("crates/a/src/lib.rs", &old);
    let tree = crate_with("stamps", &[("docs/notes.md", &notes)]);
    assert_eq!(tree.findings(), Vec::<String>::new());

    let edited = "//! A.\n\npub fn f() -> u8 {\n    1\n}\n";
    std::fs::write(tree.0.join("crates/a/src/lib.rs"), edited).unwrap();
    let new = stamps::hash(edited.as_bytes());
    assert_eq!(
        tree.findings(),
        [format!(
            "docs/notes.md:5: section `The rule` is stamped against `crates/a/src/lib.rs`, \
             which changed (hash {new}, stamp {old}): re-read the section against the file, \
             then run `cargo xtask tidy --restamp`"
        )]
    );

    let done = stamps::restamp(&tree.0, &files(&tree.0)).unwrap();
    let done: Vec<String> = done.iter().map(ToString::to_string).collect();
    assert_eq!(
        done,
        [format!(
            "docs/notes.md:5: section `The rule`: `crates/a/src/lib.rs` {old} -> {new}"
        )]
    );
    let rewritten = std::fs::read_to_string(tree.0.join("docs/notes.md")).unwrap();
    assert_eq!(rewritten, stamped_notes("crates/a/src/lib.rs", &new));
    assert_eq!(tree.findings(), Vec::<String>::new());
    // Nothing left to restamp.
    assert_eq!(stamps::restamp(&tree.0, &files(&tree.0)), Ok(vec![]));
}

#[test]
fn a_module_doc_may_stamp_its_own_file_and_a_new_stamp_waits_for_restamp() {
    let lib =
        "//! A.\n//!\n//! # Rules\n//!\n//! <!-- stamp: crates/a/src/lib.rs -->\n\npub fn f() {}\n";
    let tree = crate_with("stamps-self", &[("crates/a/src/lib.rs", lib)]);
    let now = stamps::hash(lib.as_bytes());
    assert_eq!(
        tree.findings(),
        [format!(
            "crates/a/src/lib.rs:5: section `Rules` is stamped against `crates/a/src/lib.rs`, \
             which changed (hash {now}, stamp (none)): re-read the section against the file, \
             then run `cargo xtask tidy --restamp`"
        )]
    );
    assert_eq!(stamps::restamp(&tree.0, &files(&tree.0)).unwrap().len(), 1);
    let rewritten = std::fs::read_to_string(tree.0.join("crates/a/src/lib.rs")).unwrap();
    assert!(rewritten.contains(&format!("//! <!-- stamp: crates/a/src/lib.rs {now} -->\n")));
    // The stamp line is not part of the hash, so writing it does not stale it.
    assert_eq!(tree.findings(), Vec::<String>::new());
}

#[test]
fn a_stamp_naming_a_missing_file_fails_and_is_not_restamped() {
    let notes = stamped_notes("crates/a/src/gone.rs", "0123456789abcdef");
    let tree = crate_with("stamps-missing", &[("docs/notes.md", &notes)]);
    let finding = "docs/notes.md:5: section `The rule` is stamped against \
                   `crates/a/src/gone.rs`: no such file";
    // Reported once, by the stamp check (the path check leaves stamp lines to it).
    assert_eq!(tree.findings(), [finding]);
    let refused = stamps::restamp(&tree.0, &files(&tree.0)).unwrap_err();
    assert_eq!(
        refused.iter().map(ToString::to_string).collect::<Vec<_>>(),
        [format!("{finding}; cannot restamp")]
    );
    let unchanged = std::fs::read_to_string(tree.0.join("docs/notes.md")).unwrap();
    assert_eq!(unchanged, notes);
}

#[test]
fn a_rust_snippet_no_doc_test_compiles_fails_until_its_file_is_included() {
    let notes = "# Notes\n\n```rust\nlet x = 1;\n```\n\n```rust,ignore\nnot code\n```\n\n```text\nplain\n```\n";
    let bad = crate_with("snippets-rust-bad", &[("docs/notes.md", notes)]);
    assert_eq!(
        bad.findings(),
        [
            "docs/notes.md:3: a Rust snippet no doc test compiles: include this file in a crate's docs (`#![doc = include_str!(…)]`), or mark the block `ignore`"
        ]
    );
    let lib = "//! A.\n#![cfg_attr(doctest, doc = include_str!(\"../../../docs/notes.md\"))]\n\npub fn f() {}\n";
    let good = crate_with(
        "snippets-rust-good",
        &[("docs/notes.md", notes), ("crates/a/src/lib.rs", lib)],
    );
    assert_eq!(good.findings(), Vec::<String>::new());
}

#[test]
fn a_toml_snippet_naming_a_package_the_workspace_lacks_fails() {
    let readme = |deps: &str| {
        format!("# A\n\n```toml\n[package]\nname = \"app\"\n\n[dependencies]\n{deps}\n```\n")
    };
    let bad = crate_with(
        "snippets-toml-bad",
        &[(
            "docs/use.md",
            &readme(
                "tokio = \"1\"\nlockgate-b = \"0.1\"\nmine = { package = \"lockgate-c\", version = \"0.1\" }\na = \"0.1\"",
            ),
        )],
    );
    assert_eq!(
        bad.findings(),
        [
            "docs/use.md:9: the snippet depends on `lockgate-b`, which is not a package of this workspace (they are: )",
            "docs/use.md:10: the snippet depends on `lockgate-c`, which is not a package of this workspace (they are: )",
        ]
    );
    let good = crate_with(
        "snippets-toml-good",
        &[(
            "docs/use.md",
            &readme("tokio = \"1\"\na = { version = \"0.1\" }"),
        )],
    );
    assert_eq!(good.findings(), Vec::<String>::new());
}

#[test]
fn two_packages_with_an_example_of_one_name_fail() {
    let b_manifest = "[package]\nname = \"b\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\n[[example]]\nname = \"demo\"\n";
    let files = |b_example: &'static str| {
        vec![
            ("crates/a/examples/demo.rs", "fn main() {}\n"),
            ("crates/b/Cargo.toml", b_manifest),
            ("crates/b/src/lib.rs", "//! B.\n"),
            (b_example, "fn main() {}\n"),
        ]
    };
    let bad = crate_with("snippets-examples-bad", &files("crates/b/examples/demo.rs"));
    assert_eq!(
        bad.findings(),
        [
            "crates/a/Cargo.toml:1: the example `demo` is in more than one package (crates/a/Cargo.toml, crates/b/Cargo.toml): cargo builds every example into one folder, so give each a name of its own"
        ]
    );
    let b_renamed = "[package]\nname = \"b\"\nversion = \"0.0.0\"\nedition = \"2024\"\n";
    let mut renamed = files("crates/b/examples/b_demo.rs");
    renamed[1] = ("crates/b/Cargo.toml", b_renamed);
    let good = crate_with("snippets-examples-good", &renamed);
    assert_eq!(good.findings(), Vec::<String>::new());
}
