//! The objects behind the handles C holds. A handle's value is a key into one table, looked up
//! and type-checked on every call and never dereferenced by the door, so a NULL, forged,
//! released or wrong-kind value is an error, never a crash.
//!
//! Values are never given twice in a process: an opaque handle is a number from a counter,
//! and a handle a loader reads (an OpenCL object) is a word of [`DispatchWords`] that is
//! never handed out again. So a program's double release, or a use after release, meets an
//! error forever, never the object made after it at the same address.
//!
//! The table counts references where the API does (OpenCL's and Offload's retain and release;
//! one reference otherwise). An object leaves the table when its last reference goes, and is
//! handed back to be dropped outside the table's lock (dropping may call into a plugin, or
//! release the handles it holds).

use std::any::Any;
use std::collections::HashMap;
use std::ffi::c_void;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::dispatch::DispatchWords;

/// A kind of object C can hold: what the table needs to know of it.
pub trait Object: Any + Send + Sync {
    /// The kind's name in messages, such as `token` or `cl_event`.
    const KIND: &'static str;
    /// When [`Handles::drain`] hands it back for teardown: lower ranks first, so that an
    /// object goes before the objects it was made through.
    const TEARDOWN_RANK: u8 = u8::MAX;
}

/// Why a handle was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HandleError {
    /// The handle is NULL.
    #[error("the {kind} is NULL")]
    Null {
        /// The kind the call takes.
        kind: &'static str,
    },
    /// No live object has this handle: it was released, or never made.
    #[error("{value:#x} is not a live {kind} (released, or never made)")]
    Unknown {
        /// The kind the call takes.
        kind: &'static str,
        /// The value C passed.
        value: usize,
    },
    /// The handle is a live object of another kind.
    #[error("{value:#x} is a {is}, not a {kind}")]
    WrongKind {
        /// The kind the call takes.
        kind: &'static str,
        /// The kind it is.
        is: &'static str,
        /// The value C passed.
        value: usize,
    },
}

struct Entry {
    object: Arc<dyn Any + Send + Sync>,
    kind: &'static str,
    rank: u8,
    references: u32,
}

