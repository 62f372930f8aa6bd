//! A command's peak RSS, exactly: `ru_maxrss` of a process started by a small launcher (this
//! test binary run again, with [`LAUNCH`] first), since Linux carries the forking process's
//! resident pages across `exec` into the child's peak, and the test process's own are
//! hundreds of MiB. The launcher is fresh, so what it adds is its few MiB at start.
//!
//! A binary that uses [`measure`] calls [`launch_if_asked`] first thing in its `main`.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The launcher's first argument; the program to run and its arguments follow.
pub const LAUNCH: &str = "--launch-measuring-peak-rss";
/// What the launcher's last line on stderr starts with.
const MARK: &str = "peak-rss-kib ";

/// When this process is the launcher: runs the program its arguments name (killed with the
/// launcher), waits for it, adds its peak RSS to stderr as the last line, and exits as it
/// did (128 + the signal when a signal ended it). `None` otherwise.
pub fn launch_if_asked() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != LAUNCH {
        return None;
    }
    let program = args.next().expect("the launcher is given a program");
    let mut command = Command::new(program);
    command.args(args);
    // SAFETY: prctl is async-signal-safe, and the closure allocates nothing.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let pid = command.spawn().expect("starting the measured program").id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: reaps this process's own child (std's handle is dropped unwaited, so that
    // wait4 gets its rusage), with valid out-pointers.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    eprintln!("\n{MARK}{}", usage.ru_maxrss);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    Some(ExitCode::from(code as u8))
}

/// How a measured command ended.
pub struct Measured {
    /// Its exit code; `None` when the watchdog killed it.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// From start to end, the launcher's start included.
    pub took: Duration,
    /// Its peak resident set, in KiB.
    pub peak_rss_kib: u64,
}

impl Measured {
    /// Everything it said and measured, for assertion messages.
    pub fn report(&self) -> String {
        format!(
            "exit {:?} after {:?}, peak RSS {} KiB\n--- stdout\n{}--- stderr\n{}",
            self.code, self.took, self.peak_rss_kib, self.stdout, self.stderr
        )
    }
}

/// Runs `program` with `args` (`setup` sets its folder and environment) through the
/// launcher, killing it after `kill_after`.
pub fn measure(
    program: &Path,
    args: &[&str],
    kill_after: Duration,
    setup: impl FnOnce(&mut Command),
) -> Measured {
    let started = Instant::now();
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.arg(LAUNCH).arg(program).args(args);
    setup(&mut command);
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting the launcher");
    let read = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = read(Box::new(child.stdout.take().unwrap()));
    let stderr = read(Box::new(child.stderr.take().unwrap()));
    let pid = child.id() as libc::pid_t;
    let ended = Arc::new(Mutex::new(false));
    let watched = ended.clone();
    let watchdog = std::thread::spawn(move || {
        let until = Instant::now() + kill_after;
        while Instant::now() < until {
            std::thread::sleep(Duration::from_millis(100));
            if *watched.lock().unwrap() {
                return;
            }
        }
        let ended = watched.lock().unwrap();
        if !*ended {
            // SAFETY: the launcher is not reaped before `ended` is set (under this lock).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    });
    // Waits without reaping, so that the watchdog never signals a reused pid.
    // SAFETY: an all-zero siginfo is valid; waitid fills it in.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waits for this process's own child, with a valid out-pointer.
    let waited = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as u32,
            &mut info,
            libc::WEXITED | libc::WNOWAIT,
        )
    };
    assert_eq!(waited, 0, "waitid: {}", std::io::Error::last_os_error());
    *ended.lock().unwrap() = true;
    let status = child.wait().unwrap();
    let took = started.elapsed();
    watchdog.join().unwrap();
    let stderr = stderr.join().unwrap();
    let (said, peak_rss_kib) = match stderr.rsplit_once(MARK) {
        Some((said, peak)) => (
            said.strip_suffix('\n').unwrap_or(said).to_string(),
            peak.trim().parse().expect("the launcher's peak RSS line"),
        ),
        None => (stderr, u64::MAX),
    };
    Measured {
        code: status.code().filter(|code| *code < 128),
        stdout: stdout.join().unwrap(),
        stderr: said,
        took,
        peak_rss_kib,
    }
}
