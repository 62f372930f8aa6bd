//! The on-disk cache of compiled plugins. An entry is keyed by the sha256 of the wasm and the
//! engine's compatibility hash, and carries a CRC-32 of its own bytes. Only files this host
//! wrote are deserialized: the directory must be owned by this user and closed to others, the
//! entry must be owned by this user and not writable by others, and its checksum must match.
//! Nothing is created in a folder of the cache before the folder has passed the same check.
//!
//! The header names the key the entry was stored under, and the checksum covers it: an entry
//! copied over another's name is a miss. The checksum only catches a damaged or misplaced
//! entry (a torn or corrupted file, one renamed): it sits in the same file, so whoever could
//! rewrite the entry could rewrite it too, and trust comes from the ownership and permission
//! checks alone. A CRC-32 does that job in a fraction of the time of
//! the SHA-256 it replaced, which took ~250 µs of every plugin start from the cache.
//!
//! A verified payload goes to wasmtime as a sealed memory file that it maps, rather than as
//! bytes it copies into fresh memory: ~180 µs less per start (BENCHMARKS.md, round two).
//!
//! Beside the entries, `files/` remembers the digest of each plugin file loaded from disk, one
//! record per path (a rebuilt plugin replaces its record), with the path and the file's
//! identity (device, inode, size, modification and change times) when the digest was taken, so
//! that starting a plugin file that has not been written since needs no reading or hashing of
//! it (a 15 MiB JavaScript plugin: ~24 ms of every start). Any write changes the change time,
//! which nobody can set; a digest is remembered only once its file's change time lies
//! [`SETTLED`] in the past, so a write within the timestamps' granularity of the last one
//! cannot go unseen.
//!
//! The cache is bounded: after every write, entries are removed least recently used first
//! (a use sets an entry's modification time) until they fit under the cap
//! ([`CACHE_MAX_ENV`]), and so are the records of plugin files whose path is gone or that went
//! unused for [`UNUSED_RECORD`], and temporary files that crashed writers left.

use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use accelhost_trust::private::{self, Privacy};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Environment variable that moves the cache (`off` disables it).
pub const CACHE_ENV: &str = "ACCELHOST_CACHE_DIR";
/// Environment variable with the cap on the compiled entries of the cache, in MiB (default
/// [`DEFAULT_CACHE_MAX_MIB`]; `0` or unset: the default).
pub const CACHE_MAX_ENV: &str = "ACCELHOST_CACHE_MAX_MIB";
/// The cache's cap when [`CACHE_MAX_ENV`] does not give one: thousands of entries the size
/// of the shipped plugins' (0.5–0.7 MiB compiled), or some fifty JavaScript or Python ones
/// (35–38 MiB compiled). Unbounded, the test suite's cache had grown to 5.3 GB, mostly of
/// JavaScript and Python builds, which differ at every build.
pub const DEFAULT_CACHE_MAX_MIB: u64 = 2048;
/// Version 3: the header carries the entry's key, covered by the checksum (older entries are
/// compiled again, once).
const MAGIC: &[u8; 16] = b"accelhost-cwasm3";
/// What an entry was compiled from and for: the hash of the wasm (of the wasm and its signer,
/// for a signed plugin) and the engine's compatibility hash (its version and flags).
const KEY: usize = 32 + 8;
/// An entry's header: the magic, the key, then the CRC-32 of the key and the payload
/// (little-endian). An entry copied over another's name carries its own key, so it is a miss
/// and the component compiles again, never the other's code under this one's name.
const HEADER: usize = MAGIC.len() + KEY + 4;
/// The first word of a remembered digest. Version 2 carries the path, so that the record of
/// a path that is gone can be found; version 1 records are removed.
const DIGEST_MAGIC: &str = "accelhost-file-digest2";
/// The folder of the remembered digests, inside the cache.
const FILES: &str = "files";
/// The folder of the remembered refusals, inside the cache (see `runtime::refusals`).
pub(super) const REFUSED: &str = "refused";
/// The longest digest record: room for a path of 4096 bytes in hex, and the fields.
const MAX_RECORD: usize = 16 << 10;
/// How long a file must have gone unchanged before its digest is remembered: more than the
/// timestamp granularity of any filesystem a plugin is likely to sit on.
const SETTLED: Duration = Duration::from_secs(2);
/// A digest record not used for this long is removed even if its file is still there.
const UNUSED_RECORD: Duration = Duration::from_secs(90 * 24 * 3600);
/// A temporary file this old is a crashed writer's: no write of the cache takes that long.
const STALE_TEMP: Duration = Duration::from_secs(3600);

