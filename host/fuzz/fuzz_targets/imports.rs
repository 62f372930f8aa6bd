//! The `imports` fuzz target: [`accelhost_fuzz::imports::run`] on each input.
//!
//! Under cargo-fuzz (`--cfg fuzzing`) this is a libFuzzer binary; in any other build it
//! replays the files and directories named on its command line.

#![cfg_attr(fuzzing, no_main)]

#[cfg(fuzzing)]
libfuzzer_sys::fuzz_target!(
    init: accelhost_fuzz::imports::warm_up(),
    |data: &[u8]| accelhost_fuzz::imports::run(data)
);

#[cfg(not(fuzzing))]
fn main() -> std::process::ExitCode {
    accelhost_fuzz::replay::main("imports", accelhost_fuzz::imports::run)
}
