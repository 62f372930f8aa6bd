//! The on-disk cache of compiled plugins. An entry is keyed by the sha256 of the wasm and the
//! engine's compatibility hash, and carries a CRC-32 of its own bytes. Only files this host
//! wrote are deserialized: the directory must be owned by this user and closed to others, the
//! entry must be owned by this user and not writable by others, and its checksum must match.
//!
//! The checksum only catches a damaged entry (a torn or corrupted file): it sits in the same
//! file, so whoever could rewrite the entry could rewrite it too, and trust comes from the
//! ownership and permission checks alone. A CRC-32 does that job in a fraction of the time of
//! the SHA-256 it replaced, which took ~250 µs of every plugin start from the cache.
//!
//! A verified payload goes to wasmtime as a sealed memory file that it maps, rather than as
//! bytes it copies into fresh memory: ~180 µs less per start (BENCHMARKS.md, round two).

use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::Component;

/// Environment variable that moves the cache (`off` disables it).
pub const CACHE_ENV: &str = "ACCELHOST_CACHE_DIR";
/// Version 2: a CRC-32 instead of a SHA-256 (version 1 entries are compiled again, once).
const MAGIC: &[u8; 16] = b"accelhost-cwasm2";
/// An entry's header: the magic, then the CRC-32 of the payload (little-endian).
const HEADER: usize = MAGIC.len() + 4;

/// Where compiled plugins are kept between runs.
#[derive(Clone, Debug)]
pub struct ComponentCache {
    dir: Option<PathBuf>,
}

impl ComponentCache {
    /// `ACCELHOST_CACHE_DIR`, else `$XDG_CACHE_HOME/accelhost`, else `~/.cache/accelhost`.
    pub fn from_env() -> Self {
        let dir = match std::env::var_os(CACHE_ENV) {
            Some(v) if v == "off" => None,
            Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
            _ => std::env::var_os("XDG_CACHE_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                .map(|d| d.join("accelhost")),
        };
        ComponentCache { dir }
    }

    /// A cache in `dir`, or none.
    pub fn at(dir: Option<PathBuf>) -> Self {
        ComponentCache { dir }
    }

    /// The cache directory, or `None` when nothing is kept on disk.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    fn entry(&self, engine: &Engine, wasm_sha: &[u8; 32]) -> Option<PathBuf> {
        let mut hasher = std::hash::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let name = format!("{}-{:016x}.cwasm", hex(wasm_sha), hasher.finish());
        self.dir.as_ref().map(|d| d.join(name))
    }

    /// The cached compilation of the wasm with hash `wasm_sha`, if a trusted one exists.
    pub fn load(&self, engine: &Engine, wasm_sha: &[u8; 32]) -> Option<Component> {
        let dir = self.dir.as_ref()?;
        let path = self.entry(engine, wasm_sha)?;
        if !trusted(dir, true) {
            return None;
        }
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .ok()?;
        let meta = file.metadata().ok()?;
        if !trusted_metadata(&meta, false) {
            return None;
        }
        // SAFETY (both deserializations): the payload was produced by `Component::serialize`
        // of this same engine configuration (the file name carries its compatibility hash),
        // written by this user into a directory only this user can write, and its checksum
        // matches.
        let deserialized = match SealedCopy::of_payload(&file, meta.len()) {
            Some(sealed) => {
                if !sealed.checksum_matches {
                    return None;
                }
                unsafe { Component::deserialize_file(engine, sealed.path()) }
            }
            None => {
                let mut bytes = Vec::new();
                file.read_to_end(&mut bytes).ok()?;
                unsafe { Component::deserialize(engine, verified_payload(&bytes)?) }
            }
        };
        match deserialized {
            Ok(component) => Some(component),
            Err(err) => {
                tracing::debug!(path = %path.display(), "ignoring a cache entry: {err}");
                None
            }
        }
    }

    /// Stores a compilation; failures only cost the next start a recompile.
    pub fn store(&self, engine: &Engine, wasm_sha: &[u8; 32], component: &Component) {
        let (Some(dir), Some(path)) = (self.dir.as_ref(), self.entry(engine, wasm_sha)) else {
            return;
        };
        let result = (|| -> std::io::Result<()> {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
            if !trusted(dir, true) {
                return Err(std::io::Error::other(
                    "the cache directory is not owned by this user or is open to others",
                ));
            }
            let payload = component.serialize().map_err(std::io::Error::other)?;
            static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let tmp = path.with_extension(format!("{}-{n}.tmp", std::process::id()));
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?;
            file.write_all(MAGIC)?;
            file.write_all(&crc32fast::hash(&payload).to_le_bytes())?;
            file.write_all(&payload)?;
            file.sync_all()?;
            std::fs::rename(&tmp, &path)
        })();
        if let Err(err) = result {
            tracing::warn!(dir = %dir.display(), "cannot write the plugin compile cache: {err}");
        }
    }
}

/// A copy of a cache entry's payload in a sealed memory file, for wasmtime to map in place of
/// copying it into fresh anonymous memory (about a third of a plugin start from the cache).
/// The checksum is taken of the very chunks written to it, so what is checked is what
/// wasmtime maps. The cache file itself is never mapped: a mapping of a file that shrinks
/// under it faults with SIGBUS, and the seals forbid that to the copy. `None` where memory
/// files, their seals or `/proc/self/fd` are not available; the caller then deserializes
/// from the bytes.
struct SealedCopy {
    file: std::fs::File,
    /// Whether the bytes copied carry the checksum of the entry's header.
    checksum_matches: bool,
}

