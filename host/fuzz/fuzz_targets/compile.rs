//! The `compile` fuzz target: [`accelhost_fuzz::compile::run`] on each input. Its plugin files
//! compile in a worker: under cargo-fuzz, the executable `ACCELHOST_COMPILE_WORKER` names (an
//! `accelhost` binary; `short-run.sh` sets it); the replaying build serves as its own.
//!
//! Under cargo-fuzz (`--cfg fuzzing`) this is a libFuzzer binary; in any other build it
//! replays the files and directories named on its command line.

#![cfg_attr(fuzzing, no_main)]

#[cfg(fuzzing)]
libfuzzer_sys::fuzz_target!(|data: &[u8]| accelhost_fuzz::compile::run(data));

#[cfg(not(fuzzing))]
fn main() -> std::process::ExitCode {
    accelhost::compile_worker::serve_if_asked();
    accelhost_fuzz::replay::main("compile", accelhost_fuzz::compile::run)
}
