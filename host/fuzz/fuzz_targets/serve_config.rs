//! The `serve_config` fuzz target: [`accelhost_fuzz::serve_config::run`] on each input.
//!
//! Under cargo-fuzz (`--cfg fuzzing`) this is a libFuzzer binary; in any other build it
//! replays the files and directories named on its command line.

#![cfg_attr(fuzzing, no_main)]

#[cfg(fuzzing)]
libfuzzer_sys::fuzz_target!(|data: &[u8]| accelhost_fuzz::serve_config::run(data));

#[cfg(not(fuzzing))]
fn main() -> std::process::ExitCode {
    accelhost_fuzz::replay::main("serve_config", accelhost_fuzz::serve_config::run)
}
