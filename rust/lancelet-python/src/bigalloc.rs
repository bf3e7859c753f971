//! A global allocator wrapper: ordinary blocks go to the inner allocator
//! (mimalloc in the Python extension), big ones get a mapping of their own,
//! kept in a cache once freed.
//!
//! Why (benches/RESULTS.md, session 9): a streaming write allocates a few
//! hundred buffers of 1-18 MiB (column pages being filled, encoded pages,
//! FSST output sized for the worst case). mimalloc places them in arena
//! chunks of 32 MiB, searched from a different chunk by each thread, and
//! keeps freed memory mapped for a while (10 s in the extension) so that
//! the next write does not fault it in again. The freed holes rarely fit
//! the next buffers exactly, so the touched part of the arena kept growing:
//! ~190 MiB resident at the peak of a 4M-row write whose live data never
//! exceeded ~97 MiB. Purging sooner cut the peak but doubled the write's
//! system time (every buffer faulted in anew).
//!
//! A block of at least [`BIG`] bytes here lies in an anonymous mapping
//! of its own making (one header page in front holds its length and the
//! mapping it came from). A freed block waits in the cache for
//! [`PURGE_AFTER_MS`] (mimalloc's purge delay in the extension) and up to
//! [`CACHE_BYTES`] in all, so that the next write or scan finds its pages
//! resident instead of faulting them in again (a cache of 128 MiB made
//! every full scan of a 336 MB table fault ~65k pages: session 10). An
//! allocation takes, in order:
//!
//! 1. the smallest cached block that holds it: whole when what would be
//!    left over could not hold a big block, else split, the front part
//!    used and the rest left in the cache (no system call);
//! 2. else the largest cached block that is too small, grown in place or
//!    moved by the kernel (`mremap`: nothing is copied), and as many bytes
//!    as it grew by cut from the tails of the oldest other cached blocks;
//! 3. else, the cache being empty, a new mapping.
//!
//! A freed block is merged with a cached neighbour that adjoins it in the
//! same mapping, so splitting does not leave the cache in ever smaller
//! pieces. Neighbours from different mappings are never merged: `mremap`
//! wants its range inside one mapping.
//!
//! So the bytes that allocations map for big blocks, live and cached
//! together, never exceed the most that was live at once: a new mapping is
//! made only when nothing is cached, and growing a cached block gives back
//! what it takes. There are no holes. (A `realloc` that grows a live block
//! maps its growth without giving cached bytes back; the cache's
//! [`CACHE_BYTES`] bounds that excess.) Before session 12 a grow gave back whole cached mappings (a
//! 2.6 MiB grow unmapped a 15 MiB page buffer that the next page then
//! mapped and faulted in afresh) and an oversized block was shrunk by
//! unmapping its resident tail: a write of table A made ~300 MiB of new
//! mappings and faulted ~65k pages each time. Smaller blocks, and blocks
//! aligned to more than a page, stay with the inner allocator.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Once;

/// Blocks of at least this many bytes get their own mapping.
pub const BIG: usize = 1 << 20;

/// Freed blocks kept for reuse, in bytes at most: room for what a scan
/// of a few hundred MB hands to Python and frees at once.
pub const CACHE_BYTES: usize = 1 << 30;

/// A cached block unused for this long is given back to the kernel (at
/// the next allocation or free of a big block).
pub const PURGE_AFTER_MS: u64 = 10_000;

/// Freed blocks the cache holds at most.
const CACHE_SLOTS: usize = 1024;

/// The page size assumed for mappings (the header takes one).
const PAGE: usize = 4096;

/// Mapping lengths are multiples of this (similar sizes then share cached
/// blocks, and the bytes cut from a cached block are whole pages).
const GRAIN: usize = 64 << 10;

/// The smallest big block's length with its header: a cached block is
/// split only when the rest is at least this long.
const MIN_BLOCK: usize = (BIG + PAGE).next_multiple_of(GRAIN);