/// What a plugin file is, as far as its path and metadata tell: writing it changes at least
/// its change time, so an unchanged identity means unchanged bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FileIdentity {
    /// The path the file was opened by, made absolute.
    path: PathBuf,
    device: u64,
    inode: u64,
    size: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl FileIdentity {
    /// The identity of the file at `path`, which `meta` describes. A relative path is taken
    /// from the current directory, so that a record names the same file for every host that
    /// reads it, whatever its own current directory.
    pub(crate) fn of(path: &Path, meta: &std::fs::Metadata) -> FileIdentity {
        FileIdentity {
            path: std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
            device: meta.dev(),
            inode: meta.ino(),
            size: meta.size(),
            modified: (meta.mtime(), meta.mtime_nsec()),
            changed: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// The name of its path's record: the start of the sha256 of the path.
    fn record_name(&self) -> String {
        use sha2::{Digest, Sha256};
        hex(&Sha256::digest(self.path.as_os_str().as_bytes())[..16])
    }

    /// Whether the file last changed at least [`SETTLED`] before `now`.
    fn settled_at(&self, now: SystemTime) -> bool {
        let Ok(now) = now.duration_since(UNIX_EPOCH) else {
            return false;
        };
        let (secs, nanos) = self.changed;
        let changed = Duration::new(secs.max(0) as u64, nanos.clamp(0, 999_999_999) as u32);
        now.checked_sub(changed).is_some_and(|age| age >= SETTLED)
    }

    /// The identity as a digest record states it, before the digest: the path in hex (any
    /// bytes a path may hold come back as they were), then the numbers.
    fn fields(&self) -> String {
        let path = hex(self.path.as_os_str().as_bytes());
        let (device, inode, size) = (self.device, self.inode, self.size);
        let ((ms, mn), (cs, cn)) = (self.modified, self.changed);
        format!("{DIGEST_MAGIC} {path} {device} {inode} {size} {ms} {mn} {cs} {cn}")
    }

    fn record(&self, sha: &[u8; 32]) -> String {
        format!("{} {}\n", self.fields(), hex(sha))
    }

    /// The digest `text` remembers for this identity, if it remembers one for it.
    fn digest_in(&self, text: &str) -> Option<[u8; 32]> {
        let (recorded, sha) = text.strip_suffix('\n')?.rsplit_once(' ')?;
        if recorded != self.fields() {
            return None;
        }
        unhex(sha)?.try_into().ok()
    }
}

/// The plugin file path a digest record of this version names, if `text` is one.
fn recorded_path(text: &str) -> Option<PathBuf> {
    let fields: Vec<&str> = text.strip_suffix('\n')?.split(' ').collect();
    let [magic, path, numbers @ .., sha] = fields.as_slice() else {
        return None;
    };
    let well_formed = *magic == DIGEST_MAGIC
        && numbers.len() == 7
        && numbers
            .iter()
            .all(|n| n.parse::<i64>().is_ok() || n.parse::<u64>().is_ok())
        && unhex(sha).is_some_and(|sha| sha.len() == 32);
    if !well_formed {
        return None;
    }
    Some(PathBuf::from(std::ffi::OsString::from_vec(unhex(path)?)))
}

/// Where compiled plugins are kept between runs, and how much of them.
#[derive(Clone, Debug)]
pub struct ComponentCache {
    dir: Option<PathBuf>,
    max_bytes: u64,
}

impl ComponentCache {
    /// `ACCELHOST_CACHE_DIR`, else `$XDG_CACHE_HOME/accelhost`, else `~/.cache/accelhost`,
    /// capped by `ACCELHOST_CACHE_MAX_MIB`.
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
        ComponentCache::at(dir)
    }

    /// A cache in `dir`, or none, capped by `ACCELHOST_CACHE_MAX_MIB`.
    pub fn at(dir: Option<PathBuf>) -> Self {
        let mib = max_mib(std::env::var(CACHE_MAX_ENV).ok().as_deref());
        ComponentCache {
            dir,
            max_bytes: mib.saturating_mul(1 << 20),
        }
    }

    /// The same cache with its compiled entries capped at `max_bytes` in all, for embedders
    /// that do not configure through the environment. The entry written last is kept even if
    /// it alone is larger.
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// The cache directory, or `None` when nothing is kept on disk.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The cap on the compiled entries, in bytes.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// The sha256 remembered for the plugin file of `identity`, if that file has not been
    /// written since it was taken. A record found is marked used.
    pub(crate) fn known_digest(&self, identity: &FileIdentity) -> Option<[u8; 32]> {
        let dir = self.dir.as_deref()?;
        let files = dir.join(FILES);
        if !trusted(dir) || !trusted(&files) {
            return None;
        }
        let (file, _) = open_trusted(&files.join(identity.record_name()))?;
        let text = read_record(&file)?;
        let digest = identity.digest_in(&text)?;
        mark_used(&file);
        Some(digest)
    }

    /// Remembers `sha` as the digest of the plugin file of `identity`, once the file has gone
    /// unchanged for [`SETTLED`]; failures only cost the next start a hash.
    pub(crate) fn remember_digest(&self, identity: &FileIdentity, sha: &[u8; 32]) {
        self.remember_digest_at(identity, sha, SystemTime::now());
    }

    fn remember_digest_at(&self, identity: &FileIdentity, sha: &[u8; 32], now: SystemTime) {
        let Some(dir) = self.dir.as_deref() else {
            return;
        };
        let record = identity.record(sha);
        if !identity.settled_at(now)
            || record.len() > MAX_RECORD
            || self.known_digest(identity) == Some(*sha)
        {
            return;
        }
        let files = dir.join(FILES);
        let result = trusted_folder(dir)
            .and_then(|()| trusted_folder(&files))
            .and_then(|()| {
                private::replace_file(&files.join(identity.record_name()), record.as_bytes())
            });
        match result {
            Ok(()) => self.evict(None),
            Err(err) => {
                tracing::warn!(dir = %dir.display(), "cannot remember a plugin file's digest: {err}")
            }
        }
    }

    fn entry(&self, engine: &Engine, wasm_sha: &[u8; 32]) -> Option<PathBuf> {
        let name = format!("{}.cwasm", keyed_name(engine, wasm_sha));
        self.dir.as_ref().map(|d| d.join(name))
    }

    /// The cached compilation of the wasm with hash `wasm_sha`, if a trusted one exists. An
    /// entry found is marked used, which keeps it from eviction longest.
    pub fn load(&self, engine: &Engine, wasm_sha: &[u8; 32]) -> Option<Component> {
        let dir = self.dir.as_ref()?;
        let path = self.entry(engine, wasm_sha)?;
        if !trusted(dir) {
            return None;
        }
        let (mut file, meta) = open_trusted(&path)?;
        let key = entry_key(engine, wasm_sha);
        // SAFETY: for both deserializations, the payload was produced by `Component::serialize`
        // of this same engine configuration (the file name carries its compatibility hash),
        // written by this user into a directory only this user can write, and its checksum
        // matches.
        let deserialized = match SealedCopy::of_payload(&file, meta.len(), &key) {
            Some(sealed) => {
                if !sealed.checksum_matches {
                    return None;
                }
                // SAFETY: as above; the sealed copy cannot change under the mapping.
                unsafe { Component::deserialize_file(engine, sealed.path()) }
            }
            None => {
                let mut bytes = Vec::new();
                file.read_to_end(&mut bytes).ok()?;
                // SAFETY: as above; the bytes read were checked against the key's CRC.
                unsafe { Component::deserialize(engine, verified_payload(&bytes, &key)?) }
            }
        };
        match deserialized {
            Ok(component) => {
                mark_used(&file);
                Some(component)
            }
            Err(err) => {
                tracing::debug!(path = %path.display(), "ignoring a cache entry: {err}");
                None
            }
        }
    }

    /// Stores a compilation, then evicts what the cap leaves no room for; failures only cost
    /// the next start a recompile.
    pub fn store(&self, engine: &Engine, wasm_sha: &[u8; 32], component: &Component) {
        if self.dir.is_none() {
            return;
        }
        match component.serialize() {
            Ok(payload) => self.store_serialized(engine, wasm_sha, &payload),
            Err(err) => tracing::warn!("cannot serialize a compiled plugin for the cache: {err}"),
        }
    }

    /// Stores a compilation serialized already (as `Component::serialize` or
    /// `Engine::precompile_component` makes it), as it is.
    pub(crate) fn store_serialized(&self, engine: &Engine, wasm_sha: &[u8; 32], payload: &[u8]) {
        let (Some(dir), Some(path)) = (self.dir.as_ref(), self.entry(engine, wasm_sha)) else {
            return;
        };
        let result = trusted_folder(dir).and_then(|()| {
            private::replace_file(&path, &entry_bytes(&entry_key(engine, wasm_sha), payload))
        });
        match result {
            Ok(()) => self.evict(Some(&path)),
            Err(err) => {
                tracing::warn!(dir = %dir.display(), "cannot write the plugin compile cache: {err}")
            }
        }
    }

    /// Removes the entry of the wasm with hash `wasm_sha`, if there is one (the linker
    /// refused it: an entry stored before the refusal by an earlier version of the host).
    pub(crate) fn forget(&self, engine: &Engine, wasm_sha: &[u8; 32]) {
        if let (Some(dir), Some(path)) = (self.dir.as_ref(), self.entry(engine, wasm_sha))
            && trusted(dir)
        {
            let _ = std::fs::remove_file(path);
        }
    }

    /// Removes the least recently used entries until the entries fit under the cap (never
    /// `keep`, the one just written, nor the most recently used of all), temporary files of
    /// crashed writers, and the digest records of paths that are gone, unused for
    /// [`UNUSED_RECORD`], or of an older format. Other hosts may be reading and evicting the
    /// same cache: a reader keeps the entry it opened, and a file that vanishes here was
    /// removed by another host, which is fine. Every host spares the same newest entry, so
    /// two writers evicting at once never remove each other's last entry between them.
    fn evict(&self, keep: Option<&Path>) {
        let Some(dir) = self.dir.as_deref() else {
            return;
        };
        if !trusted(dir) {
            return;
        }
        let now = SystemTime::now();
        let mut total = 0u64;
        let mut candidates = Vec::new();
        for (path, meta) in regular_files(dir) {
            if remove_if_stale_temp(&path, &meta, now) {
                continue;
            }
            if path.extension().is_none_or(|e| e != "cwasm") {
                continue;
            }
            total = total.saturating_add(meta.len());
            let used = meta.modified().unwrap_or(UNIX_EPOCH);
            candidates.push((used, path, meta.len()));
        }
        candidates.sort();
        candidates.pop();
        for (_, path, len) in candidates {
            if Some(path.as_path()) == keep {
                continue;
            }
            if total <= self.max_bytes {
                break;
            }
            if remove_quietly(&path) {
                total -= len;
            }
        }
        let files = dir.join(FILES);
        if trusted(&files) {
            evict_records(&files, now);
        }
        let refused = dir.join(REFUSED);
        if trusted(&refused) {
            evict_unused(&refused, now);
        }
    }
}

/// The name of what the cache keeps for the wasm with hash `wasm_sha` compiled by `engine`:
/// the hash and the engine's compatibility hash.
pub(super) fn keyed_name(engine: &Engine, wasm_sha: &[u8; 32]) -> String {
    format!("{}-{:016x}", hex(wasm_sha), engine_hash(engine))
}

/// The engine's compatibility hash (its version, target and flags), in 64 bits.
fn engine_hash(engine: &Engine) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    hasher.finish()
}

