//! `accelhost serve` in a process of its own, as an operator runs it: the tests' isolated
//! environment, its stderr lines readable as they come, killed when dropped.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::support::cache_dir;

/// A running `accelhost serve`.
pub struct Served {
    /// The process (for `ip netns exec`, the wrapper; signals reach the node through it).
    pub child: Child,
    lines: mpsc::Receiver<String>,
}

impl Served {
    /// Runs `accelhost serve serve.json` in `dir` (the program and arguments before it given
    /// by `program`: the binary itself, or a wrapper such as `ip netns exec NS BIN`), and
    /// waits until it says `ready`; returns it and that line.
    pub fn start(program: &[&str], dir: &Path, ready: &str) -> (Served, String) {
        let mut child = Command::new(program[0])
            .args(&program[1..])
            .args(["serve", "serve.json"])
            .current_dir(dir)
            .env_remove("ACCELHOST_CONFIG")
            .env("HOME", dir)
            .env("XDG_CONFIG_HOME", dir.join(".config"))
            .env("ACCELHOST_CACHE_DIR", cache_dir())
            .env("ACCELHOST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("serve: {line}");
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let served = Served { child, lines };
        let line = served.wait_for(ready);
        (served, line)
    }

    /// Waits up to 2 minutes for a line containing `needle`; returns it.
    pub fn wait_for(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => {}
                Err(_) => panic!("accelhost serve never said '{needle}'"),
            }
        }
    }

    /// Sends `signal` to the process.
    pub fn signal(&self, signal: i32) {
        // SAFETY: the pid is our own child's.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, signal) }, 0);
    }

    /// Waits up to `within` for the process to exit.
    pub fn wait(&mut self, within: Duration) -> ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("accelhost serve did not exit within {within:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
