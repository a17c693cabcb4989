//! Running and timing commands.

use std::process::Command;
use std::time::{Duration, Instant};

/// The cargo that runs this xtask (so the pinned toolchain is used), or `cargo`.
pub(crate) fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// A cargo of the nightly toolchain, through rustup (a `+nightly` needs the rustup proxy,
/// which `$CARGO` is not).
pub(crate) fn nightly_cargo() -> Command {
    let mut cmd = Command::new("rustup");
    cmd.args(["run", "nightly", "cargo"]);
    // The pinned toolchain's cargo exports these; they must not leak into nightly's cargo.
    for var in [
        "RUSTC",
        "RUSTDOC",
        "CARGO",
        "RUSTUP_TOOLCHAIN",
        "RUSTC_WRAPPER",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// Prints the command, runs it with inherited output, and turns a failure into a message.
pub(crate) fn run(cmd: &mut Command) -> Result<(), String> {
    println!("$ {}", display(cmd));
    let status = cmd
        .status()
        .map_err(|err| format!("could not start `{}`: {err}", display(cmd)))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{}` exited with {status}", display(cmd)))
    }
}

/// Runs the command quietly and tells whether it succeeded (for probes).
pub(crate) fn succeeds(cmd: &mut Command) -> bool {
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// The command line as a shell would show it, environment overrides first.
pub(crate) fn display(cmd: &Command) -> String {
    let mut parts: Vec<String> = cmd
        .get_envs()
        .filter_map(|(key, value)| {
            value.map(|v| format!("{}={:?}", key.to_string_lossy(), v.to_string_lossy()))
        })
        .collect();
    parts.push(cmd.get_program().to_string_lossy().into_owned());
    parts.extend(cmd.get_args().map(|a| a.to_string_lossy().into_owned()));
    parts.join(" ")
}

/// Runs `f`, returning its result and how long it took.
pub(crate) fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let value = f();
    (value, start.elapsed())
}