/// One freed block: `len` bytes at `base`, inside the mapping `origin`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    base: usize,
    len: usize,
    /// Which mapping (`mmap`, or `mremap` that moved) the bytes lie in:
    /// only blocks of one mapping are merged.
    origin: u64,
    /// `now_ms()` when it was freed.
    freed_ms: u64,
}

const EMPTY: Slot = Slot { base: 0, len: 0, origin: 0, freed_ms: 0 };

/// What the cache gives an allocation of `need` bytes (see the module
/// docs); the slot has left the cache.
#[derive(Debug, PartialEq, Eq)]
enum Pick {
    /// Use as it is (a whole cached block, or the front of one split).
    Use(Slot),
    /// Too small: grow it to `need` bytes.
    Grow(Slot),
    /// Nothing cached: map new memory.
    Miss,
}

/// Freed blocks, oldest first. Its methods hand every range that leaves
/// the cache for good to `release` (`munmap` in the allocator, a recorder
/// in the tests).
struct Cache {
    slots: [Slot; CACHE_SLOTS],
    len: usize,
    bytes: usize,
}

impl Cache {
    fn pick(&mut self, need: usize) -> Pick {
        let live = &self.slots[..self.len];
        if let Some(i) = (0..live.len()).filter(|&i| live[i].len >= need).min_by_key(|&i| live[i].len) {
            let s = live[i];
            if s.len - need < MIN_BLOCK {
                return Pick::Use(self.remove(i));
            }
            // The rest keeps the block's place (and age) in the cache.
            self.slots[i].base += need;
            self.slots[i].len -= need;
            self.bytes -= need;
            return Pick::Use(Slot { len: need, ..s });
        }
        match (0..live.len()).max_by_key(|&i| live[i].len) {
            Some(j) => Pick::Grow(self.remove(j)),
            None => Pick::Miss,
        }
    }

    fn remove(&mut self, i: usize) -> Slot {
        let got = self.slots[i];
        self.slots.copy_within(i + 1..self.len, i);
        self.len -= 1;
        self.bytes -= got.len;
        got
    }

    /// Release at least `bytes` (or all there is), oldest blocks first: a
    /// block longer than what is still owed loses only its tail.
    fn give_back(&mut self, bytes: usize, release: &mut impl FnMut(Slot)) {
        let mut owed = bytes.next_multiple_of(GRAIN);
        while owed > 0 && self.len > 0 {
            let oldest = &mut self.slots[0];
            if oldest.len <= owed {
                owed -= oldest.len;
                let s = self.remove(0);
                release(s);
            } else {
                oldest.len -= owed;
                let tail = Slot { base: oldest.base + oldest.len, len: owed, ..*oldest };
                self.bytes -= owed;
                owed = 0;
                release(tail);
            }
        }
    }

    /// Release the blocks freed more than [`PURGE_AFTER_MS`] before `now`.
    fn purge(&mut self, now: u64, release: &mut impl FnMut(Slot)) {
        while self.len > 0 && now.saturating_sub(self.slots[0].freed_ms) > PURGE_AFTER_MS {
            let s = self.remove(0);
            release(s);
        }
    }

    /// Keep `slot`, merged with the cached blocks of its mapping that
    /// adjoin it, releasing the oldest blocks that no longer fit (or the
    /// merged block itself when it is larger than the whole cache).
    fn put(&mut self, mut slot: Slot, release: &mut impl FnMut(Slot)) {
        let adjoining = |s: &Slot, slot: &Slot| s.origin == slot.origin && (s.base + s.len == slot.base || slot.base + slot.len == s.base);
        while let Some(i) = (0..self.len).find(|&i| adjoining(&self.slots[i], &slot)) {
            let s = self.remove(i);
            slot = Slot { base: s.base.min(slot.base), len: s.len + slot.len, ..slot };
        }
        if slot.len > CACHE_BYTES {
            return release(slot);
        }
        while self.len > 0 && (self.len == CACHE_SLOTS || self.bytes + slot.len > CACHE_BYTES) {
            let s = self.remove(0);
            release(s);
        }
        self.slots[self.len] = slot;
        self.len += 1;
        self.bytes += slot.len;
    }
}

