//! The host-memory ledger: host memory charged to the plugin the host is working for, where
//! it is allocated. [`Ledger`] wraps the process's allocator; while a thread runs inside
//! [`Account::charge_while`], every block it allocates is charged to that account at its real
//! size (capacity, rounded as the allocator rounds), and freeing the block credits the account
//! it was charged to, on whatever thread the free happens. So a message a plugin's import
//! kept, a property an `enumerate` answer lifted, a queued command, a table that grew: each is
//! counted as long as it lives, without a call site that could forget it.
//!
//! A library cannot choose its users' allocator, so the binaries install it (the CLI, the C
//! API's library, the tests that measure containment) and an embedding service may:
//!
//! ```ignore
//! #[global_allocator]
//! static LEDGER: accelhost::ledger::Ledger = accelhost::ledger::Ledger::system();
//! ```
//!
//! Without it, [`is_installed`] is false and the host falls back on the charges its call
//! sites make (README: "Host memory a plugin can make the host hold").
//!
//! Every block carries a 16-byte header (the account, or none), so a free finds its account
//! without a lookup; blocks allocated with no account entered cost the header and nothing
//! else. A thread keeps what it charges to its current account in a count of its own, added
//! to the account's shared count when it passes 256 KiB either way and when the thread leaves
//! the account: a block allocated and freed within one call costs no atomic operation. The ledger never refuses an allocation (a null would abort the process, not end the
//! plugin): it counts, and the host decides at safe points whether an account is over its
//! limit.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

/// The bytes in front of every block; the account pointer sits in its last 8 bytes, right
/// before the block. Over-aligned blocks get a header as large as their alignment.
const HEADER: usize = 16;
/// Blocks this large come from their own `mmap` in glibc's allocator: they cost whole pages.
const MMAP_THRESHOLD: usize = 128 << 10;
const PAGE: usize = 4096;
/// Added to an account's count while its owner holds it. A bias, not a flag bit: while the
/// owner is there, credits from other threads may run ahead of charges a thread still has
/// pending, so the count proper can dip below zero for a moment.
const OPEN: u64 = 1 << 62;

/// The environment variable that turns the ledger off for a process (`off`), read once at its
/// first allocation: every block then goes straight to the inner allocator, with no header
/// and nothing charged, as if the ledger were not installed. For measuring what it costs.
pub const LEDGER_ENV: &str = "ACCELHOST_LEDGER";

/// Whether blocks carry headers in this process: decided at its first allocation, before any
/// block exists, and never changed.
static MODE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// Whether the global allocator is a [`Ledger`]: unknown until first asked.
static INSTALLED: AtomicU8 = AtomicU8::new(UNKNOWN);
const UNKNOWN: u8 = 0;
const YES: u8 = 1;
const NO: u8 = 2;

/// How far the bytes a thread charged to its current account may run ahead of (or behind)
/// the account's shared count before they are added to it: an allocation freed in the same
/// call costs no atomic operation at all.
const BATCH: i64 = 256 << 10;

thread_local! {
    /// The account this thread's allocations are charged to, if any.
    static CURRENT: Cell<*const Cell64> = const { Cell::new(ptr::null()) };
    /// Bytes charged (or credited, below zero) to `CURRENT` by this thread and not yet in its
    /// shared count.
    static PENDING: Cell<i64> = const { Cell::new(0) };
}

/// Adds what this thread has pending to its current account's shared count.
fn flush_pending() {
    let account = current();
    let pending = PENDING.with(|p| p.replace(0));
    if account.is_null() || pending == 0 {
        return;
    }
    // SAFETY: the current account is live (its owner is inside `charge_while`), and with its
    // owner there its count keeps the OPEN bias: adding this thread's share cannot free it.
    unsafe {
        if pending > 0 {
            (*account).held.fetch_add(pending as u64, Ordering::Relaxed);
        } else {
            (*account)
                .held
                .fetch_sub(pending.unsigned_abs(), Ordering::AcqRel);
        }
    }
}

/// Adds `delta` to this thread's pending count for its current account, flushing it when it
/// passes [`BATCH`] either way.
#[inline]
fn add_pending(delta: i64) {
    let pending = PENDING.with(|p| {
        let next = p.get() + delta;
        p.set(next);
        next
    });
    if !(-BATCH..=BATCH).contains(&pending) {
        flush_pending();
    }
}

