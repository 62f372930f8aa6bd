//! `accelhost-sdk`: builds accelhost plugins written in C, JavaScript and Python into
//! components (`cargo run -p accelhost-sdk-tool -- build c`), and shows what each language's
//! toolchain is.

use std::path::PathBuf;
use std::process::ExitCode;

use accelhost_sdk_tool::{Language, Sdk, probe};
use anyhow::Context;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    version,
    about = "Build accelhost plugins written in C, JavaScript and Python"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build plugins into components: the language's template and NLB0 example when no
    /// directory is given. Each DIR becomes OUT_DIR/<language>/<DIR's name>.wasm. A plugin
    /// whose sources, SDK and toolchain did not change since its last build keeps its
    /// component (delete the .wasm to force a build).
    Build {
        /// c, js or python.
        language: Language,
        /// Plugin directories (C: its *.c files; JavaScript: plugin.js; Python: app.py).
        dirs: Vec<PathBuf>,
        /// Where components go (default: accelhost-sdk/ in the cargo target directory).
        #[arg(long)]
        out_dir: Option<PathBuf>,
    },
    /// Show each language's toolchain and version, or what is missing.
    Toolchains,
    /// Write the C bindings wit-bindgen generates from wit/ (the builds generate their own).
    CBindings {
        /// The directory to write plugin.h, plugin.c and plugin_component_type.o into.
        #[arg(short, long)]
        out_dir: PathBuf,
    },
    /// Regenerate the TypeScript types of wit/ in sdk/js/generated (as `npm run types`).
    JsTypes,
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
    let sdk = Sdk::in_repository();
    let scratch = sdk.default_out_dir().join("probe");
    match cli.command {
        Command::Build {
            language,
            dirs,
            out_dir,
        } => {
            let toolchain = probe(&sdk, language, &scratch.join(language.key()))
                .map_err(|why| anyhow::anyhow!("the {language} toolchain is missing: {why}"))?;
            println!(
                "{language}: {}\n  {}",
                toolchain.versions(),
                toolchain.reproducibility()
            );
            let dirs = if dirs.is_empty() {
                vec![sdk.template_dir(language), sdk.example_dir(language)]
            } else {
                dirs
            };
            let out_dir = out_dir
                .unwrap_or_else(|| sdk.default_out_dir())
                .join(language.key());
            let exports = accelhost_sdk_tool::exports::exports(&sdk.wit_dir(), language)?;
            for dir in dirs {
                let name = std::fs::canonicalize(&dir)
                    .with_context(|| format!("{} does not exist", dir.display()))?
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "plugin".into());
                let report = accelhost_sdk_tool::exports::check(language, &dir, &exports)?;
                println!(
                    "  {}: overrides {} (the other exports answer unsupported)",
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
                let out = out_dir.join(format!("{name}.wasm"));
                let work = out_dir.join("work").join(&name);
                let built = toolchain.build(&sdk, &dir, &out, &work)?;
                println!(
                    "  {} -> {} ({} bytes, sha256 {}, {})",
                    dir.display(),
                    built.component.display(),
                    built.bytes,
                    built.sha256,
                    if built.kept {
                        "unchanged since its last build: kept".to_string()
                    } else {
                        format!("built in {:.1} s", built.took.as_secs_f64())
                    }
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Toolchains => {
            let mut missing = false;
            for language in Language::ALL {
                match probe(&sdk, language, &scratch.join(language.key())) {
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
            for file in accelhost_sdk_tool::c::generate_bindings(&sdk.wit_dir(), &out_dir)? {
                println!("{}", file.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::JsTypes => {
            let jco = accelhost_sdk_tool::js::Jco::probe(&sdk)
                .map_err(|why| anyhow::anyhow!("jco is missing: {why}"))?;
            let out = sdk.js_dir().join("generated");
            accelhost_sdk_tool::js::generate_types(&sdk, &jco, &out)?;
            println!("{}", out.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}
