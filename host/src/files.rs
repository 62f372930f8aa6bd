//! Files opened and read within bounds: what a file is (a regular file, not a FIFO, device,
//! socket or directory) and how large are decided before a byte of it is read, so a hostile
//! path can neither block the caller nor fill its memory. Plugin module files, signatures and
//! the files programs name through the doors (xclbin images, configs) are all read here.

use std::fs::{File, Metadata};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

/// What a file is for and how large it may be: refusals name both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// What the file is, with its article, for messages: `a plugin file`, `an xclbin file`.
    pub what: &'static str,
    /// The most MiB read of it.
    pub max_mib: u64,
    /// Where the limit comes from, for messages: a config field such as
    /// `load_policy.max_module_mib`, or a constant's description.
    pub set_by: &'static str,
}

impl Limit {
    fn max_bytes(&self) -> u64 {
        self.max_mib.saturating_mul(MIB)
    }
}

/// Why a file was refused, or could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The path names something that is not a regular file.
    #[error("{} is {kind}, not {what}", .path.display())]
    NotAFile {
        /// The file's path.
        path: PathBuf,
        /// What it is instead, with its article: `a FIFO (named pipe)`.
        kind: &'static str,
        /// What it should have been ([`Limit::what`]).
        what: &'static str,
    },
    /// The file is larger than its limit; none of it was read.
    #[error(
        "{} is {} MiB, over the {} MiB limit ({})",
        .path.display(),
        mib_rounded_up(*.size),
        .limit.max_mib,
        .limit.set_by
    )]
    TooLarge {
        /// The file's path.
        path: PathBuf,
        /// Its length in bytes when it was opened.
        size: u64,
        /// The limit it is over.
        limit: Limit,
    },
    /// The file grew past its limit while it was read; reading stopped there.
    #[error(
        "{} grew past the {} MiB limit ({}) while it was read",
        .path.display(),
        .limit.max_mib,
        .limit.set_by
    )]
    GrewTooLarge {
        /// The file's path.
        path: PathBuf,
        /// The limit it grew past.
        limit: Limit,
    },
    /// Opening or reading it failed.
    #[error("cannot read {}: {source}", .path.display())]
    Io {
        /// The file's path.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
}

impl FileError {
    /// Whether the file does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, FileError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }

    /// The system's error number for the refusal, as a C API reports it: `ENOENT`, `EISDIR`,
    /// `EINVAL` for what is not a regular file, `EFBIG` for a file over its limit.
    pub fn errno(&self) -> i32 {
        match self {
            FileError::NotAFile { kind, .. } if *kind == "a directory" => libc::EISDIR,
            FileError::NotAFile { .. } => libc::EINVAL,
            FileError::TooLarge { .. } | FileError::GrewTooLarge { .. } => libc::EFBIG,
            FileError::Io { source, .. } => source.raw_os_error().unwrap_or(libc::EIO),
        }
    }
}

/// Reads the whole file at `path` within `limit`: a regular file, opened without waiting,
/// measured before it is read and cut off one byte past the limit if it grows meanwhile.
pub fn read_regular(path: &Path, limit: &Limit) -> Result<Vec<u8>, FileError> {
    let (file, meta) = open(path, limit)?;
    read(path, &file, meta.len(), limit)
}

/// The file at `path`, opened for reading, with the metadata of what was opened: a regular
/// file within `limit`, or an error saying what it is instead.
///
/// The path is looked at before it is opened, so that a device is never opened (opening some
/// acts on the device: a watchdog arms, a tape rewinds); what was opened is looked at again,
/// since the path may have been replaced in between.
pub fn open(path: &Path, limit: &Limit) -> Result<(File, Metadata), FileError> {
    let io = |source| FileError::Io {
        path: path.to_path_buf(),
        source,
    };
    refuse_unless_regular(path, &std::fs::metadata(path).map_err(io)?, limit.what)?;
    let (file, meta) = open_regular(path, limit.what)?;
    if meta.len() > limit.max_bytes() {
        return Err(FileError::TooLarge {
            path: path.to_path_buf(),
            size: meta.len(),
            limit: *limit,
        });
    }
    Ok((file, meta))
}

