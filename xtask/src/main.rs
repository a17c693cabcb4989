//! `cargo xtask`: the workspace's automation, std only but for `bench`'s page (serde_json, plotters).
//!
//! `main` parses the command line ([`flags`]), moves to the workspace root, and dispatches to
//! one file per verb.

mod bench;
mod browser;
mod demo;
mod flags;
mod gate;
mod postgres;
mod util;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = match flags::parse(&args) {
        Ok(command) => command,
        Err(message) => {
            eprintln!("error: {message}\n\n{}", flags::USAGE);
            return ExitCode::from(2);
        }
    };
    let root = workspace_root();
    if let Err(err) = std::env::set_current_dir(&root) {
        eprintln!(
            "error: cannot enter the workspace root {}: {err}",
            root.display()
        );
        return ExitCode::FAILURE;
    }
    match command {
        flags::Command::Help => {
            println!("{}", flags::USAGE);
            ExitCode::SUCCESS
        }
        flags::Command::Gate(options) => gate::run(&root, &options),
        flags::Command::Tidy(options) => gate::tidy::main(&root, &options),
        flags::Command::Demo => demo::run(&root),
        flags::Command::Bench(options) => bench::run(&root, &options),
    }
}

/// The parent of this crate's manifest directory.
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}
