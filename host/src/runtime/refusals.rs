//! Components refused by their digest: a plugin file that does not compile, ran out of a
//! compile limit, or was refused when linked (not a plugin, an incompatible WIT version, an
//! import the host lacks) fails the same way every time, so the refusal is remembered rather
//! than paid for again at every start. It is kept for the process and, beside the compile
//! cache's entries, in `refused/` (one small record per digest and engine, written and read
//! under the cache's trust rules). A changed file has another digest and is tried afresh; a
//! refusal by a limit is tried again once the plugin's limit is larger than the one that
//! ended it. What the linker refuses depends on the host as well as the engine, so a record
//! names the host version and the WIT versions it serves, and another host ignores it.

use std::io::Read;
use std::path::PathBuf;

use wasmtime::Engine;

use super::LoadError;
use super::cache::{
    ComponentCache, REFUSED, keyed_name, mark_used, open_trusted, trusted, trusted_folder,
};
use super::worker::CompileLimits;
use crate::error::CompileFailure;

/// The first line of a refusal record.
const MAGIC: &str = "accelhost-refused1";

/// The second line of a refusal record: the host that refused, as far as linking goes.
fn host_line() -> String {
    format!(
        "host {} serving accel:plugin@{}",
        env!("CARGO_PKG_VERSION"),
        super::served_versions()
    )
}
/// The most of a record that is read: the cause's text is a worker's stderr tail at most.
const MAX_RECORD: u64 = 8 << 10;

/// Whether `refusal`, remembered, still holds for a compile within `limits` (`None`: an
/// unbounded compile in process): a limit that is now larger is worth another attempt.
pub(super) fn holds(refusal: &LoadError, limits: Option<CompileLimits>) -> bool {
    match refusal {
        LoadError::Compile(CompileFailure::TimedOut { limit_ms }) => {
            limits.is_some_and(|l| l.timeout_ms <= *limit_ms)
        }
        LoadError::Compile(CompileFailure::OutOfMemory { limit_mib }) => {
            limits.is_some_and(|l| l.memory_mib <= *limit_mib)
        }
        _ => true,
    }
}

/// The record of the wasm with hash `sha` refused for `engine`, in the cache's `refused/`.
fn record_path(cache: &ComponentCache, engine: &Engine, sha: &[u8; 32]) -> Option<PathBuf> {
    Some(cache.dir()?.join(REFUSED).join(keyed_name(engine, sha)))
}

/// The refusal the cache remembers for the wasm with hash `sha` and `engine`, if a trusted,
/// well-formed record says one.
pub(super) fn read(cache: &ComponentCache, engine: &Engine, sha: &[u8; 32]) -> Option<LoadError> {
    let path = record_path(cache, engine, sha)?;
    let folder = path.parent()?;
    if !trusted(cache.dir()?) || !trusted(folder) {
        return None;
    }
    let (file, _) = open_trusted(&path)?;
    let mut text = String::new();
    Read::by_ref(&mut &file)
        .take(MAX_RECORD)
        .read_to_string(&mut text)
        .ok()?;
    let refusal = parse(&text)?;
    // A record still used is kept by the cache's eviction (see `ComponentCache::evict`).
    mark_used(&file);
    Some(refusal)
}

/// Remembers `refusal` of the wasm with hash `sha` for `engine` in the cache; a failure only
/// costs the next start another attempt.
pub(super) fn write(cache: &ComponentCache, engine: &Engine, sha: &[u8; 32], refusal: &LoadError) {
    let (Some(dir), Some(path), Some(text)) = (
        cache.dir(),
        record_path(cache, engine, sha),
        format(refusal),
    ) else {
        return;
    };
    let folder = path.parent().expect("the record is in refused/");
    let result = trusted_folder(dir)
        .and_then(|()| trusted_folder(folder))
        .and_then(|()| accelhost_trust::private::replace_file(&path, text.as_bytes()));
    if let Err(err) = result {
        tracing::warn!(dir = %dir.display(), "cannot remember a refused plugin: {err}");
    }
}

