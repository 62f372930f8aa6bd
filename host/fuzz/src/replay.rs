//! The fuzz binaries without libFuzzer: `cargo run -p accelhost-fuzz --bin <target> -- PATH...`
//! runs the target once on each file, and on each file of each directory, named on the command
//! line (the target's seed corpus when none is). A crash found by `cargo fuzz` replays this way
//! on stable Rust, in an ordinary debugger-friendly build.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The files `path` stands for: itself, or a directory's files in name order.
pub fn inputs(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            files.push(entry.path());
        }
    }
    files.sort();
    Ok(files)
}

/// The `main` of fuzz binary `target` built without libFuzzer. A finding panics, with the
/// input's path printed just before. With `ACCELHOST_TRACE=1`, every call across the plugin
/// boundary is printed to stderr as well.
pub fn main(target: &str, run: fn(&[u8])) -> ExitCode {
    let trace = std::env::var(accelhost::TRACE_ENV).is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "on" | "yes"
        )
    });
    if trace {
        tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_max_level(tracing_subscriber::filter::LevelFilter::INFO)
            .init();
    }
    let mut paths: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if paths.is_empty() {
        paths.push(crate::corpus_dir(target));
    }
    let mut count = 0;
    for path in &paths {
        let files = match inputs(path) {
            Ok(files) => files,
            Err(err) => {
                eprintln!("{target}: cannot read {}: {err}", path.display());
                return ExitCode::FAILURE;
            }
        };
        for file in files {
            let data = match std::fs::read(&file) {
                Ok(data) => data,
                Err(err) => {
                    eprintln!("{target}: cannot read {}: {err}", file.display());
                    return ExitCode::FAILURE;
                }
            };
            eprintln!("{target}: {} ({} bytes)", file.display(), data.len());
            run(&data);
            count += 1;
        }
    }
    eprintln!("{target}: {count} input(s) ran without a finding");
    ExitCode::SUCCESS
}
