#![warn(missing_docs)]
//! Fuzz targets for accelhost, written once and run two ways:
//!
//! - by libFuzzer, through the cargo-fuzz binaries in `fuzz_targets/` (`cargo fuzz run`, see
//!   `host/fuzz/README.md`), for long coverage-guided runs;
//! - on stable Rust by this crate's smoke test, which runs every target over its seed corpus
//!   and a fixed set of deterministic mutations as part of `cargo test --workspace`.
//!
//! Each target is a module with `pub fn run(data: &[u8])`. A target panics only when it has
//! found something: a panic inside the host library, or an answer that breaks a property the
//! target checks (a decode that does not survive an encode, an error the host must not give).

// The targets run as the `accelhost` binary does: with the host-memory ledger as the
// allocator (the `imports` oracle holds a plugin to the formula that assumes it). The doors'
// shared crate, linked in for the `doors` target, installs it.
use accelhost_door as _;

pub mod authority;
pub mod compile;
pub mod config;
pub mod cxl;
pub mod doors;
pub mod ert;
pub mod imports;
pub mod mutate;
pub mod process_dir;
pub mod replay;
pub mod seeds;
pub mod serve_config;
pub mod smoke;
pub mod xclbin;

/// One fuzz target: its name (as in `fuzz_targets/` and `corpus/`) and its entry point.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// The cargo-fuzz target name, which is also the name of its corpus directory.
    pub name: &'static str,
    /// Runs one input.
    pub run: fn(&[u8]),
}

/// Every target, in the order the smoke test runs them.
pub const TARGETS: [Target; 9] = [
    Target {
        name: "config",
        run: config::run,
    },
    Target {
        name: "xclbin",
        run: xclbin::run,
    },
    Target {
        name: "ert",
        run: ert::run,
    },
    Target {
        name: "cxl",
        run: cxl::run,
    },
    Target {
        name: "imports",
        run: imports::run,
    },
    Target {
        name: "compile",
        run: compile::run,
    },
    Target {
        name: "serve_config",
        run: serve_config::run,
    },
    Target {
        name: "doors",
        run: doors::run,
    },
    Target {
        name: "authority",
        run: authority::run,
    },
];

/// The checked-in seed corpus of `target`: `host/fuzz/corpus/<target>`.
pub fn corpus_dir(target: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target)
}