/// The key an entry of the wasm with hash `wasm_sha`, compiled by `engine`, is stored under.
fn entry_key(engine: &Engine, wasm_sha: &[u8; 32]) -> [u8; KEY] {
    let mut key = [0u8; KEY];
    key[..32].copy_from_slice(wasm_sha);
    key[32..].copy_from_slice(&engine_hash(engine).to_le_bytes());
    key
}

/// The checksum of an entry stored under `key` with `payload`.
fn checksum(key: &[u8], payload: &[u8]) -> u32 {
    let mut crc = crc32fast::Hasher::new();
    crc.update(key);
    crc.update(payload);
    crc.finalize()
}

/// The whole entry file for `payload` stored under `key`.
fn entry_bytes(key: &[u8; KEY], payload: &[u8]) -> Vec<u8> {
    entry_bytes_of(MAGIC, key, payload)
}

/// An entry file of any kind the cache keeps: `magic`, `key`, the CRC-32 of the key and
/// the payload, then the payload.
pub(super) fn entry_bytes_of(magic: &[u8; 16], key: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(magic.len() + key.len() + 4 + payload.len());
    bytes.extend_from_slice(magic);
    bytes.extend_from_slice(key);
    bytes.extend_from_slice(&checksum(key, payload).to_le_bytes());
    bytes.extend_from_slice(payload);
    bytes
}

/// Removes from `folder` the files not used for [`UNUSED_RECORD`] and the temporary files of
/// crashed writers: the refusals remembered of components nobody loads any more.
fn evict_unused(folder: &Path, now: SystemTime) {
    for (path, meta) in regular_files(folder) {
        if remove_if_stale_temp(&path, &meta, now) {
            continue;
        }
        let unused = meta
            .modified()
            .ok()
            .and_then(|used| now.duration_since(used).ok())
            .is_some_and(|age| age > UNUSED_RECORD);
        if unused {
            remove_quietly(&path);
        }
    }
}

/// Removes from the digest folder `files` the records that will not be used again (see
/// [`ComponentCache::evict`]).
fn evict_records(files: &Path, now: SystemTime) {
    for (path, meta) in regular_files(files) {
        if remove_if_stale_temp(&path, &meta, now) || path.extension().is_some() {
            continue;
        }
        let unused = meta
            .modified()
            .ok()
            .and_then(|used| now.duration_since(used).ok())
            .is_some_and(|age| age > UNUSED_RECORD);
        let Some((file, _)) = open_trusted(&path) else {
            continue;
        };
        let gone = match read_record(&file).as_deref().and_then(recorded_path) {
            Some(plugin) => std::fs::metadata(plugin)
                .is_err_and(|err| matches!(err.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR))),
            None => true,
        };
        if unused || gone {
            remove_quietly(&path);
        }
    }
}

/// The regular files directly in `dir` and their metadata (links are not followed), leaving
/// out any that vanish while they are listed.
pub(super) fn regular_files(dir: &Path) -> impl Iterator<Item = (PathBuf, std::fs::Metadata)> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|item| Some((item.path(), item.metadata().ok()?)))
        .filter(|(_, meta)| meta.is_file())
}

