//! What the Linux backends share: reading and parsing sysfs attributes, and opening the
//! device nodes they drive.

use std::fs::{self, OpenOptions, ReadDir};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// A sysfs attribute (or directory) that is missing, unreadable or malformed.
#[derive(Debug, thiserror::Error)]
#[error("{}: {problem}", path.display())]
pub(crate) struct BadAttribute {
    path: PathBuf,
    problem: String,
}

impl BadAttribute {
    /// The attribute at `path` and what is wrong with it.
    pub(crate) fn new(path: &Path, problem: impl ToString) -> Self {
        BadAttribute {
            path: path.to_path_buf(),
            problem: problem.to_string(),
        }
    }
}

/// An `io::Error` of kind `InvalidData`, for callers that return `io::Result`.
impl From<BadAttribute> for io::Error {
    fn from(err: BadAttribute) -> Self {
        io::Error::new(io::ErrorKind::InvalidData, err)
    }
}

/// The entries of `dir`, or `None` if it does not exist.
pub(crate) fn read_dir_if_present(dir: &Path) -> io::Result<Option<ReadDir>> {
    match fs::read_dir(dir) {
        Ok(entries) => Ok(Some(entries)),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err),
    }
}

/// The attribute's text without the surrounding whitespace (the kernel ends it with a newline).
pub(crate) fn read_text(path: &Path) -> io::Result<String> {
    fs::read_to_string(path).map(|text| text.trim().to_owned())
}

/// Reads the attribute at `path` and parses its trimmed text; `what` names the expected form.
pub(crate) fn read_attr<T>(
    path: &Path,
    parse: fn(&str) -> Option<T>,
    what: &str,
) -> Result<T, BadAttribute> {
    parse_attr(path, fs::read_to_string(path), parse, what)
}

/// Like [`read_attr`], but a missing attribute is `None`.
pub(crate) fn read_optional<T>(
    path: &Path,
    parse: fn(&str) -> Option<T>,
    what: &str,
) -> Result<Option<T>, BadAttribute> {
    match fs::read_to_string(path) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        read => parse_attr(path, read, parse, what).map(Some),
    }
}

/// Parses the trimmed text of `read`, the result of reading the attribute at `path`.
pub(crate) fn parse_attr<T>(
    path: &Path,
    read: io::Result<String>,
    parse: fn(&str) -> Option<T>,
    what: &str,
) -> Result<T, BadAttribute> {
    let text = read.map_err(|err| BadAttribute::new(path, err))?;
    let text = text.trim();
    parse(text).ok_or_else(|| BadAttribute::new(path, format!("{text:?} is not {what}")))
}

/// Reads an attribute holding a decimal number.
pub(crate) fn read_decimal<T: FromStr>(path: &Path) -> Result<T, BadAttribute> {
    read_attr(path, parse_decimal, "a decimal number")
}

/// Reads an attribute holding a 0x-prefixed u16, as PCI ids are printed.
pub(crate) fn read_hex_u16(path: &Path) -> Result<u16, BadAttribute> {
    read_attr(path, parse_hex_u16, "a 0x-prefixed u16")
}

/// A number of decimal digits only (no sign, no blanks) that fits `T`.
pub(crate) fn parse_decimal<T: FromStr>(text: &str) -> Option<T> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A u16 written as `0x` or `0X` and hex digits only.
pub(crate) fn parse_hex_u16(text: &str) -> Option<u16> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u16::from_str_radix(digits, 16).ok()
}

/// `N` of an entry name `<prefix>N` when `N` is all decimal digits.
pub(crate) fn numbered(name: &str, prefix: &str) -> Option<u32> {
    parse_decimal(name.strip_prefix(prefix)?)
}

/// Opens a device node read-write and close-on-exec, as OPAE, XRT and libcxl do.
pub(crate) fn open_node(path: &Path) -> io::Result<OwnedFd> {
    open_node_with(path, 0)
}

