//! Build products kept beside the compile cache, by the digest of everything that made them:
//! a later build of the same inputs, in any process of this user, takes the product instead
//! of building it again. Each [`Shelf`] is a folder of the cache holding one file per key:
//! the shelf's magic, the key, the CRC-32 of key and product, then the product. Entries are
//! trusted as the compile cache's are (this user's private folder, opened without following
//! links, no larger than the shelf allows, the checksum whole), and each shelf stays under
//! its cap, the least recently used removed first.

use std::io::Read;
use std::path::PathBuf;

use accelhost_trust::private;

use super::cache::{self, ComponentCache};

/// A kind of build product the cache keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shelf {
    /// Kernels built from OpenCL C for the emulated XRT card (module, metadata and log).
    KernelBuilds,
}

impl Shelf {
    fn folder(self) -> &'static str {
        match self {
            Shelf::KernelBuilds => "kernels",
        }
    }

    fn magic(self) -> &'static [u8; 16] {
        match self {
            Shelf::KernelBuilds => b"accelhost-kernl1",
        }
    }

    /// The largest entry the shelf reads: a kernel module of the card's largest (16 MiB)
    /// with its metadata and log.
    fn max_entry(self) -> u64 {
        match self {
            Shelf::KernelBuilds => 20 << 20,
        }
    }

    /// The shelf's share of the compile cache's cap (a sixteenth), and at most 256 MiB:
    /// thousands of programs of a few hundred KiB each.
    fn max_bytes(self, cache: &ComponentCache) -> u64 {
        (cache.max_bytes() / 16).clamp(self.max_entry(), 256 << 20)
    }
}

/// What an entry's file is called: the key in hex.
const EXTENSION: &str = "kept";

impl ComponentCache {
    fn kept_path(&self, shelf: Shelf, key: &[u8; 32]) -> Option<(PathBuf, PathBuf)> {
        let folder = self.dir()?.join(shelf.folder());
        let path = folder.join(format!("{}.{EXTENSION}", cache::hex(key)));
        Some((folder, path))
    }

    /// The product kept on `shelf` under `key`, if a trusted and whole entry is there; an
    /// entry found is marked used, which keeps it from eviction longest.
    pub fn kept(&self, shelf: Shelf, key: &[u8; 32]) -> Option<Vec<u8>> {
        let (folder, path) = self.kept_path(shelf, key)?;
        if !cache::trusted(self.dir()?) || !cache::trusted(&folder) {
            return None;
        }
        let (file, meta) = cache::open_trusted(&path)?;
        if meta.len() > shelf.max_entry() {
            return None;
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        (&file)
            .take(shelf.max_entry())
            .read_to_end(&mut bytes)
            .ok()?;
        let product = cache::verified_payload_of(&bytes, shelf.magic(), key)?.to_vec();
        cache::mark_used(&file);
        Some(product)
    }

    /// Keeps `product` on `shelf` under `key`, then removes the shelf's least recently used
    /// entries past its cap; a failure only costs a later build its time.
    pub fn keep(&self, shelf: Shelf, key: &[u8; 32], product: &[u8]) {
        let (Some(dir), Some((folder, path))) = (self.dir(), self.kept_path(shelf, key)) else {
            return;
        };
        let bytes = cache::entry_bytes_of(shelf.magic(), key, product);
        if bytes.len() as u64 > shelf.max_entry() {
            return;
        }
        let written = cache::trusted_folder(dir)
            .and_then(|()| cache::trusted_folder(&folder))
            .and_then(|()| private::replace_file(&path, &bytes));
        match written {
            Ok(()) => cache::evict_folder(&folder, EXTENSION, shelf.max_bytes(self), &path),
            Err(err) => tracing::warn!(
                dir = %folder.display(),
                "cannot keep a build for the next one: {err}"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::runtime::cache::ScratchCache;

    fn scratch(name: &str, max_bytes: u64) -> ScratchCache {
        ScratchCache::new(&format!("kept-{name}"), max_bytes)
    }

    const SHELF: Shelf = Shelf::KernelBuilds;

    #[test]
    fn a_kept_product_comes_back_under_its_key_only() {
        let cache = scratch("round-trip", 1 << 30);
        let (one, two) = ([1u8; 32], [2u8; 32]);
        assert_eq!(cache.0.kept(SHELF, &one), None);
        cache.0.keep(SHELF, &one, b"module one");
        assert_eq!(
            cache.0.kept(SHELF, &one).as_deref(),
            Some(&b"module one"[..])
        );
        assert_eq!(cache.0.kept(SHELF, &two), None);
        // An entry copied over another key's name carries its own key: a miss.
        let (_, path_one) = cache.0.kept_path(SHELF, &one).unwrap();
        let (_, path_two) = cache.0.kept_path(SHELF, &two).unwrap();
        std::fs::copy(&path_one, &path_two).unwrap();
        assert_eq!(cache.0.kept(SHELF, &two), None);
    }

    #[test]
    fn a_damaged_or_exposed_entry_is_a_miss() {
        let cache = scratch("damaged", 1 << 30);
        let key = [7u8; 32];
        cache.0.keep(SHELF, &key, b"a kernel module's bytes");
        let (folder, path) = cache.0.kept_path(SHELF, &key).unwrap();
        let whole = std::fs::read(&path).unwrap();
        let mut flipped = whole.clone();
        *flipped.last_mut().unwrap() ^= 1;
        std::fs::write(&path, &flipped).unwrap();
        assert_eq!(cache.0.kept(SHELF, &key), None, "a flipped byte");
        std::fs::write(&path, &whole[..whole.len() - 1]).unwrap();
        assert_eq!(cache.0.kept(SHELF, &key), None, "a torn entry");
        std::fs::write(&path, &whole).unwrap();
        assert!(cache.0.kept(SHELF, &key).is_some());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert_eq!(cache.0.kept(SHELF, &key), None, "an entry others can write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(cache.0.kept(SHELF, &key), None, "a shelf others can write");
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", &path).unwrap();
        assert_eq!(
            cache.0.kept(SHELF, &key),
            None,
            "a link planted in its place"
        );
    }

    #[test]
    fn the_shelf_keeps_under_its_cap_the_least_recently_used_going_first() {
        // A cap of 16 x 20 MiB gives the shelf its smallest cap, one largest entry.
        let cache = scratch("evict", 16 * SHELF.max_entry());
        let product = vec![0x5a; (SHELF.max_entry() / 3) as usize];
        for key in 0..3u8 {
            cache.0.keep(SHELF, &[key; 32], &product);
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // Two of a third of the cap each fit, with their headers: the oldest went.
        assert_eq!(cache.0.kept(SHELF, &[0; 32]), None);
        assert!(cache.0.kept(SHELF, &[1; 32]).is_some());
        std::thread::sleep(std::time::Duration::from_millis(20));
        cache.0.keep(SHELF, &[3; 32], &product);
        assert!(
            cache.0.kept(SHELF, &[1; 32]).is_some(),
            "used last, so kept"
        );
        assert_eq!(cache.0.kept(SHELF, &[2; 32]), None);
        assert!(cache.0.kept(SHELF, &[3; 32]).is_some());
        // A product larger than an entry may be is not kept.
        let large = vec![0; SHELF.max_entry() as usize];
        cache.0.keep(SHELF, &[4; 32], &large);
        assert_eq!(cache.0.kept(SHELF, &[4; 32]), None);
    }

    #[test]
    fn no_cache_folder_keeps_nothing() {
        let cache = ComponentCache::at(None);
        cache.keep(SHELF, &[1; 32], b"x");
        assert_eq!(cache.kept(SHELF, &[1; 32]), None);
    }
}
