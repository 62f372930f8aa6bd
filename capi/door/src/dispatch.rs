//! Handle addresses a loader reads: an OpenCL object's handle must point at a word holding
//! its ICD dispatch table, which the Khronos loader reads before it calls the door. Each
//! handle here is an 8-byte word of a reserved address range, written with the dispatch
//! table's address and never handed out again. A stale handle still reads the dispatch table,
//! so its call reaches the door, which finds no live object behind it and refuses it.
//!
//! Words are handed out in 2 MiB chunks. Once every word of a chunk was handed out and
//! released, the chunk is mapped over, read-only, by one shared copy of a chunk of dispatch
//! words: its memory goes back to the system, and its words keep reading as they did. Each
//! such chunk takes one mapping of the process's `vm.max_map_count`; past [`MAX_RETIRED`] of
//! them, released chunks keep their pages (8 bytes per handle ever made).

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The words of one chunk.
const CHUNK: usize = 2 << 20;
/// How much address space is reserved at a time: 8 Gi handles.
const REGION: usize = 64 << 30;
/// The most released chunks mapped over by the shared copy.
pub const MAX_RETIRED: usize = 16_384;
const WORD: usize = std::mem::size_of::<usize>();

/// Never-reused handle words holding one dispatch table's address.
pub struct DispatchWords {
    dispatch: AtomicUsize,
    state: Mutex<Words>,
}

struct Words {
    /// The next word to hand out, and the end of the reserved range it is in.
    next: usize,
    end: usize,
    /// Live words per chunk (by the chunk's first address).
    live: BTreeMap<usize, u32>,
    /// How many chunks are mapped over by the shared copy.
    retired: usize,
    /// The shared copy: one chunk of dispatch words.
    template: Option<OwnedFd>,
}

impl Default for DispatchWords {
    fn default() -> Self {
        Self::new()
    }
}

impl DispatchWords {
    /// Words that will hold the dispatch table [`install`](Self::install) names.
    pub const fn new() -> DispatchWords {
        DispatchWords {
            dispatch: AtomicUsize::new(0),
            state: Mutex::new(Words {
                next: 0,
                end: 0,
                live: BTreeMap::new(),
                retired: 0,
                template: None,
            }),
        }
    }

    /// Names the dispatch table every word holds (the first call's is kept).
    pub fn install(&self, dispatch: *const c_void) {
        let _ = self.dispatch.compare_exchange(
            0,
            dispatch as usize,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }

    /// A word never handed out before, holding the dispatch table's address; `None` before
    /// [`install`](Self::install) or when no address space is left.
    pub fn take(&self) -> Option<usize> {
        let dispatch = self.dispatch.load(Ordering::Acquire);
        if dispatch == 0 {
            return None;
        }
        let mut words = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if words.next == words.end {
            let base = reserve(REGION)?;
            words.next = base;
            words.end = base + REGION;
        }
        let word = words.next;
        let chunk = word & !(CHUNK - 1);
        if word == chunk {
            // SAFETY: the chunk lies in a range this value reserved and never handed out.
            let opened = unsafe {
                libc::mprotect(
                    chunk as *mut c_void,
                    CHUNK,
                    libc::PROT_READ | libc::PROT_WRITE,
                )
            };
            if opened != 0 {
                return None;
            }
        }
        // SAFETY: a word of a chunk made readable and writable above, written by nothing else.
        unsafe { (word as *mut usize).write(dispatch) };
        *words.live.entry(chunk).or_default() += 1;
        words.next += WORD;
        Some(word)
    }

    /// Gives back `word`, which a released handle had. It keeps reading as the dispatch table.
    pub fn release(&self, word: usize) {
        let mut words = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let chunk = word & !(CHUNK - 1);
        let handed_out = !(chunk..chunk + CHUNK).contains(&words.next);
        let Some(live) = words.live.get_mut(&chunk) else {
            return;
        };
        *live -= 1;
        if *live == 0 && handed_out {
            words.live.remove(&chunk);
            let dispatch = self.dispatch.load(Ordering::Acquire);
            retire(&mut words, chunk, dispatch);
        }
    }

    /// How many chunks were mapped over by the shared copy (for the tests).
    pub fn retired(&self) -> usize {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).retired
    }
}