/// Charges `bytes` to `account`.
///
/// # Safety
/// `account` is live.
#[inline]
unsafe fn charge(account: *const Cell64, bytes: u64) {
    if account == current() {
        add_pending(bytes as i64);
    } else {
        // SAFETY: live by the caller's promise.
        unsafe { (*account).held.fetch_add(bytes, Ordering::Relaxed) };
    }
}

/// Credits `bytes` to `account`, which they were charged to.
///
/// # Safety
/// `account` is live and `bytes` were charged to it.
#[inline]
unsafe fn discharge(account: *const Cell64, bytes: u64) {
    if account == current() {
        add_pending(-(bytes as i64));
    } else {
        // SAFETY: as the caller promised.
        unsafe { credit(account, bytes) };
    }
}

/// Whether the process's global allocator is a [`Ledger`]: found out once, by charging a
/// probe block to a probe account and seeing whether it was counted.
pub fn is_installed() -> bool {
    match INSTALLED.load(Ordering::Relaxed) {
        YES => true,
        NO => false,
        _ => {
            let probe = Account::new();
            let layout = Layout::new::<u64>();
            let counted = probe.charge_while(|| {
                // SAFETY: a non-zero layout, freed at once with the same layout.
                unsafe {
                    let block = std::hint::black_box(std::alloc::alloc(layout));
                    let counted = probe.held() > 0;
                    if !block.is_null() {
                        std::alloc::dealloc(block, layout);
                    }
                    counted
                }
            });
            INSTALLED.store(if counted { YES } else { NO }, Ordering::Relaxed);
            counted
        }
    }
}

/// What a block of `size` bytes costs, header included, as the system allocator rounds it:
/// 16-byte granules, whole pages for blocks it maps on their own.
pub fn block_cost(size: usize) -> u64 {
    let block = size.saturating_add(HEADER).next_multiple_of(16);
    let block = if block >= MMAP_THRESHOLD {
        block.next_multiple_of(PAGE)
    } else {
        block
    };
    block as u64
}

/// The shared count behind an [`Account`]: bytes charged, plus the [`OPEN`] bias while the account's
/// owner holds it. It is freed by whoever brings it to zero with the owner gone, so blocks
/// may outlive the account's owner and still credit it.
#[repr(align(64))]
struct Cell64 {
    held: AtomicU64,
}

/// Frees `cell` (made by [`Account::new`] with the system allocator).
///
/// # Safety
/// `cell` has no owner and nothing charged to it: nothing refers to it any more.
unsafe fn free_cell(cell: *const Cell64) {
    // SAFETY: allocated by `Account::new` with this layout from `System`.
    unsafe { System.dealloc(cell as *mut u8, Layout::new::<Cell64>()) }
}

/// Credits `bytes` to `cell`; the last credit after its owner went frees it.
///
/// # Safety
/// `cell` is live and `bytes` were charged to it.
unsafe fn credit(cell: *const Cell64, bytes: u64) {
    // SAFETY: live by the caller's promise.
    let before = unsafe { (*cell).held.fetch_sub(bytes, Ordering::AcqRel) };
    if before == bytes {
        // The owner had gone (the OPEN bias was taken off) and this was the last charged block.
        // SAFETY: no owner, nothing charged: no one else can reach it.
        unsafe { free_cell(cell) }
    }
}

/// An account host memory is charged to: one per plugin instance. Dropping it does not
/// forget what is still charged; blocks freed later credit it all the same.
pub struct Account {
    cell: NonNull<Cell64>,
}

// SAFETY: the cell is only reached through atomics.
unsafe impl Send for Account {}
// SAFETY: as above.
unsafe impl Sync for Account {}

impl Default for Account {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Account")
            .field("held", &self.held())
            .finish()
    }
}

impl Account {
    /// A new account with nothing charged.
    pub fn new() -> Self {
        let layout = Layout::new::<Cell64>();
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { System.alloc(layout) } as *mut Cell64;
        let Some(cell) = NonNull::new(raw) else {
            std::alloc::handle_alloc_error(layout)
        };
        // SAFETY: freshly allocated, properly aligned for `Cell64`.
        unsafe {
            cell.as_ptr().write(Cell64 {
                held: AtomicU64::new(OPEN),
            })
        };
        Account { cell }
    }

