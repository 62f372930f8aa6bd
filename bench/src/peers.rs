//! `accelhost bench --peers`: one C program (`bench/peers/peer.c`) run through accelhost's
//! OpenCL platform and through every other OpenCL implementation found, in turns within the
//! same minutes, and accelhost's figures as ratios of each peer's; then the same program's
//! kernels from OpenCL C source (vadd, a sum through local memory and barriers, a tiled
//! matrix multiply), their build and run times beside each peer's. The program is compiled
//! here against the system's ICD loader, so every implementation runs the same binary; the
//! loader is pointed at one implementation per run (`OCL_ICD_VENDORS`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::measure::median;
use crate::report::{print_table, progress};

/// The program every implementation runs.
const PEER_SOURCE: &str = include_str!("../peers/peer.c");

/// Where Linux's ICD loaders find the registered implementations (`*.icd` files naming a
/// library), unless `$OCL_ICD_VENDORS` names another directory.
const VENDORS_DIR: &str = "/etc/OpenCL/vendors";

/// accelhost's ICD library's file name.
const ACCELHOST_ICD: &str = "libaccelhost_opencl.so";

/// How long one run of the program may take before it is killed and reported.
const RUN_DEADLINE: Duration = Duration::from_secs(300);

/// What the accelhost side runs on: the XRT card of the embedded default, alone, with room
/// for the 64 MiB transfer buffers.
const ACCELHOST_CONFIG: &str = r#"{
  "devices": [{ "id": "xocl0", "family": "xocl" }],
  "plugins": [{
    "name": "xocl",
    "module": "builtin:xocl",
    "grants": { "devices": ["emu:xocl0"], "dma_memory_mib": 1024 }
  }]
}"#;

/// What `--peers` takes.
pub struct PeersArgs<'a> {
    /// accelhost's ICD library, if given on the command line.
    pub opencl_icd: Option<&'a Path>,
    /// Further implementations' ICD libraries, beside the registered ones.
    pub peer_icds: &'a [PathBuf],
    /// More rounds.
    pub full: bool,
    /// Print the tables as Markdown.
    pub markdown: bool,
}

/// One OpenCL implementation the program runs through.
#[derive(Clone, Debug, PartialEq)]
struct Implementation {
    /// What the tables call it: the `.icd` file's or the library's name.
    name: String,
    /// What `OCL_ICD_VENDORS` is set to: an `.icd` file or a library.
    vendors: PathBuf,
}

/// The figures one run of the program prints.
#[derive(Clone, Debug, PartialEq)]
struct Figures {
    device: String,
    context_us: f64,
    write_gbps: f64,
    read_gbps: f64,
    launch_p50_us: f64,
    launch_p99_us: f64,
    queued_per_s: f64,
}

/// Whether a figure is better high or low.
#[derive(Clone, Copy)]
enum Better {
    Higher,
    Lower,
}

/// One compared figure: its column title, how it is read, which way is better.
type Compared = (&'static str, fn(&Figures) -> f64, Better);

/// The compared figures.
const COMPARED: [Compared; 6] = [
    ("context creation µs", |f| f.context_us, Better::Lower),
    ("write GB/s (64 MiB)", |f| f.write_gbps, Better::Higher),
    ("read GB/s (64 MiB)", |f| f.read_gbps, Better::Higher),
    ("launch→finish p50 µs", |f| f.launch_p50_us, Better::Lower),
    ("launch→finish p99 µs", |f| f.launch_p99_us, Better::Lower),
    ("queued launches /s", |f| f.queued_per_s, Better::Higher),
];

/// What `peer kernels` prints: each kernel's build and run, in milliseconds.
#[derive(Clone, Debug, PartialEq)]
struct KernelFigures {
    device: String,
    /// Per kernel of [`KERNELS`]: clBuildProgram's time, then the best launch-to-finish.
    build_ms: [f64; 3],
    run_ms: [f64; 3],
    /// clBuildProgram's time again, the implementation's kernel cache holding the program.
    kept_build_ms: [f64; 3],
}

/// The kernels `peer kernels` builds and runs, and what each does.
const KERNELS: [(&str, &str); 3] = [
    ("vadd", "vadd 16 Mi floats"),
    ("sum", "sum 1 Mi floats (local memory, barriers)"),
    ("mmult", "512×512 matrix multiply (16×16 tiles, barriers)"),
];

/// Reads `peer kernels`' output: a build and a run time for each of [`KERNELS`].
fn parse_kernel_figures(text: &str) -> Result<KernelFigures, String> {
    let mut figures = KernelFigures {
        device: printed(text, "device")?.to_string(),
        build_ms: [0.0; 3],
        run_ms: [0.0; 3],
        kept_build_ms: [0.0; 3],
    };
    for (at, (kernel, _)) in KERNELS.iter().enumerate() {
        figures.build_ms[at] = printed_figure(text, &format!("build_{kernel}_ms"))?;
        figures.run_ms[at] = printed_figure(text, &format!("{kernel}_ms"))?;
    }
    Ok(figures)
}

/// What the program printed after `key` on a `key value` line.
fn printed<'a>(text: &'a str, key: &str) -> Result<&'a str, String> {
    text.lines()
        .find_map(|line| line.strip_prefix(key)?.strip_prefix(' '))
        .map(str::trim)
        .ok_or_else(|| format!("the program printed no `{key}`"))
}

