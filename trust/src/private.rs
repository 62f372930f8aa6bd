//! Folders and files only this user can write: where accelhost keeps what it will trust when
//! it reads it back (the store of pulled plugins, the compile cache). A folder is created
//! with mode 0700 (its missing parents too) and used only when it is a folder, not a link,
//! owned by this user and closed to others; a file is written beside its name under a name
//! nobody can guess, created exclusively without following links, then renamed over the name,
//! so a reader sees the old file or the new one, and a link planted at the name is replaced,
//! never followed.

use std::fs::Metadata;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// Who besides this user may reach a folder accelhost trusts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Privacy {
    /// Nobody: neither group nor others may read, enter or write it (the compile cache).
    Private,
    /// Others may read it, nobody but this user may write it (the store, which a node running
    /// as another user may read).
    OwnerWrites,
}

impl Privacy {
    /// The mode bits that must be clear on a folder.
    fn closed_bits(self) -> u32 {
        match self {
            Privacy::Private => 0o077,
            Privacy::OwnerWrites => 0o022,
        }
    }
}

/// This process's effective user.
fn me() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// Why the folder (`is_dir`) or file `meta` describes is not to be trusted, if it is not: it
/// must be of that kind (a link is neither), owned by this user, and closed to others as
/// `privacy` says (a file: never writable by group or others).
pub fn distrust(meta: &Metadata, is_dir: bool, privacy: Privacy) -> Option<String> {
    let me = me();
    let closed = if is_dir { privacy.closed_bits() } else { 0o022 };
    let kind = meta.file_type();
    if kind.is_symlink() {
        Some("is a link".into())
    } else if (is_dir && !kind.is_dir()) || (!is_dir && !kind.is_file()) {
        Some(format!(
            "is not a {}",
            if is_dir { "folder" } else { "regular file" }
        ))
    } else if meta.uid() != me {
        Some(format!(
            "is owned by uid {}, not by this user (uid {me})",
            meta.uid()
        ))
    } else if meta.mode() & closed != 0 {
        Some(format!(
            "is open to others (mode {:o})",
            meta.mode() & 0o7777
        ))
    } else {
        None
    }
}

/// Whether the folder at `path` is one to trust (see [`distrust`]).
pub fn trusted(path: &Path, privacy: Privacy) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| distrust(&meta, true, privacy).is_none())
}

/// Why the folder at `path` is not to be read from, if it is not: as [`distrust`] says,
/// except that a folder of root's is read too (a system-wide one: root can write anything
/// anyway). A missing folder is no reason.
pub fn distrust_reading(path: &Path, privacy: Privacy) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let why = distrust(&meta, true, privacy)?;
    let root_owned =
        meta.uid() == 0 && meta.file_type().is_dir() && meta.mode() & privacy.closed_bits() == 0;
    (!root_owned).then_some(why)
}

/// Makes sure `path` is a folder to trust: creates it (and its missing parents) with mode
/// 0700, then refuses it, saying why, unless it is a folder owned by this user and closed to
/// others as `privacy` says. `what` names it in the refusal (`the compile cache`).
pub fn folder(path: &Path, privacy: Privacy, what: &str) -> std::io::Result<()> {
    let private = || {
        let mut builder = std::fs::DirBuilder::new();
        builder.mode(0o700);
        builder
    };
    match private().create(path) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            private().recursive(true).create(path)?
        }
        Err(err) if err.kind() != std::io::ErrorKind::AlreadyExists => return Err(err),
        _ => {}
    }
    let meta = std::fs::symlink_metadata(path)?;
    match distrust(&meta, true, privacy) {
        None => Ok(()),
        Some(why) => Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "{} {why}: {what} keeps nothing there and reads nothing from it (make it a \
                 folder of this user's, chmod 700, or choose another)",
                path.display()
            ),
        )),
    }
}

/// Writes `bytes` as the file `path` in a folder already checked with [`folder`]: into a new
/// file beside it, mode 0600, under a random name, created exclusively and never through a
/// link, then renamed over `path`. A link planted at `path` is replaced, never followed.
pub fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut random = [0u8; 12];
    getrandom::fill(&mut random).map_err(std::io::Error::other)?;
    let name: String = random.iter().map(|b| format!("{b:02x}")).collect();
    let file_name = path.file_name().unwrap_or_default().to_string_lossy();
    let temp = path.with_file_name(format!(".{file_name}.{name}.tmp"));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("accelhost-private-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn folders_are_made_private_and_open_ones_refused() {
        let base = scratch("folders");
        let deep = base.join("a/b/c");
        folder(&deep, Privacy::OwnerWrites, "the store").unwrap();
        for dir in [base.join("a"), base.join("a/b"), deep.clone()] {
            let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", dir.display());
        }
        std::fs::set_permissions(&deep, std::fs::Permissions::from_mode(0o755)).unwrap();
        folder(&deep, Privacy::OwnerWrites, "the store").expect("others may read a store");
        let err = folder(&deep, Privacy::Private, "the compile cache").unwrap_err();
        assert!(
            err.to_string().contains("is open to others (mode 755)"),
            "{err}"
        );
        std::fs::set_permissions(&deep, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = folder(&deep, Privacy::OwnerWrites, "the store").unwrap_err();
        assert!(err.to_string().contains("mode 777"), "{err}");
        assert!(
            err.to_string().contains("the store keeps nothing there"),
            "{err}"
        );
        let link = base.join("link");
        std::os::unix::fs::symlink(&deep, &link).unwrap();
        let err = folder(&link, Privacy::OwnerWrites, "the store").unwrap_err();
        assert!(err.to_string().contains("is a link"), "{err}");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_folder_of_another_user_is_refused() {
        if me() != 0 {
            eprintln!("skipped: giving a folder to another user needs root");
            return;
        }
        let base = scratch("owner");
        folder(&base, Privacy::OwnerWrites, "the store").unwrap();
        let c_path = std::ffi::CString::new(base.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::chown(c_path.as_ptr(), 54321, 54321) }, 0);
        let err = folder(&base, Privacy::OwnerWrites, "the store").unwrap_err();
        assert!(err.to_string().contains("owned by uid 54321"), "{err}");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_file_replaces_a_link_planted_at_its_name_without_following_it() {
        let base = scratch("replace");
        folder(&base, Privacy::Private, "test").unwrap();
        let victim = base.join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let name = base.join("tag");
        std::os::unix::fs::symlink(&victim, &name).unwrap();
        replace_file(&name, b"sha256:abc\n").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(
            !std::fs::symlink_metadata(&name)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read(&name).unwrap(), b"sha256:abc\n");
        let mode = std::fs::metadata(&name).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let leftovers: Vec<_> = std::fs::read_dir(&base)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        std::fs::remove_dir_all(&base).unwrap();
    }
}
