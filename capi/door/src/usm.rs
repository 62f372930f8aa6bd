//! Memory a program holds by pointer (OpenCL's unified shared memory, Offload's allocations):
//! the map from addresses to allocations, and addresses for device memory, which the program
//! holds but must never dereference.
//!
//! A device allocation's address is taken from address space reserved for the purpose,
//! neither readable nor backed, and never handed out twice in the process: a program that
//! frees such a pointer twice, or uses it after its free, finds no allocation there, never a
//! later one. Host and shared memory is the library's own memory at its own address, which
//! the system may map again after the memory is freed.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// The address space reserved for device addresses at a time.
const REGION: usize = 64 << 30;
/// Device addresses are aligned to this, as pages are.
const ALIGN: usize = 4096;

/// Device addresses, never handed out twice.
pub struct DeviceAddresses {
    range: Mutex<(usize, usize)>,
}

impl Default for DeviceAddresses {
    fn default() -> Self {
        Self::new()
    }
}

impl DeviceAddresses {
    /// None handed out yet.
    pub const fn new() -> DeviceAddresses {
        DeviceAddresses {
            range: Mutex::new((0, 0)),
        }
    }

    /// The first of `size` bytes of address space nothing backs, never handed out before;
    /// `None` when `size` is 0 or the address space is exhausted.
    pub fn take(&self, size: usize) -> Option<usize> {
        let len = size.checked_next_multiple_of(ALIGN)?;
        if len == 0 || len > REGION {
            return None;
        }
        let mut range = self.range.lock().unwrap_or_else(|e| e.into_inner());
        let (next, end) = *range;
        if end - next < len {
            let base = reserve(REGION)?;
            *range = (base, base + REGION);
        }
        let address = range.0;
        range.0 += len;
        Some(address)
    }
}

/// Reserves `len` bytes of address space, neither readable nor backed, for the process's life.
fn reserve(len: usize) -> Option<usize> {
    // SAFETY: a fresh anonymous mapping at an address the system chooses.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    (base != libc::MAP_FAILED).then_some(base as usize)
}

/// An allocation overlaps one already in the map.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{address:#x} (+{len}) overlaps a live allocation")]
pub struct Overlap {
    /// The first address of the refused allocation.
    pub address: usize,
    /// Its length.
    pub len: usize,
}

struct Placed<A> {
    len: usize,
    allocation: Arc<A>,
}

/// Live allocations by their first address, found again by any address inside them.
pub struct AddressMap<A> {
    live: Mutex<BTreeMap<usize, Placed<A>>>,
}

impl<A> Default for AddressMap<A> {
    fn default() -> Self {
        Self::new()
    }
}

impl<A> AddressMap<A> {
    /// An empty map.
    pub const fn new() -> AddressMap<A> {
        AddressMap {
            live: Mutex::new(BTreeMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<usize, Placed<A>>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records `allocation` at `address` for `len` bytes; one that overlaps a live allocation
    /// is refused (it would hide it).
    pub fn insert(&self, address: usize, len: usize, allocation: Arc<A>) -> Result<(), Overlap> {
        let overlap = Overlap { address, len };
        let end = address.checked_add(len.max(1)).ok_or(overlap)?;
        let mut live = self.lock();
        let before = live
            .range(..end)
            .next_back()
            .is_some_and(|(base, p)| base + p.len.max(1) > address);
        if before {
            return Err(overlap);
        }
        live.insert(address, Placed { len, allocation });
        Ok(())
    }

    /// The allocation that holds the `len` bytes at `address`, and where in it they start.
    pub fn find(&self, address: usize, len: usize) -> Option<(Arc<A>, usize)> {
        let live = self.lock();
        let (base, placed) = live.range(..=address).next_back()?;
        let offset = address - base;
        let fits = offset
            .checked_add(len.max(1))
            .is_some_and(|end| end <= placed.len);
        fits.then(|| (placed.allocation.clone(), offset))
    }

    /// The allocation that starts at `address`.
    pub fn starting_at(&self, address: usize) -> Option<Arc<A>> {
        self.lock().get(&address).map(|p| p.allocation.clone())
    }

    /// Removes the allocation starting at `address` if `remove` agrees (with the map locked),
    /// and returns it for the caller to drop outside the lock.
    pub fn remove_if(&self, address: usize, remove: impl FnOnce(&A) -> bool) -> Option<Arc<A>> {
        let mut live = self.lock();
        if !remove(&live.get(&address)?.allocation) {
            return None;
        }
        live.remove(&address).map(|p| p.allocation)
    }
}

/// The address a struct passed by value holds at byte `offset` of its value `bytes` (the
/// pointer's 8 bytes, in this process's order), which a door finds in its allocations as it
/// finds a pointer argument; `None` when those bytes are not all in the struct. The offset
/// comes from an argument's name in the kernel's image, which a program may bring: any
/// number, so it is checked, not trusted.
pub fn pointer_in_struct(bytes: &[u8], offset: u64) -> Option<usize> {
    let at = usize::try_from(offset).ok()?;
    let word = bytes.get(at..at.checked_add(8)?)?;
    Some(u64::from_ne_bytes(word.try_into().ok()?) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_structs_pointer_is_its_eight_bytes_at_the_offset_or_none_past_the_struct() {
        let mut value = vec![0xaa; 4];
        value.extend(0x1234_5678_9abc_u64.to_ne_bytes());
        value.extend([0u8; 8]);
        assert_eq!(pointer_in_struct(&value, 4), Some(0x1234_5678_9abc));
        assert_eq!(pointer_in_struct(&value, 12), Some(0), "a null pointer");
        assert_eq!(
            pointer_in_struct(&value, 13),
            None,
            "one byte past the struct"
        );
        assert_eq!(pointer_in_struct(&value, 20), None);
        assert_eq!(
            pointer_in_struct(&value, u64::MAX - 3),
            None,
            "an offset that wraps"
        );
        assert_eq!(pointer_in_struct(&value, usize::MAX as u64), None);
        assert_eq!(pointer_in_struct(&[], 0), None);
    }

    #[test]
    fn device_addresses_are_never_handed_out_twice() {
        let addresses = DeviceAddresses::new();
        let a = addresses.take(100).unwrap();
        let b = addresses.take(8192).unwrap();
        assert_eq!(a % ALIGN, 0);
        assert!(b >= a + ALIGN, "{a:#x} {b:#x}");
        assert_eq!(addresses.take(0), None);
        assert_eq!(addresses.take(usize::MAX), None);
    }

    #[test]
    fn allocations_are_found_by_any_address_inside_and_never_overlap() {
        let map = AddressMap::new();
        map.insert(0x1000, 0x100, Arc::new("a")).unwrap();
        map.insert(0x2000, 0x10, Arc::new("b")).unwrap();
        assert_eq!(
            map.insert(0x10f0, 0x20, Arc::new("c")),
            Err(Overlap {
                address: 0x10f0,
                len: 0x20
            })
        );
        assert_eq!(*map.find(0x1010, 0x10).unwrap().0, "a");
        assert_eq!(map.find(0x1010, 0x10).unwrap().1, 0x10);
        assert!(map.find(0x10f8, 0x10).is_none(), "runs past the end");
        assert!(map.find(0x1100, 1).is_none());
        assert!(map.remove_if(0x1000, |a| *a == "b").is_none());
        assert_eq!(*map.remove_if(0x1000, |_| true).unwrap(), "a");
        assert!(map.find(0x1010, 1).is_none());
        assert_eq!(*map.starting_at(0x2000).unwrap(), "b");
    }
}