impl SealedCopy {
    /// Copies the payload of the cache entry `entry` (`len` bytes in all, header included).
    fn of_payload(entry: &std::fs::File, len: u64) -> Option<SealedCopy> {
        use std::os::unix::fs::FileExt;
        let header = HEADER as u64;
        let mut head = [0u8; HEADER];
        entry.read_exact_at(&mut head, 0).ok()?;
        let expected = header_checksum(&head)?;
        if len <= header {
            return None;
        }
        let mut file = memory_file()?;
        let mut chunk = vec![0u8; 64 << 10];
        let mut crc = crc32fast::Hasher::new();
        let mut offset = header;
        while offset < len {
            let want = chunk.len().min((len - offset) as usize);
            let got = entry.read_at(&mut chunk[..want], offset).ok()?;
            if got == 0 {
                return None;
            }
            crc.update(&chunk[..got]);
            file.write_all(&chunk[..got]).ok()?;
            offset += got as u64;
        }
        seal(&file)?;
        let copy = SealedCopy {
            file,
            checksum_matches: crc.finalize() == expected,
        };
        copy.path().exists().then_some(copy)
    }

    /// The path wasmtime opens the copy by.
    fn path(&self) -> PathBuf {
        use std::os::fd::AsRawFd;
        PathBuf::from(format!("/proc/self/fd/{}", self.file.as_raw_fd()))
    }
}

/// A new memory file that can be sealed.
fn memory_file() -> Option<std::fs::File> {
    use std::os::fd::FromRawFd;
    // SAFETY: the name is a NUL-terminated string; the result is a new descriptor or -1.
    let fd = unsafe {
        libc::memfd_create(
            c"accelhost-cwasm".as_ptr(),
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
        )
    };
    // SAFETY: `fd` is a descriptor just opened and owned alone.
    (fd >= 0).then(|| unsafe { std::fs::File::from_raw_fd(fd) })
}

/// Seals `file` against shrinking, growing and writing.
fn seal(file: &std::fs::File) -> Option<()> {
    use std::os::fd::AsRawFd;
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE | libc::F_SEAL_SEAL;
    // SAFETY: F_ADD_SEALS on a memory file the caller owns.
    (unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, seals) } == 0).then_some(())
}

/// Owned by this user, and not writable by group or others (a directory: not even readable).
fn trusted(path: &Path, is_dir: bool) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| trusted_metadata(&meta, is_dir))
}

/// [`trusted`] for metadata already read.
fn trusted_metadata(meta: &std::fs::Metadata, is_dir: bool) -> bool {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let closed = if is_dir { 0o077 } else { 0o022 };
    meta.uid() == me && meta.mode() & closed == 0 && (meta.is_dir() == is_dir)
}

/// The checksum an entry's header gives for its payload, if `bytes` start with a header.
fn header_checksum(bytes: &[u8]) -> Option<u32> {
    let sum = bytes.strip_prefix(MAGIC.as_slice())?.get(..4)?;
    Some(u32::from_le_bytes(sum.try_into().ok()?))
}

fn verified_payload(bytes: &[u8]) -> Option<&[u8]> {
    let payload = bytes.get(HEADER..)?;
    (crc32fast::hash(payload) == header_checksum(bytes)?).then_some(payload)
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_checksum_is_verified() {
        let payload = b"compiled bytes";
        let mut file = MAGIC.to_vec();
        file.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
        file.extend_from_slice(payload);
        assert_eq!(verified_payload(&file), Some(&payload[..]));
        let last = file.len() - 1;
        file[last] ^= 1;
        assert_eq!(verified_payload(&file), None);
        assert_eq!(verified_payload(b"short"), None);
    }

    /// An entry file in a fresh temporary directory: the header, then `payload`.
    fn entry_file(name: &str, payload: &[u8]) -> (PathBuf, std::fs::File) {
        let path = std::env::temp_dir().join(format!("accelhost-{name}-{}", std::process::id()));
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
        bytes.extend_from_slice(payload);
        std::fs::write(&path, &bytes).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        (path, file)
    }

    #[test]
    fn the_sealed_copy_holds_the_payload_and_cannot_change() {
        let payload: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let (path, entry) = entry_file("sealed", &payload);
        let len = entry.metadata().unwrap().len();
        let copy =
            SealedCopy::of_payload(&entry, len).expect("memory files and /proc/self/fd work here");
        std::fs::remove_file(&path).unwrap();
        assert_eq!(std::fs::read(copy.path()).unwrap(), payload);
        assert!(copy.checksum_matches);
        assert!(copy.file.set_len(1).is_err(), "shrinking is sealed");
        assert!(copy.file.set_len(200_000).is_err(), "growing is sealed");
        assert!((&copy.file).write_all(b"x").is_err(), "writing is sealed");
    }

    #[test]
    fn a_damaged_payload_fails_the_checksum_of_its_sealed_copy() {
        let (path, entry) = entry_file("damaged", b"compiled bytes");
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"!")
            .unwrap();
        let len = entry.metadata().unwrap().len();
        let copy = SealedCopy::of_payload(&entry, len).expect("memory files work here");
        std::fs::remove_file(&path).unwrap();
        assert!(!copy.checksum_matches);
        let header_only = HEADER as u64;
        assert!(
            SealedCopy::of_payload(&entry, header_only).is_none(),
            "no payload"
        );
    }

    #[test]
    fn only_private_directories_are_trusted() {
        let dir = std::env::temp_dir().join(format!("accelhost-cache-{}", std::process::id()));
        std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
        assert!(trusted(&dir, true));
        assert!(!trusted(&dir, false), "a directory is not a file");
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777))
            .unwrap();
        assert!(!trusted(&dir, true));
        std::fs::remove_dir(&dir).unwrap();
    }
}
