//! Directories a fuzzing process owns in the system's temporary directory: made once, removed
//! when the process exits, and those left by processes that ended without exiting (killed, or a
//! crash the fuzzer found) removed before a new one is made. A test run leaves none behind.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

static OWNED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

extern "C" fn remove_owned() {
    let owned = OWNED.lock().unwrap_or_else(PoisonError::into_inner);
    for dir in owned.iter() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// This process's directory `<temp>/<prefix><pid>`, created (empty) now and removed at exit.
/// Call once per prefix; `prefix` must end in a separator such as `-`.
pub fn own(prefix: &str) -> PathBuf {
    let temp = std::env::temp_dir();
    for entry in std::fs::read_dir(&temp).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let pid = name.to_str().and_then(|n| n.strip_prefix(prefix));
        let dead = pid.is_some_and(|pid| {
            pid.bytes().all(|b| b.is_ascii_digit()) && !Path::new("/proc").join(pid).exists()
        });
        if dead {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    let dir = temp.join(format!("{prefix}{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the temporary directory takes a directory");
    let mut owned = OWNED.lock().unwrap_or_else(PoisonError::into_inner);
    if owned.is_empty() {
        // SAFETY: registers a function that takes no arguments and only removes files.
        unsafe { libc::atexit(remove_owned) };
    }
    owned.push(dir.clone());
    dir
}
