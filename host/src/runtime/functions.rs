//! Cranelift's code for single functions, kept beside the compile cache so that a plugin
//! compiles only the functions it changed since an earlier build. Toolchains that embed a
//! whole language runtime (componentize-js's StarlingMonkey, componentize-py's CPython) make
//! builds of 15–20 MiB that differ from one another in their data, not their functions: the
//! compile of an edited plugin takes nearly every function from here instead of Cranelift.
//!
//! The folder `functions/` of the compile cache holds packs: each holds the functions one
//! compile made that no pack held yet, as the magic, then entries (key length and value
//! length as little-endian `u32`s, the key, the value), then the CRC-32 of all before it.
//! Keys are Cranelift's hashes of a function's IR and the target's flags, and a value names
//! the Cranelift version that made it (Cranelift refuses another's), so one folder serves
//! every engine kind and host version. A pack is trusted as the compile cache's entries are
//! (this user's private folder, opened without following links), is read whole or not at
//! all (its size under the folder's cap, its checksum), and the packs together stay under
//! a quarter of the compile cache's cap and 256 MiB, the least recently used removed first.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use accelhost_trust::private;
use sha2::{Digest, Sha256};
use wasmtime::Engine;

use super::cache::{self, ComponentCache};
use super::engine::{EngineKind, Tier};

/// The packs' folder in the compile cache.
const FOLDER: &str = "functions";
/// The first bytes of a pack.
const MAGIC: &[u8; 16] = b"accelhost-funcs1";
/// A pack's extension.
const PACK: &str = "pack";
/// The share of the compile cache's cap the packs may take (a quarter)...
const SHARE_OF_CACHE: u64 = 4;
/// ...and at most this: a compile holds the packs it reads in memory, within the worker's
/// `load_policy.compile_memory_mib` (1536 MiB by default). The JavaScript and Python SDKs'
/// runtimes take about 86 MiB together.
const MAX_PACK_BYTES: u64 = 256 << 20;
/// Components under this size compile in well under a second: they do without the packs,
/// whose reading would cost them more than it saves.
pub(crate) const WORTH_IT_BYTES: usize = 1 << 20;

/// The function code of one compile: what the packs held when it first asked, and what it
/// compiled anew, written as one more pack by [`FunctionCache::save`].
pub(crate) struct FunctionCache {
    folder: PathBuf,
    max_bytes: u64,
    known: OnceLock<Functions>,
    made: Mutex<Made>,
    hits: AtomicU64,
    compiled: AtomicU64,
}

/// Function code by Cranelift's key.
type Functions = HashMap<Box<[u8]>, Box<[u8]>>;

#[derive(Default)]
struct Made {
    entries: Vec<(Box<[u8]>, Vec<u8>)>,
    bytes: u64,
}

impl FunctionCache {
    /// The function code kept beside `cache` for a compile of `wasm_len` bytes by an
    /// engine of `kind`: none where the cache has no folder, for a component too small to
    /// gain from it ([`WORTH_IT_BYTES`]), or for baseline code (Winch keeps none).
    pub(crate) fn for_compile(
        cache: &ComponentCache,
        kind: EngineKind,
        wasm_len: usize,
    ) -> Option<Arc<FunctionCache>> {
        (kind.tier == Tier::Optimized && wasm_len >= WORTH_IT_BYTES)
            .then(|| FunctionCache::beside(cache).map(Arc::new))
            .flatten()
    }

    /// The function code kept beside `cache`, or none where it has no folder.
    fn beside(cache: &ComponentCache) -> Option<FunctionCache> {
        Some(FunctionCache {
            folder: cache.dir()?.join(FOLDER),
            max_bytes: (cache.max_bytes() / SHARE_OF_CACHE).min(MAX_PACK_BYTES),
            known: OnceLock::new(),
            made: Mutex::default(),
            hits: AtomicU64::new(0),
            compiled: AtomicU64::new(0),
        })
    }

