//! Which benches there are: every `[[bench]]` target of the crates under `crates/`, read from
//! their `Cargo.toml`, so a new bench is run without touching the xtask.
//!
//! The manifests are read line by line, not by a TOML parser: a `[[bench]]` table's `name`
//! and `path` are all the xtask needs (every bench runs with all features, so a table's
//! `required-features` never matter here).

use std::path::{Path, PathBuf};

/// One bench target of one crate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bench {
    /// The crate's folder under `crates/` (`worker`); the page's section and `--only` use it.
    pub(crate) folder: String,
    /// The crate's package name (`lockgate-worker`), for `cargo bench -p`.
    pub(crate) package: String,
    /// The bench target's name, for `cargo bench --bench`.
    pub(crate) name: String,
    /// Its source file.
    pub(crate) source: PathBuf,
}

impl Bench {
    /// `crate/bench`, as the progress lines and skip lines name it.
    pub(crate) fn label(&self) -> String {
        format!("{}/{}", self.folder, self.name)
    }
}

/// A `[[bench]]` table as the manifest states it.
#[derive(Debug, Default, PartialEq, Eq)]
struct Target {
    name: Option<String>,
    path: Option<String>,
}

/// Every bench target under `root/crates`, sorted by crate folder, then by name.
pub(crate) fn benches(root: &Path) -> Vec<Bench> {
    let Ok(entries) = std::fs::read_dir(root.join("crates")) else {
        return Vec::new();
    };
    let mut benches: Vec<Bench> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let dir = entry.path();
            let folder = entry.file_name().to_str()?.to_string();
            let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).ok()?;
            let (package, targets) = parse(&manifest);
            let package = package?;
            Some(
                targets
                    .into_iter()
                    .filter_map(|target| {
                        let name = target.name?;
                        let source =
                            dir.join(target.path.unwrap_or_else(|| format!("benches/{name}.rs")));
                        Some(Bench {
                            folder: folder.clone(),
                            package: package.clone(),
                            name,
                            source,
                        })
                    })
                    .collect::<Vec<_>>(),
            )
        })
        .flatten()
        .collect();
    benches.sort_by(|a, b| (&a.folder, &a.name).cmp(&(&b.folder, &b.name)));
    benches
}

/// The package name and the `[[bench]]` tables of a manifest.
fn parse(manifest: &str) -> (Option<String>, Vec<Target>) {
    let mut package = None;
    let mut targets: Vec<Target> = Vec::new();
    let mut section = String::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line.to_string();
            if section == "[[bench]]" {
                targets.push(Target::default());
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        match (section.as_str(), key) {
            ("[package]", "name") => package = Some(unquote(value)),
            ("[[bench]]", "name") => {
                if let Some(target) = targets.last_mut() {
                    target.name = Some(unquote(value));
                }
            }
            ("[[bench]]", "path") => {
                if let Some(target) = targets.last_mut() {
                    target.path = Some(unquote(value));
                }
            }
            _ => {}
        }
    }
    (package, targets)
}

fn unquote(value: &str) -> String {
    value.trim().trim_matches('"').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_tables_are_read_with_their_names_and_paths() {
        let manifest = r#"
[package]
name = "lockgate-batch"

[dependencies]
name = "not a package name"

[[bench]]
name = "runner"
harness = false

[[bench]]
name = "postgres"
path = "benches/pg.rs"
harness = false
required-features = ["postgres", "sqlite"]

[[test]]
name = "sqlite_store"
"#;
        let (package, targets) = parse(manifest);
        assert_eq!(package.as_deref(), Some("lockgate-batch"));
        assert_eq!(
            targets,
            vec![
                Target {
                    name: Some("runner".into()),
                    ..Target::default()
                },
                Target {
                    name: Some("postgres".into()),
                    path: Some("benches/pg.rs".into()),
                },
            ]
        );
    }

    #[test]
    fn the_workspace_benches_are_found() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let found = benches(root);
        let layer = found
            .iter()
            .find(|bench| bench.label() == "pdfpool/layer")
            .expect("pdfpool's layer bench");
        assert_eq!(layer.package, "lockgate-pdfpool");
        assert!(layer.source.is_file(), "{}", layer.source.display());
        assert!(
            found
                .iter()
                .any(|bench| bench.label() == "worker/throughput")
        );
    }
}
