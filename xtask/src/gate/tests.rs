use super::*;

fn names(steps: &[&Step]) -> Vec<&'static str> {
    steps.iter().map(|s| s.name).collect()
}

#[test]
fn quick_gate_runs_the_stable_steps_in_order() {
    let steps = select(&GateOptions::default()).unwrap();
    assert_eq!(
        names(&steps),
        [
            "fmt",
            "clippy",
            "test",
            "reference",
            "loom",
            "tidy",
            "package"
        ]
    );
}

#[test]
fn full_gate_adds_the_nightly_steps_last() {
    let options = GateOptions {
        full: true,
        ..GateOptions::default()
    };
    let steps = select(&options).unwrap();
    assert_eq!(
        names(&steps),
        [
            "fmt",
            "clippy",
            "test",
            "reference",
            "loom",
            "tidy",
            "package",
            "tsan",
            "miri"
        ]
    );
}

#[test]
fn only_keeps_gate_order_and_rejects_unknown_steps() {
    let options = GateOptions {
        only: vec!["miri".into(), "fmt".into()],
        ..GateOptions::default()
    };
    assert_eq!(names(&select(&options).unwrap()), ["fmt", "miri"]);
    let options = GateOptions {
        only: vec!["lint".into()],
        ..GateOptions::default()
    };
    assert!(select(&options).unwrap_err().contains("lint"));
}

#[test]
fn the_summary_shows_skipped_and_failed_steps_what_was_not_run_and_the_total() {
    let ms = Duration::from_millis;
    let report = [
        ("fmt", "passed", ms(1200)),
        ("loom", "SKIPPED", ms(10)),
        ("tidy", "FAILED", ms(3400)),
    ];
    assert_eq!(
        summary(&report, &["package"], ms(4610)),
        "gate summary:\n\
         \x20 fmt     passed       1.2s\n\
         \x20 loom    SKIPPED    10.0ms\n\
         \x20 tidy    FAILED       3.4s\n\
         \x20 package not run\n\
         \x20 total                4.6s\n"
    );
}

#[test]
fn the_summary_lines_up_under_its_longest_step_name() {
    let ms = Duration::from_millis;
    let report = [
        ("fmt", "passed", ms(1200)),
        ("reference", "passed", ms(500)),
    ];
    assert_eq!(
        summary(&report, &[], ms(1700)),
        "gate summary:\n\
         \x20 fmt       passed       1.2s\n\
         \x20 reference passed    500.0ms\n\
         \x20 total                  1.7s\n"
    );
}

/// A throwaway one-crate workspace outside ours, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str, lib_rs: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("xtask-gate-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(
            dir.join("Cargo.toml"),
            "[package]\nname = \"scratch\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\n[workspace]\n",
        )
        .unwrap();
        std::fs::write(dir.join("src/lib.rs"), lib_rs).unwrap();
        Self(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn fmt_step_fails_on_an_unformatted_file_and_passes_once_formatted() {
    let bad = Scratch::new("fmt-bad", "pub fn   f( )->u8{1}\n");
    assert!(matches!(fmt(&bad.0), Outcome::Failed(_)));
    let good = Scratch::new("fmt-good", "pub fn f() -> u8 {\n    1\n}\n");
    assert_eq!(fmt(&good.0), Outcome::Passed);
}

#[test]
fn clippy_step_fails_on_a_warning_and_passes_without_one() {
    let bad = Scratch::new("clippy-bad", "pub fn f() -> u8 {\n    return 1;\n}\n");
    assert!(matches!(clippy(&bad.0), Outcome::Failed(_)));
    let good = Scratch::new("clippy-good", "pub fn f() -> u8 {\n    1\n}\n");
    assert_eq!(clippy(&good.0), Outcome::Passed);
}

#[test]
fn loom_models_are_found_by_file_name() {
    let root = std::env::temp_dir().join(format!("xtask-gate-loom-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for (krate, file) in [
        ("b", "src/tests/loom_pool.rs"),
        ("a", "src/lib.rs"),
        ("c", "src/loom_x.rs"),
    ] {
        let path = root.join("crates").join(krate).join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "").unwrap();
        let manifest = format!("[package]\nname = \"pkg-{krate}\"\n");
        std::fs::write(root.join("crates").join(krate).join("Cargo.toml"), manifest).unwrap();
    }
    // Named by package, not by folder: these names go to `cargo -p`.
    assert_eq!(crates_with_loom_models(&root), ["pkg-b", "pkg-c"]);
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn miri_runs_come_from_each_crates_gate_table() {
    let root = std::env::temp_dir().join(format!("xtask-gate-miri-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let manifests = [
        (
            "b",
            "[package]\nname = \"pkg-b\"\n\n[package.metadata.gate]\nmiri = \"--lib --test stress\"\n",
        ),
        (
            "a",
            "[package]\nname = \"a\"\n[package.metadata.gate]\nmiri = \"\"\n[lints]\nworkspace = true\n",
        ),
        (
            "c",
            "[package]\nname = \"c\"\nmiri = \"not in the gate table\"\n",
        ),
    ];
    for (krate, manifest) in manifests {
        std::fs::create_dir_all(root.join("crates").join(krate)).unwrap();
        std::fs::write(root.join("crates").join(krate).join("Cargo.toml"), manifest).unwrap();
    }
    let runs = miri_runs(&root);
    let expected: Vec<(String, Vec<String>)> = vec![
        ("a".into(), vec![]),
        (
            "pkg-b".into(),
            vec!["--lib".into(), "--test".into(), "stress".into()],
        ),
    ];
    assert_eq!(runs, expected);
    std::fs::remove_dir_all(&root).unwrap();
}
