//! OPAE's `opae/hash_map.h`: a chained hash map over caller-owned keys and values, with the
//! caller's hash, compare and cleanup callbacks. OPAE ships it in libopaemem; accelhost
//! exports it from `libopae_c.so`, so `-lopae-c` is enough. The structs are C's: a caller
//! allocates `opae_hash_map` itself and may read its fields, so items and buckets come from
//! C's allocator and the layout is OPAE's.

use std::ffi::{c_int, c_void};

use crate::ffi::{guard, non_null};
use crate::result::{CapiError, CapiResult, invalid};
use crate::types::*;

unsafe extern "C" {
    fn calloc(count: usize, size: usize) -> *mut c_void;
    fn free(ptr: *mut c_void);
}

/// `opae_hash_map_flags`: the caller guarantees no key is added twice, so adds skip the
/// collision check and go to the head of their bucket.
pub const OPAE_HASH_MAP_UNIQUE_KEYSPACE: c_int = 1 << 0;

/// The bucket of `key`: a value below `num_buckets`.
pub type KeyHash = unsafe extern "C" fn(num_buckets: u32, hash_seed: u32, key: *mut c_void) -> u32;
/// 0 when two keys are equal.
pub type KeyCompare = unsafe extern "C" fn(keya: *mut c_void, keyb: *mut c_void) -> c_int;
/// Releases a key or value being removed; the second argument is `cleanup_context`.
pub type Cleanup = unsafe extern "C" fn(item: *mut c_void, context: *mut c_void);

/// C's `opae_hash_map_item`: one entry of a bucket's list.
#[repr(C)]
pub struct opae_hash_map_item {
    /// The caller's key.
    pub key: *mut c_void,
    /// The caller's value.
    pub value: *mut c_void,
    /// The next entry of the bucket.
    pub next: *mut opae_hash_map_item,
}

/// C's `opae_hash_map`, laid out as OPAE's header declares it.
#[repr(C)]
pub struct opae_hash_map {
    /// How many buckets `buckets` holds.
    pub num_buckets: u32,
    /// Passed to `key_hash`.
    pub hash_seed: u32,
    /// `num_buckets` list heads.
    pub buckets: *mut *mut opae_hash_map_item,
    /// `opae_hash_map_flags`.
    pub flags: c_int,
    /// The second argument of the cleanup callbacks; the caller sets it after init.
    pub cleanup_context: *mut c_void,
    /// Required.
    pub key_hash: Option<KeyHash>,
    /// Required.
    pub key_compare: Option<KeyCompare>,
    /// Optional.
    pub key_cleanup: Option<Cleanup>,
    /// Optional.
    pub value_cleanup: Option<Cleanup>,
}

/// The map behind `hm` after the checks every call makes.
///
/// # Safety
/// `hm` must be NULL or point to a map `opae_hash_map_init` initialized.
unsafe fn map<'a>(hm: *mut opae_hash_map) -> CapiResult<&'a mut opae_hash_map> {
    non_null(hm, "hm")?;
    // SAFETY: non-NULL, an initialized map by the caller's contract.
    let map = unsafe { &mut *hm };
    if map.buckets.is_null() {
        return Err(invalid(
            "the hash map is not initialized (or was destroyed)",
        ));
    }
    Ok(map)
}

impl opae_hash_map {
    /// The index of `key`'s bucket, checked against `num_buckets`.
    ///
    /// # Safety
    /// The map's callbacks must be sound to call with `key`.
    unsafe fn bucket_of(&self, key: *mut c_void) -> CapiResult<usize> {
        let hash = self.key_hash.ok_or_else(|| invalid("key_hash is NULL"))?;
        // SAFETY: the caller's callback, called as its contract says.
        let bucket = unsafe { hash(self.num_buckets, self.hash_seed, key) };
        if bucket >= self.num_buckets {
            return Err(invalid(format!(
                "key_hash returned bucket {bucket} of a map of {} buckets",
                self.num_buckets
            )));
        }
        Ok(bucket as usize)
    }

    /// Whether `a` and `b` are equal keys.
    ///
    /// # Safety
    /// The map's compare callback must be sound to call with both keys.
    unsafe fn same_key(&self, a: *mut c_void, b: *mut c_void) -> CapiResult<bool> {
        let compare = self
            .key_compare
            .ok_or_else(|| invalid("key_compare is NULL"))?;
        // SAFETY: the caller's callback, called as its contract says.
        Ok(unsafe { compare(a, b) } == 0)
    }

