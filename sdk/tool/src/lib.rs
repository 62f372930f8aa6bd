//! Builds accelhost plugins written in C, JavaScript and Python into WebAssembly components.
//!
//! Each language has a [`Toolchain`]: [`probe`] finds it (or says what is missing) and
//! [`Toolchain::build`] turns a plugin directory into a component the host loads:
//!
//! - **C**: `*.c` files, built with clang + wasi-libc against bindings that wit-bindgen's C
//!   generator writes from `wit/` at build time, then made a component with wasmtime's WASI
//!   preview1 reactor adapter ([`c`]).
//! - **JavaScript**: `plugin.js`, type-checked against the TypeScript types jco generated from
//!   `wit/` and componentized by `jco componentize` (componentize-js) from `sdk/js` ([`js`]).
//! - **Python**: `app.py`, componentized by `componentize-py` ([`python`]).
//!
//! The `accelhost-sdk` binary is the command line over this library; the end-to-end test
//! `tests/sdk_languages.rs` uses the library directly.

pub mod c;
mod checkout;
pub mod js;
mod process;
pub mod python;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

pub use checkout::{Language, Sdk, WORLD};

/// A language's toolchain, found and checked by [`probe`].
#[derive(Clone, Debug)]
pub enum Toolchain {
    /// clang + wasi-libc, with the generator and adapter built into this tool.
    C(c::Clang),
    /// node with the jco of `sdk/js/node_modules`.
    Js(js::Jco),
    /// componentize-py.
    Python(python::ComponentizePy),
}

impl Toolchain {
    /// The language it builds.
    pub fn language(&self) -> Language {
        match self {
            Toolchain::C(_) => Language::C,
            Toolchain::Js(_) => Language::Js,
            Toolchain::Python(_) => Language::Python,
        }
    }

    /// The tools and their versions, for reports.
    pub fn versions(&self) -> String {
        match self {
            Toolchain::C(clang) => format!(
                "{}, wasi-libc, wit-bindgen-c {}, wasi reactor adapter of wasmtime {}",
                clang.version,
                c::WIT_BINDGEN_VERSION,
                c::ADAPTER_VERSION
            ),
            Toolchain::Js(jco) => jco.versions(),
            Toolchain::Python(py) => py.version.clone(),
        }
    }

    /// Builds the plugin in `plugin_dir` into the component `out`, keeping intermediate files
    /// in `work` (emptied first).
    pub fn build(&self, sdk: &Sdk, plugin_dir: &Path, out: &Path, work: &Path) -> Result<Built> {
        let started = Instant::now();
        match self {
            Toolchain::C(clang) => c::build(sdk, clang, plugin_dir, out, work),
            Toolchain::Js(jco) => jco.build(sdk, plugin_dir, out, work),
            Toolchain::Python(py) => py.build(sdk, plugin_dir, out, work),
        }
        .with_context(|| {
            format!(
                "building the {} plugin {} into {}",
                self.language(),
                plugin_dir.display(),
                out.display()
            )
        })?;
        let bytes = std::fs::metadata(out)
            .with_context(|| format!("{} was not written", out.display()))?
            .len();
        Ok(Built {
            component: out.to_path_buf(),
            bytes,
            took: started.elapsed(),
        })
    }
}

/// A component that was built.
#[derive(Clone, Debug)]
pub struct Built {
    /// Its path.
    pub component: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// How long the build took.
    pub took: Duration,
}

/// Finds the toolchain of `language` and checks that it works, using `scratch` for test
/// builds. `Err` says what is missing and how to install it.
pub fn probe(sdk: &Sdk, language: Language, scratch: &Path) -> Result<Toolchain, String> {
    match language {
        Language::C => c::Clang::probe(scratch).map(Toolchain::C),
        Language::Js => js::Jco::probe(sdk).map(Toolchain::Js),
        Language::Python => python::ComponentizePy::probe(sdk).map(Toolchain::Python),
    }
}
