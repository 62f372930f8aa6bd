//! The `accelhost` command: list, inspect and exercise the devices that sandboxed plugins serve.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
