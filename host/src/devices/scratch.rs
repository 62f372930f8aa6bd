//! A scratch directory for the Linux backends' tests: fake sysfs and /dev trees.

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use super::LinuxRoots;

/// A directory under the system temp dir, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A fresh, empty directory whose name carries `tag`.
    pub fn new(tag: &str) -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("accelhost-{tag}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// Writes `text` to `relative`, creating its directories.
    pub fn write(&self, relative: &str, text: &str) {
        let path = self.0.join(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    /// Creates the directory `relative`.
    pub fn mkdir(&self, relative: &str) {
        fs::create_dir_all(self.0.join(relative)).unwrap();
    }

    /// Roots pointing at `sys/` and `dev/` inside the scratch directory.
    pub fn roots(&self) -> LinuxRoots {
        LinuxRoots {
            sysfs: self.0.join("sys"),
            dev: self.0.join("dev"),
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}