/// Opens a device node read-write and close-on-exec, with the extra open `flags`.
pub(crate) fn open_node_with(path: &Path, flags: libc::c_int) -> io::Result<OwnedFd> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_CLOEXEC | flags)
        .open(path)?;
    Ok(file.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::scratch::Scratch;
    use std::os::fd::AsRawFd;

    #[test]
    fn attribute_parsers_are_strict() {
        assert_eq!(parse_hex_u16("0x8086"), Some(0x8086));
        assert_eq!(parse_hex_u16("0X0a5e"), Some(0x0A5E));
        assert_eq!(parse_hex_u16("0x10ee"), Some(0x10EE));
        assert_eq!(parse_hex_u16("0X5001"), Some(0x5001));
        for bad in ["8086", "10ee", "0x", "0x+1", "0x10000", "0xzz", " 0x1"] {
            assert_eq!(parse_hex_u16(bad), None, "{bad}");
        }
        assert_eq!(parse_decimal::<u32>("12"), Some(12));
        for bad in ["", "+1", "-1", "0x1", "1 ", "4294967296"] {
            assert_eq!(parse_decimal::<u32>(bad), None, "{bad}");
        }
        assert_eq!(parse_decimal::<u64>("4294967296"), Some(1 << 32));
        assert_eq!(parse_decimal::<u64>("18446744073709551616"), None);
        assert_eq!(numbered("dfl-port.7", "dfl-port."), Some(7));
        assert_eq!(numbered("dfl-port.", "dfl-port."), None);
        assert_eq!(numbered("dfl-port.+7", "dfl-port."), None);
        assert_eq!(numbered("dfl-fme.7", "dfl-port."), None);
    }

    #[test]
    fn attributes_are_read_trimmed_and_checked() {
        let s = Scratch::new("sysfs-attrs");
        let path = |name: &str| s.0.join(name);
        s.write("id", " 12\n");
        s.write("vendor", "0x8086\n");
        s.write("bad", "twelve\n");
        assert_eq!(read_text(&path("id")).unwrap(), "12");
        assert_eq!(read_decimal::<u32>(&path("id")).unwrap(), 12);
        assert_eq!(read_hex_u16(&path("vendor")).unwrap(), 0x8086);
        let bad = path("bad");
        let err = read_decimal::<u32>(&bad).unwrap_err();
        let expected = format!("{}: \"twelve\" is not a decimal number", bad.display());
        assert_eq!(err.to_string(), expected);
        let err = read_hex_u16(&bad).unwrap_err();
        assert!(
            err.to_string().ends_with("is not a 0x-prefixed u16"),
            "{err}"
        );
        let missing = path("missing");
        let err = read_attr(&missing, parse_decimal::<u32>, "a decimal number").unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("{}: ", missing.display())),
            "{err}"
        );
        assert_eq!(
            io::Error::from(err).kind(),
            io::ErrorKind::InvalidData,
            "as an io::Error"
        );
    }

    #[test]
    fn optional_attributes_may_be_missing_but_not_malformed() {
        let s = Scratch::new("sysfs-optional");
        s.write("id", "7\n");
        s.write("bad", "-7\n");
        s.mkdir("dir");
        let read = |name: &str| read_optional(&s.0.join(name), parse_decimal::<u32>, "a number");
        assert_eq!(read("id").unwrap(), Some(7));
        assert_eq!(read("missing").unwrap(), None);
        assert!(read("bad").is_err());
        assert!(read("dir").is_err(), "present but unreadable");
    }

    #[test]
    fn parse_attr_reports_the_read_error_with_the_path() {
        let path = Path::new("afu_id");
        let failed = Err(io::Error::from_raw_os_error(libc::EIO));
        let err = parse_attr(path, failed, parse_decimal::<u32>, "a number").unwrap_err();
        assert!(err.to_string().starts_with("afu_id: "), "{err}");
        let read = Ok("3\n".to_owned());
        assert_eq!(
            parse_attr(path, read, parse_decimal::<u32>, "a number").unwrap(),
            3
        );
    }

    #[test]
    fn a_missing_directory_reads_as_none() {
        let s = Scratch::new("sysfs-dir");
        s.mkdir("class/one");
        let entries = read_dir_if_present(&s.0.join("class")).unwrap().unwrap();
        assert_eq!(entries.count(), 1);
        assert!(read_dir_if_present(&s.0.join("none")).unwrap().is_none());
        s.write("file", "");
        assert!(read_dir_if_present(&s.0.join("file")).is_err());
    }

    #[test]
    fn nodes_open_read_write_and_close_on_exec() {
        let s = Scratch::new("sysfs-node");
        let node = s.0.join("node");
        std::fs::write(&node, "").unwrap();
        for fd in [
            open_node(&node).unwrap(),
            open_node_with(&node, libc::O_EXCL).unwrap(),
        ] {
            // SAFETY: F_GETFL and F_GETFD only read the flags of the open fd.
            let (status, fd_flags) = unsafe {
                (
                    libc::fcntl(fd.as_raw_fd(), libc::F_GETFL),
                    libc::fcntl(fd.as_raw_fd(), libc::F_GETFD),
                )
            };
            assert_eq!(status & libc::O_ACCMODE, libc::O_RDWR);
            assert_eq!(fd_flags & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
        }
        let err = open_node(&s.0.join("missing")).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
    }
}