    /// How many functions were found in the packs, and how many were compiled anew.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.compiled.load(Ordering::Relaxed),
        )
    }

    fn made(&self) -> std::sync::MutexGuard<'_, Made> {
        self.made.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The packs' functions, read at the first question: newest pack first, as many whole
    /// packs as fit under the cap. A pack that cannot be trusted or read whole is passed over.
    fn known(&self) -> &Functions {
        self.known.get_or_init(|| {
            let mut known = HashMap::new();
            if !cache::trusted(&self.folder) {
                return known;
            }
            let mut budget = self.max_bytes;
            for (_, path, len) in cache::newest_first(&self.folder, PACK) {
                if len > budget {
                    continue;
                }
                let Some((file, _)) = cache::open_trusted(&path) else {
                    continue;
                };
                let mut bytes = Vec::with_capacity(len as usize);
                if (&file).take(len).read_to_end(&mut bytes).is_err() {
                    continue;
                }
                let Some(entries) = entries_of(&bytes) else {
                    tracing::debug!(path = %path.display(), "ignoring a damaged function pack");
                    continue;
                };
                budget -= len;
                cache::mark_used(&file);
                for (key, value) in entries {
                    known.entry(key.into()).or_insert_with(|| value.into());
                }
            }
            known
        })
    }

    /// Writes what this compile made anew as one more pack, then removes the least recently
    /// used packs until the rest fit under the cap; failures only cost a later compile time.
    pub(crate) fn save(&self) {
        let made = std::mem::take(&mut *self.made());
        if made.entries.is_empty() {
            return;
        }
        let bytes = pack_bytes(&made.entries);
        let name = cache::hex(&Sha256::digest(&bytes)[..16]);
        let path = self.folder.join(format!("{name}.{PACK}"));
        let written =
            cache::trusted_folder(&self.folder).and_then(|()| private::replace_file(&path, &bytes));
        match written {
            Ok(()) => cache::evict_folder(&self.folder, PACK, self.max_bytes, &path),
            Err(err) => tracing::warn!(
                dir = %self.folder.display(),
                "cannot keep the compiled functions for the next compile: {err}"
            ),
        }
    }
}

/// Compiles `wasm` for an engine of `kind`, taking each function's code from `functions`
/// where an earlier compile made it, and keeping what it makes anew there for the next. Gives
/// the serialized code, which any engine of `kind` loads (the function cache changes which
/// compiler run made a function's code, never the code).
pub(crate) fn precompile(
    kind: EngineKind,
    wasm: &[u8],
    functions: &Arc<FunctionCache>,
) -> wasmtime::Result<Vec<u8>> {
    let mut config = kind.config();
    config.enable_incremental_compilation(functions.clone())?;
    let code = Engine::new(&config)?.precompile_component(wasm)?;
    functions.save();
    let (found, made) = functions.counts();
    tracing::debug!(found, made, "compiled with the function cache");
    Ok(code)
}

/// Names the folder and counts, never the code held (wasmtime's `CacheStore` asks for
/// `Debug`; a printed engine configuration would otherwise print every function).
impl std::fmt::Debug for FunctionCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (found, compiled) = self.counts();
        f.debug_struct("FunctionCache")
            .field("folder", &self.folder)
            .field("max_bytes", &self.max_bytes)
            .field("found", &found)
            .field("compiled", &compiled)
            .finish()
    }
}

impl wasmtime::CacheStore for FunctionCache {
    fn get(&self, key: &[u8]) -> Option<Cow<'_, [u8]>> {
        let value = self.known().get(key)?;
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(Cow::Borrowed(value))
    }

    fn insert(&self, key: &[u8], value: Vec<u8>) -> bool {
        self.compiled.fetch_add(1, Ordering::Relaxed);
        let mut made = self.made();
        let grown = made.bytes + (key.len() + value.len() + 8) as u64;
        if grown > self.max_bytes || key.len() > u32::MAX as usize {
            return false;
        }
        made.bytes = grown;
        made.entries.push((key.into(), value));
        true
    }
}