/// Opens `path` without waiting (a FIFO opened for reading would block until a writer came)
/// and refuses what the descriptor is if it is not a regular file.
fn open_regular(path: &Path, what: &'static str) -> Result<(File, Metadata), FileError> {
    let io = |source| FileError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)
        .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    refuse_unless_regular(path, &meta, what)?;
    Ok((file, meta))
}

fn refuse_unless_regular(
    path: &Path,
    meta: &Metadata,
    what: &'static str,
) -> Result<(), FileError> {
    let kind = meta.file_type();
    let is = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    Err(FileError::NotAFile {
        path: path.to_path_buf(),
        kind: is,
        what,
    })
}

/// Reads `file` (opened by [`open`] from `path`, `len` bytes long then), at most `limit` of
/// it: a file that grows after it was measured is cut off one byte past the limit and
/// refused.
pub fn read(path: &Path, file: &File, len: u64, limit: &Limit) -> Result<Vec<u8>, FileError> {
    let io = |source| FileError::Io {
        path: path.to_path_buf(),
        source,
    };
    let max = limit.max_bytes();
    let mut bytes = Vec::new();
    // Reserved fallibly, by the length measured (at most the limit): a file too large for
    // this machine's memory is an error, not an abort.
    bytes
        .try_reserve_exact(len.min(max) as usize)
        .map_err(|err| io(std::io::Error::new(std::io::ErrorKind::OutOfMemory, err)))?;
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > max {
        return Err(FileError::GrewTooLarge {
            path: path.to_path_buf(),
            limit: *limit,
        });
    }
    Ok(bytes)
}