    /// Runs the cleanup callbacks on an entry's key and value, then frees the entry.
    ///
    /// # Safety
    /// `item` must be an entry of this map, already unlinked.
    unsafe fn discard(&self, item: *mut opae_hash_map_item) {
        // SAFETY: a live entry by the caller's contract; the callbacks are the caller's.
        unsafe {
            if let Some(cleanup) = self.key_cleanup {
                cleanup((*item).key, self.cleanup_context);
            }
            if let Some(cleanup) = self.value_cleanup {
                cleanup((*item).value, self.cleanup_context);
            }
            free(item.cast());
        }
    }
}

/// OPAE's `opae_hash_map_init`: an empty map of `num_buckets` buckets (`FPGA_INVALID_PARAM`
/// for a NULL `hm`, `key_hash` or `key_compare`, or no buckets; `FPGA_NO_MEMORY`).
///
/// # Safety
/// `hm` must be NULL or valid for a write of an `opae_hash_map`; the callbacks must be
/// sound to call with the keys and values later added.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn opae_hash_map_init(
    hm: *mut opae_hash_map,
    num_buckets: u32,
    hash_seed: u32,
    flags: c_int,
    key_hash: Option<KeyHash>,
    key_compare: Option<KeyCompare>,
    key_cleanup: Option<Cleanup>,
    value_cleanup: Option<Cleanup>,
) -> fpga_result {
    guard("opae_hash_map_init", || {
        non_null(hm, "hm")?;
        if key_hash.is_none() || key_compare.is_none() {
            return Err(invalid("key_hash and key_compare are required"));
        }
        if num_buckets == 0 {
            return Err(invalid("num_buckets is 0"));
        }
        // SAFETY: calloc of an array of pointers, zeroed: every bucket empty.
        let buckets: *mut *mut opae_hash_map_item =
            unsafe { calloc(num_buckets as usize, size_of::<*mut opae_hash_map_item>()) }.cast();
        if buckets.is_null() {
            return Err(CapiError::NoMemory(format!(
                "{num_buckets} hash map buckets"
            )));
        }
        let map = opae_hash_map {
            num_buckets,
            hash_seed,
            buckets,
            flags,
            cleanup_context: std::ptr::null_mut(),
            key_hash,
            key_compare,
            key_cleanup,
            value_cleanup,
        };
        // SAFETY: non-NULL, valid for a write by the caller's contract.
        unsafe { hm.write(map) };
        Ok(())
    })
}

/// OPAE's `opae_hash_map_add`: maps `key` to `value`. Without
/// `OPAE_HASH_MAP_UNIQUE_KEYSPACE`, a key already present keeps its entry and stored key
/// and gets the new value, the old one going to `value_cleanup`.
///
/// # Safety
/// `hm` must be NULL or an initialized map; its callbacks must accept `key` and `value`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn opae_hash_map_add(
    hm: *mut opae_hash_map,
    key: *mut c_void,
    value: *mut c_void,
) -> fpga_result {
    guard("opae_hash_map_add", || {
        // SAFETY: NULL or initialized by the caller's contract.
        let map = unsafe { map(hm) }?;
        // SAFETY: the callbacks accept `key` by the caller's contract.
        let bucket = unsafe { map.buckets.add(map.bucket_of(key)?) };
        if map.flags & OPAE_HASH_MAP_UNIQUE_KEYSPACE == 0 {
            // SAFETY: the bucket's list holds live entries of this map.
            let mut entry = unsafe { *bucket };
            while !entry.is_null() {
                // SAFETY: a live entry; the callbacks accept both keys.
                unsafe {
                    if map.same_key(key, (*entry).key)? {
                        if let Some(cleanup) = map.value_cleanup {
                            cleanup((*entry).value, map.cleanup_context);
                        }
                        (*entry).value = value;
                        return Ok(());
                    }
                    entry = (*entry).next;
                }
            }
        }
        // SAFETY: calloc of one entry, then filled and linked at the head of its bucket
        // (the order of a bucket's entries is not part of the map's contract).
        unsafe {
            let item: *mut opae_hash_map_item = calloc(1, size_of::<opae_hash_map_item>()).cast();
            if item.is_null() {
                return Err(CapiError::NoMemory("a hash map entry".into()));
            }
            item.write(opae_hash_map_item {
                key,
                value,
                next: *bucket,
            });
            *bucket = item;
        }
        Ok(())
    })
}