    /// The bytes charged to the account now (blocks still live, header and rounding
    /// included).
    pub fn held(&self) -> u64 {
        // SAFETY: the cell lives while its owner does, and with its owner it carries OPEN.
        let raw = unsafe { self.cell.as_ref() }.held.load(Ordering::Relaxed);
        let shared = raw.wrapping_sub(OPEN) as i64;
        let pending = if std::ptr::eq(current(), self.cell.as_ptr()) {
            PENDING.with(Cell::get)
        } else {
            0
        };
        shared.saturating_add(pending).max(0) as u64
    }

    /// Charges `bytes` the allocator never sees (memory mapped on its own, such as compiled
    /// code) until [`release_unseen`](Self::release_unseen) gives them back.
    pub(crate) fn hold_unseen(&self, bytes: u64) {
        // SAFETY: the cell lives while its owner does.
        unsafe { self.cell.as_ref() }
            .held
            .fetch_add(bytes, Ordering::AcqRel);
    }

    /// Gives back `bytes` that [`hold_unseen`](Self::hold_unseen) charged.
    pub(crate) fn release_unseen(&self, bytes: u64) {
        // SAFETY: the owner is alive (this borrows it), so the cell keeps its OPEN bias and
        // this cannot bring it to zero.
        unsafe { credit(self.cell.as_ptr(), bytes) }
    }

    /// Runs `f`, charging what this thread allocates meanwhile to this account (the account
    /// that was current before is current again afterwards, also if `f` unwinds).
    pub fn charge_while<R>(&self, f: impl FnOnce() -> R) -> R {
        with_current(self.cell.as_ptr(), f)
    }
}

/// Runs `f` with what this thread allocates charged to no account (the account that was
/// current before is current again afterwards, also if `f` unwinds): for memory the host
/// keeps for a plugin but charges to another of its budgets, such as a remote buffer's shadow
/// copy, which its DMA grant pays for; or that a program keeps, such as the record of an event
/// that finished.
pub fn uncharged<R>(f: impl FnOnce() -> R) -> R {
    with_current(ptr::null(), f)
}

/// Runs `f` with `account` (null: none) as this thread's current account, the one before
/// current again afterwards, also if `f` unwinds; what the thread had pending is added to
/// its account's shared count on the way in and out.
fn with_current<R>(account: *const Cell64, f: impl FnOnce() -> R) -> R {
    struct Restore(*const Cell64);
    impl Drop for Restore {
        fn drop(&mut self) {
            flush_pending();
            CURRENT.with(|current| current.set(self.0));
        }
    }
    flush_pending();
    let previous = CURRENT.with(|current| current.replace(account));
    let _restore = Restore(previous);
    f()
}

impl Drop for Account {
    fn drop(&mut self) {
        // SAFETY: the cell lives until this takes OPEN off, and after that only while blocks
        // are charged to it. No thread has charges pending for it now (they flush on leaving
        // `charge_while`, which borrows the owner), so what remains is what live blocks hold.
        let before = unsafe { self.cell.as_ref() }
            .held
            .fetch_sub(OPEN, Ordering::AcqRel);
        if before == OPEN {
            // SAFETY: nothing charged and no owner now.
            unsafe { free_cell(self.cell.as_ptr()) }
        }
    }
}

/// The process allocator with host memory charged to accounts: install it as the
/// `#[global_allocator]`.
pub struct Ledger<A = System> {
    inner: A,
}

impl Ledger<System> {
    /// The ledger over the system allocator.
    pub const fn system() -> Self {
        Ledger { inner: System }
    }
}

impl<A> Ledger<A> {
    /// The ledger over `inner`.
    pub const fn new(inner: A) -> Self {
        Ledger { inner }
    }
}

/// The header size and the layout the inner allocator sees for a block of `layout`.
#[inline]
fn outer(layout: Layout) -> Option<(usize, Layout)> {
    let header = layout.align().max(HEADER);
    if layout.size() > isize::MAX as usize - header {
        return None;
    }
    // SAFETY: `header` is a power of two (an alignment, or 16), and the size, rounded up to
    // it, stays within `isize::MAX` since the block's own size did with its alignment.
    Some((header, unsafe {
        Layout::from_size_align_unchecked(layout.size() + header, header)
    }))
}