/// `bytes` in MiB, rounded up to a tenth, and shown without the tenth when it is whole: a
/// file one byte over a 1 MiB limit is `1.1` MiB, never `1`.
fn mib_rounded_up(bytes: u64) -> String {
    let tenths = (u128::from(bytes) * 10).div_ceil(u128::from(MIB));
    match tenths % 10 {
        0 => format!("{}", tenths / 10),
        tenth => format!("{}.{tenth}", tenths / 10),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::unix::ffi::OsStrExt;
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    /// Longer than any of these opens or reads takes, short enough to report a hang.
    const HANG: Duration = Duration::from_secs(20);

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("accelhost-files-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn mkfifo(path: &Path) {
        let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    }

    /// Runs `job` on a thread and waits for it at most [`HANG`].
    fn within_bound<T: Send + 'static>(job: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || tx.send(job()));
        rx.recv_timeout(HANG)
            .unwrap_or_else(|_| panic!("still blocked after {HANG:?}"))
    }

    /// A plugin file's limit of `max_mib`.
    fn plugin(max_mib: u64) -> Limit {
        Limit {
            what: "a plugin file",
            max_mib,
            set_by: "load_policy.max_module_mib",
        }
    }

    fn kind_refused(result: Result<(File, Metadata), FileError>) -> &'static str {
        match result {
            Err(FileError::NotAFile { kind, .. }) => kind,
            Err(other) => panic!("refused for another reason: {other}"),
            Ok(_) => panic!("opened"),
        }
    }

    #[test]
    fn a_fifo_is_refused_without_waiting_for_a_writer() {
        let dir = scratch("fifo");
        let fifo = dir.join("plugin.wasm");
        mkfifo(&fifo);
        let path = fifo.clone();
        let err = within_bound(move || open(&path, &plugin(128)).unwrap_err());
        assert_eq!(
            err.to_string(),
            format!(
                "{} is a FIFO (named pipe), not a plugin file",
                fifo.display()
            )
        );
        // The path was a regular file when it was looked at, and a FIFO when it was opened:
        // the open itself must not wait for a writer either.
        let path = fifo.clone();
        let kind = within_bound(move || kind_refused(open_regular(&path, "a plugin file")));
        assert_eq!(kind, "a FIFO (named pipe)");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn what_is_not_a_regular_file_is_refused_by_what_it_is() {
        let dir = scratch("kinds");
        assert_eq!(kind_refused(open(&dir, &plugin(128))), "a directory");
        std::os::unix::fs::symlink(&dir, dir.join("link.wasm")).unwrap();
        assert_eq!(
            kind_refused(open(&dir.join("link.wasm"), &plugin(128))),
            "a directory",
            "links are followed to what they name"
        );
        assert_eq!(
            kind_refused(open(Path::new("/dev/zero"), &plugin(128))),
            "a character device"
        );
        assert_eq!(
            kind_refused(open_regular(Path::new("/dev/zero"), "a plugin file")),
            "a character device"
        );
        let socket = dir.join("socket.wasm");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        assert_eq!(kind_refused(open(&socket, &plugin(128))), "a socket");
        let message = open(&socket, &plugin(128)).unwrap_err().to_string();
        assert_eq!(
            message,
            format!("{} is a socket, not a plugin file", socket.display())
        );
        let missing = open(&dir.join("missing.wasm"), &plugin(128)).unwrap_err();
        assert!(
            matches!(&missing, FileError::Io { source, .. }
                if source.kind() == std::io::ErrorKind::NotFound),
            "{missing}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_block_device_is_refused_without_being_opened() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: making a block device node needs root");
            return;
        }
        let dir = scratch("block");
        let node = dir.join("disk.wasm");
        let c_path = std::ffi::CString::new(node.as_os_str().as_bytes()).unwrap();
        // A loop device's numbers; the node is only looked at, never opened.
        // SAFETY: a NUL-terminated path and a device number.
        let made =
            unsafe { libc::mknod(c_path.as_ptr(), libc::S_IFBLK | 0o600, libc::makedev(7, 0)) };
        assert_eq!(made, 0, "{}", std::io::Error::last_os_error());
        assert_eq!(kind_refused(open(&node, &plugin(128))), "a block device");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_over_the_limit_is_refused_by_its_size_before_it_is_read() {
        let dir = scratch("size");
        let file = dir.join("plugin.wasm");
        let sparse = File::create(&file).unwrap();
        sparse.set_len(MIB).unwrap();
        let (_, meta) = open(&file, &plugin(1)).expect("exactly the limit is allowed");
        assert_eq!(meta.len(), MIB);
        sparse.set_len(MIB + 1).unwrap();
        let err = open(&file, &plugin(1)).unwrap_err();
        assert!(
            matches!(err, FileError::TooLarge { size, limit: Limit { max_mib: 1, .. }, .. } if size == MIB + 1),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            format!(
                "{} is 1.1 MiB, over the 1 MiB limit (load_policy.max_module_mib)",
                file.display()
            )
        );
        sparse.set_len(8 << 30).unwrap();
        let err = open(&file, &plugin(128)).unwrap_err();
        assert!(
            err.to_string()
                .contains("is 8192 MiB, over the 128 MiB limit"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn reading_stops_one_byte_past_the_limit() {
        let dir = scratch("grow");
        let path = dir.join("plugin.wasm");
        std::fs::write(&path, vec![7u8; MIB as usize]).unwrap();
        let (file, meta) = open(&path, &plugin(1)).unwrap();
        assert_eq!(
            read(&path, &file, meta.len(), &plugin(1)).unwrap(),
            vec![7u8; MIB as usize]
        );
        // Grown by a byte since it was measured.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"!")
            .unwrap();
        let err = read(&path, &File::open(&path).unwrap(), meta.len(), &plugin(1)).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{} grew past the 1 MiB limit (load_policy.max_module_mib) while it was read",
                path.display()
            )
        );
        // What comes after the limit is not read: 3 MiB through a pipe, of which one byte
        // past the first MiB is taken.
        let (reader, mut writer) = std::io::pipe().unwrap();
        let writing = std::thread::spawn(move || writer.write_all(&vec![1u8; 3 << 20]));
        let mut pipe = File::from(std::os::fd::OwnedFd::from(reader));
        let err = read(&path, &pipe, 0, &plugin(1)).unwrap_err();
        assert!(matches!(err, FileError::GrewTooLarge { .. }), "{err:?}");
        let mut rest = Vec::new();
        pipe.read_to_end(&mut rest).unwrap();
        writing.join().unwrap().unwrap();
        assert_eq!(rest.len() as u64, (3 << 20) - MIB - 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sizes_are_shown_in_mib_rounded_up_to_a_tenth() {
        assert_eq!(mib_rounded_up(0), "0");
        assert_eq!(mib_rounded_up(1), "0.1");
        assert_eq!(mib_rounded_up(MIB), "1");
        assert_eq!(mib_rounded_up(MIB + 1), "1.1");
        assert_eq!(mib_rounded_up(MIB * 3 / 2), "1.5");
        assert_eq!(mib_rounded_up(8 << 30), "8192");
        assert_eq!(mib_rounded_up(u64::MAX), "17592186044416");
    }
}
