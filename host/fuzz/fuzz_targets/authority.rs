//! The `authority` fuzz target: [`accelhost_fuzz::authority::run`] on each input.
//!
//! Under cargo-fuzz (`--cfg fuzzing`) this is a libFuzzer binary; in any other build it
//! replays the files and directories named on its command line.

#![cfg_attr(fuzzing, no_main)]

#[cfg(fuzzing)]
libfuzzer_sys::fuzz_target!(|data: &[u8]| accelhost_fuzz::authority::run(data));

#[cfg(not(fuzzing))]
fn main() -> std::process::ExitCode {
    accelhost_fuzz::replay::main("authority", accelhost_fuzz::authority::run)
}