/// The cache: a fixed array (the allocator cannot call itself to grow
/// one) behind [`CacheLock`].
static CACHE: CacheLock =
    CacheLock { locked: AtomicBool::new(false), cache: UnsafeCell::new(Cache { slots: [EMPTY; CACHE_SLOTS], len: 0, bytes: 0 }) };

/// The next mapping's [`Slot::origin`].
static NEXT_ORIGIN: AtomicU64 = AtomicU64::new(1);

fn new_origin() -> u64 {
    NEXT_ORIGIN.fetch_add(1, Ordering::Relaxed)
}

/// A spin lock held across `fork()`.
///
/// A child process has only the thread that forked, so a lock that another
/// thread held at that moment would stay held in the child forever, and the
/// child's first big allocation would hang (Python's `multiprocessing`
/// forks by default on Linux before 3.14). The `pthread_atfork` handlers
/// take the lock before the fork and release it on both sides after, so the
/// cache is never copied in the middle of a change, as glibc does for its
/// own malloc. A spin lock rather than a mutex because the handlers must
/// lock in one function and unlock in another; the sections it guards are
/// short (a scan of the slots, and at most a few `mmap`/`mremap`/`munmap`
/// calls, microseconds each), and a waiter yields its core after a few
/// spins.
struct CacheLock {
    locked: AtomicBool,
    cache: UnsafeCell<Cache>,
}

// SAFETY: `cache` is only reached through `CacheGuard`, which holds `locked`.
unsafe impl Sync for CacheLock {}

impl CacheLock {
    fn acquire(&self) {
        let mut spins = 0u32;
        while self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                // The holder may have been preempted: give it the core.
                std::thread::yield_now();
            }
        }
    }

    fn release(&self) {
        self.locked.store(false, Ordering::Release);
    }
}

