//! Builds accelhost plugins written in Rust, C, JavaScript and Python into WebAssembly
//! components.
//!
//! Each language has a [`Toolchain`]: [`probe`] finds it (or says what is missing) and
//! [`Toolchain::build`] turns a plugin directory into a component the host loads:
//!
//! - **Rust**: a cdylib crate on `sdk/rust`, built by cargo for `wasm32-wasip2` ([`rust`]).
//! - **C**: `*.c` files, built with clang + wasi-libc against bindings that wit-bindgen's C
//!   generator writes from `wit/` at build time, then made a component with wasmtime's WASI
//!   preview1 reactor adapter ([`c`]).
//! - **JavaScript**: `plugin.js`, type-checked against the TypeScript types jco generated from
//!   `wit/` and componentized by `jco componentize` (componentize-js) from `sdk/js` ([`js`]).
//! - **Python**: `app.py`, componentized by `componentize-py` ([`python`]).
//!
//! Rebuilding unchanged Rust or C sources gives a byte-identical component, so the host's compile cache
//! (keyed by the component's bytes) still has it. The JavaScript and Python toolchains snapshot
//! an interpreter they ran with the build machine's clocks and randomness, so each of their
//! builds differs; [`Toolchain::reproducibility`] says which and why.
//!
//! The `accelhost-sdk` binary is the command line over this library; the end-to-end test
//! `tests/sdk_languages.rs` uses the library directly.

pub mod c;
mod checkout;
pub mod exports;
pub mod home;
mod inputs;
pub mod js;
mod process;
pub mod python;
pub mod rust;
pub mod scaffold;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

pub use checkout::{Language, Sdk, WORLD, plugin_world};

/// Whether rebuilding unchanged sources gives a byte-identical component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reproducibility {
    /// It does: the component depends only on the plugin's sources, the SDK (`wit/`, the SDK
    /// helpers) and the toolchain's versions, not on where or when it was built.
    Reproducible,
    /// It does not, for the reason given: the toolchain bakes build-time state into the
    /// component, so each build differs and the host compiles it afresh after each rebuild.
    NotReproducible(&'static str),
}

impl std::fmt::Display for Reproducibility {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reproducibility::Reproducible => {
                f.write_str("reproducible: rebuilding unchanged sources gives identical bytes")
            }
            Reproducibility::NotReproducible(why) => write!(f, "not reproducible: {why}"),
        }
    }
}

/// A language's toolchain, found and checked by [`probe`].
#[derive(Clone, Debug)]
pub enum Toolchain {
    /// cargo and rustc with the `wasm32-wasip2` target.
    Rust(rust::Cargo),
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
            Toolchain::Rust(_) => Language::Rust,
            Toolchain::C(_) => Language::C,
            Toolchain::Js(_) => Language::Js,
            Toolchain::Python(_) => Language::Python,
        }
    }

    /// The tools and their versions, for reports.
    pub fn versions(&self) -> String {
        match self {
            Toolchain::Rust(cargo) => format!("{}, target {}", cargo.rustc_version, rust::TARGET),
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

    /// Whether this toolchain's builds are byte-reproducible, and why not.
    pub fn reproducibility(&self) -> Reproducibility {
        match self {
            Toolchain::Rust(_) | Toolchain::C(_) => Reproducibility::Reproducible,
            Toolchain::Js(_) => Reproducibility::NotReproducible(js::NOT_REPRODUCIBLE),
            Toolchain::Python(_) => Reproducibility::NotReproducible(python::NOT_REPRODUCIBLE),
        }
    }

    /// Builds the plugin in `plugin_dir` into the component `out`, keeping intermediate files
    /// in `work` (emptied first). When nothing the build reads changed since the last build of
    /// `out` (its sources, the SDK, the WIT, the toolchain's versions) and `out` is as that
    /// build left it, `out` is kept: the same bytes, so the host's compile cache still has it.
    pub fn build(&self, sdk: &Sdk, plugin_dir: &Path, out: &Path, work: &Path) -> Result<Built> {
        let started = Instant::now();
        if let Toolchain::Rust(cargo) = self {
            // The lock file is an input: made before the digest, not by the build.
            cargo.lock(plugin_dir)?;
        }
        let record = inputs::Record::of(out);
        let sdk_trees = [
            sdk.wit_dir(self.language()),
            sdk.language_dir(self.language()),
        ];
        let digest = || {
            inputs::digest(
                &self.versions(),
                plugin_dir,
                &sdk_trees,
                &[out, record.path()],
            )
        };
        let before = digest()?;
        let existing = std::fs::read(out).ok();
        let existing_sha = existing.as_deref().map(sha256_hex);
        if let Some(component) = existing
            && record.matches(&before, existing_sha.as_deref())
        {
            return Ok(Built {
                component: out.to_path_buf(),
                bytes: component.len() as u64,
                sha256: existing_sha.unwrap_or_default(),
                took: started.elapsed(),
                kept: true,
            });
        }
        record.remove();
        match self {
            Toolchain::Rust(cargo) => cargo.build(plugin_dir, out),
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
        let component =
            std::fs::read(out).with_context(|| format!("{} was not written", out.display()))?;
        let sha256 = sha256_hex(&component);
        // A source edited while the build ran is not what the build read: no record then.
        if digest()? == before {
            record.write(&before, &sha256)?;
        }
        Ok(Built {
            component: out.to_path_buf(),
            bytes: component.len() as u64,
            sha256,
            took: started.elapsed(),
            kept: false,
        })
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    inputs::hex(&Sha256::digest(bytes))
}

/// A component that was built.
#[derive(Clone, Debug)]
pub struct Built {
    /// Its path.
    pub component: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// The sha256 of its bytes (hex), which the host's compile cache keys it by.
    pub sha256: String,
    /// How long the build took.
    pub took: Duration,
    /// Whether the component was kept from the last build, nothing it reads having changed.
    pub kept: bool,
}

/// Installs the toolchain of `language` into the per-user directory (JavaScript: npm
/// packages; Python: a virtual environment; Rust: the `wasm32-wasip2` target, with rustup).
/// C's comes from the system's packages: this checks it is there and says which to install
/// if not.
pub fn install(sdk: &Sdk, language: Language) -> Result<()> {
    match language {
        Language::Rust => rust::install(sdk),
        Language::C => c::Clang::probe(&sdk.probe_dir(language))
            .map(drop)
            .map_err(|why| {
                anyhow::anyhow!(
                    "{why} (the C toolchain comes from the system: {})",
                    c::INSTALL_HINT
                )
            }),
        Language::Js => js::install(sdk),
        Language::Python => python::install(sdk),
    }
}

/// Finds the toolchain of `language` and checks that it works, using `scratch` for test
/// builds. `Err` says what is missing and how to install it.
pub fn probe(sdk: &Sdk, language: Language, scratch: &Path) -> Result<Toolchain, String> {
    match language {
        Language::Rust => rust::Cargo::probe(sdk).map(Toolchain::Rust),
        Language::C => c::Clang::probe(scratch).map(Toolchain::C),
        Language::Js => js::Jco::probe(sdk).map(Toolchain::Js),
        Language::Python => python::ComponentizePy::probe(sdk).map(Toolchain::Python),
    }
}