/// OPAE's `opae_hash_map_find`: the value of `key` into `*value` (when `value` is not NULL);
/// `FPGA_NOT_FOUND` if the map has no such key.
///
/// # Safety
/// `hm` must be NULL or an initialized map; `value` NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn opae_hash_map_find(
    hm: *mut opae_hash_map,
    key: *mut c_void,
    value: *mut *mut c_void,
) -> fpga_result {
    guard("opae_hash_map_find", || {
        // SAFETY: NULL or initialized by the caller's contract.
        let map = unsafe { map(hm) }?;
        // SAFETY: the bucket's list holds live entries; the callbacks accept the keys.
        unsafe {
            let mut entry = *map.buckets.add(map.bucket_of(key)?);
            while !entry.is_null() {
                if map.same_key(key, (*entry).key)? {
                    if !value.is_null() {
                        value.write((*entry).value);
                    }
                    return Ok(());
                }
                entry = (*entry).next;
            }
        }
        Err(CapiError::NotFound("the hash map has no such key".into()))
    })
}

/// OPAE's `opae_hash_map_remove`: removes `key`'s entry, passing its stored key and value
/// to the cleanup callbacks; `FPGA_NOT_FOUND` if the map has no such key.
///
/// # Safety
/// `hm` must be NULL or an initialized map.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn opae_hash_map_remove(
    hm: *mut opae_hash_map,
    key: *mut c_void,
) -> fpga_result {
    guard("opae_hash_map_remove", || {
        // SAFETY: NULL or initialized by the caller's contract.
        let map = unsafe { map(hm) }?;
        // SAFETY: `link` always points at the bucket head or at a live entry's `next`.
        unsafe {
            let mut link = map.buckets.add(map.bucket_of(key)?);
            while !(*link).is_null() {
                let entry = *link;
                if map.same_key(key, (*entry).key)? {
                    *link = (*entry).next;
                    map.discard(entry);
                    return Ok(());
                }
                link = &raw mut (*entry).next;
            }
        }
        Err(CapiError::NotFound("the hash map has no such key".into()))
    })
}

/// OPAE's `opae_hash_map_destroy`: removes every entry (through the cleanup callbacks),
/// frees the buckets and zeroes the map.
///
/// # Safety
/// `hm` must be NULL or an initialized map.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn opae_hash_map_destroy(hm: *mut opae_hash_map) -> fpga_result {
    guard("opae_hash_map_destroy", || {
        // SAFETY: NULL or initialized by the caller's contract.
        let map = unsafe { map(hm) }?;
        // SAFETY: every bucket's list holds live entries of this map, each freed once.
        unsafe {
            for bucket in 0..map.num_buckets as usize {
                let mut entry = *map.buckets.add(bucket);
                while !entry.is_null() {
                    let next = (*entry).next;
                    map.discard(entry);
                    entry = next;
                }
            }
            free(map.buckets.cast());
            std::ptr::write_bytes(hm, 0, 1);
        }
        Ok(())
    })
}

/// OPAE's `opae_hash_map_is_empty`: whether the map has no entry (a NULL or destroyed map
/// is empty).
///
/// # Safety
/// `hm` must be NULL or an initialized or destroyed map.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn opae_hash_map_is_empty(hm: *mut opae_hash_map) -> bool {
    // SAFETY: NULL or initialized by the caller's contract.
    let Ok(map) = (unsafe { map(hm) }) else {
        return true;
    };
    // SAFETY: `buckets` holds `num_buckets` heads.
    (0..map.num_buckets as usize).all(|b| unsafe { (*map.buckets.add(b)).is_null() })
}

/// OPAE's `opae_u64_key_hash`: for keys that are 64-bit numbers cast to pointers, the key
/// modulo `num_buckets` (the seed is unused, as in OPAE).
#[unsafe(no_mangle)]
pub extern "C" fn opae_u64_key_hash(num_buckets: u32, _hash_seed: u32, key: *mut c_void) -> u32 {
    match num_buckets {
        0 => 0,
        n => (key as u64 % u64::from(n)) as u32,
    }
}

/// OPAE's `opae_u64_key_compare`: -1, 0 or 1 as the 64-bit number `keya` is below, equal
/// to or above `keyb`.
#[unsafe(no_mangle)]
pub extern "C" fn opae_u64_key_compare(keya: *mut c_void, keyb: *mut c_void) -> c_int {
    (keya as u64).cmp(&(keyb as u64)) as c_int
}