/// Exclusive access to the cache until dropped.
struct CacheGuard(&'static CacheLock);

impl std::ops::Deref for CacheGuard {
    type Target = Cache;
    fn deref(&self) -> &Cache {
        // SAFETY: the guard holds the lock.
        unsafe { &*self.0.cache.get() }
    }
}

impl std::ops::DerefMut for CacheGuard {
    fn deref_mut(&mut self) -> &mut Cache {
        // SAFETY: the guard holds the lock.
        unsafe { &mut *self.0.cache.get() }
    }
}

impl Drop for CacheGuard {
    fn drop(&mut self) {
        self.0.release();
    }
}

extern "C" fn lock_before_fork() {
    CACHE.acquire();
}

extern "C" fn unlock_after_fork() {
    CACHE.release();
}

fn cache() -> CacheGuard {
    static FORK_HANDLERS: Once = Once::new();
    FORK_HANDLERS.call_once(|| {
        // SAFETY: the handlers only take and release the cache's lock,
        // which no code holds while it forks.
        unsafe { libc::pthread_atfork(Some(lock_before_fork), Some(unlock_after_fork), Some(unlock_after_fork)) };
    });
    CACHE.acquire();
    CacheGuard(&CACHE)
}

/// Mapping length for a block of `size` bytes: header page plus the block,
/// rounded up to [`GRAIN`].
fn mapping_len(size: usize) -> Option<usize> {
    size.checked_add(PAGE)?.checked_next_multiple_of(GRAIN)
}

fn is_big(layout: &Layout) -> bool {
    layout.size() >= BIG && layout.align() <= PAGE
}

/// The header page in front of every big block: its length and mapping.
#[repr(C)]
struct Header {
    len: usize,
    origin: u64,
}

/// The block's range and mapping, from its header.
///
/// # Safety
/// `ptr` must be a big block returned by this allocator.
unsafe fn header(ptr: *mut u8) -> (usize, usize, u64) {
    let base = ptr as usize - PAGE;
    // SAFETY: the header page precedes every big block.
    let h = unsafe { &*(base as *const Header) };
    (base, h.len, h.origin)
}

/// Write the header of the block at `base` and return the block.
///
/// # Safety
/// `base..base + len` must be a block of this module, at least a page long.
unsafe fn stamp(base: usize, len: usize, origin: u64) -> *mut u8 {
    // SAFETY: by the caller's contract the header page is ours.
    unsafe { *(base as *mut Header) = Header { len, origin } };
    (base + PAGE) as *mut u8
}

/// A fresh mapping of `len` bytes, or None.
fn map(len: usize) -> Option<usize> {
    // SAFETY: a new private anonymous mapping; no memory is touched.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
    if p == libc::MAP_FAILED {
        return None;
    }
    // No transparent huge pages, as mimalloc is built (`no_thp`): their
    // faults may compact memory on the spot. Advisory; errors ignored.
    // SAFETY: `p..p + len` is the mapping just made.
    unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
    Some(p as usize)
}

/// `base..base + len` grown to `need` bytes, in place or moved by the
/// kernel (the pages are not copied), and its origin: `origin` when it
/// stayed, a new one when it moved. None when it failed (the range is
/// then unchanged).
///
/// # Safety
/// `base..base + len` must be a block of this module that nothing else
/// uses; it lies inside one mapping.
unsafe fn grow(base: usize, len: usize, need: usize, origin: u64) -> Option<(usize, u64)> {
    // SAFETY: by the caller's contract.
    let p = unsafe { libc::mremap(base as *mut libc::c_void, len, need, libc::MREMAP_MAYMOVE) };
    if p == libc::MAP_FAILED {
        return None;
    }
    let p = p as usize;
    Some((p, if p == base { origin } else { new_origin() }))
}

/// Milliseconds of a monotonic clock (the coarse one: a vDSO read, no
/// system call; its few-ms resolution is plenty for a 10 s delay).
fn now_ms() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes the current time into `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1000) + ts.tv_nsec as u64 / 1_000_000
}

/// Give a range that left the cache back to the kernel.
fn unmap(s: Slot) {
    // SAFETY: the range left the cache, so nothing refers to it.
    unsafe { libc::munmap(s.base as *mut libc::c_void, s.len) };
}

/// A block of at least `need` bytes and whether it was used before (its
/// bytes are then not zero), or None.
///
/// Runs with the cache locked: the system calls it makes (`mremap`,
/// `munmap`, `mmap`) change mappings only and take microseconds.
fn block_for(need: usize) -> Option<(Slot, bool)> {
    let mut c = cache();
    c.purge(now_ms(), &mut unmap);
    match c.pick(need) {
        Pick::Use(s) => Some((s, true)),
        // SAFETY: the block left the cache; nothing else refers to it.
        Pick::Grow(s) => match unsafe { grow(s.base, s.len, need, s.origin) } {
            Some((base, origin)) => {
                c.give_back(need - s.len, &mut unmap);
                Some((Slot { base, len: need, origin, freed_ms: 0 }, true))
            }
            None => {
                unmap(s);
                c.give_back(need, &mut unmap);
                fresh(need)
            }
        },
        Pick::Miss => fresh(need),
    }
}

/// A new mapping of `need` bytes as a block that was never used.
fn fresh(need: usize) -> Option<(Slot, bool)> {
    map(need).map(|base| (Slot { base, len: need, origin: new_origin(), freed_ms: 0 }, false))
}

/// A big block of `size` bytes (zeroed when `zeroed`), or null.
fn alloc_big(size: usize, zeroed: bool) -> *mut u8 {
    let Some(need) = mapping_len(size) else { return std::ptr::null_mut() };
    let Some((s, used)) = block_for(need) else { return std::ptr::null_mut() };
    // SAFETY: the block is ours and at least one page long.
    let ptr = unsafe { stamp(s.base, s.len, s.origin) };
    if zeroed && used {
        // A fresh mapping is zero already; a reused one is not.
        // SAFETY: `size` bytes after the header lie inside the block.
        unsafe { std::ptr::write_bytes(ptr, 0, size) };
    }
    ptr
}

/// Return a big block to the cache (or to the kernel).
///
/// # Safety
/// `ptr` must be a big block returned by this allocator, not used again.
unsafe fn free_big(ptr: *mut u8) {
    // SAFETY: by the caller's contract.
    let (base, len, origin) = unsafe { header(ptr) };
    let now = now_ms();
    let mut c = cache();
    c.purge(now, &mut unmap);
    c.put(Slot { base, len, origin, freed_ms: now }, &mut unmap);
}

/// A global allocator: big blocks in mappings of their own (see the module
/// docs), the rest from the inner allocator `A`.
pub struct BigMapped<A>(pub A);

impl<A: GlobalAlloc> BigMapped<A> {
    /// `ptr` (of `layout`) moved to a new block of `new` bytes by copying.
    ///
    /// # Safety
    /// As for [`GlobalAlloc::realloc`].
    unsafe fn move_to(&self, ptr: *mut u8, layout: Layout, new: Layout) -> *mut u8 {
        // SAFETY: `new` is a valid layout.
        let out = unsafe { self.alloc(new) };
        if !out.is_null() {
            // SAFETY: both blocks hold at least the smaller size.
            unsafe { std::ptr::copy_nonoverlapping(ptr, out, layout.size().min(new.size())) };
            // SAFETY: `ptr` was allocated with `layout`.
            unsafe { self.dealloc(ptr, layout) };
        }
        out
    }
}

// SAFETY: big blocks are page-aligned (align <= PAGE is checked) and lie
// inside mappings nobody else uses; everything else is the inner
// allocator's, with the caller's layouts.
unsafe impl<A: GlobalAlloc> GlobalAlloc for BigMapped<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if is_big(&layout) {
            return alloc_big(layout.size(), false);
        }
        // SAFETY: forwarded with the caller's layout.
        unsafe { self.0.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if is_big(&layout) {
            return alloc_big(layout.size(), true);
        }
        // SAFETY: forwarded with the caller's layout.
        unsafe { self.0.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if is_big(&layout) {
            // SAFETY: a big layout means a big block (same rule as alloc).
            return unsafe { free_big(ptr) };
        }
        // SAFETY: forwarded with the caller's layout.
        unsafe { self.0.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `new_size` with the old alignment is a valid layout (the
        // caller's contract).
        let new = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        match (is_big(&layout), is_big(&new)) {
            // SAFETY: forwarded with the caller's arguments.
            (false, false) => unsafe { self.0.realloc(ptr, layout, new_size) },
            (true, true) => {
                // SAFETY: `ptr` is a big block.
                let (base, len, origin) = unsafe { header(ptr) };
                let Some(need) = mapping_len(new_size) else { return std::ptr::null_mut() };
                if need <= len {
                    return ptr;
                }
                // The kernel grows the block or moves its pages: nothing is
                // copied. Should it refuse, copy to a new block.
                // SAFETY: the block is the caller's, inside one mapping.
                match unsafe { grow(base, len, need, origin) } {
                    // SAFETY: the grown block starts with its header page.
                    Some((p, origin)) => unsafe { stamp(p, need, origin) },
                    // SAFETY: the caller's arguments.
                    None => unsafe { self.move_to(ptr, layout, new) },
                }
            }
            // SAFETY: the caller's arguments.
            _ => unsafe { self.move_to(ptr, layout, new) },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_blocks_are_reused_grown_and_zeroed() {
        let a = BigMapped(std::alloc::System);
        unsafe {
            let l = Layout::from_size_align(3 * BIG + 5, 8).unwrap();
            let p = a.alloc(l);
            assert!(!p.is_null() && p as usize % PAGE == 0);
            std::ptr::write_bytes(p, 0xAB, l.size());
            a.dealloc(p, l);
            // a smaller request reuses the freed mapping, zeroed on demand
            let l2 = Layout::from_size_align(2 * BIG, 64).unwrap();
            let q = a.alloc_zeroed(l2);
            assert!(std::slice::from_raw_parts(q, l2.size()).iter().all(|&b| b == 0));
            std::ptr::write_bytes(q, 7, l2.size());
            // growing keeps the contents
            let r = a.realloc(q, l2, 9 * BIG);
            assert!(std::slice::from_raw_parts(r, l2.size()).iter().all(|&b| b == 7));
            std::ptr::write_bytes(r, 9, 9 * BIG);
            // shrinking below BIG moves it to the inner allocator
            let l3 = Layout::from_size_align(9 * BIG, 64).unwrap();
            let s = a.realloc(r, l3, 100);
            assert!(std::slice::from_raw_parts(s, 100).iter().all(|&b| b == 9));
            a.dealloc(s, Layout::from_size_align(100, 64).unwrap());
        }
    }

    /// A child forked while other threads allocate and free big blocks can
    /// still allocate: the cache's lock is never copied held.
    #[test]
    fn a_fork_never_strands_the_cache_lock() {
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        static ALLOC: BigMapped<std::alloc::System> = BigMapped(std::alloc::System);
        let layout = Layout::from_size_align(2 * BIG, 8).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let churners: Vec<_> = (0..2)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        // SAFETY: a block allocated and freed with one layout.
                        unsafe { ALLOC.dealloc(ALLOC.alloc(layout), layout) };
                    }
                })
            })
            .collect();
        let mut stuck = 0;
        for _ in 0..200 {
            // SAFETY: the child only allocates, frees and exits.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0, "fork failed");
            if pid == 0 {
                // SAFETY: as above; `_exit` skips the parent's atexit work.
                unsafe {
                    let p = ALLOC.alloc(layout);
                    ALLOC.dealloc(p, layout);
                    libc::_exit(if p.is_null() { 1 } else { 0 });
                }
            }
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            let mut status = 0;
            loop {
                // SAFETY: waiting for our own child.
                let done = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
                if done == pid {
                    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "child status {status}");
                    break;
                }
                if std::time::Instant::now() > deadline {
                    // SAFETY: our own child, hung.
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                        libc::waitpid(pid, &mut status, 0);
                    }
                    stuck += 1;
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            if stuck > 0 {
                break;
            }
        }
        stop.store(true, Ordering::Relaxed);
        for t in churners {
            t.join().unwrap();
        }
        assert_eq!(stuck, 0, "children hung on the cache lock");
    }

    /// Random allocations, growths and frees of big blocks through the real
    /// allocator (splits, merges, moves and cuts all happen): every block
    /// keeps its contents, and none overlaps another.
    #[test]
    fn blocks_keep_their_contents_through_splits_merges_and_moves() {
        let a = BigMapped(std::alloc::System);
        let mut live: Vec<(*mut u8, Layout, u8)> = Vec::new();
        let mut x = 99u64;
        let mut next = || {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            x >> 33
        };
        let check = |p: *mut u8, l: &Layout, v: u8| {
            // SAFETY: a live block of `l.size()` bytes, all set to `v`.
            let b = unsafe { std::slice::from_raw_parts(p, l.size()) };
            assert!(b.iter().step_by(997).chain(b.last()).all(|&c| c == v), "block at {p:?} lost its contents");
        };
        for step in 0..3000u32 {
            let r = next();
            if live.len() < 4 || (r % 4 != 0 && live.len() < 24) {
                let size = BIG + (next() as usize % (12 * BIG));
                let l = Layout::from_size_align(size, 8).unwrap();
                // SAFETY: a valid layout; the block is filled at once.
                let p = unsafe { a.alloc(l) };
                assert!(!p.is_null());
                let v = step as u8;
                unsafe { std::ptr::write_bytes(p, v, size) };
                live.push((p, l, v));
            } else if r % 8 == 0 {
                let i = next() as usize % live.len();
                let (p, l, v) = live[i];
                let size = l.size() + next() as usize % (8 * BIG);
                // SAFETY: `p` is live with layout `l`.
                let q = unsafe { a.realloc(p, l, size) };
                assert!(!q.is_null());
                let l2 = Layout::from_size_align(size, 8).unwrap();
                unsafe { std::ptr::write_bytes(q.add(l.size()), v, size - l.size()) };
                live[i] = (q, l2, v);
            } else {
                let (p, l, v) = live.swap_remove(next() as usize % live.len());
                check(p, &l, v);
                // SAFETY: `p` is live with layout `l`.
                unsafe { a.dealloc(p, l) };
            }
            let mut spans: Vec<(usize, usize)> = live.iter().map(|(p, l, _)| (*p as usize, *p as usize + l.size())).collect();
            spans.sort();
            assert!(spans.windows(2).all(|w| w[0].1 <= w[1].0), "step {step}: blocks overlap");
        }
        for (p, l, v) in live {
            check(p, &l, v);
            // SAFETY: `p` is live with layout `l`.
            unsafe { a.dealloc(p, l) };
        }
    }

    fn slot(base: usize, len: usize, origin: u64, freed_ms: u64) -> Slot {
        Slot { base, len, origin, freed_ms }
    }

    fn empty_cache() -> Cache {
        Cache { slots: [EMPTY; CACHE_SLOTS], len: 0, bytes: 0 }
    }

    const MIB: usize = 1 << 20;

    #[test]
    fn cache_keeps_at_most_its_bytes_oldest_out_first() {
        let mut c = empty_cache();
        let mut gone = Vec::new();
        let mut rel = |s: Slot| gone.push(s.base);
        let m = CACHE_BYTES / 4;
        for i in 0..4 {
            // far apart: no merging
            c.put(slot((i + 1) << 40, m - i, i as u64, 0), &mut rel);
        }
        // full: the oldest goes
        c.put(slot(5 << 40, m, 5, 0), &mut rel);
        // larger than the whole cache: not kept
        c.put(slot(6 << 40, CACHE_BYTES + 1, 6, 0), &mut rel);
        assert_eq!(gone, vec![1 << 40, 6 << 40]);
        assert_eq!(c.bytes, 4 * m - 6);
    }

    #[test]
    fn cache_uses_whole_then_splits_then_grows() {
        let mut c = empty_cache();
        let mut gone = Vec::new();
        for (o, len) in [(1u64, 4 * MIB), (2, 2 * MIB), (3, 16 * MIB), (4, 3 * MIB)] {
            c.put(slot((o as usize) << 40, len, o, o), &mut |s: Slot| gone.push(s));
        }
        // the smallest that holds it, whole when the rest could hold no big block
        assert_eq!(c.pick(3 * MIB), Pick::Use(slot(4 << 40, 3 * MIB, 4, 4)));
        assert_eq!(c.pick(MIB + GRAIN), Pick::Use(slot(2 << 40, 2 * MIB, 2, 2)));
        // split: the front is used, the rest keeps its place and age
        assert_eq!(c.pick(5 * MIB), Pick::Use(slot(3 << 40, 5 * MIB, 3, 3)));
        assert_eq!(&c.slots[..c.len], &[slot(1 << 40, 4 * MIB, 1, 1), slot((3 << 40) + 5 * MIB, 11 * MIB, 3, 3)]);
        // nothing holds 12 MiB: grow the largest
        assert_eq!(c.pick(12 * MIB), Pick::Grow(slot((3 << 40) + 5 * MIB, 11 * MIB, 3, 3)));
        assert_eq!(c.pick(5 * MIB), Pick::Grow(slot(1 << 40, 4 * MIB, 1, 1)));
        assert_eq!(c.pick(MIB), Pick::Miss);
        assert_eq!((c.len, c.bytes), (0, 0));
        assert!(gone.is_empty());
    }

    #[test]
    fn freed_blocks_merge_with_neighbours_of_their_mapping_only() {
        let mut c = empty_cache();
        let mut gone = Vec::new();
        let mut rel = |s: Slot| gone.push(s);
        let b = 1 << 40;
        c.put(slot(b, 2 * MIB, 7, 1), &mut rel);
        c.put(slot(b + 4 * MIB, 2 * MIB, 7, 2), &mut rel);
        // adjoins a block of another mapping: kept apart
        c.put(slot(b + 6 * MIB, MIB, 8, 3), &mut rel);
        assert_eq!(c.len, 3);
        // fills the gap: all three pieces of mapping 7 become one, freed now
        c.put(slot(b + 2 * MIB, 2 * MIB, 7, 4), &mut rel);
        assert_eq!(&c.slots[..c.len], &[slot(b + 6 * MIB, MIB, 8, 3), slot(b, 6 * MIB, 7, 4)]);
        assert_eq!(c.bytes, 7 * MIB);
        assert!(gone.is_empty());
    }

    #[test]
    fn cache_purges_by_age_and_gives_back_what_a_grow_took() {
        let mut c = empty_cache();
        let mut gone = Vec::new();
        for i in 0..6 {
            c.put(slot((i + 1) << 40, MIB, i as u64, 1000 * i as u64), &mut |s: Slot| gone.push(s));
        }
        // freed at 0 and 1000 ms: more than PURGE_AFTER_MS before now
        c.purge(1000 + PURGE_AFTER_MS + 1, &mut |s: Slot| gone.push(s));
        assert_eq!(gone, vec![slot(1 << 40, MIB, 0, 0), slot(2 << 40, MIB, 1, 1000)]);
        gone.clear();
        // a grow of 2.5 MiB takes the two oldest whole and the tail of the next
        c.give_back(5 * MIB / 2, &mut |s: Slot| gone.push(s));
        assert_eq!(gone, vec![slot(3 << 40, MIB, 2, 2000), slot(4 << 40, MIB, 3, 3000), slot((5 << 40) + MIB / 2, MIB / 2, 4, 4000)]);
        assert_eq!(&c.slots[..c.len], &[slot(5 << 40, MIB / 2, 4, 4000), slot(6 << 40, MIB, 5, 5000)]);
        assert_eq!(c.bytes, 3 * MIB / 2);
    }

    /// Driven like the allocator's, with fake mappings (address ranges
    /// only): the mapped bytes of big blocks never exceed the most that was
    /// live at once, whatever the order of sizes (the module's promise);
    /// no two blocks overlap; and the bytes mapped afresh (the pages a
    /// program faults in) stay a small part of what was allocated.
    #[test]
    fn mapped_bytes_stay_within_the_live_peak() {
        let mut c = empty_cache();
        let mut next_origin = 1u64;
        let mut mapped = 0usize;
        let (mut fresh, mut asked) = (0usize, 0usize);
        let (mut live, mut peak) = (Vec::<Slot>::new(), 0usize);
        let mut x = 12345u64;
        for step in 0..20_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            if live.len() < 8 || (x >> 40) % 3 != 0 && live.len() < 40 {
                let need = ((17 + (x >> 33) % 256) as usize) * GRAIN;
                asked += need;
                let got = match c.pick(need) {
                    Pick::Use(s) => s,
                    Pick::Grow(s) => {
                        // always moved, to a fresh address range
                        mapped += need - s.len;
                        fresh += need - s.len;
                        c.give_back(need - s.len, &mut |r: Slot| mapped -= r.len);
                        next_origin += 1;
                        slot((next_origin as usize) << 40, need, next_origin, 0)
                    }
                    Pick::Miss => {
                        mapped += need;
                        fresh += need;
                        next_origin += 1;
                        slot((next_origin as usize) << 40, need, next_origin, 0)
                    }
                };
                assert!(got.len >= need);
                live.push(got);
            } else {
                let s = live.swap_remove((x >> 20) as usize % live.len());
                c.put(Slot { freed_ms: step, ..s }, &mut |r: Slot| mapped -= r.len);
            }
            let now_live: usize = live.iter().map(|s| s.len).sum();
            peak = peak.max(now_live);
            assert_eq!(mapped, now_live + c.bytes);
            assert!(mapped <= peak, "step {step}: {mapped} mapped, live peak {peak}");
            let mut spans: Vec<(usize, usize)> = live.iter().chain(&c.slots[..c.len]).map(|s| (s.base, s.base + s.len)).collect();
            spans.sort();
            assert!(spans.windows(2).all(|w| w[0].1 <= w[1].0), "step {step}: ranges overlap");
        }
        assert!(fresh * 4 < asked, "{fresh} bytes mapped afresh for {asked} asked");
    }
}