/// The figure the program printed after `key`: a finite number, not below zero.
fn printed_figure(text: &str, key: &str) -> Result<f64, String> {
    let value = printed(text, key)?;
    match value.parse::<f64>() {
        Ok(n) if n.is_finite() && n >= 0.0 => Ok(n),
        _ => Err(format!("`{key}` is not a figure: {value:?}")),
    }
}

/// Reads the program's output: one `key value` line per figure, every figure present.
fn parse_figures(text: &str) -> Result<Figures, String> {
    let number = |key: &str| printed_figure(text, key);
    Ok(Figures {
        device: printed(text, "device")?.to_string(),
        context_us: number("context_us")?,
        write_gbps: number("write_gbps")?,
        read_gbps: number("read_gbps")?,
        launch_p50_us: number("launch_p50_us")?,
        launch_p99_us: number("launch_p99_us")?,
        queued_per_s: number("queued_per_s")?,
    })
}

/// The implementations registered in `vendors` (`*.icd` files), leaving out accelhost's own,
/// by file name.
fn registered(vendors: &Path) -> Vec<Implementation> {
    let Ok(entries) = std::fs::read_dir(vendors) else {
        return Vec::new();
    };
    let mut found: Vec<Implementation> = entries
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            if path.extension()? != "icd" {
                return None;
            }
            let library = std::fs::read_to_string(&path).ok()?;
            if library.trim().is_empty() || library.contains("accelhost") {
                return None;
            }
            Some(Implementation {
                name: path.file_stem()?.to_string_lossy().into_owned(),
                vendors: path,
            })
        })
        .collect();
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// accelhost's ICD library: `explicit` (which must exist), else `$ACCELHOST_OPENCL_ICD`,
/// then next to the running executable or in its parent directory.
fn accelhost_icd(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(path) = explicit {
        if !path.is_file() {
            bail!("--opencl-icd {}: no such file", path.display());
        }
        return Ok(path.to_path_buf());
    }
    let mut candidates = Vec::new();
    if let Some(path) = std::env::var_os("ACCELHOST_OPENCL_ICD") {
        candidates.push(path.into());
    }
    if let Ok(exe) = std::env::current_exe() {
        for dir in exe.ancestors().skip(1).take(2) {
            candidates.push(dir.join(ACCELHOST_ICD));
        }
    }
    if let Some(found) = candidates.iter().find(|p| p.is_file()) {
        return Ok(found.clone());
    }
    bail!(
        "accelhost's OpenCL platform was not found (looked at {}); build it with \
         `cargo build --profile bench -p accelhost-opencl` or name it with --opencl-icd",
        candidates
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// A directory of this run's files, removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Compiles the program with the system's C compiler (`$CC`, else `cc`) against the ICD
/// loader.
fn compile(scratch: &Path) -> anyhow::Result<PathBuf> {
    let source = scratch.join("peer.c");
    std::fs::write(&source, PEER_SOURCE)?;
    let program = scratch.join("peer");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args(["-O2", "-o"])
        .arg(&program)
        .arg(&source)
        .arg("-lOpenCL")
        .output()
        .with_context(|| format!("cannot run the C compiler `{cc}`"))?;
    if !out.status.success() {
        bail!(
            "the peer program did not compile (it needs a C compiler and the OpenCL headers \
             and ICD loader: Debian's gcc and ocl-icd-opencl-dev):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(program)
}

/// How the program is run: its binary, its kernel image for accelhost and the environment.
struct Runner {
    program: PathBuf,
    scratch: PathBuf,
    xclbin: PathBuf,
    config: PathBuf,
    accelhost: PathBuf,
}

impl Runner {
    /// The folder an implementation's kernel runs keep their builds in.
    fn kernel_cache(&self, name: &str) -> PathBuf {
        self.scratch.join(format!("kernel-cache-{name}"))
    }

    /// One run through `implementation` (`None`: accelhost), bounded by [`RUN_DEADLINE`].
    fn run(
        &self,
        implementation: Option<&Implementation>,
        launches: u32,
        transfer_mib: u32,
    ) -> Result<Figures, String> {
        let image = match implementation {
            Some(_) => Path::new("-"),
            None => &self.xclbin,
        };
        let text = self.output(
            implementation,
            None,
            &[
                image.as_os_str(),
                launches.to_string().as_ref(),
                transfer_mib.to_string().as_ref(),
            ],
        )?;
        parse_figures(&text)
    }

    /// Two runs of `peer kernels` through `implementation`, its kernel cache in `cache`: the
    /// first from an empty cache (its builds compile), the second from what the first left
    /// there (its builds are kept ones).
    fn run_kernels(
        &self,
        implementation: Option<&Implementation>,
        cache: &Path,
    ) -> Result<KernelFigures, String> {
        let kernels = ["kernels".as_ref()];
        // Each implementation makes the folder as it keeps it (accelhost's private to its user).
        let _ = std::fs::remove_dir_all(cache);
        let compiled = self.output(implementation, Some(cache), &kernels);
        let kept = compiled
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|_| self.output(implementation, Some(cache), &kernels));
        let _ = std::fs::remove_dir_all(cache);
        Ok(KernelFigures {
            kept_build_ms: parse_kernel_figures(&kept?)?.build_ms,
            ..parse_kernel_figures(&compiled?)?
        })
    }

    /// What the program given `args` prints through `implementation`, bounded by
    /// [`RUN_DEADLINE`]; its kernel cache in `kernel_cache` (POCL's turned on there), or else
    /// POCL's off and accelhost's the launch runs' own.
    fn output(
        &self,
        implementation: Option<&Implementation>,
        kernel_cache: Option<&Path>,
        args: &[&std::ffi::OsStr],
    ) -> Result<String, String> {
        let out_path = self.scratch.join("out.txt");
        let err_path = self.scratch.join("err.txt");
        let file = |path: &Path| std::fs::File::create(path).map_err(|e| e.to_string());
        let mut command = Command::new(&self.program);
        command
            .current_dir(&self.scratch)
            .args(args)
            .stdin(Stdio::null())
            .stdout(file(&out_path)?)
            .stderr(file(&err_path)?);
        match (implementation, kernel_cache) {
            (Some(peer), Some(cache)) => command
                .env("OCL_ICD_VENDORS", &peer.vendors)
                .env("POCL_KERNEL_CACHE", "1")
                .env("POCL_CACHE_DIR", cache),
            // POCL would otherwise time its cache, not its compiler, from the second run on.
            (Some(peer), None) => command
                .env("OCL_ICD_VENDORS", &peer.vendors)
                .env("POCL_KERNEL_CACHE", "0"),
            (None, cache) => command
                .env("OCL_ICD_VENDORS", &self.accelhost)
                .env("ACCELHOST_CONFIG", &self.config)
                .env(
                    "ACCELHOST_CACHE_DIR",
                    cache.map_or_else(|| self.scratch.join("cache"), Path::to_path_buf),
                )
                .env_remove("ACCELHOST_ENDPOINT"),
        };
        let mut child = command.spawn().map_err(|e| e.to_string())?;
        let started = Instant::now();
        let status = loop {
            match child.try_wait().map_err(|e| e.to_string())? {
                Some(status) => break status,
                None if started.elapsed() > RUN_DEADLINE => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!(
                        "killed after {} s without finishing",
                        RUN_DEADLINE.as_secs()
                    ));
                }
                None => std::thread::sleep(Duration::from_millis(20)),
            }
        };
        let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
        if !status.success() {
            let stderr = read(&err_path);
            let first = stderr.lines().next().unwrap_or("no message");
            return Err(format!("the program failed ({status}): {first}"));
        }
        Ok(read(&out_path))
    }
}

/// Runs `--peers` and prints its tables.
pub fn run(args: &PeersArgs<'_>) -> anyhow::Result<()> {
    if let Some(missing) = args.peer_icds.iter().find(|library| !library.is_file()) {
        bail!("--peer-icd {}: no such file", missing.display());
    }
    let accelhost = accelhost_icd(args.opencl_icd)?;
    let vendors = match std::env::var_os("OCL_ICD_VENDORS").map(PathBuf::from) {
        Some(dir) if dir.is_dir() => dir,
        _ => PathBuf::from(VENDORS_DIR),
    };
    let mut peers = registered(&vendors);
    for library in args.peer_icds {
        peers.push(Implementation {
            name: library.file_name().map_or_else(
                || library.display().to_string(),
                |n| n.to_string_lossy().into(),
            ),
            vendors: library.clone(),
        });
    }
    if peers.is_empty() {
        eprintln!(
            "note: no other OpenCL implementation is registered in {} (Debian's \
             pocl-opencl-icd is one; --peer-icd names one that is not registered): \
             accelhost's figures alone",
            vendors.display()
        );
    }

    let scratch =
        Scratch(std::env::temp_dir().join(format!("accelhost-bench-peers-{}", std::process::id())));
    std::fs::create_dir_all(&scratch.0)?;
    let program = compile(&scratch.0)?;
    let runner = Runner {
        xclbin: scratch.0.join("vadd.xclbin"),
        config: scratch.0.join("config.json"),
        program,
        scratch: scratch.0.clone(),
        accelhost,
    };
    std::fs::write(&runner.xclbin, accelhost::workloads::vadd::vadd_image(4))?;
    std::fs::write(&runner.config, ACCELHOST_CONFIG)?;

    let (rounds, launches, transfer_mib) = if args.full {
        (5, 20_000, 64)
    } else {
        (3, 2_000, 64)
    };
    let mut all: Vec<(String, Option<Implementation>)> = vec![("accelhost".into(), None)];
    all.extend(peers.into_iter().map(|p| (p.name.clone(), Some(p))));

    // A first short run of each warms the caches (accelhost's compiled plugin, a peer's
    // compiled kernel) and drops an implementation that does not run, with its reason.
    let mut running = Vec::new();
    for (name, implementation) in all {
        progress(&format!("{name} (first run)"));
        match runner.run(implementation.as_ref(), 100, 1) {
            Ok(_) => running.push((name, implementation, Vec::new())),
            Err(why) if implementation.is_none() => {
                bail!("accelhost's OpenCL platform did not run the program: {why}")
            }
            Err(why) => eprintln!("\r\x1b[2Knote: {name} left out: {why}"),
        }
    }
    for round in 1..=rounds {
        // Each round in another order, so that no implementation always runs first.
        let count = running.len();
        for k in 0..count {
            let (name, implementation, runs) = &mut running[(k + round) % count];
            progress(&format!("{name}, round {round} of {rounds}"));
            let figures = runner
                .run(implementation.as_ref(), launches, transfer_mib)
                .map_err(|why| anyhow::anyhow!("{name}, round {round}: {why}"))?;
            runs.push(figures);
        }
    }
    eprint!("\r\x1b[2K");

    let implementations: Vec<(String, Option<Implementation>)> = running
        .iter()
        .map(|(name, implementation, _)| (name.clone(), implementation.clone()))
        .collect();
    let medians: Vec<(String, Figures)> = running
        .into_iter()
        .map(|(name, _, runs)| (name, median_figures(&runs)))
        .collect();
    print(&medians, rounds, launches, args.markdown);
    kernels(
        &runner,
        implementations,
        if args.full { 3 } else { 1 },
        args.markdown,
    )
}

/// The kernels phase: `rounds` runs of `peer kernels` through each implementation in turns,
/// their medians and accelhost's ratios. An implementation that cannot build OpenCL C (for
/// accelhost: no clang) is left out with its reason.
fn kernels(
    runner: &Runner,
    implementations: Vec<(String, Option<Implementation>)>,
    rounds: usize,
    markdown: bool,
) -> anyhow::Result<()> {
    let mut running = Vec::new();
    for (name, implementation) in implementations {
        progress(&format!("{name}: kernels, round 1 of {rounds}"));
        match runner.run_kernels(implementation.as_ref(), &runner.kernel_cache(&name)) {
            Ok(first) => running.push((name, implementation, vec![first])),
            Err(why) => eprintln!("\r\x1b[2Knote: {name}'s kernels left out: {why}"),
        }
    }
    for round in 2..=rounds {
        let count = running.len();
        for k in 0..count {
            let (name, implementation, runs) = &mut running[(k + round) % count];
            progress(&format!("{name}: kernels, round {round} of {rounds}"));
            let figures = runner
                .run_kernels(implementation.as_ref(), &runner.kernel_cache(name))
                .map_err(|why| anyhow::anyhow!("{name}'s kernels, round {round}: {why}"))?;
            runs.push(figures);
        }
    }
    eprint!("\r\x1b[2K");
    let medians: Vec<(String, KernelFigures)> = running
        .into_iter()
        .map(|(name, _, runs)| (name, median_kernel_figures(&runs)))
        .collect();
    print_kernels(&medians, rounds, markdown);
    Ok(())
}

/// Each kernel figure's median over `runs`.
fn median_kernel_figures(runs: &[KernelFigures]) -> KernelFigures {
    let of = |read: &dyn Fn(&KernelFigures) -> f64| {
        median(&mut runs.iter().map(read).collect::<Vec<_>>())
    };
    let mut figures = runs[0].clone();
    for at in 0..KERNELS.len() {
        figures.build_ms[at] = of(&|f| f.build_ms[at]);
        figures.run_ms[at] = of(&|f| f.run_ms[at]);
        figures.kept_build_ms[at] = of(&|f| f.kept_build_ms[at]);
    }
    figures
}

fn print_kernels(medians: &[(String, KernelFigures)], rounds: usize, markdown: bool) {
    if medians.is_empty() {
        return;
    }
    println!();
    println!(
        "kernels from OpenCL C source, the same for each implementation, {rounds} round(s), \
         median: clBuildProgram's time and the best of three launches to finish (after one \
         unmeasured), in ms"
    );
    let mut header = vec!["IMPLEMENTATION".to_owned(), "DEVICE".to_owned()];
    for (kernel, what) in KERNELS {
        header.push(format!("build {kernel}"));
        header.push(what.to_owned());
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let rows: Vec<Vec<String>> = medians
        .iter()
        .map(|(name, figures)| {
            let mut row = vec![name.clone(), figures.device.clone()];
            for at in 0..KERNELS.len() {
                row.push(shown(figures.build_ms[at]));
                row.push(shown(figures.run_ms[at]));
            }
            row
        })
        .collect();
    print_table(&header, &rows, markdown);
    println!();
    println!(
        "kept builds: clBuildProgram's time again in a second process, the implementation's \
         kernel cache holding the program (accelhost's compile cache; POCL's with \
         POCL_KERNEL_CACHE=1), median, in ms"
    );
    let mut header = vec!["IMPLEMENTATION".to_owned()];
    header.extend(
        KERNELS
            .iter()
            .map(|(kernel, _)| format!("kept build {kernel}")),
    );
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let rows: Vec<Vec<String>> = medians
        .iter()
        .map(|(name, figures)| {
            let mut row = vec![name.clone()];
            row.extend(figures.kept_build_ms.iter().map(|&ms| shown(ms)));
            row
        })
        .collect();
    print_table(&header, &rows, markdown);
    let Some(((first, ours), peers)) = medians.split_first() else {
        return;
    };
    if first != "accelhost" || peers.is_empty() {
        return;
    }
    println!();
    let mut header = vec!["ACCELHOST'S KERNELS AGAINST (>1: accelhost faster)".to_owned()];
    for (kernel, _) in KERNELS {
        header.push(format!("build {kernel}"));
        header.push(format!("run {kernel}"));
    }
    header.extend(
        KERNELS
            .iter()
            .map(|(kernel, _)| format!("kept build {kernel}")),
    );
    header.push("RUNS AT LEAST HALF ITS SPEED".to_owned());
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let rows: Vec<Vec<String>> = peers
        .iter()
        .map(|(name, theirs)| {
            let mut row = vec![name.clone()];
            let mut at_half = 0;
            for at in 0..KERNELS.len() {
                let build = advantage(ours.build_ms[at], theirs.build_ms[at], Better::Lower);
                let run = advantage(ours.run_ms[at], theirs.run_ms[at], Better::Lower);
                at_half += usize::from(run >= 0.5);
                row.push(format!("{build:.2}×"));
                row.push(format!("{run:.2}×"));
            }
            for at in 0..KERNELS.len() {
                let kept = advantage(
                    ours.kept_build_ms[at],
                    theirs.kept_build_ms[at],
                    Better::Lower,
                );
                row.push(format!("{kept:.2}×"));
            }
            row.push(format!("{at_half} of {}", KERNELS.len()));
            row
        })
        .collect();
    print_table(&header, &rows, markdown);
}

/// Each figure's median over `runs`.
fn median_figures(runs: &[Figures]) -> Figures {
    let of = |read: fn(&Figures) -> f64| median(&mut runs.iter().map(read).collect::<Vec<_>>());
    Figures {
        device: runs[0].device.clone(),
        context_us: of(|f| f.context_us),
        write_gbps: of(|f| f.write_gbps),
        read_gbps: of(|f| f.read_gbps),
        launch_p50_us: of(|f| f.launch_p50_us),
        launch_p99_us: of(|f| f.launch_p99_us),
        queued_per_s: of(|f| f.queued_per_s),
    }
}

/// A figure with the digits that matter: none from 1,000 up.
fn shown(figure: f64) -> String {
    if figure >= 1000.0 {
        format!("{figure:.0}")
    } else {
        format!("{figure:.2}")
    }
}

/// accelhost's figure as a multiple of the peer's, above 1 where accelhost is better.
fn advantage(ours: f64, theirs: f64, better: Better) -> f64 {
    let (top, bottom) = match better {
        Better::Higher => (ours, theirs),
        Better::Lower => (theirs, ours),
    };
    top / bottom.max(f64::MIN_POSITIVE)
}

fn print(medians: &[(String, Figures)], rounds: usize, launches: u32, markdown: bool) {
    println!(
        "accelhost bench --peers: the same C program through each OpenCL implementation, \
         {rounds} rounds in turns, median; {launches} one-element vadd launches per figure"
    );
    let mut header = vec!["IMPLEMENTATION", "DEVICE"];
    header.extend(COMPARED.iter().map(|(title, _, _)| *title));
    let rows: Vec<Vec<String>> = medians
        .iter()
        .map(|(name, figures)| {
            let mut row = vec![name.clone(), figures.device.clone()];
            row.extend(COMPARED.iter().map(|(_, read, _)| shown(read(figures))));
            row
        })
        .collect();
    print_table(&header, &rows, markdown);
    let Some(((_, ours), peers)) = medians.split_first() else {
        return;
    };
    if peers.is_empty() {
        return;
    }
    println!();
    let mut header = vec!["ACCELHOST AGAINST (>1: accelhost better)"];
    header.extend(COMPARED.iter().map(|(title, _, _)| *title));
    header.push("AT OR ABOVE");
    let rows: Vec<Vec<String>> = peers
        .iter()
        .map(|(name, theirs)| {
            let ratios: Vec<f64> = COMPARED
                .iter()
                .map(|(_, read, better)| advantage(read(ours), read(theirs), *better))
                .collect();
            let mut row = vec![name.clone()];
            row.extend(ratios.iter().map(|r| format!("{r:.2}×")));
            let at_or_above = ratios.iter().filter(|r| **r >= 1.0).count();
            row.push(format!("{at_or_above} of {}", ratios.len()));
            row
        })
        .collect();
    print_table(&header, &rows, markdown);
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = "device pthread-skylake\ncontext_us 4.850\nwrite_gbps 7.077\n\
        read_gbps 7.232\nlaunch_p50_us 10.407\nlaunch_p99_us 23.017\nqueued_per_s 461270\n";

    #[test]
    fn the_programs_output_is_read_figure_by_figure() {
        let figures = parse_figures(OUTPUT).unwrap();
        assert_eq!(figures.device, "pthread-skylake");
        assert_eq!(figures.context_us, 4.85);
        assert_eq!(figures.launch_p99_us, 23.017);
        assert_eq!(figures.queued_per_s, 461_270.0);
    }

    #[test]
    fn output_missing_a_figure_or_with_a_bad_one_is_refused_by_name() {
        let missing = OUTPUT.replace("read_gbps 7.232\n", "");
        assert_eq!(
            parse_figures(&missing).unwrap_err(),
            "the program printed no `read_gbps`"
        );
        for bad in ["nan", "-3", "fast", ""] {
            let output = OUTPUT.replace("queued_per_s 461270", &format!("queued_per_s {bad}"));
            let why = parse_figures(&output).unwrap_err();
            assert!(why.contains("queued_per_s"), "{bad}: {why}");
        }
    }

    #[test]
    fn registered_implementations_leave_out_accelhost_and_other_files() {
        let dir =
            std::env::temp_dir().join(format!("accelhost-bench-vendors-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("pocl.icd"), "libpocl.so.2\n").unwrap();
        std::fs::write(dir.join("accelhost.icd"), "/x/libaccelhost_opencl.so\n").unwrap();
        std::fs::write(dir.join("empty.icd"), "\n").unwrap();
        std::fs::write(dir.join("notes.txt"), "libother.so\n").unwrap();
        let found = registered(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            found,
            vec![Implementation {
                name: "pocl".into(),
                vendors: dir.join("pocl.icd"),
            }]
        );
        assert!(registered(Path::new("/nonexistent/vendors")).is_empty());
    }

    #[test]
    fn a_library_named_on_the_command_line_that_is_not_there_is_refused_by_its_flag() {
        let missing = PathBuf::from("/nonexistent/libOpenCL-peer.so");
        let peers = [missing.clone()];
        let args = PeersArgs {
            opencl_icd: None,
            peer_icds: &peers,
            full: false,
            markdown: false,
        };
        let why = run(&args).unwrap_err().to_string();
        assert_eq!(
            why,
            "--peer-icd /nonexistent/libOpenCL-peer.so: no such file"
        );
        // Never another library in its place.
        let why = accelhost_icd(Some(&missing)).unwrap_err().to_string();
        assert_eq!(
            why,
            "--opencl-icd /nonexistent/libOpenCL-peer.so: no such file"
        );
    }

    const KERNELS_OUTPUT: &str = "device xocl/emu:xocl0\nbuild_vadd_ms 1018.5\n\
        build_sum_ms 990\nbuild_mmult_ms 1002.25\nvadd_ms 480.5\nsum_ms 897.4\n\
        mmult_ms 2759.3\n";

    #[test]
    fn the_kernel_runs_output_is_read_kernel_by_kernel_and_a_missing_one_named() {
        let figures = parse_kernel_figures(KERNELS_OUTPUT).unwrap();
        assert_eq!(figures.device, "xocl/emu:xocl0");
        assert_eq!(figures.build_ms, [1018.5, 990.0, 1002.25]);
        assert_eq!(figures.run_ms, [480.5, 897.4, 2759.3]);
        let missing = KERNELS_OUTPUT.replace("sum_ms 897.4\n", "");
        assert_eq!(
            parse_kernel_figures(&missing).unwrap_err(),
            "the program printed no `sum_ms`"
        );
        let bad = KERNELS_OUTPUT.replace("mmult_ms 2759.3", "mmult_ms -1");
        assert!(parse_kernel_figures(&bad).unwrap_err().contains("mmult_ms"));
        assert_eq!(
            figures.kept_build_ms, [0.0; 3],
            "a second run's, filled in by its caller"
        );
        let kept = |ms: f64| KernelFigures {
            kept_build_ms: [ms, ms + 1.0, ms + 2.0],
            ..figures.clone()
        };
        let slower = KernelFigures {
            run_ms: [100.0, 2000.0, 3000.0],
            ..kept(90.0)
        };
        let median = median_kernel_figures(&[kept(20.0), slower, kept(30.0)]);
        assert_eq!(median.run_ms, [480.5, 897.4, 2759.3]);
        assert_eq!(median.kept_build_ms, [30.0, 31.0, 32.0]);
    }

    #[test]
    fn advantage_is_above_one_where_accelhost_is_better() {
        assert_eq!(advantage(2.0, 1.0, Better::Higher), 2.0);
        assert_eq!(advantage(2.0, 1.0, Better::Lower), 0.5);
        assert_eq!(advantage(5.0, 10.0, Better::Lower), 2.0);
    }
}
