//! Running the external toolchains (clang, node, componentize-py) with errors that name the
//! tool, the file it worked on and what it printed.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

use anyhow::{Context, Result, bail};

/// Runs `command` and returns its output when it succeeds. `what` says what the step does
/// ("compiling examples/c-nlb0/plugin.c"); a failure names it, the program and its output.
pub fn run(command: &mut Command, what: &str) -> Result<Output> {
    let program = command.get_program().to_string_lossy().into_owned();
    let output = command.output().map_err(|err| {
        if err.kind() == std::io::ErrorKind::NotFound {
            anyhow::anyhow!("{what}: `{program}` was not found on PATH (see sdk/README.md)")
        } else {
            anyhow::anyhow!("{what}: cannot run `{program}`: {err}")
        }
    })?;
    if !output.status.success() {
        bail!(
            "{what}: `{}` failed ({}):\n{}{}",
            command_line(command),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(output)
}

/// The first line a `--version` run of `program` prints, or why it could not be run.
pub fn version_line(program: &Path, args: &[&str]) -> Result<String, String> {
    let output = Command::new(program).args(args).output().map_err(|err| {
        if err.kind() == std::io::ErrorKind::NotFound {
            format!("`{}` is not installed", program.display())
        } else {
            format!("`{}` cannot run: {err}", program.display())
        }
    })?;
    if !output.status.success() {
        return Err(format!(
            "`{} {}` failed: {}",
            program.display(),
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string())
}

/// The command as a shell would show it, for error messages.
fn command_line(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(OsStr::to_string_lossy)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Reads a file, naming it when that fails.
pub fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

/// Writes a file (and its directory), naming it when that fails.
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// A fresh, empty directory at `dir`.
pub fn fresh_dir(dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("emptying {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
}

/// Copies the `.py` files of `from` and its packages (not `template/`, virtual environments or
/// caches) into `to`, with an empty `__pycache__` in each directory.
pub fn copy_python_tree(from: &Path, to: &Path) -> Result<()> {
    let cache = to.join("__pycache__");
    std::fs::create_dir_all(&cache).with_context(|| format!("creating {}", cache.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let path = entry
            .with_context(|| format!("reading {}", from.display()))?
            .path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if path.is_dir() {
            let skipped = name.starts_with('.') || name == "__pycache__" || name == "template";
            if !skipped && path.join("__init__.py").is_file() {
                copy_python_tree(&path, &to.join(&*name))?;
            }
        } else if name.ends_with(".py") {
            std::fs::copy(&path, to.join(&*name))
                .with_context(|| format!("copying {} to {}", path.display(), to.display()))?;
        }
    }
    Ok(())
}

/// Sets the modification time of `path` and, for a directory, of everything under it.
pub fn set_mtimes(path: &Path, mtime: std::time::SystemTime) -> Result<()> {
    if path.is_dir() {
        for entry in
            std::fs::read_dir(path).with_context(|| format!("reading {}", path.display()))?
        {
            set_mtimes(
                &entry
                    .with_context(|| format!("reading {}", path.display()))?
                    .path(),
                mtime,
            )?;
        }
    }
    // A directory's own time last: setting its entries' does not change it, creating them did.
    std::fs::File::open(path)
        .and_then(|file| {
            file.set_times(
                std::fs::FileTimes::new()
                    .set_accessed(mtime)
                    .set_modified(mtime),
            )
        })
        .with_context(|| format!("setting the modification time of {}", path.display()))
}