/// Whether this process's ledger passes blocks straight through ([`LEDGER_ENV`] is `off`).
#[inline]
fn passing_through() -> bool {
    match MODE.load(Ordering::Relaxed) {
        YES => false,
        NO => true,
        _ => {
            // SAFETY: the name is NUL-terminated; `getenv` neither allocates nor keeps it, and
            // the environment is in place before any allocation.
            let value = unsafe { libc::getenv(c"ACCELHOST_LEDGER".as_ptr()) };
            // SAFETY: a non-null result is a NUL-terminated string in the environment.
            let off = !value.is_null() && unsafe { std::ffi::CStr::from_ptr(value) } == c"off";
            MODE.store(if off { NO } else { YES }, Ordering::Relaxed);
            off
        }
    }
}

/// The current thread's account (null when none, or when its thread-local is gone).
#[inline]
fn current() -> *const Cell64 {
    CURRENT.with(Cell::get)
}

impl<A: GlobalAlloc> Ledger<A> {
    /// Allocates a block for `layout` charged to `account` (null: to none).
    ///
    /// # Safety
    /// As `GlobalAlloc::alloc`; `account` is null or a live cell.
    #[inline]
    unsafe fn alloc_for(&self, layout: Layout, account: *const Cell64, zeroed: bool) -> *mut u8 {
        let Some((header, outer)) = outer(layout) else {
            return ptr::null_mut();
        };
        // SAFETY: `outer` has a non-zero size (the header).
        let base = unsafe {
            if zeroed {
                self.inner.alloc_zeroed(outer)
            } else {
                self.inner.alloc(outer)
            }
        };
        if base.is_null() {
            return base;
        }
        // SAFETY: the block is `header` + `layout.size()` bytes; the account slot is the
        // header's last 8 bytes, aligned since the header is a multiple of 16.
        unsafe {
            let block = base.add(header);
            (block.sub(8) as *mut *const Cell64).write(account);
            if !account.is_null() {
                charge(account, block_cost(layout.size()));
            }
            block
        }
    }
}

