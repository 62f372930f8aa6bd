//! `accelhost-sdk`: scaffolds accelhost plugins in Rust, C, JavaScript and Python, builds them
//! into components next to their sources, and installs and shows each language's toolchain.
//! The SDK it builds with is embedded in it, so it works from any directory.

mod distribute;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use accelhost_sdk_tool::exports::Export;
use accelhost_sdk_tool::scaffold::{self, Starter};
use accelhost_sdk_tool::{Language, Sdk, Toolchain, probe};
use anyhow::Context;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    version,
    about = "Write accelhost plugins in Rust, C, JavaScript and Python: scaffold, build, install toolchains, sign and push",
    after_help = "A plugin in four steps:\n  \
        accelhost-sdk toolchains --install js     # once: the language's toolchain\n  \
        accelhost-sdk new js my-plugin            # a plugin that builds and loads as it is\n  \
        cd my-plugin && accelhost-sdk build       # my-plugin.wasm, next to plugin.js\n  \
        accelhost list                            # ./accelhost.json loads it\n\n\
        Signed and pushed to a registry:\n  \
        accelhost-sdk keygen --out release        # once: release.key, and release.pub to share\n  \
        accelhost-sdk push my-plugin.wasm oci://REGISTRY/plugins/my-plugin:1.0 --key release.key\n\n\
        The SDK (WIT, helpers, templates) is inside this tool; it unpacks, with the toolchains \
        it installs and its build files, into $ACCELHOST_SDK_HOME (default \
        $XDG_CACHE_HOME/accelhost-sdk, else ~/.cache/accelhost-sdk)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create a plugin directory that builds and loads as it is: the language's template (one
    /// device to open and close) or the NLB0 example (MMIO, buffers and reset on the emulated
    /// NLB0 card), with an accelhost.json that loads what `build` writes.
    New {
        /// rust, c, js or python.
        language: Language,
        /// The directory to create (it must not exist, or be empty); its name names the plugin.
        dir: PathBuf,
        /// What to start from.
        #[arg(long, value_enum, default_value = "template")]
        from: Starter,
    },
    /// Build plugins into components: each DIR (default: the current directory) becomes
    /// DIR/<DIR's name>.wasm. The language comes from the files (Cargo.toml, plugin.js, app.py,
    /// *.c). Before
    /// building, it lists the exports the plugin overrides and warns about near misses. A
    /// plugin whose sources, SDK and toolchain did not change keeps its component (the same
    /// bytes: the host's compile cache still has it); delete the .wasm to force a build.
    Build {
        /// Plugin directories.
        dirs: Vec<PathBuf>,
        /// The language, when the files do not say.
        #[arg(long)]
        lang: Option<Language>,
        /// Where to write the component (only with one DIR).
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
    /// Show each language's toolchain and version, or what is missing; with --install, install
    /// the given languages' (default: all) into the per-user directory first.
    Toolchains {
        /// Install the toolchains: the pinned Rust with wasm32-wasip2 (rustup), npm packages
        /// for JavaScript, a virtual environment with componentize-py for Python (from the
        /// package registries only); C's come from the system (apt), which this checks.
        #[arg(long)]
        install: bool,
        /// Which languages (default: all).
        languages: Vec<Language>,
    },
    /// Write the C bindings wit-bindgen generates from the WIT (the builds generate their own).
    CBindings {
        /// The directory to write plugin.h, plugin.c and plugin_component_type.o into.
        #[arg(short, long)]
        out_dir: PathBuf,
    },
    /// In an accelhost checkout: regenerate the TypeScript types of wit/ in sdk/js/generated
    /// (as `npm run types`).
    JsTypes,
    /// Make a signing key pair: NAME.key (private) and NAME.pub (for the operators' configs
    /// and `accelhost pull --key`).
    #[command(after_help = distribute::KEYGEN_HELP)]
    Keygen(distribute::KeygenArgs),
    /// Sign plugin files: FILE.sig beside each, as `cosign sign-blob --key` writes it.
    #[command(after_help = distribute::SIGN_HELP)]
    Sign(distribute::SignArgs),
    /// Push a plugin component to an OCI registry (the wasm OCI artifact layout), signed with
    /// --key as cosign signs images.
    #[command(after_help = distribute::PUSH_HELP)]
    Push(distribute::PushArgs),
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::New {
            language,
            dir,
            from,
        } => {
            let sdk = Sdk::installed()?;
            let written = scaffold::new_plugin(&sdk, language, from, &dir)?;
            for file in &written {
                println!("{}", file.display());
            }
            println!(
                "next: cd {} && accelhost-sdk build && accelhost list",
                dir.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Build { dirs, lang, out } => {
            let sdk = Sdk::installed()?;
            let dirs = if dirs.is_empty() {
                vec![PathBuf::from(".")]
            } else {
                dirs
            };
            if out.is_some() && dirs.len() > 1 {
                anyhow::bail!("--out names one component: give one directory with it");
            }
            // Each language's toolchain is probed, and its exports read, once for all dirs.
            let mut ready = std::collections::HashMap::new();
            for dir in &dirs {
                let language = match lang {
                    Some(language) => language,
                    None => scaffold::detect_language(dir)?,
                };
                let (toolchain, exports) = match ready.entry(language) {
                    std::collections::hash_map::Entry::Occupied(found) => found.into_mut(),
                    std::collections::hash_map::Entry::Vacant(slot) => {
                        slot.insert(prepare(&sdk, language)?)
                    }
                };
                build(&sdk, toolchain, exports, dir, out.as_deref())?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Toolchains { install, languages } => {
            let sdk = Sdk::installed()?;
            let languages = if languages.is_empty() {
                Language::ALL.to_vec()
            } else {
                languages
            };
            let mut missing = false;
            for language in languages {
                if install && let Err(err) = accelhost_sdk_tool::install(&sdk, language) {
                    eprintln!("error: {language}: {err:#}");
                    missing = true;
                    continue;
                }
                match probe(&sdk, language, &sdk.probe_dir(language)) {
                    Ok(toolchain) => println!(
                        "{language}: {}\n  {}",
                        toolchain.versions(),
                        toolchain.reproducibility()
                    ),
                    Err(why) => {
                        missing = true;
                        println!("{language}: missing: {why}");
                    }
                }
            }
            Ok(if missing {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::CBindings { out_dir } => {
            let sdk = Sdk::installed()?;
            for file in
                accelhost_sdk_tool::c::generate_bindings(&sdk.wit_dir(Language::C), &out_dir)?
            {
                println!("{}", file.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::JsTypes => {
            let sdk = Sdk::in_repository()?;
            if !sdk.js_dir().join("package.json").is_file() {
                anyhow::bail!(
                    "js-types regenerates the checkout this tool was built from, and {} is gone",
                    sdk.root().display()
                );
            }
            let jco = accelhost_sdk_tool::js::Jco::probe(&sdk)
                .map_err(|why| anyhow::anyhow!("jco is missing: {why}"))?;
            let out = sdk.js_dir().join("generated");
            accelhost_sdk_tool::js::generate_types(&sdk, &jco, &out)?;
            println!("{}", out.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Keygen(args) => distribute::keygen(args).map(|()| ExitCode::SUCCESS),
        Command::Sign(args) => distribute::sign(args).map(|()| ExitCode::SUCCESS),
        Command::Push(args) => distribute::push(args).map(|()| ExitCode::SUCCESS),
    }
}

/// The toolchain of `language`, found and reported, and the exports a plugin of it may define.
fn prepare(sdk: &Sdk, language: Language) -> anyhow::Result<(Toolchain, Vec<Export>)> {
    let toolchain = probe(sdk, language, &sdk.probe_dir(language))
        .map_err(|why| anyhow::anyhow!("the {language} toolchain is missing: {why}"))?;
    println!(
        "{language}: {}\n  {}",
        toolchain.versions(),
        toolchain.reproducibility()
    );
    let exports = accelhost_sdk_tool::exports::exports(&sdk.wit_dir(language), language)?;
    Ok((toolchain, exports))
}

/// Builds the plugin in `dir` into `out` (default: `dir/<name>.wasm`), printing what it
/// overrides, the component and the config entry that loads it.
fn build(
    sdk: &Sdk,
    toolchain: &Toolchain,
    exports: &[Export],
    dir: &Path,
    out: Option<&Path>,
) -> anyhow::Result<()> {
    let language = toolchain.language();
    let dir =
        std::fs::canonicalize(dir).with_context(|| format!("{} does not exist", dir.display()))?;
    let name = scaffold::plugin_name(&dir)?;
    let report = accelhost_sdk_tool::exports::check(language, &dir, exports)?;
    println!(
        "  {}: overrides {} (the SDK's defaults answer the other exports)",
        dir.display(),
        if report.defined.is_empty() {
            "no export".to_string()
        } else {
            let wit: Vec<&str> = exports
                .iter()
                .filter(|e| report.defined.contains(&e.name))
                .map(|e| e.wit.as_str())
                .collect();
            wit.join(", ")
        }
    );
    for finding in &report.findings {
        eprintln!("warning: {finding}");
    }
    let out = match out {
        Some(out) => std::path::absolute(out).context("the output path")?,
        None => dir.join(format!("{name}.wasm")),
    };
    let built = toolchain.build(sdk, &dir, &out, &sdk.work_dir(&dir))?;
    println!(
        "  -> {} ({} bytes, sha256 {}, {})",
        built.component.display(),
        built.bytes,
        built.sha256,
        if built.kept {
            "unchanged since its last build: kept".to_string()
        } else {
            format!("built in {:.1} s", built.took.as_secs_f64())
        }
    );
    precompile(sdk, &dir, &name, &built.component)?;
    println!(
        "  load it with this entry in a config's \"plugins\":\n    {}",
        scaffold::config_entry(&name, &built.component)
    );
    if dir.join(scaffold::CONFIG).is_file() && out.parent() == Some(dir.as_path()) {
        println!(
            "  {} loads it: run `accelhost list` in {}",
            scaffold::CONFIG,
            dir.display()
        );
    }
    Ok(())
}

/// Has `accelhost check-config` compile `component` into the host's compile cache now, so the
/// first `accelhost list` after a build loads in milliseconds instead of compiling for
/// seconds (JavaScript and Python components bundle an interpreter). `accelhost` is
/// `$ACCELHOST_BIN`, else the one on PATH; without one, the first load compiles.
fn precompile(sdk: &Sdk, dir: &Path, name: &str, component: &Path) -> anyhow::Result<()> {
    let accelhost = std::env::var_os("ACCELHOST_BIN").unwrap_or_else(|| "accelhost".into());
    let config = sdk.work_dir(dir).join("precompile.json");
    std::fs::create_dir_all(config.parent().expect("a work directory"))?;
    std::fs::write(
        &config,
        format!(
            "{{ \"plugins\": [{}] }}\n",
            scaffold::config_entry(name, component)
        ),
    )?;
    let started = std::time::Instant::now();
    let output = match std::process::Command::new(&accelhost)
        .arg("check-config")
        .arg(&config)
        .stderr(std::process::Stdio::inherit())
        .output()
    {
        Ok(output) => output,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            println!(
                "  note: `{}` is not on PATH: the first load compiles the component",
                accelhost.to_string_lossy()
            );
            return Ok(());
        }
        Err(err) => return Err(err).context("running accelhost check-config"),
    };
    if !output.status.success() {
        anyhow::bail!(
            "accelhost refuses {}:\n{}",
            component.display(),
            String::from_utf8_lossy(&output.stdout)
        );
    }
    println!(
        "  precompiled into the host's compile cache by `{} check-config` in {:.1} s",
        accelhost.to_string_lossy(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