/// Where handle values come from.
enum Values {
    /// Numbers from a counter, spaced like aligned pointers.
    Opaque(AtomicUsize),
    /// Words a loader reads, each holding the dispatch table's address.
    Dispatched(&'static DispatchWords),
}

/// The first opaque value: far from small integers a program might pass by mistake.
const OPAQUE_BASE: usize = 1 << 44;
/// The step between opaque values, so that each looks like a 16-byte aligned pointer.
const OPAQUE_STEP: usize = 16;

/// The live handles by value. The values are the door's own (a counter's, or words it hands
/// out), so a program cannot choose keys that collide: a multiply suffices for a hash, where
/// the default hasher's SipHash cost more than the rest of a lookup on every call.
type Table = HashMap<usize, Entry, BuildHasherDefault<HandleHasher>>;

/// Hashes a handle value by one multiply, its well-mixed high half turned into the low bits
/// the table indexes by.
#[derive(Default)]
struct HandleHasher(u64);

impl Hasher for HandleHasher {
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_usize(&mut self, value: usize) {
        self.0 = (value as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn finish(&self) -> u64 {
        self.0.rotate_left(32)
    }
}

/// The live objects of one door, by the handle values C holds.
pub struct Handles {
    values: Values,
    live: Mutex<Option<Table>>,
}

impl Handles {
    /// A table whose handles are opaque numbers (the door never hands out an address).
    pub const fn opaque() -> Handles {
        Handles {
            values: Values::Opaque(AtomicUsize::new(0)),
            live: Mutex::new(None),
        }
    }

    /// A table whose handles are words of `words`, which a loader may read.
    pub const fn dispatched(words: &'static DispatchWords) -> Handles {
        Handles {
            values: Values::Dispatched(words),
            live: Mutex::new(None),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Table>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn next_value(&self) -> Option<usize> {
        match &self.values {
            Values::Opaque(next) => {
                let n = next.fetch_add(1, Ordering::Relaxed);
                n.checked_mul(OPAQUE_STEP)?.checked_add(OPAQUE_BASE)
            }
            Values::Dispatched(words) => words.take(),
        }
    }

    /// A handle for `object` with one reference; `None` only when the process has no handle
    /// values left (an opaque counter or the dispatch words' address space ran out).
    pub fn insert<T: Object>(&self, object: Arc<T>) -> Option<*mut c_void> {
        let value = self.next_value()?;
        let entry = Entry {
            object,
            kind: T::KIND,
            rank: T::TEARDOWN_RANK,
            references: 1,
        };
        self.lock()
            .get_or_insert_with(Table::default)
            .insert(value, entry);
        Some(value as *mut c_void)
    }

    /// The entry of `handle`, checked to be a live `T`.
    fn checked<T: Object>(
        live: &mut Option<Table>,
        handle: *const c_void,
    ) -> Result<&mut Entry, HandleError> {
        let kind = T::KIND;
        if handle.is_null() {
            return Err(HandleError::Null { kind });
        }
        let value = handle as usize;
        let entry = live
            .as_mut()
            .and_then(|l| l.get_mut(&value))
            .ok_or(HandleError::Unknown { kind, value })?;
        if !entry.object.is::<T>() {
            return Err(HandleError::WrongKind {
                kind,
                is: entry.kind,
                value,
            });
        }
        Ok(entry)
    }

    /// The live `T` behind `handle`; the caller holds its own reference while it works.
    pub fn get<T: Object>(&self, handle: *const c_void) -> Result<Arc<T>, HandleError> {
        let mut live = self.lock();
        let entry = Self::checked::<T>(&mut live, handle)?;
        Ok(entry
            .object
            .clone()
            .downcast()
            .expect("the kind was checked"))
    }

    /// Whether `handle` is a live `T`.
    pub fn is<T: Object>(&self, handle: *const c_void) -> bool {
        self.get::<T>(handle).is_ok()
    }

    /// The reference count of the live `T` behind `handle`.
    pub fn references<T: Object>(&self, handle: *const c_void) -> Result<u32, HandleError> {
        let mut live = self.lock();
        Ok(Self::checked::<T>(&mut live, handle)?.references)
    }

    /// Adds a reference to the live `T` behind `handle`.
    pub fn retain<T: Object>(&self, handle: *const c_void) -> Result<(), HandleError> {
        let mut live = self.lock();
        let entry = Self::checked::<T>(&mut live, handle)?;
        entry.references = entry.references.saturating_add(1);
        Ok(())
    }

    /// Drops a reference to the live `T` behind `handle`. At the last, the handle ends for
    /// good and its object is returned, for the caller to drop outside the table's lock.
    pub fn release<T: Object>(&self, handle: *const c_void) -> Result<Option<Arc<T>>, HandleError> {
        let mut live = self.lock();
        let entry = Self::checked::<T>(&mut live, handle)?;
        entry.references -= 1;
        if entry.references > 0 {
            return Ok(None);
        }
        let ended = self.end(&mut live, handle as usize);
        drop(live);
        Ok(Some(ended.downcast().expect("the kind was checked")))
    }

    /// Ends the handle of the live `T` behind `handle`, whatever its reference count, and
    /// returns its object for the caller to drop outside the lock.
    pub fn remove<T: Object>(&self, handle: *const c_void) -> Result<Arc<T>, HandleError> {
        self.remove_if::<T>(handle, |_| true)
            .map(|removed| removed.expect("the predicate always removes"))
    }

    /// Runs `remove` on the live `T` behind `handle` with the table locked, and ends the
    /// handle if it returns true (returning the object): what `remove` decides is atomic with
    /// every other lookup, as reference counting kept by the object itself needs.
    pub fn remove_if<T: Object>(
        &self,
        handle: *const c_void,
        remove: impl FnOnce(&T) -> bool,
    ) -> Result<Option<Arc<T>>, HandleError> {
        let mut live = self.lock();
        let entry = Self::checked::<T>(&mut live, handle)?;
        let object: Arc<T> = entry
            .object
            .clone()
            .downcast()
            .expect("the kind was checked");
        if !remove(&object) {
            return Ok(None);
        }
        drop(self.end(&mut live, handle as usize));
        Ok(Some(object))
    }

    /// Takes the entry of `value` out, and gives its value back to the dispatch words.
    fn end(&self, live: &mut Option<Table>, value: usize) -> Arc<dyn Any + Send + Sync> {
        let entry = live
            .as_mut()
            .and_then(|l| l.remove(&value))
            .expect("a checked entry");
        if let Values::Dispatched(words) = &self.values {
            words.release(value);
        }
        entry.object
    }

    /// Ends every handle; returns the objects in teardown order, for the caller to drop
    /// outside the lock (an API's finalize).
    pub fn drain(&self) -> Vec<Arc<dyn Any + Send + Sync>> {
        let mut live = self.lock();
        let mut entries: Vec<(usize, Entry)> =
            live.take().unwrap_or_default().into_iter().collect();
        drop(live);
        if let Values::Dispatched(words) = &self.values {
            for (value, _) in &entries {
                words.release(*value);
            }
        }
        entries.sort_by_key(|(_, e)| e.rank);
        entries.into_iter().map(|(_, e)| e.object).collect()
    }

    /// How many handles are live.
    pub fn len(&self) -> usize {
        self.lock().as_ref().map_or(0, Table::len)
    }

    /// Whether no handle is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A reference to another object's handle, held by an object that its API says retains it (an
/// OpenCL queue its context, a kernel its program), and released when the holder goes. It
/// keeps the handle's value, which is never given to another object, so its release can only
/// ever reach the object it retained.
pub struct Held<T: Object> {
    table: &'static Handles,
    handle: usize,
    object: Arc<T>,
}

impl<T: Object> Held<T> {
    /// Retains the live `T` behind `handle` in `table`.
    pub fn new(table: &'static Handles, handle: *const c_void) -> Result<Held<T>, HandleError> {
        let object = table.get::<T>(handle)?;
        table.retain::<T>(handle)?;
        Ok(Held {
            table,
            handle: handle as usize,
            object,
        })
    }

    /// The handle.
    pub fn handle(&self) -> *mut c_void {
        self.handle as *mut c_void
    }

    /// The object.
    pub fn object(&self) -> &Arc<T> {
        &self.object
    }
}

impl<T: Object> Drop for Held<T> {
    fn drop(&mut self) {
        // The value is this object's for the process's life: an error here means the program
        // released it past its count already, which changes nothing for any other object.
        if let Ok(Some(ended)) = self.table.release::<T>(self.handle as *const c_void) {
            drop(ended);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Thing(u32);
    impl Object for Thing {
        const KIND: &'static str = "thing";
    }

    #[test]
    fn handle_values_spread_over_the_tables_low_bits() {
        use std::hash::BuildHasher;
        let hasher = BuildHasherDefault::<HandleHasher>::default();
        for step in [OPAQUE_STEP, 8, 4096] {
            let buckets: std::collections::HashSet<u64> = (0..4096usize)
                .map(|n| hasher.hash_one(OPAQUE_BASE + n * step) & 4095)
                .collect();
            // A uniform hash fills about 63 % of 4096 buckets with 4096 keys.
            assert!(
                buckets.len() > 2400,
                "step {step}: {} buckets",
                buckets.len()
            );
        }
    }
    struct Other;
    impl Object for Other {
        const KIND: &'static str = "other";
        const TEARDOWN_RANK: u8 = 0;
    }

    #[test]
    fn handles_are_typed_counted_and_never_given_twice() {
        let table = Handles::opaque();
        let first = table.insert(Arc::new(Thing(1))).unwrap();
        assert_eq!(table.get::<Thing>(first).unwrap().0, 1);
        assert_eq!(
            table.get::<Other>(first).err(),
            Some(HandleError::WrongKind {
                kind: "other",
                is: "thing",
                value: first as usize
            })
        );
        assert_eq!(
            table.get::<Thing>(std::ptr::null()).err(),
            Some(HandleError::Null { kind: "thing" })
        );
        table.retain::<Thing>(first).unwrap();
        assert_eq!(table.references::<Thing>(first), Ok(2));
        assert!(table.release::<Thing>(first).unwrap().is_none());
        let ended = table
            .release::<Thing>(first)
            .unwrap()
            .expect("the last reference");
        assert_eq!(ended.0, 1);
        // Free, then make objects until one could land where the first was: the old handle
        // stays an error, and no new handle has its value.
        let mut made = Vec::new();
        for n in 0..10_000 {
            let handle = table.insert(Arc::new(Thing(n))).unwrap();
            assert_ne!(handle, first, "a value was given twice");
            made.push(handle);
        }
        assert!(matches!(
            table.get::<Thing>(first),
            Err(HandleError::Unknown { .. })
        ));
        assert!(table.release::<Thing>(first).is_err(), "a double release");
        for (n, handle) in made.iter().enumerate() {
            assert_eq!(
                table.get::<Thing>(*handle).unwrap().0,
                n as u32,
                "untouched"
            );
        }
        let forged = (first as usize + 8) as *const c_void;
        assert!(table.get::<Thing>(forged).is_err());
    }

    #[test]
    fn drain_hands_objects_back_in_teardown_order() {
        let table = Handles::opaque();
        table.insert(Arc::new(Thing(7))).unwrap();
        table.insert(Arc::new(Other)).unwrap();
        let drained = table.drain();
        assert!(drained[0].is::<Other>(), "rank 0 first");
        assert!(table.is_empty());
    }

    #[test]
    fn a_held_reference_keeps_the_object_and_releases_it_once() {
        static TABLE: Handles = Handles::opaque();
        let handle = TABLE.insert(Arc::new(Thing(3))).unwrap();
        let held = Held::<Thing>::new(&TABLE, handle).unwrap();
        assert_eq!(TABLE.references::<Thing>(handle), Ok(2));
        assert!(TABLE.release::<Thing>(handle).unwrap().is_none());
        assert_eq!(held.object().0, 3);
        drop(held);
        assert!(
            !TABLE.is::<Thing>(handle),
            "the last reference went with the holder"
        );
    }
}