/// Maps the shared copy of dispatch words over `chunk`, whose words were all released.
fn retire(words: &mut Words, chunk: usize, dispatch: usize) {
    if words.retired >= MAX_RETIRED {
        return;
    }
    if words.template.is_none() {
        words.template = template(dispatch);
    }
    let Some(template) = &words.template else {
        return;
    };
    // SAFETY: replaces the pages of a chunk this value owns, whose words are all released:
    // nothing of ours points into it, and what a loader reads there stays the same.
    let mapped = unsafe {
        libc::mmap(
            chunk as *mut c_void,
            CHUNK,
            libc::PROT_READ,
            libc::MAP_SHARED | libc::MAP_FIXED,
            template.as_raw_fd(),
            0,
        )
    };
    if mapped != libc::MAP_FAILED {
        words.retired += 1;
    }
}

/// A memory file of one chunk of dispatch words.
fn template(dispatch: usize) -> Option<OwnedFd> {
    // SAFETY: a NUL-terminated name; the result is a new descriptor or -1.
    let fd = unsafe { libc::memfd_create(c"accelhost-dispatch".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    // SAFETY: a descriptor just opened and owned alone.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let chunk: Vec<u8> = std::iter::repeat_n(dispatch.to_ne_bytes(), CHUNK / WORD)
        .flatten()
        .collect();
    let file = std::fs::File::from(fd);
    std::io::Write::write_all(&mut &file, &chunk).ok()?;
    Some(OwnedFd::from(file))
}

/// Reserves `len` bytes of address space, neither readable nor backed.
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
    if base == libc::MAP_FAILED {
        return None;
    }
    // Chunks are aligned to their size: give back the start and the end around an aligned
    // range of whole chunks.
    let start = base as usize;
    let aligned = start.next_multiple_of(CHUNK);
    let usable = (len - (aligned - start)) & !(CHUNK - 1);
    if aligned > start {
        // SAFETY: the head of the mapping just made.
        unsafe { libc::munmap(base, aligned - start) };
    }
    let tail = aligned + usable;
    if tail < start + len {
        // SAFETY: the tail of the mapping just made.
        unsafe { libc::munmap(tail as *mut c_void, start + len - tail) };
    }
    Some(aligned)
}

#[cfg(test)]
mod tests {
    use super::*;

    static TABLE: [usize; 4] = [1, 2, 3, 4];

    fn read(word: usize) -> usize {
        // SAFETY: a word of the reserved range, readable once handed out (and after).
        unsafe { (word as *const usize).read_volatile() }
    }

    #[test]
    fn words_hold_the_dispatch_table_and_are_never_handed_out_twice() {
        let words = DispatchWords::new();
        assert_eq!(words.take(), None, "nothing before the table is named");
        let dispatch = TABLE.as_ptr() as usize;
        words.install(TABLE.as_ptr().cast());
        let first = words.take().unwrap();
        assert_eq!(read(first), dispatch);
        words.release(first);
        assert_eq!(
            read(first),
            dispatch,
            "a released word still reads the table"
        );
        let mut seen = std::collections::HashSet::new();
        seen.insert(first);
        // Past two whole chunks, each released as it goes: the chunks behind are mapped over.
        for _ in 0..(2 * CHUNK / WORD + 10) {
            let word = words.take().unwrap();
            assert!(seen.insert(word), "{word:#x} handed out twice");
            words.release(word);
        }
        assert!(words.retired() >= 2, "retired {}", words.retired());
        for word in [first, first + CHUNK, first + 2 * CHUNK - WORD] {
            assert_eq!(read(word), dispatch, "a word of a retired chunk");
        }
    }

    #[test]
    fn a_chunk_with_a_live_word_keeps_its_pages() {
        let words = DispatchWords::new();
        words.install(TABLE.as_ptr().cast());
        let kept = words.take().unwrap();
        for _ in 0..(CHUNK / WORD + 1) {
            let word = words.take().unwrap();
            words.release(word);
        }
        assert_eq!(words.retired(), 0, "the first chunk holds a live word");
        // SAFETY: a live word of ours.
        unsafe { (kept as *mut usize).write(read(kept)) };
        words.release(kept);
        assert_eq!(words.retired(), 1);
    }
}
