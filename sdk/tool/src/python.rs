//! Python plugins: the module `app.py` and the SDK module `accelhost.py` (`sdk/python`),
//! componentized by componentize-py, which bundles CPython and generates the `wit_world`
//! bindings from `wit/` at build time.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};

use crate::checkout::{Language, Sdk, WORLD};
use crate::process::{self, run};

/// The module a Python plugin's directory must hold (`app.py`).
pub const APP_MODULE: &str = "app";
/// The environment variable that names componentize-py.
pub const COMPONENTIZE_PY_ENV: &str = "ACCELHOST_COMPONENTIZE_PY";

/// Why a Python build is not byte-reproducible ([`crate::Reproducibility`]).
pub const NOT_REPRODUCIBLE: &str = "componentize-py 0.25.1 pre-initializes CPython with the \
     build machine's randomness (the string hash seed, which orders every dict and set), clocks \
     and the modification times of the directories it extracts and generates, and has no option \
     to fix them; the snapshot keeps the heap they shaped";

/// The modification time of the copies componentize-py imports: CPython's import system keeps
/// each directory's mtime in the snapshot, so the copies get a fixed one (1980-01-01, the ZIP
/// epoch) rather than the time of the build.
const SOURCE_MTIME: Duration = Duration::from_secs(315_532_800);

/// Compiles each file given, printing the first syntax error as `file:line:column: message`
/// with the offending line and a caret, as compilers do.
const SYNTAX_CHECK: &str = r#"
import sys
for path in sys.argv[1:]:
    try:
        with open(path, encoding="utf-8") as source:
            compile(source.read(), path, "exec")
    except SyntaxError as err:
        line = (err.text or "").rstrip("\n")
        caret = " " * max((err.offset or 1) - 1, 0) + "^"
        sys.stderr.write(f"{err.filename}:{err.lineno}:{err.offset}: {type(err).__name__}: {err.msg}\n    {line}\n    {caret}\n")
        sys.exit(1)
"#;

/// componentize-py, at the version `sdk/python/requirements.txt` pins.
#[derive(Clone, Debug)]
pub struct ComponentizePy {
    program: PathBuf,
    /// `componentize-py --version`.
    pub version: String,
}

impl ComponentizePy {
    /// Finds componentize-py: `$ACCELHOST_COMPONENTIZE_PY`, else the per-user virtual
    /// environment ([`Sdk::python_venv`]), else `componentize-py` on PATH; checks it is the
    /// pinned version.
    pub fn probe(sdk: &Sdk) -> Result<ComponentizePy, String> {
        let venv = sdk.python_venv().join("bin/componentize-py");
        let program = std::env::var_os(COMPONENTIZE_PY_ENV)
            .map(PathBuf::from)
            .or_else(|| venv.is_file().then_some(venv))
            .unwrap_or_else(|| PathBuf::from("componentize-py"));
        let version = process::version_line(&program, &["--version"]).map_err(|why| {
            format!("{why}; install it with `accelhost-sdk toolchains --install python`")
        })?;
        let requirements = sdk.python_dir().join("requirements.txt");
        let text = std::fs::read_to_string(&requirements)
            .map_err(|e| format!("{}: {e}", requirements.display()))?;
        let pinned = text
            .lines()
            .find_map(|line| line.trim().strip_prefix("componentize-py=="))
            .ok_or_else(|| format!("{} does not pin componentize-py", requirements.display()))?;
        if version.strip_prefix("componentize-py ") != Some(pinned) {
            return Err(format!(
                "`{}` is {version}, but {} pins {pinned}",
                program.display(),
                requirements.display()
            ));
        }
        Ok(ComponentizePy { program, version })
    }

    /// Compiles the plugin's modules with the Python next to componentize-py, so a syntax
    /// error names the author's file and line in a second, not componentize-py's copy
    /// (`/0/app.py`) after its pre-initialization.
    fn check_syntax(&self, plugin_dir: &Path) -> Result<()> {
        let python = self
            .program
            .parent()
            .map(|bin| bin.join("python3"))
            .filter(|p| p.is_file())
            .unwrap_or_else(|| PathBuf::from("python3"));
        let mut sources: Vec<PathBuf> = std::fs::read_dir(plugin_dir)
            .with_context(|| format!("reading {}", plugin_dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "py"))
            .collect();
        sources.sort();
        let output = Command::new(&python)
            .args(["-c", SYNTAX_CHECK])
            .args(&sources)
            .output()
            .with_context(|| format!("running {} to check the syntax", python.display()))?;
        if !output.status.success() {
            anyhow::bail!("{}", String::from_utf8_lossy(&output.stderr).trim_end());
        }
        Ok(())
    }