/// The files of `folder` named `*.{extension}`, with their last use and size, the most
/// recently used first.
pub(super) fn newest_first(folder: &Path, extension: &str) -> Vec<(SystemTime, PathBuf, u64)> {
    let mut files: Vec<_> = regular_files(folder)
        .filter(|(path, _)| path.extension().is_some_and(|e| e == extension))
        .map(|(path, meta)| (meta.modified().unwrap_or(UNIX_EPOCH), path, meta.len()))
        .collect();
    files.sort_by_key(|file| std::cmp::Reverse(file.0));
    files
}

/// Removes the least recently used `*.{extension}` files of `folder` until the rest fit
/// under `max_bytes`, never `keep` (the one just written), and the temporary files of
/// crashed writers.
pub(super) fn evict_folder(folder: &Path, extension: &str, max_bytes: u64, keep: &Path) {
    let now = SystemTime::now();
    for (path, meta) in regular_files(folder) {
        remove_if_stale_temp(&path, &meta, now);
    }
    let files = newest_first(folder, extension);
    let mut total: u64 = files.iter().map(|(_, _, len)| len).sum();
    for (_, path, len) in files.into_iter().rev() {
        if total <= max_bytes {
            break;
        }
        if path != keep && remove_quietly(&path) {
            total -= len;
        }
    }
}

/// Removes `path` if it is a temporary file older than [`STALE_TEMP`]; whether it was one.
pub(super) fn remove_if_stale_temp(path: &Path, meta: &std::fs::Metadata, now: SystemTime) -> bool {
    if path.extension().is_none_or(|e| e != "tmp") {
        return false;
    }
    let stale = meta
        .modified()
        .ok()
        .and_then(|written| now.duration_since(written).ok())
        .is_some_and(|age| age > STALE_TEMP);
    if stale {
        remove_quietly(path);
    }
    true
}

/// Removes `path`; whether it is gone, by this call or another host's.
fn remove_quietly(path: &Path) -> bool {
    match std::fs::remove_file(path) {
        Ok(()) => true,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => true,
        Err(err) => {
            tracing::debug!(path = %path.display(), "cannot evict from the compile cache: {err}");
            false
        }
    }
}

/// The text of a digest record, if it is one of at most [`MAX_RECORD`] bytes.
fn read_record(file: &std::fs::File) -> Option<String> {
    let mut text = String::new();
    file.take(MAX_RECORD as u64 + 1)
        .read_to_string(&mut text)
        .ok()?;
    (text.len() <= MAX_RECORD).then_some(text)
}

/// Marks the cache file open as `file` used now, for eviction by least recent use. Its owner
/// may set its times through a read-only descriptor; a failure only makes it look older.
pub(super) fn mark_used(file: &std::fs::File) {
    if let Err(err) = file.set_modified(SystemTime::now()) {
        tracing::debug!("cannot mark a compile cache file used: {err}");
    }
}

/// The cap `ACCELHOST_CACHE_MAX_MIB` gives, in MiB: its value, or the default when it is
/// unset, empty or `0`; a value that is not a number is warned about and the default used.
fn max_mib(value: Option<&str>) -> u64 {
    match value.map(str::trim) {
        None | Some("") => DEFAULT_CACHE_MAX_MIB,
        Some(text) => match text.parse::<u64>() {
            Ok(0) => DEFAULT_CACHE_MAX_MIB,
            Ok(mib) => mib,
            Err(_) => {
                tracing::warn!(
                    "{CACHE_MAX_ENV}={text:?} is not a number of MiB; the compile cache keeps \
                     up to the default {DEFAULT_CACHE_MAX_MIB} MiB"
                );
                DEFAULT_CACHE_MAX_MIB
            }
        },
    }
}

/// Who may reach the cache's folders: this user alone ([`private`]).
const CACHE: Privacy = Privacy::Private;

/// Makes the cache folder `path` if it is absent (private, with any parents it lacks), then
/// checks that it can be trusted: a directory, not a link, owned by this user and closed to
/// others. Every writer goes through this before it creates anything inside the folder.
pub(super) fn trusted_folder(path: &Path) -> std::io::Result<()> {
    private::folder(path, CACHE, "the compile cache")
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
    /// Copies the payload of the cache entry `entry` (`len` bytes in all, header included),
    /// which must have been stored under `key`.
    fn of_payload(entry: &std::fs::File, len: u64, key: &[u8; KEY]) -> Option<SealedCopy> {
        use std::os::unix::fs::FileExt;
        let header = HEADER as u64;
        let mut head = [0u8; HEADER];
        entry.read_exact_at(&mut head, 0).ok()?;
        let expected = header_checksum(&head, MAGIC, key)?;
        if len <= header {
            return None;
        }
        let mut file = memory_file()?;
        let mut chunk = vec![0u8; 64 << 10];
        let mut crc = crc32fast::Hasher::new();
        crc.update(key);
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

/// Opens the file at `path` for reading, not through a link and without waiting (a FIFO
/// planted there would block the open until a writer came), if it is [`trusted`] by the
/// metadata of what was opened.
pub(super) fn open_trusted(path: &Path) -> Option<(std::fs::File, std::fs::Metadata)> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    private::distrust(&meta, false, CACHE)
        .is_none()
        .then_some((file, meta))
}

/// Whether the cache folder `path` can be trusted: owned by this user and closed to others.
pub(super) fn trusted(path: &Path) -> bool {
    private::trusted(path, CACHE)
}

/// The checksum an entry's header gives, if `bytes` start with the header of an entry of
/// `magic` stored under `key`.
fn header_checksum(bytes: &[u8], magic: &[u8; 16], key: &[u8]) -> Option<u32> {
    let rest = bytes.strip_prefix(magic.as_slice())?.strip_prefix(key)?;
    Some(u32::from_le_bytes(rest.get(..4)?.try_into().ok()?))
}

/// The payload of the entry `bytes`, if it was stored under `key` and is whole.
fn verified_payload<'a>(bytes: &'a [u8], key: &[u8; KEY]) -> Option<&'a [u8]> {
    verified_payload_of(bytes, MAGIC, key)
}