// SAFETY: every block handed out is `layout.size()` bytes at `layout.align()`, inside a larger
// block of the inner allocator that is freed with the layout it was allocated with.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Ledger<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if passing_through() {
            // SAFETY: as the caller promised.
            return unsafe { self.inner.alloc(layout) };
        }
        // SAFETY: as the caller promised; `current` is null or live (its owner is inside
        // `charge_while`).
        unsafe { self.alloc_for(layout, current(), false) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if passing_through() {
            // SAFETY: as the caller promised.
            return unsafe { self.inner.alloc_zeroed(layout) };
        }
        // SAFETY: as in `alloc`.
        unsafe { self.alloc_for(layout, current(), true) }
    }

    #[inline]
    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        if passing_through() {
            // SAFETY: the block came from the inner allocator with this layout.
            return unsafe { self.inner.dealloc(block, layout) };
        }
        let (header, outer) = outer(layout).expect("the block was allocated with this layout");
        // SAFETY: `block` came from `alloc_for` with this layout: the account slot and the
        // inner block are where it put them.
        unsafe {
            let account = (block.sub(8) as *const *const Cell64).read();
            if !account.is_null() {
                discharge(account, block_cost(layout.size()));
            }
            self.inner.dealloc(block.sub(header), outer);
        }
    }

    #[inline]
    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if passing_through() {
            // SAFETY: the block came from the inner allocator with this layout.
            return unsafe { self.inner.realloc(block, layout, new_size) };
        }
        // SAFETY: `block` came from `alloc_for` with `layout`.
        let account = unsafe { (block.sub(8) as *const *const Cell64).read() };
        let new_layout = match Layout::from_size_align(new_size, layout.align()) {
            Ok(new_layout) => new_layout,
            Err(_) => return ptr::null_mut(),
        };
        if layout.align() > HEADER {
            // Rare: move it by hand, keeping its account.
            // SAFETY: a fresh block for the same account; both are valid for the copy.
            unsafe {
                let moved = self.alloc_for(new_layout, account, false);
                if !moved.is_null() {
                    ptr::copy_nonoverlapping(block, moved, layout.size().min(new_size));
                    self.dealloc(block, layout);
                }
                return moved;
            }
        }
        let (Some((_, old_outer)), Some((_, new_outer))) = (outer(layout), outer(new_layout))
        else {
            return ptr::null_mut();
        };
        // SAFETY: the inner block was allocated with `old_outer`; the header moves with it.
        let base = unsafe {
            self.inner
                .realloc(block.sub(HEADER), old_outer, new_outer.size())
        };
        if base.is_null() {
            return base;
        }
        if !account.is_null() {
            // Charge the new size before crediting the old, so that the count never passes
            // through zero while the block lives.
            // SAFETY: the account is live while this block is charged to it.
            unsafe {
                charge(account, block_cost(new_size));
                discharge(account, block_cost(layout.size()));
            }
        }
        // SAFETY: the new inner block holds the header, then `new_size` bytes.
        unsafe { base.add(HEADER) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ledger not installed as the global allocator, driven by hand.
    static LEDGER: Ledger = Ledger::system();

    fn with_block<R>(layout: Layout, f: impl FnOnce(*mut u8) -> R) -> R {
        // SAFETY: the layout is non-zero; freed with the same layout.
        unsafe {
            let block = LEDGER.alloc(layout);
            assert!(!block.is_null());
            assert_eq!(block as usize % layout.align(), 0, "aligned as asked");
            let r = f(block);
            LEDGER.dealloc(block, layout);
            r
        }
    }

    #[test]
    fn the_unit_tests_allocate_without_the_ledger() {
        // This test binary's global allocator is the system's: a block charged to a probe
        // is not counted, whatever the ledger driven by hand below did.
        assert!(!is_installed());
    }

    #[test]
    fn blocks_are_charged_at_their_real_size_and_credited_when_freed() {
        let account = Account::new();
        let small = Layout::from_size_align(100, 8).unwrap();
        let held = account.charge_while(|| with_block(small, |_| account.held()));
        assert_eq!(held, 128, "100 bytes + the header, in 16-byte granules");
        assert_eq!(account.held(), 0);
        let big = Layout::from_size_align(1 << 20, 8).unwrap();
        let held = account.charge_while(|| with_block(big, |_| account.held()));
        assert_eq!(held, (1 << 20) + 4096, "a mapped block costs whole pages");
        assert_eq!(account.held(), 0);
        // Outside `charge_while` nothing is charged.
        with_block(small, |_| assert_eq!(account.held(), 0));
    }

    #[test]
    fn a_free_on_another_thread_credits_the_account_charged() {
        let account = Account::new();
        let other = Account::new();
        let layout = Layout::from_size_align(4000, 16).unwrap();
        // SAFETY: allocated and freed with the same layout.
        let block = account.charge_while(|| unsafe { LEDGER.alloc(layout) }) as usize;
        assert_eq!(account.held(), block_cost(4000));
        std::thread::scope(|scope| {
            scope.spawn(|| {
                // SAFETY: freed with the layout it was allocated with.
                other.charge_while(|| unsafe { LEDGER.dealloc(block as *mut u8, layout) });
            });
        });
        assert_eq!(account.held(), 0, "credited where it was charged");
        assert_eq!(
            other.held(),
            0,
            "not credited to the freeing thread's account"
        );
    }

    #[test]
    fn a_free_elsewhere_before_the_charge_is_flushed_reads_as_nothing_held() {
        // The charge sits in this thread's pending count while another thread's free
        // credits the shared count: for a moment the shared count is below zero.
        let account = Account::new();
        let layout = Layout::from_size_align(1000, 16).unwrap();
        account.charge_while(|| {
            // SAFETY: allocated and freed with the same layout.
            let block = unsafe { LEDGER.alloc(layout) } as usize;
            std::thread::scope(|scope| {
                // SAFETY: freed with the layout it was allocated with.
                scope.spawn(|| unsafe { LEDGER.dealloc(block as *mut u8, layout) });
            });
            assert_eq!(
                account.held(),
                0,
                "charged here, credited there: nothing held"
            );
        });
        assert_eq!(account.held(), 0);
        // SAFETY: as above; the account's owner goes while the block still lives.
        let block = account.charge_while(|| unsafe { LEDGER.alloc(layout) });
        drop(account);
        // SAFETY: freed with the layout it was allocated with.
        unsafe { LEDGER.dealloc(block, layout) };
    }

    #[test]
    fn uncharged_blocks_are_nobody_s_and_the_account_resumes_after() {
        let account = Account::new();
        let layout = Layout::from_size_align(2000, 16).unwrap();
        account.charge_while(|| {
            // SAFETY: each block is freed with the layout it was allocated with.
            let free = unsafe { crate::ledger::uncharged(|| LEDGER.alloc(layout)) };
            assert_eq!(account.held(), 0, "allocated outside the account");
            // SAFETY: freed below with the layout it is allocated with.
            let charged = unsafe { LEDGER.alloc(layout) };
            assert_eq!(account.held(), block_cost(2000), "charged again after");
            // SAFETY: freed with the layout it was allocated with.
            unsafe {
                LEDGER.dealloc(free, layout);
                LEDGER.dealloc(charged, layout);
            }
        });
        assert_eq!(account.held(), 0);
    }

    #[test]
    fn realloc_moves_the_charge_with_the_block() {
        let account = Account::new();
        let layout = Layout::from_size_align(64, 8).unwrap();
        // SAFETY: each step uses the layout the block has then.
        unsafe {
            let block = account.charge_while(|| LEDGER.alloc(layout));
            block.write_bytes(7, 64);
            // Grown outside any account: still the account's block.
            let grown = LEDGER.realloc(block, layout, 1 << 20);
            assert!(!grown.is_null());
            assert_eq!(*grown.add(63), 7, "contents kept");
            assert_eq!(account.held(), block_cost(1 << 20));
            let big = Layout::from_size_align(1 << 20, 8).unwrap();
            let shrunk = LEDGER.realloc(grown, big, 16);
            assert_eq!(account.held(), block_cost(16));
            LEDGER.dealloc(shrunk, Layout::from_size_align(16, 8).unwrap());
        }
        assert_eq!(account.held(), 0);
    }

    #[test]
    fn over_aligned_blocks_keep_their_alignment_and_account() {
        let account = Account::new();
        for align in [32, 64, 4096] {
            let layout = Layout::from_size_align(3000, align).unwrap();
            // SAFETY: as in `with_block`, and realloc with the layout the block has.
            unsafe {
                let block = account.charge_while(|| LEDGER.alloc_zeroed(layout));
                assert_eq!(block as usize % align, 0);
                assert!((0..3000).all(|i| *block.add(i) == 0), "zeroed");
                block.write_bytes(1, 3000);
                let moved = LEDGER.realloc(block, layout, 9000);
                assert_eq!(moved as usize % align, 0);
                assert_eq!(*moved.add(2999), 1);
                assert_eq!(account.held(), block_cost(9000));
                LEDGER.dealloc(moved, Layout::from_size_align(9000, align).unwrap());
            }
        }
        assert_eq!(account.held(), 0);
    }

    #[test]
    fn nested_accounts_charge_the_innermost_and_restore_the_outer() {
        let (outer, inner) = (Account::new(), Account::new());
        let layout = Layout::from_size_align(10, 1).unwrap();
        outer.charge_while(|| {
            inner.charge_while(|| with_block(layout, |_| assert_eq!(inner.held(), 32)));
            with_block(layout, |_| assert_eq!(outer.held(), 32));
            let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                inner.charge_while(|| panic!("unwinds"))
            }));
            assert!(unwound.is_err());
            assert_eq!(current(), outer.cell.as_ptr() as *const _, "restored");
        });
        assert!(current().is_null());
    }

    #[test]
    fn an_account_lives_until_its_last_block_is_freed() {
        let layout = Layout::from_size_align(500, 8).unwrap();
        let account = Account::new();
        // SAFETY: freed below with the same layout, after the account's owner is gone: the
        // cell must still be there for the credit (a use after free would show under Miri
        // or ASan; here the count is read through the block's header instead).
        unsafe {
            let block = account.charge_while(|| LEDGER.alloc(layout));
            let cell = (block.sub(8) as *const *const Cell64).read();
            drop(account);
            assert_eq!((*cell).held.load(Ordering::Relaxed), block_cost(500));
            LEDGER.dealloc(block, layout);
        }
    }

    #[test]
    fn concurrent_charges_and_frees_add_up() {
        let account = Account::new();
        let layout = Layout::from_size_align(48, 8).unwrap();
        let blocks: Vec<usize> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        account.charge_while(|| {
                            (0..1000)
                                // SAFETY: freed below with the same layout.
                                .map(|_| unsafe { LEDGER.alloc(layout) } as usize)
                                .collect::<Vec<_>>()
                        })
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        assert_eq!(account.held(), 4000 * block_cost(48));
        std::thread::scope(|scope| {
            for chunk in blocks.chunks(1000) {
                scope.spawn(move || {
                    for &block in chunk {
                        // SAFETY: allocated above with this layout, freed once.
                        unsafe { LEDGER.dealloc(block as *mut u8, layout) }
                    }
                });
            }
        });
        assert_eq!(account.held(), 0);
    }
}