    /// Componentizes `plugin_dir/app.py` with the SDK module into `out`.
    pub fn build(&self, sdk: &Sdk, plugin_dir: &Path, out: &Path, work: &Path) -> Result<()> {
        process::fresh_dir(work)?;
        // componentize-py runs in `work`: the paths it is given must not be relative to here.
        let work = &std::path::absolute(work).context("the work directory")?;
        let out = &std::path::absolute(out).context("the output path")?;
        let app = plugin_dir.join(format!("{APP_MODULE}.py"));
        if !app.is_file() {
            anyhow::bail!(
                "a Python plugin needs {}: the module that defines its exports",
                app.display()
            );
        }
        if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        self.check_syntax(plugin_dir)?;
        // componentize-py imports the app to pre-initialize it, and the Python it runs writes
        // __pycache__ next to the modules: it works on copies, so the source tree stays clean.
        // The copies have their __pycache__ already and a fixed mtime, so the directory mtimes
        // CPython keeps in the snapshot are not the time of the build.
        let app_copy = work.join("app");
        let sdk_copy = work.join("sdk");
        process::copy_python_tree(plugin_dir, &app_copy)?;
        process::copy_python_tree(&sdk.python_dir(), &sdk_copy)?;
        // componentize-py adds a virtual environment's site-packages to the path, else those of
        // the `python3` on PATH: the build machine's packages (and their directory's mtime)
        // would enter the component. It gets an empty one.
        let venv = work.join("venv");
        std::fs::create_dir_all(venv.join("lib/site-packages"))
            .with_context(|| format!("creating {}", venv.display()))?;
        let mtime = SystemTime::UNIX_EPOCH + SOURCE_MTIME;
        for dir in [&app_copy, &sdk_copy, &venv] {
            process::set_mtimes(dir, mtime)?;
        }
        let mut command = Command::new(&self.program);
        command
            .arg("--wit-path")
            .arg(sdk.wit_dir(Language::Python))
            .args(["--world", WORLD, "--quiet", "componentize"])
            .arg("--python-path")
            .arg(&app_copy)
            .arg("--python-path")
            .arg(&sdk_copy)
            .arg(APP_MODULE)
            .arg("--output")
            .arg(out)
            .env("VIRTUAL_ENV", &venv)
            .current_dir(work);
        run(
            &mut command,
            &format!("componentizing {} with componentize-py", app.display()),
        )?;
        Ok(())
    }
}

/// Installs componentize-py as `sdk/python/requirements.txt` pins it into the per-user
/// virtual environment, unless the same requirements were installed there already.
pub fn install(sdk: &Sdk) -> Result<()> {
    let venv = sdk.python_venv();
    let requirements = sdk.python_dir().join("requirements.txt");
    let wanted = std::fs::read(&requirements)
        .with_context(|| format!("reading {}", requirements.display()))?;
    let installed = venv.join(INSTALLED_REQUIREMENTS);
    if std::fs::read(&installed).is_ok_and(|done| done == wanted) {
        println!("python: {} is up to date", venv.display());
        return Ok(());
    }
    if !venv.join("bin/pip").is_file() {
        println!("python: creating {}", venv.display());
        let mut create = Command::new("python3");
        create.args(["-m", "venv"]).arg(&venv);
        run(&mut create, "creating the Python virtual environment")?;
    }
    println!("python: pip install -r {}", requirements.display());
    let mut pip = Command::new(venv.join("bin/pip"));
    pip.args(["install", "--quiet", "--disable-pip-version-check", "-r"])
        .arg(&requirements);
    run(&mut pip, "installing componentize-py with pip")?;
    process::write(&installed, &wanted)
}

/// The copy of the requirements the virtual environment was last installed from.
const INSTALLED_REQUIREMENTS: &str = ".installed-requirements.txt";
