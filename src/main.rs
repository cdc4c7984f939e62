//! The `strands` binary: parse the command line, run it, exit with the code
//! strands-cli users script against.

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(strands::cli::main())
}
