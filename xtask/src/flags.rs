//! Every verb and option of `cargo xtask`, in one place, parsed by hand.

/// Printed by `cargo xtask help` and after a usage error.
pub(crate) const USAGE: &str = "\
usage: cargo xtask <verb> [options]

verbs:
  gate [--full] [--only STEP,...]   run what CI checks, in order, stopping at the first failure
  demo                              run every crate's example, one after another
  help                              print this text

gate options:
  --full            also run the nightly steps: ThreadSanitizer and Miri (CI uses this)
  --only STEP,...   run only the named steps, in gate order (names: see `cargo xtask gate --list`)
  --list            print the step names and exit";

/// What the command line asked for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Command {
    /// Print the usage text.
    Help,
    /// Run the gate.
    Gate(GateOptions),
    /// Run every crate's example.
    Demo,
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
    fn demo_takes_no_options() {
        assert_eq!(parse_str("demo"), Ok(Command::Demo));
        assert!(parse_str("demo --fast").unwrap_err().contains("--fast"));
    }

    #[test]
    fn mistakes_are_reported_not_ignored() {
        assert!(parse_str("gate --fast").unwrap_err().contains("--fast"));
        assert!(parse_str("gate --only").unwrap_err().contains("--only"));
        assert!(parse_str("deploy").unwrap_err().contains("deploy"));
    }
}