/// Forgets a refusal of the wasm with hash `sha` for `engine`: it loaded after all.
pub(super) fn remove(cache: &ComponentCache, engine: &Engine, sha: &[u8; 32]) {
    if let (Some(dir), Some(path)) = (cache.dir(), record_path(cache, engine, sha))
        && trusted(dir)
    {
        let _ = std::fs::remove_file(path);
    }
}

/// A refusal as its record says it: the magic, the host, the kind with its limit, then the
/// text.
fn format(refusal: &LoadError) -> Option<String> {
    let (kind, text): (String, &str) = match refusal {
        LoadError::Compile(CompileFailure::TimedOut { limit_ms }) => {
            (format!("timed-out {limit_ms}"), "")
        }
        LoadError::Compile(CompileFailure::OutOfMemory { limit_mib }) => {
            (format!("out-of-memory {limit_mib}"), "")
        }
        LoadError::Compile(CompileFailure::Invalid { message }) => ("invalid".into(), message),
        LoadError::Unusable(reason) => ("unusable".into(), reason),
        LoadError::Incompatible { found } => ("incompatible".into(), found),
        _ => return None,
    };
    Some(format!("{MAGIC}\n{}\n{kind}\n{text}", host_line()))
}

/// The refusal a record's `text` says, if it is well formed and this host's.
fn parse(text: &str) -> Option<LoadError> {
    let rest = text.strip_prefix(MAGIC)?.strip_prefix('\n')?;
    let (host, rest) = rest.split_once('\n')?;
    if host != host_line() {
        return None;
    }
    let (kind, text) = rest.split_once('\n')?;
    let (kind, limit) = match kind.split_once(' ') {
        Some((kind, limit)) => (kind, Some(limit.parse::<u64>().ok()?)),
        None => (kind, None),
    };
    let text = text.to_string();
    Some(match (kind, limit) {
        ("timed-out", Some(limit_ms)) => LoadError::Compile(CompileFailure::TimedOut { limit_ms }),
        ("out-of-memory", Some(limit_mib)) => {
            LoadError::Compile(CompileFailure::OutOfMemory { limit_mib })
        }
        ("invalid", None) => LoadError::Compile(CompileFailure::Invalid { message: text }),
        ("unusable", None) => LoadError::Unusable(text),
        ("incompatible", None) => LoadError::Incompatible { found: text },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    use super::*;

    fn every_kind() -> Vec<LoadError> {
        vec![
            LoadError::Compile(CompileFailure::TimedOut { limit_ms: 1500 }),
            LoadError::Compile(CompileFailure::OutOfMemory { limit_mib: 256 }),
            LoadError::Compile(CompileFailure::Invalid {
                message: "type mismatch\nat offset 12".into(),
            }),
            LoadError::Unusable("it exports no accel:plugin interface (exports: f)".into()),
            LoadError::Incompatible {
                found: "9.0.0".into(),
            },
        ]
    }

    #[test]
    fn every_kind_of_refusal_reads_back_as_written() {
        for refusal in every_kind() {
            let text = format(&refusal).unwrap();
            assert_eq!(parse(&text), Some(refusal), "{text}");
        }
        let not_the_components = LoadError::Runtime("no engine".into());
        assert_eq!(format(&not_the_components), None);
    }

    #[test]
    fn a_damaged_record_is_no_refusal() {
        let text = format(&every_kind()[0]).unwrap();
        for damaged in [
            text.replace(MAGIC, "accelhost-refused0"),
            text.replace("timed-out 1500", "timed-out many"),
            text.replace("timed-out 1500", "timed-out"),
            text.replace("timed-out", "bored"),
            format!("{MAGIC}\ntimed-out 1500\n"),
            "invalid 12\ntext".into(),
            String::new(),
        ] {
            assert_eq!(parse(&damaged), None, "{damaged:?}");
        }
    }

    #[test]
    fn another_hosts_refusal_is_not_believed() {
        // A host serving other WIT versions may link what this one refused.
        let text = format(&every_kind()[4]).unwrap();
        assert!(text.contains(&format!(
            "serving accel:plugin@{}",
            super::super::served_versions()
        )));
        let other = text.replace(&host_line(), "host 0.9.0 serving accel:plugin@1.0.0");
        assert_eq!(parse(&other), None, "{other}");
    }

    #[test]
    fn a_refusal_by_a_limit_holds_until_the_limit_grows() {
        let limits = |timeout_ms, memory_mib| {
            Some(CompileLimits {
                timeout_ms,
                memory_mib,
                baseline_first_bytes: u64::MAX,
            })
        };
        let timed_out = LoadError::Compile(CompileFailure::TimedOut { limit_ms: 1500 });
        assert!(holds(&timed_out, limits(1500, 64)));
        assert!(
            holds(&timed_out, limits(1000, 4096)),
            "a larger memory limit does not help"
        );
        assert!(!holds(&timed_out, limits(1501, 64)));
        assert!(
            !holds(&timed_out, None),
            "a compile without limits is tried"
        );
        let out_of_memory = LoadError::Compile(CompileFailure::OutOfMemory { limit_mib: 256 });
        assert!(holds(&out_of_memory, limits(600_000, 256)));
        assert!(!holds(&out_of_memory, limits(1, 257)));
        let invalid = LoadError::Compile(CompileFailure::Invalid {
            message: "no".into(),
        });
        assert!(holds(&invalid, limits(600_000, 65536)));
        assert!(holds(&invalid, None));
        assert!(holds(&LoadError::Unusable("no".into()), None));
    }

    fn private_cache(name: &str) -> (ComponentCache, PathBuf) {
        let base =
            std::env::temp_dir().join(format!("accelhost-refused-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        (ComponentCache::at(Some(base.join("cache"))), base)
    }

    #[test]
    fn a_refusal_is_remembered_in_the_cache_until_removed() {
        let (cache, base) = private_cache("kept");
        let engine = Engine::default();
        let sha = [3u8; 32];
        assert_eq!(read(&cache, &engine, &sha), None);
        let refusal = every_kind()[3].clone();
        write(&cache, &engine, &sha, &refusal);
        assert_eq!(read(&cache, &engine, &sha), Some(refusal.clone()));
        let folder = cache.dir().unwrap().join("refused");
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(cache.dir().unwrap()), 0o700);
        assert_eq!(mode(&folder), 0o700);
        assert_eq!(read(&cache, &engine, &[4u8; 32]), None, "another digest");
        let mut metered = wasmtime::Config::new();
        metered.consume_fuel(true);
        let metered = Engine::new(&metered).unwrap();
        assert_eq!(read(&cache, &metered, &sha), None, "another engine");
        remove(&cache, &engine, &sha);
        assert_eq!(read(&cache, &engine, &sha), None);
        assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0);
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_refusal_in_an_open_folder_is_neither_written_nor_believed() {
        let (cache, base) = private_cache("open");
        let engine = Engine::default();
        let sha = [5u8; 32];
        let refusal = every_kind()[2].clone();
        write(&cache, &engine, &sha, &refusal);
        let folder = cache.dir().unwrap().join("refused");
        let record = std::fs::read_dir(&folder)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let open = |path: &Path, mode| {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
        };
        open(&record, 0o666);
        assert_eq!(
            read(&cache, &engine, &sha),
            None,
            "a record others may write"
        );
        open(&record, 0o600);
        open(&folder, 0o777);
        assert_eq!(
            read(&cache, &engine, &sha),
            None,
            "a folder others may write in"
        );
        let other = [6u8; 32];
        write(&cache, &engine, &other, &refusal);
        assert_eq!(
            std::fs::read_dir(&folder).unwrap().count(),
            1,
            "nothing written there"
        );
        open(&folder, 0o700);
        assert_eq!(read(&cache, &engine, &sha), Some(refusal));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