/// The payload of the entry file `bytes` ([`entry_bytes_of`]), if it is of `magic`, was
/// stored under `key` and is whole.
pub(super) fn verified_payload_of<'a>(
    bytes: &'a [u8],
    magic: &[u8; 16],
    key: &[u8],
) -> Option<&'a [u8]> {
    let payload = bytes.get(magic.len() + key.len() + 4..)?;
    (checksum(key, payload) == header_checksum(bytes, magic, key)?).then_some(payload)
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes that `text`, lower- or upper-case hex, stands for.
fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.as_bytes()
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
        .collect()
}

/// A compile cache in a fresh folder of the temporary directory, removed when dropped: for
/// the tests of what lives beside the cache.
#[cfg(test)]
pub(super) struct ScratchCache(pub ComponentCache);

#[cfg(test)]
impl ScratchCache {
    /// `name` keeps the folders of concurrent tests apart.
    pub fn new(name: &str, max_bytes: u64) -> Self {
        let dir =
            std::env::temp_dir().join(format!("accelhost-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        ScratchCache(ComponentCache::at(Some(dir)).with_max_bytes(max_bytes))
    }
}

#[cfg(test)]
impl Drop for ScratchCache {
    fn drop(&mut self) {
        if let Some(dir) = self.0.dir() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use std::os::unix::fs::DirBuilderExt;

    use super::*;

    /// The key the tests store their entries under.
    const TEST_KEY: [u8; KEY] = [7; KEY];

    #[test]
    fn payload_checksum_and_key_are_verified() {
        let payload = b"compiled bytes";
        let mut file = entry_bytes(&TEST_KEY, payload);
        assert_eq!(verified_payload(&file, &TEST_KEY), Some(&payload[..]));
        let mut other_key = TEST_KEY;
        other_key[39] ^= 1;
        assert_eq!(
            verified_payload(&file, &other_key),
            None,
            "an entry stored under another key is a miss"
        );
        let last = file.len() - 1;
        file[last] ^= 1;
        assert_eq!(verified_payload(&file, &TEST_KEY), None);
        assert_eq!(verified_payload(b"short", &TEST_KEY), None);
    }

    /// An entry file in a fresh temporary directory: the header, then `payload`.
    fn entry_file(name: &str, payload: &[u8]) -> (PathBuf, std::fs::File) {
        let path = std::env::temp_dir().join(format!("accelhost-{name}-{}", std::process::id()));
        std::fs::write(&path, entry_bytes(&TEST_KEY, payload)).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        (path, file)
    }

    #[test]
    fn the_sealed_copy_holds_the_payload_and_cannot_change() {
        let payload: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let (path, entry) = entry_file("sealed", &payload);
        let len = entry.metadata().unwrap().len();
        let copy = SealedCopy::of_payload(&entry, len, &TEST_KEY)
            .expect("memory files and /proc/self/fd work here");
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
        let copy = SealedCopy::of_payload(&entry, len, &TEST_KEY).expect("memory files work here");
        std::fs::remove_file(&path).unwrap();
        assert!(!copy.checksum_matches);
        let header_only = HEADER as u64;
        assert!(
            SealedCopy::of_payload(&entry, header_only, &TEST_KEY).is_none(),
            "no payload"
        );
    }

    /// A fresh private cache directory and a plugin file in another directory.
    fn cache_and_file(name: &str) -> (ComponentCache, PathBuf, PathBuf) {
        let base = std::env::temp_dir().join(format!("accelhost-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(base.join("cache"))
            .unwrap();
        let file = base.join("plugin.wasm");
        write_old(&file, b"\0asm plugin bytes");
        (ComponentCache::at(Some(base.join("cache"))), file, base)
    }

    /// Writes `bytes` to `path` with a modification time long past, so that a later write
    /// shows in the modification time whatever the timestamps' granularity.
    fn write_old(path: &Path, bytes: &[u8]) {
        std::fs::write(path, bytes).unwrap();
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(UNIX_EPOCH + Duration::from_secs(1_000_000_000))
            .unwrap();
    }

    fn identity(path: &Path) -> FileIdentity {
        FileIdentity::of(path, &std::fs::metadata(path).unwrap())
    }

    /// A time when `file` has long been settled.
    fn later() -> SystemTime {
        SystemTime::now() + SETTLED * 5
    }

    #[test]
    fn a_remembered_digest_is_known_until_the_file_is_written() {
        let (cache, file, base) = cache_and_file("digest-known");
        let sha = [7u8; 32];
        let before = identity(&file);
        assert_eq!(cache.known_digest(&before), None);
        cache.remember_digest_at(&before, &sha, later());
        assert_eq!(cache.known_digest(&before), Some(sha));
        // A write of the same length changes the change time at least, and the digest is
        // no longer known for the file as it is now.
        std::fs::write(&file, b"\0asm other bytes!").unwrap();
        let after = identity(&file);
        assert_eq!(after.size, before.size);
        assert_ne!(after, before);
        assert_eq!(cache.known_digest(&after), None);
        // A record naming the same file by another identity is not taken either.
        let moved = FileIdentity {
            modified: (before.modified.0 + 1, before.modified.1),
            ..before.clone()
        };
        assert_eq!(cache.known_digest(&moved), None);
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_rebuilt_file_replaces_the_record_of_its_path() {
        let (cache, file, base) = cache_and_file("digest-rebuilt");
        cache.remember_digest_at(&identity(&file), &[1u8; 32], later());
        // A build writes a new file and renames it over the old one: a new inode.
        let next = base.join("plugin.wasm.new");
        write_old(&next, b"\0asm rebuilt plugin");
        std::fs::rename(&next, &file).unwrap();
        let rebuilt = identity(&file);
        assert_eq!(cache.known_digest(&rebuilt), None);
        cache.remember_digest_at(&rebuilt, &[2u8; 32], later());
        assert_eq!(cache.known_digest(&rebuilt), Some([2u8; 32]));
        let records = std::fs::read_dir(base.join("cache/files")).unwrap().count();
        assert_eq!(records, 1, "one record per path");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_file_changed_just_now_is_not_remembered() {
        let (cache, file, base) = cache_and_file("digest-racy");
        let now = identity(&file);
        cache.remember_digest(&now, &[1u8; 32]);
        assert_eq!(
            cache.known_digest(&now),
            None,
            "within {SETTLED:?} of its change"
        );
        assert!(!now.settled_at(SystemTime::now()));
        assert!(now.settled_at(later()));
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_damaged_or_open_digest_record_is_ignored() {
        let (cache, file, base) = cache_and_file("digest-damaged");
        let id = identity(&file);
        let sha = [9u8; 32];
        cache.remember_digest_at(&id, &sha, later());
        let record = base.join("cache/files").join(id.record_name());
        let text = std::fs::read_to_string(&record).unwrap();
        for damaged in [
            text.replace(&hex(&sha), &hex(&sha)[..63]),
            text.replace(DIGEST_MAGIC, "accelhost-file-digest0"),
            text.trim_end().to_string(),
            text.replace(&hex(&sha), &"zz".repeat(32)),
        ] {
            std::fs::write(&record, damaged).unwrap();
            assert_eq!(cache.known_digest(&id), None);
        }
        std::fs::write(&record, &text).unwrap();
        assert_eq!(cache.known_digest(&id), Some(sha));
        std::fs::set_permissions(&record, std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .unwrap();
        assert_eq!(cache.known_digest(&id), None, "writable by others");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_plugin_file_whose_digest_is_remembered_is_not_read_again() {
        use crate::config::{Config, ConfigSource};
        let (cache, file, base) = cache_and_file("digest-load");
        let entry = |module: &str| {
            let text = format!(r#"{{"plugins": [{{"name": "p", "module": "{module}"}}]}}"#);
            let config = Config::parse(&text, ConfigSource::Embedded).unwrap();
            config.plugins.into_iter().next().unwrap()
        };
        let load = |module: &str| {
            crate::manager::load_module(&entry(module), &cache, &crate::builtin::CATALOG)
                .unwrap()
                .0
        };
        let dfl = load("builtin:dfl");
        // The file holds the xocl plugin, but its record names the dfl plugin's digest: a
        // load that believes the record, rather than reading the file, gets the dfl plugin.
        write_old(&file, crate::builtin::module("xocl").unwrap());
        let dfl_sha = crate::builtin::digest("dfl").unwrap();
        cache.remember_digest_at(&identity(&file), &dfl_sha, later());
        let path = file.to_str().unwrap();
        assert!(Arc::ptr_eq(&load(path), &dfl), "the record was not used");
        // Written again (the same bytes), the file is read and hashed: the xocl plugin.
        std::fs::write(&file, crate::builtin::module("xocl").unwrap()).unwrap();
        let xocl = load(path);
        assert!(!Arc::ptr_eq(&xocl, &dfl));
        assert!(Arc::ptr_eq(&xocl, &load("builtin:xocl")));
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn only_private_directories_are_trusted() {
        let dir = std::env::temp_dir().join(format!("accelhost-cache-{}", std::process::id()));
        std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
        assert!(trusted(&dir));
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        assert!(!trusted(&dir), "the cache is not even readable by others");
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777))
            .unwrap();
        assert!(!trusted(&dir));
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn a_remembered_digest_does_not_let_a_file_past_its_limits() {
        use crate::config::{Config, ConfigSource};
        let (cache, file, base) = cache_and_file("digest-limits");
        // One byte over 1 MiB, and remembered as the dfl plugin: a load that believed the
        // record before measuring the file would start the dfl plugin.
        write_old(&file, &vec![0u8; (1 << 20) + 1]);
        let dfl_sha = crate::builtin::digest("dfl").unwrap();
        cache.remember_digest_at(&identity(&file), &dfl_sha, later());
        assert_eq!(cache.known_digest(&identity(&file)), Some(dfl_sha));
        let text = format!(
            r#"{{"plugins": [{{"name": "p", "module": "{}", "load_policy": {{"max_module_mib": 1}}}}]}}"#,
            file.display()
        );
        let config = Config::parse(&text, ConfigSource::Embedded).unwrap();
        let err =
            match crate::manager::load_module(&config.plugins[0], &cache, &crate::builtin::CATALOG)
            {
                Ok(_) => panic!("the remembered digest let a file over the limit in"),
                Err(err) => err.to_string(),
            };
        assert!(
            err.contains("over the 1 MiB limit (load_policy.max_module_mib)"),
            "{err}"
        );
        std::fs::remove_dir_all(&base).unwrap();
    }

    /// The smallest component: a component binary's header and no sections.
    const EMPTY_COMPONENT: &[u8] = b"\0asm\x0d\0\x01\0";

    fn engine_and_component() -> (Engine, Component) {
        let engine = Engine::default();
        let component = Component::from_binary(&engine, EMPTY_COMPONENT).unwrap();
        (engine, component)
    }

    /// A fresh base directory for test `name`, with a private `cache` folder path in it (not
    /// made).
    fn fresh_base(name: &str) -> (PathBuf, PathBuf) {
        let base = std::env::temp_dir().join(format!("accelhost-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        let cache = base.join("cache");
        (base, cache)
    }

    fn private_dir(path: &Path) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(path)
            .unwrap();
    }

    /// The compiled entries in `dir`, and their total size.
    fn entries(dir: &Path) -> (Vec<PathBuf>, u64) {
        let mut found: Vec<(PathBuf, u64)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
            .map(|e| (e.path(), e.metadata().unwrap().len()))
            .collect();
        found.sort();
        let total = found.iter().map(|(_, len)| len).sum();
        (found.into_iter().map(|(path, _)| path).collect(), total)
    }

    /// The size of the entry of the empty component.
    fn entry_len(engine: &Engine, component: &Component) -> u64 {
        let (base, dir) = fresh_base("entry-len");
        ComponentCache::at(Some(dir.clone())).store(engine, &[0; 32], component);
        let (_, total) = entries(&dir);
        std::fs::remove_dir_all(&base).unwrap();
        assert!(total > HEADER as u64);
        total
    }

    /// Sets the last use (modification time) of `path` to `ago` before now.
    fn used_ago(path: &Path, ago: Duration) {
        std::fs::File::open(path)
            .unwrap()
            .set_modified(SystemTime::now() - ago)
            .unwrap();
    }

    #[test]
    fn an_entry_copied_over_another_is_a_miss_and_a_fifo_entry_is_not_waited_on() {
        let (engine, component) = engine_and_component();
        let (base, dir) = fresh_base("cache-swap");
        let cache = ComponentCache::at(Some(dir.clone()));
        cache.store(&engine, &[1; 32], &component);
        cache.store(&engine, &[2; 32], &component);
        assert!(cache.load(&engine, &[2; 32]).is_some());
        let first = cache.entry(&engine, &[1; 32]).unwrap();
        let second = cache.entry(&engine, &[2; 32]).unwrap();
        std::fs::copy(&first, &second).unwrap();
        assert!(
            cache.load(&engine, &[2; 32]).is_none(),
            "the entry of another key was loaded under this one"
        );
        assert!(
            cache.load(&engine, &[1; 32]).is_some(),
            "the original still loads"
        );
        std::fs::remove_file(&second).unwrap();
        let c_path = std::ffi::CString::new(second.as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        let loading = cache.clone();
        let engine_copy = engine.clone();
        std::thread::spawn(move || tx.send(loading.load(&engine_copy, &[2; 32]).is_none()));
        assert!(
            rx.recv_timeout(Duration::from_secs(20))
                .expect("loading a FIFO entry blocked"),
            "a FIFO is not an entry"
        );
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn the_entries_stay_under_the_cap_however_many_are_stored() {
        let (engine, component) = engine_and_component();
        let len = entry_len(&engine, &component);
        let (base, dir) = fresh_base("cache-cap");
        let cap = 3 * len + len / 2;
        let cache = ComponentCache::at(Some(dir.clone())).with_max_bytes(cap);
        for i in 1..=12u8 {
            cache.store(&engine, &[i; 32], &component);
            let (found, total) = entries(&dir);
            assert!(total <= cap, "{total} bytes in {} entries", found.len());
            assert!(found.contains(&cache.entry(&engine, &[i; 32]).unwrap()));
        }
        assert_eq!(entries(&dir).0.len(), 3);
        // An entry larger than the cap on its own is kept while it is the newest.
        let tiny = ComponentCache::at(Some(dir.clone())).with_max_bytes(1);
        tiny.store(&engine, &[13; 32], &component);
        assert_eq!(
            entries(&dir).0,
            vec![tiny.entry(&engine, &[13; 32]).unwrap()]
        );
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn two_writers_evicting_at_once_leave_the_newest_entry() {
        let (engine, component) = engine_and_component();
        let (base, dir) = fresh_base("cache-two-writers");
        let roomy = ComponentCache::at(Some(dir.clone()));
        let tiny = ComponentCache::at(Some(dir.clone())).with_max_bytes(1);
        for first_to_evict in [1u8, 2] {
            for i in 1..=2u8 {
                roomy.store(&engine, &[i; 32], &component);
                used_ago(
                    &roomy.entry(&engine, &[i; 32]).unwrap(),
                    Duration::from_secs(100 - u64::from(i)),
                );
            }
            // Both wrote before either evicted, and each keeps the entry it wrote.
            let second_to_evict = 3 - first_to_evict;
            for i in [first_to_evict, second_to_evict] {
                tiny.evict(Some(&tiny.entry(&engine, &[i; 32]).unwrap()));
            }
            assert_eq!(
                entries(&dir).0,
                vec![tiny.entry(&engine, &[2; 32]).unwrap()],
                "the writer of entry {first_to_evict} evicted first"
            );
        }
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_recently_loaded_entry_outlives_older_ones() {
        let (engine, component) = engine_and_component();
        let len = entry_len(&engine, &component);
        let (base, dir) = fresh_base("cache-lru");
        let cache = ComponentCache::at(Some(dir.clone())).with_max_bytes(3 * len + len / 2);
        let entry = |i: u8| cache.entry(&engine, &[i; 32]).unwrap();
        for i in 1..=3u8 {
            cache.store(&engine, &[i; 32], &component);
            used_ago(&entry(i), Duration::from_secs(3600 - 10 * u64::from(i)));
        }
        // The oldest, but loaded just now.
        assert!(cache.load(&engine, &[1; 32]).is_some());
        cache.store(&engine, &[4; 32], &component);
        assert_eq!(entries(&dir).0, {
            let mut kept = vec![entry(1), entry(3), entry(4)];
            kept.sort();
            kept
        });
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn temporary_files_of_crashed_writers_are_removed_once_stale() {
        let (engine, component) = engine_and_component();
        let (base, dir) = fresh_base("cache-tmp");
        private_dir(&dir.join(FILES));
        let stale = [dir.join("abc.1-0.tmp"), dir.join(FILES).join("def.2-0.tmp")];
        let fresh = [dir.join("ghi.3-0.tmp"), dir.join(FILES).join("jkl.4-0.tmp")];
        for path in stale.iter().chain(&fresh) {
            std::fs::write(path, b"half an entry").unwrap();
        }
        for path in &stale {
            used_ago(path, STALE_TEMP + Duration::from_secs(60));
        }
        ComponentCache::at(Some(dir.clone())).store(&engine, &[1; 32], &component);
        for path in &stale {
            assert!(!path.exists(), "{} was left", path.display());
        }
        for path in &fresh {
            assert!(path.exists(), "{} may be a write under way", path.display());
        }
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn records_of_plugin_files_gone_unused_or_of_another_format_are_evicted() {
        let (engine, component) = engine_and_component();
        let (cache, file, base) = cache_and_file("records-evicted");
        let [gone, unused] = ["gone.wasm", "unused.wasm"].map(|name| base.join(name));
        for path in [&gone, &unused] {
            write_old(path, b"\0asm another plugin");
        }
        for (path, sha) in [(&file, 1u8), (&gone, 2), (&unused, 3)] {
            cache.remember_digest_at(&identity(path), &[sha; 32], later());
        }
        let files = base.join("cache").join(FILES);
        let record = |path: &Path| files.join(identity(path).record_name());
        let unused_record = record(&unused);
        let gone_record = record(&gone);
        std::fs::remove_file(&gone).unwrap();
        used_ago(&unused_record, UNUSED_RECORD + Duration::from_secs(3600));
        let version_one = files.join("00112233445566778899aabbccddeeff");
        let old = format!("accelhost-file-digest1 1 2 3 4 5 6 7 {}\n", hex(&[4; 32]));
        std::fs::write(&version_one, old).unwrap();
        cache.store(&engine, &[1; 32], &component);
        assert!(
            !gone_record.exists(),
            "the record of a removed path is kept"
        );
        assert!(
            !unused_record.exists(),
            "a record unused for 90 days is kept"
        );
        assert!(!version_one.exists(), "a record of the old format is kept");
        assert_eq!(cache.known_digest(&identity(&file)), Some([1; 32]));
        assert_eq!(std::fs::read_dir(&files).unwrap().count(), 1);
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_record_carries_any_path_and_refuses_damage() {
        let path = PathBuf::from(std::ffi::OsStr::from_bytes(b"/p/a plugin\n\xff%.wasm"));
        let id = FileIdentity {
            path: path.clone(),
            device: 1,
            inode: 2,
            size: 3,
            modified: (-4, 5),
            changed: (6, 7),
        };
        let text = id.record(&[9; 32]);
        assert_eq!(text.matches('\n').count(), 1, "{text}");
        assert_eq!(recorded_path(&text), Some(path));
        assert_eq!(id.digest_in(&text), Some([9; 32]));
        for damaged in [
            text.replace(DIGEST_MAGIC, "accelhost-file-digest1"),
            text.replacen(" 1 2 ", " 1 ", 1),
            text.replace(&hex(&[9; 32]), &hex(&[9; 31])),
            text.replacen("2f70", "2f7", 1),
            text.trim_end().to_string(),
        ] {
            assert_eq!(recorded_path(&damaged), None, "{damaged}");
            assert_eq!(id.digest_in(&damaged), None, "{damaged}");
        }
        // A path too long for a record is not remembered, and nothing is written for it.
        let (cache, file, base) = cache_and_file("record-long");
        let relative = FileIdentity::of(Path::new("plugin.wasm"), &file.metadata().unwrap());
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            relative.path,
            cwd.join("plugin.wasm"),
            "every host reads it alike"
        );
        let long = FileIdentity {
            path: base.join("p".repeat(MAX_RECORD / 2)),
            ..identity(&file)
        };
        cache.remember_digest_at(&long, &[1; 32], later());
        assert!(!base.join("cache").join(FILES).exists());
        std::fs::remove_dir_all(&base).unwrap();
    }

    /// Stores an entry and remembers a digest through `cache`, whose folder is untrusted.
    fn write_both(cache: &ComponentCache, plugin: &Path) {
        let (engine, component) = engine_and_component();
        cache.store(&engine, &[1; 32], &component);
        cache.remember_digest_at(&identity(plugin), &[1; 32], later());
        assert!(cache.load(&engine, &[1; 32]).is_none());
        assert_eq!(cache.known_digest(&identity(plugin)), None);
    }

    fn listing(dir: &Path) -> Vec<PathBuf> {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn nothing_is_created_in_a_cache_folder_open_to_others_or_behind_a_link() {
        use std::os::unix::fs::PermissionsExt;
        let (_, file, base) = cache_and_file("untrusted-folder");
        let dir = base.join("cache");
        for mode in [0o777, 0o750, 0o701] {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
            write_both(&ComponentCache::at(Some(dir.clone())), &file);
            assert_eq!(listing(&dir), Vec::<PathBuf>::new(), "mode {mode:o}");
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let link = base.join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        write_both(&ComponentCache::at(Some(link)), &file);
        assert_eq!(listing(&dir), Vec::<PathBuf>::new(), "through a link");
        // A private cache folder with an open `files/`: entries are kept, records are not.
        private_dir(&dir.join(FILES));
        std::fs::set_permissions(dir.join(FILES), std::fs::Permissions::from_mode(0o777)).unwrap();
        ComponentCache::at(Some(dir.clone())).remember_digest_at(
            &identity(&file),
            &[1; 32],
            later(),
        );
        assert_eq!(listing(&dir.join(FILES)), Vec::<PathBuf>::new());
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn nothing_is_created_in_a_cache_folder_of_another_user() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: giving a folder to another user (uid 65534) needs root");
            return;
        }
        let (_, file, base) = cache_and_file("foreign-folder");
        let dir = base.join("cache");
        std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
        write_both(&ComponentCache::at(Some(dir.clone())), &file);
        assert_eq!(listing(&dir), Vec::<PathBuf>::new());
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_missing_cache_folder_is_made_private_with_its_parents() {
        use std::os::unix::fs::PermissionsExt;
        let (engine, component) = engine_and_component();
        let (base, _) = fresh_base("missing-folder");
        let dir = base.join("a/b/cache");
        let cache = ComponentCache::at(Some(dir.clone()));
        cache.store(&engine, &[1; 32], &component);
        assert!(cache.load(&engine, &[1; 32]).is_some());
        for folder in [base.join("a"), base.join("a/b"), dir.clone()] {
            let mode = std::fs::metadata(&folder).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{}", folder.display());
        }
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn hosts_sharing_a_cache_store_load_and_evict_at_once() {
        let (engine, component) = engine_and_component();
        let len = entry_len(&engine, &component);
        let (base, dir) = fresh_base("cache-shared");
        let cap = 3 * len + len / 2;
        std::thread::scope(|scope| {
            for host in 0..4u8 {
                let (engine, component, dir) = (&engine, &component, &dir);
                scope.spawn(move || {
                    // Each thread is a host of its own, with its own handle on the folder.
                    let cache = ComponentCache::at(Some(dir.clone())).with_max_bytes(cap);
                    for round in 0..20u8 {
                        cache.store(engine, &[host * 20 + round; 32], component);
                        for earlier in 0..=round {
                            // Present or evicted by another host meanwhile; never broken.
                            let _ = cache.load(engine, &[host * 20 + earlier; 32]);
                        }
                    }
                });
            }
        });
        let cache = ComponentCache::at(Some(dir.clone())).with_max_bytes(cap);
        cache.store(&engine, &[200; 32], &component);
        let (found, total) = entries(&dir);
        assert!(total <= cap, "{total} bytes in {} entries", found.len());
        for path in &found {
            let name = path.file_name().unwrap().to_str().unwrap();
            let sha: [u8; 32] = unhex(&name[..64]).unwrap().try_into().unwrap();
            assert!(cache.load(&engine, &sha).is_some(), "{name} is damaged");
        }
        let temporary = listing(&dir)
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "tmp"))
            .count();
        assert_eq!(temporary, 0, "a writer left its temporary file");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn the_cap_comes_from_the_environment_value() {
        let default = DEFAULT_CACHE_MAX_MIB;
        assert_eq!(max_mib(None), default);
        assert_eq!(max_mib(Some("")), default);
        assert_eq!(max_mib(Some("0")), default);
        assert_eq!(max_mib(Some("lots")), default);
        assert_eq!(max_mib(Some("-5")), default);
        assert_eq!(max_mib(Some(" 64 ")), 64);
        assert_eq!(max_mib(Some("18446744073709551615")), u64::MAX);
        assert_eq!(ComponentCache::at(None).with_max_bytes(5).max_bytes(), 5);
    }
}