/// The bytes of a pack of `entries`.
fn pack_bytes(entries: &[(Box<[u8]>, Vec<u8>)]) -> Vec<u8> {
    let len = entries
        .iter()
        .map(|(k, v)| 8 + k.len() + v.len())
        .sum::<usize>();
    let mut bytes = Vec::with_capacity(MAGIC.len() + len + 4);
    bytes.extend_from_slice(MAGIC);
    for (key, value) in entries {
        bytes.extend_from_slice(&(key.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&(value.len() as u32).to_le_bytes());
        bytes.extend_from_slice(key);
        bytes.extend_from_slice(value);
    }
    let crc = crc32fast::hash(&bytes);
    bytes.extend_from_slice(&crc.to_le_bytes());
    bytes
}

/// The entries of the pack `bytes`, if it is one and whole.
fn entries_of(bytes: &[u8]) -> Option<Vec<(&[u8], &[u8])>> {
    let (body, crc) = bytes.split_at_checked(bytes.len().checked_sub(4)?)?;
    if crc32fast::hash(body).to_le_bytes() != crc {
        return None;
    }
    let mut rest = body.strip_prefix(MAGIC.as_slice())?;
    let mut entries = Vec::new();
    while !rest.is_empty() {
        let (lens, after) = rest.split_at_checked(8)?;
        let key_len = u32::from_le_bytes(lens[..4].try_into().ok()?) as usize;
        let value_len = u32::from_le_bytes(lens[4..].try_into().ok()?) as usize;
        let (key, after) = after.split_at_checked(key_len)?;
        let (value, after) = after.split_at_checked(value_len)?;
        entries.push((key, value));
        rest = after;
    }
    Some(entries)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use wasmtime::CacheStore;

    use super::*;
    use crate::runtime::cache::ScratchCache;

    fn scratch(name: &str, max_bytes: u64) -> ScratchCache {
        ScratchCache::new(&format!("functions-{name}"), max_bytes)
    }

    fn saved(cache: &ComponentCache, entries: &[(&[u8], &[u8])]) -> FunctionCache {
        let functions = FunctionCache::beside(cache).unwrap();
        for (key, value) in entries {
            assert!(functions.insert(key, value.to_vec()));
        }
        functions.save();
        functions
    }

    #[test]
    fn what_one_compile_made_the_next_one_finds() {
        let scratch = scratch("round-trip", 1 << 30);
        let cache = &scratch.0;
        saved(cache, &[(b"f1", b"code one"), (b"f2", b"")]);
        saved(cache, &[(b"f3", b"code three")]);
        let next = FunctionCache::beside(cache).unwrap();
        assert_eq!(next.get(b"f1").as_deref(), Some(b"code one".as_slice()));
        assert_eq!(next.get(b"f2").as_deref(), Some(b"".as_slice()));
        assert_eq!(next.get(b"f3").as_deref(), Some(b"code three".as_slice()));
        assert_eq!(next.get(b"f4"), None);
        assert_eq!(next.counts(), (3, 0));
        // Nothing made anew: no pack is written.
        next.save();
        assert_eq!(cache::newest_first(&next.folder, PACK).len(), 2);
    }

    #[test]
    fn a_damaged_pack_is_passed_over_whole() {
        let scratch = scratch("damaged", 1 << 30);
        let cache = &scratch.0;
        saved(cache, &[(b"good", b"kept")]);
        let bad = saved(cache, &[(b"bad", b"flipped")]);
        let (_, path, _) = cache::newest_first(&bad.folder, PACK)
            .into_iter()
            .find(|(_, path, _)| std::fs::read(path).unwrap().windows(3).any(|w| w == b"bad"))
            .unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.len() - 6;
        bytes[at] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let truncated = bad.folder.join(format!("truncated.{PACK}"));
        std::fs::write(
            &truncated,
            &pack_bytes(&[(b"cut".as_slice().into(), vec![1; 9])])[..20],
        )
        .unwrap();
        let next = FunctionCache::beside(cache).unwrap();
        assert_eq!(next.get(b"good").as_deref(), Some(b"kept".as_slice()));
        assert_eq!(next.get(b"bad"), None);
        assert_eq!(next.get(b"cut"), None);
    }

    #[test]
    fn a_pack_others_could_write_is_not_read() {
        use std::os::unix::fs::PermissionsExt;
        let scratch = scratch("open-folder", 1 << 30);
        let cache = &scratch.0;
        let functions = saved(cache, &[(b"f", b"code")]);
        std::fs::set_permissions(&functions.folder, std::fs::Permissions::from_mode(0o777))
            .unwrap();
        let next = FunctionCache::beside(cache).unwrap();
        assert_eq!(next.get(b"f"), None);
        assert!(next.insert(b"g", Vec::new()));
        next.save();
        let packs = cache::newest_first(&functions.folder, PACK);
        assert_eq!(
            packs.len(),
            1,
            "nothing is written into a folder others can write"
        );
    }

    /// `wasm` with a custom section appended: other bytes, the same functions.
    fn rebuilt(wasm: &[u8], note: &str) -> Vec<u8> {
        let mut section = vec![note.len() as u8];
        section.extend_from_slice(note.as_bytes());
        let mut bytes = wasm.to_vec();
        bytes.push(0);
        bytes.push(section.len() as u8);
        bytes.extend_from_slice(&section);
        bytes
    }

    #[test]
    fn a_rebuild_with_the_same_functions_takes_most_of_them_from_the_cache() {
        let wasm =
            std::fs::read(Path::new(env!("ACCELHOST_GUEST_DIR")).join("accelhost_plugin_dfl.wasm"))
                .unwrap();
        let scratch = scratch("rebuild", 1 << 30);
        let cache = &scratch.0;
        let kind = EngineKind::optimized(false);
        let first = Arc::new(FunctionCache::beside(cache).unwrap());
        precompile(kind, &rebuilt(&wasm, "first build"), &first).unwrap();
        let (found, made) = first.counts();
        assert_eq!(found, 0, "an empty cache has no functions");
        assert!(made > 100, "the plugin's functions were compiled: {made}");

        let again = Arc::new(FunctionCache::beside(cache).unwrap());
        let code = precompile(kind, &rebuilt(&wasm, "second build"), &again).unwrap();
        // Wasmtime does not make every function of a component the same way in each compile
        // (a fifth of this plugin's vary), so not every one comes back.
        let (found, compiled) = again.counts();
        assert_eq!(found + compiled, made, "the same functions were asked for");
        assert!(
            found >= made / 2,
            "most functions came from the cache: {found} of {made}"
        );
        // The code loads into an engine of the kind, as code compiled without the cache does.
        let engine = Engine::new(&kind.config()).unwrap();
        // SAFETY: made just above by `precompile` for this engine kind.
        unsafe { wasmtime::component::Component::deserialize(&engine, &code) }.unwrap();

        // A metered engine's functions count fuel: most are other code (those that are the
        // same code, such as trampolines, have the same key) and are compiled anew.
        let metered = Arc::new(FunctionCache::beside(cache).unwrap());
        precompile(EngineKind::optimized(true), &wasm, &metered).unwrap();
        let (_, compiled) = metered.counts();
        assert!(compiled >= made / 2, "{compiled} of {made} compiled anew");
    }

    #[test]
    fn the_packs_stay_under_their_cap_the_least_recently_used_going_first() {
        let scratch = scratch("cap", 4 * 1000);
        let cache = &scratch.0;
        let functions = FunctionCache::beside(cache).unwrap();
        assert_eq!(
            functions.max_bytes, 1000,
            "a quarter of the compile cache's cap"
        );
        let value = vec![7u8; 300];
        for key in [b"a", b"b", b"c", b"d"] {
            saved(cache, &[(key, &value)]);
            // Distinct modification times, for the order of use.
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let next = FunctionCache::beside(cache).unwrap();
        assert_eq!(next.get(b"a"), None, "the oldest pack went");
        for key in [b"b", b"c", b"d"] {
            assert!(next.get(key).is_some());
        }
        let total: u64 = cache::newest_first(&next.folder, PACK)
            .iter()
            .map(|p| p.2)
            .sum();
        assert!(total <= 1000, "{total}");
        // One compile adds no more than the cap.
        assert!(!next.insert(b"huge", vec![0; 1000]));
    }
}
