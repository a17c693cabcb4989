//! Every verb and option of `cargo xtask`, in one place, parsed by hand.

/// Printed by `cargo xtask help` and after a usage error.
pub(crate) const USAGE: &str = "\
usage: cargo xtask <verb> [options]

verbs:
  gate [--full] [--only STEP,...]   run what CI checks, in order, stopping at the first failure
  tidy [--restamp]                  run the gate's `tidy` step alone (text against files, rustdoc)
  demo                              run every crate's example, one after another
  bench [--quick] [--only CRATE,...]  run the criterion benches, write docs/benchmarks.md
  help                              print this text

gate options:
  --full            also run the nightly steps: ThreadSanitizer and Miri (CI uses this)
  --only STEP,...   run only the named steps, in gate order (names: see `cargo xtask gate --list`)
  --list            print the step names and exit

tidy options:
  --restamp         rewrite every stale doc stamp to its file's current hash (after re-reading
                    the stamped section against the file), printing each one

bench options:
  --quick           criterion's quick mode, at most about 1 s a benchmark (2 min, not 15)
  --only CRATE,...  only these crate folders under crates/ (the page then holds only them)";

/// What the command line asked for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Command {
    /// Print the usage text.
    Help,
    /// Run the gate.
    Gate(GateOptions),
    /// Run the gate's `tidy` step, or restamp the docs.
    Tidy(TidyOptions),
    /// Run every crate's example.
    Demo,
    /// Run the criterion benches and write the benchmark page.
    Bench(BenchOptions),
}

/// Options of `cargo xtask gate`.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct GateOptions {
    /// Also run the nightly-only steps (sanitizer and Miri).
    pub(crate) full: bool,
    /// Run only these steps (empty: all steps that `full` selects).
    pub(crate) only: Vec<String>,
    /// Print the step names and exit.
    pub(crate) list: bool,
}

/// Options of `cargo xtask tidy`.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct TidyOptions {
    /// Rewrite the doc stamps to the current hashes instead of checking.
    pub(crate) restamp: bool,
}

/// Options of `cargo xtask bench`.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct BenchOptions {
    /// criterion's `--quick` mode instead of the benches' own warm-up and measurement times.
    pub(crate) quick: bool,
    /// Run only these crate folders (empty: every crate with benches).
    pub(crate) only: Vec<String>,
}

/// Parses the arguments after `cargo xtask`.
pub(crate) fn parse(args: &[String]) -> Result<Command, String> {
    let mut args = args.iter().map(String::as_str);
    match args.next() {
        None | Some("help" | "--help" | "-h") => Ok(Command::Help),
        Some("demo") => match args.next() {
            None => Ok(Command::Demo),
            Some(other) => Err(format!("demo takes no options, not `{other}`")),
        },
        Some("gate") => {
            let mut options = GateOptions::default();
            while let Some(arg) = args.next() {
                match arg {
                    "--full" => options.full = true,
                    "--list" => options.list = true,
                    "--only" => {
                        let names = args.next().ok_or("--only needs a list of step names")?;
                        options
                            .only
                            .extend(names.split(',').filter(|n| !n.is_empty()).map(String::from));
                    }
                    other => return Err(format!("unknown gate option `{other}`")),
                }
            }
            Ok(Command::Gate(options))
        }
        Some("tidy") => {
            let mut options = TidyOptions::default();
            for arg in args {
                match arg {
                    "--restamp" => options.restamp = true,
                    other => return Err(format!("unknown tidy option `{other}`")),
                }
            }
            Ok(Command::Tidy(options))
        }
        Some("bench") => {
            let mut options = BenchOptions::default();
            while let Some(arg) = args.next() {
                match arg {
                    "--quick" => options.quick = true,
                    "--only" => {
                        let names = args.next().ok_or("--only needs a list of crate folders")?;
                        options
                            .only
                            .extend(names.split(',').filter(|n| !n.is_empty()).map(String::from));
                    }
                    other => return Err(format!("unknown bench option `{other}`")),
                }
            }
            Ok(Command::Bench(options))
        }
        Some(other) => Err(format!("unknown verb `{other}`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(line: &str) -> Result<Command, String> {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        parse(&args)
    }

    #[test]
    fn no_verb_is_help() {
        assert_eq!(parse_str(""), Ok(Command::Help));
        assert_eq!(parse_str("--help"), Ok(Command::Help));
    }

    #[test]
    fn gate_defaults_to_the_quick_gate() {
        assert_eq!(parse_str("gate"), Ok(Command::Gate(GateOptions::default())));
    }

    #[test]
    fn gate_options_combine() {
        let expected = GateOptions {
            full: true,
            only: vec!["fmt".into(), "clippy".into(), "miri".into()],
            list: false,
        };
        assert_eq!(
            parse_str("gate --full --only fmt,clippy --only miri"),
            Ok(Command::Gate(expected))
        );
    }

    #[test]
    fn tidy_checks_or_restamps() {
        assert_eq!(parse_str("tidy"), Ok(Command::Tidy(TidyOptions::default())));
        assert_eq!(
            parse_str("tidy --restamp"),
            Ok(Command::Tidy(TidyOptions { restamp: true }))
        );
        assert!(parse_str("tidy --fix").unwrap_err().contains("--fix"));
    }

    #[test]
    fn demo_takes_no_options() {
        assert_eq!(parse_str("demo"), Ok(Command::Demo));
        assert!(parse_str("demo --fast").unwrap_err().contains("--fast"));
    }

    #[test]
    fn bench_options_combine() {
        assert_eq!(
            parse_str("bench"),
            Ok(Command::Bench(BenchOptions::default()))
        );
        let expected = BenchOptions {
            quick: true,
            only: vec!["worker".into(), "pdfpool".into()],
        };
        assert_eq!(
            parse_str("bench --only worker --quick --only pdfpool"),
            Ok(Command::Bench(expected))
        );
        assert!(parse_str("bench --only").unwrap_err().contains("--only"));
        assert!(parse_str("bench --full").unwrap_err().contains("--full"));
    }

    #[test]
    fn mistakes_are_reported_not_ignored() {
        assert!(parse_str("gate --fast").unwrap_err().contains("--fast"));
        assert!(parse_str("gate --only").unwrap_err().contains("--only"));
        assert!(parse_str("deploy").unwrap_err().contains("deploy"));
    }
}
