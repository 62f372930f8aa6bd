//! The `doors` fuzz target: [`accelhost_fuzz::doors::run`] on each input.
//!
//! Under cargo-fuzz (`--cfg fuzzing`) this is a libFuzzer binary; in any other build it
//! replays the files and directories named on its command line.

#![cfg_attr(fuzzing, no_main)]

#[cfg(fuzzing)]
libfuzzer_sys::fuzz_target!(
    init: accelhost_fuzz::doors::warm_up(),
    |data: &[u8]| accelhost_fuzz::doors::run(data)
);

#[cfg(not(fuzzing))]
fn main() -> std::process::ExitCode {
    accelhost_fuzz::replay::main("doors", accelhost_fuzz::doors::run)
}
