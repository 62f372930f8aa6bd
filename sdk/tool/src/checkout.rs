//! The accelhost checkout the SDK lives in, and the languages it builds.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::Context;
use wit_bindgen_core::wit_parser::{Resolve, WorldId};

/// The world every plugin targets.
pub const WORLD: &str = "plugin";

/// The WIT package in `wit_dir`, parsed, and its [`WORLD`].
pub fn plugin_world(wit_dir: &Path) -> anyhow::Result<(Resolve, WorldId)> {
    let mut resolve = Resolve::default();
    let (package, _) = resolve
        .push_dir(wit_dir)
        .with_context(|| format!("parsing the WIT package in {}", wit_dir.display()))?;
    let world = resolve
        .select_world(&[package], Some(WORLD))
        .with_context(|| format!("finding the world '{WORLD}' in {}", wit_dir.display()))?;
    Ok((resolve, world))
}

/// The languages this tool builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Language {
    /// C, with clang + wasi-libc.
    C,
    /// JavaScript, with jco componentize (componentize-js, StarlingMonkey).
    Js,
    /// Python, with componentize-py.
    Python,
}

impl Language {
    /// Every language, in the order the docs list them.
    pub const ALL: [Language; 3] = [Language::C, Language::Js, Language::Python];

    /// The name used on the command line and in directory names (`c`, `js`, `python`).
    pub fn key(self) -> &'static str {
        match self {
            Language::C => "c",
            Language::Js => "js",
            Language::Python => "python",
        }
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Language::C => "C",
            Language::Js => "JavaScript",
            Language::Python => "Python",
        })
    }
}

/// The accelhost checkout the SDK lives in: `wit/`, `sdk/<language>/` and `examples/`.
#[derive(Clone, Debug)]
pub struct Sdk {
    root: PathBuf,
}

impl Sdk {
    /// The checkout this tool was built from.
    pub fn in_repository() -> Sdk {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        Sdk::at(std::fs::canonicalize(&root).unwrap_or(root))
    }

    /// The checkout at `root`.
    pub fn at(root: impl Into<PathBuf>) -> Sdk {
        Sdk { root: root.into() }
    }

    /// The repository root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The `accel:plugin` WIT package.
    pub fn wit_dir(&self) -> PathBuf {
        self.root.join("wit")
    }

    /// The SDK of one language: `sdk/c`, `sdk/js` or `sdk/python`.
    pub fn language_dir(&self, language: Language) -> PathBuf {
        self.root.join("sdk").join(language.key())
    }

    /// `sdk/c`.
    pub fn c_dir(&self) -> PathBuf {
        self.language_dir(Language::C)
    }

    /// `sdk/js`.
    pub fn js_dir(&self) -> PathBuf {
        self.language_dir(Language::Js)
    }

    /// `sdk/python`.
    pub fn python_dir(&self) -> PathBuf {
        self.language_dir(Language::Python)
    }

    /// The starting point a new plugin copies: `sdk/<language>/template`.
    pub fn template_dir(&self, language: Language) -> PathBuf {
        self.language_dir(language).join("template")
    }

    /// The NLB0 example: `examples/<language>-nlb0`.
    pub fn example_dir(&self, language: Language) -> PathBuf {
        self.root
            .join("examples")
            .join(format!("{}-nlb0", language.key()))
    }

    /// Where builds go unless told otherwise: `accelhost-sdk/` in the cargo target directory
    /// (`$CARGO_TARGET_DIR`, else `target/` of the checkout).
    pub fn default_out_dir(&self) -> PathBuf {
        std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .map(|dir| {
                if dir.is_relative() {
                    self.root.join(dir)
                } else {
                    dir
                }
            })
            .unwrap_or_else(|| self.root.join("target"))
            .join("accelhost-sdk")
    }
}
