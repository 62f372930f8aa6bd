//! The SDK tree a build reads (the one embedded in the tool, or the checkout), and the
//! languages it builds.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::Context;
use sha2::Digest;
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
    /// Rust, with cargo and the `wasm32-wasip2` target.
    Rust,
    /// C, with clang + wasi-libc.
    C,
    /// JavaScript, with jco componentize (componentize-js, StarlingMonkey).
    Js,
    /// Python, with componentize-py.
    Python,
}

impl Language {
    /// Every language, in the order the docs list them.
    pub const ALL: [Language; 4] = [Language::Rust, Language::C, Language::Js, Language::Python];

    /// The name used on the command line and in directory names (`rust`, `c`, `js`, `python`).
    pub fn key(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::C => "c",
            Language::Js => "js",
            Language::Python => "python",
        }
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Language::Rust => "Rust",
            Language::C => "C",
            Language::Js => "JavaScript",
            Language::Python => "Python",
        })
    }
}

/// An SDK tree (`wit/`, `sdk/<language>/`, `examples/`) and the per-user directory its
/// toolchains and intermediate files live in.
#[derive(Clone, Debug)]
pub struct Sdk {
    root: PathBuf,
    home: PathBuf,
}

impl Sdk {
    /// The SDK embedded in this tool, unpacked into the per-user directory
    /// ([`home`](crate::home)): what an installed tool builds with, from any directory.
    pub fn installed() -> anyhow::Result<Sdk> {
        let home = crate::home::home()?;
        let root = crate::home::unpacked_sdk(&home)?;
        Ok(Sdk { root, home })
    }

    /// The checkout this tool was built from, for the commands that regenerate its files.
    pub fn in_repository() -> anyhow::Result<Sdk> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        Ok(Sdk {
            root: std::fs::canonicalize(&root).unwrap_or(root),
            home: crate::home::home()?,
        })
    }

    /// The SDK tree at `root`, with toolchains and work files below `home`.
    pub fn at(root: impl Into<PathBuf>, home: impl Into<PathBuf>) -> Sdk {
        Sdk {
            root: root.into(),
            home: home.into(),
        }
    }

    /// The root of the SDK tree.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The per-user directory.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Where the npm packages of the JavaScript toolchain are installed (`node_modules/`).
    pub fn js_toolchain(&self) -> PathBuf {
        self.home.join("toolchains").join("js")
    }

    /// The Python virtual environment componentize-py is installed in.
    pub fn python_venv(&self) -> PathBuf {
        self.home.join("toolchains").join("python").join("venv")
    }

    /// Scratch space for probing toolchains.
    pub fn probe_dir(&self, language: Language) -> PathBuf {
        self.home.join("probe").join(language.key())
    }

    /// Where the intermediate files of building `plugin_dir` go (one directory per plugin
    /// directory, so a plugin's own directory gets only its component).
    pub fn work_dir(&self, plugin_dir: &Path) -> PathBuf {
        let absolute = std::path::absolute(plugin_dir).unwrap_or_else(|_| plugin_dir.into());
        let digest = sha2::Sha256::digest(absolute.as_os_str().as_encoded_bytes());
        self.home
            .join("work")
            .join(crate::inputs::hex(&digest[..8]))
    }

    /// The `accel:plugin` WIT package plugins of `language` build against: the newest for
    /// Rust, whose SDK exports `inventory`; 0.2.0 for the others, whose SDKs do not yet (the
    /// host serves both).
    pub fn wit_dir(&self, language: Language) -> PathBuf {
        match language {
            Language::Rust => self.root.join("wit"),
            Language::C | Language::Js | Language::Python => self.root.join("wit/0.2.0"),
        }
    }

    /// The `accel:plugin` version plugins of `language` build against, as its WIT declares it.
    pub fn wit_version(&self, language: Language) -> anyhow::Result<String> {
        let dir = self.wit_dir(language);
        let (resolve, world) = plugin_world(&dir)?;
        resolve.worlds[world]
            .package
            .and_then(|package| resolve.packages[package].name.version.as_ref())
            .map(ToString::to_string)
            .with_context(|| format!("the WIT package in {} has no version", dir.display()))
    }

    /// The SDK of one language: `sdk/rust`, `sdk/c`, `sdk/js` or `sdk/python`.
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
}
