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
//! A block of at least [`BIG`] bytes here is its own anonymous mapping
//! (one header page in front holds its length). A freed mapping waits in
//! the cache for [`PURGE_AFTER_MS`] (mimalloc's purge delay in the
//! extension) and up to [`CACHE_BYTES`] in all, so that the next write or
//! scan finds its pages resident instead of faulting them in again (a
//! cache of 128 MiB made every full scan of a 336 MB table fault ~65k
//! pages: session 10). An allocation takes, in order:
//!
//! 1. the smallest cached mapping that holds it, if it is at most twice
//!    the size asked for;
//! 2. else the largest cached mapping that is too small, grown in place or
//!    moved by the kernel (`mremap`: nothing is copied), and the oldest
//!    other cached mappings are unmapped until as many bytes as it grew by
//!    are given back;
//! 3. else an oversized cached mapping, shrunk to size (its tail unmapped);
//! 4. else, the cache being empty, a new mapping.
//!
//! So the bytes mapped for big blocks, live and cached together, never
//! exceed the most that was live at once: a new mapping is made only when
//! nothing is cached, and growing gives back at least what it takes. There
//! are no holes. Smaller blocks, and blocks aligned to more than a page,
//! stay with the inner allocator.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

/// Blocks of at least this many bytes get their own mapping.
pub const BIG: usize = 1 << 20;

/// Freed mappings kept for reuse, in bytes at most: room for what a scan
/// of a few hundred MB hands to Python and frees at once.
pub const CACHE_BYTES: usize = 1 << 30;

/// A cached mapping unused for this long is given back to the kernel (at
/// the next allocation or free of a big block).
pub const PURGE_AFTER_MS: u64 = 10_000;

/// Freed mappings the cache holds at most.
const CACHE_SLOTS: usize = 1024;

/// The page size assumed for mappings (the header takes one).
const PAGE: usize = 4096;

/// One freed mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    base: usize,
    len: usize,
    /// `now_ms()` when it was freed.
    freed_ms: u64,
}

const EMPTY: Slot = Slot { base: 0, len: 0, freed_ms: 0 };

/// What the cache gives an allocation of `need` bytes (see the module
/// docs); the slot has left the cache.
#[derive(Debug, PartialEq, Eq)]
enum Pick {
    /// Use as it is.
    Fit(Slot),
    /// Too small: grow it to `need` bytes.
    Grow(Slot),
    /// Far too large: shrink it to `need` bytes.
    Shrink(Slot),
    /// Nothing cached: map new memory.
    Miss,
}

/// Freed mappings, oldest first. Its methods hand every mapping that
/// leaves the cache for good to `release` (`munmap` in the allocator, a
/// recorder in the tests).
struct Cache {
    slots: [Slot; CACHE_SLOTS],
    len: usize,
    bytes: usize,
}

impl Cache {
    fn pick(&mut self, need: usize) -> Pick {
        let live = &self.slots[..self.len];
        let fit = (0..live.len()).filter(|&i| live[i].len >= need).min_by_key(|&i| live[i].len);
        if let Some(i) = fit.filter(|&i| live[i].len / 2 <= need) {
            return Pick::Fit(self.remove(i));
        }
        if let Some(j) = (0..live.len()).filter(|&i| live[i].len < need).max_by_key(|&i| live[i].len) {
            return Pick::Grow(self.remove(j));
        }
        match fit {
            Some(i) => Pick::Shrink(self.remove(i)),
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

    /// Release the oldest mappings until at least `bytes` are released or
    /// the cache is empty.
    fn release_oldest(&mut self, bytes: usize, release: &mut impl FnMut(Slot)) {
        let mut done = 0;
        while done < bytes && self.len > 0 {
            let s = self.remove(0);
            done += s.len;
            release(s);
        }
    }

    /// Release the mappings freed more than [`PURGE_AFTER_MS`] before `now`.
    fn purge(&mut self, now: u64, release: &mut impl FnMut(Slot)) {
        while self.len > 0 && now.saturating_sub(self.slots[0].freed_ms) > PURGE_AFTER_MS {
            let s = self.remove(0);
            release(s);
        }
    }

    /// Keep `slot`, releasing the oldest mappings that no longer fit (or
    /// `slot` itself when it is larger than the whole cache).
    fn put(&mut self, slot: Slot, release: &mut impl FnMut(Slot)) {
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
static CACHE: CacheLock = CacheLock {
    locked: AtomicBool::new(false),
    cache: UnsafeCell::new(Cache { slots: [EMPTY; CACHE_SLOTS], len: 0, bytes: 0 }),
};

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
/// rounded up to 64 KiB (similar sizes then share cached mappings).
fn mapping_len(size: usize) -> Option<usize> {
    size.checked_add(PAGE)?.checked_next_multiple_of(64 << 10)
}

fn is_big(layout: &Layout) -> bool {
    layout.size() >= BIG && layout.align() <= PAGE
}

/// The mapping of a big block: `(base, length)` from its header.
///
/// # Safety
/// `ptr` must be a big block returned by this allocator.
unsafe fn header(ptr: *mut u8) -> (usize, usize) {
    let base = ptr as usize - PAGE;
    // SAFETY: the header page precedes every big block and holds its
    // mapping length.
    (base, unsafe { *(base as *const usize) })
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

/// `base..base + len` resized to `need` bytes (when growing, moved by the
/// kernel if need be; the pages are not copied), or None (the mapping is
/// then unchanged).
///
/// # Safety
/// `base..base + len` must be a mapping of this module that nothing uses.
unsafe fn remap(base: usize, len: usize, need: usize) -> Option<usize> {
    // SAFETY: by the caller's contract.
    let p = unsafe { libc::mremap(base as *mut libc::c_void, len, need, libc::MREMAP_MAYMOVE) };
    (p != libc::MAP_FAILED).then_some(p as usize)
}

/// Milliseconds of a monotonic clock (the coarse one: a vDSO read, no
/// system call; its few-ms resolution is plenty for a 10 s delay).
fn now_ms() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes the current time into `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1000) + ts.tv_nsec as u64 / 1_000_000
}

/// Give a mapping that left the cache back to the kernel.
fn unmap(s: Slot) {
    // SAFETY: the mapping left the cache, so nothing refers to it.
    unsafe { libc::munmap(s.base as *mut libc::c_void, s.len) };
}

/// A mapping of at least `need` bytes, and whether it was used before (its
/// bytes are then not zero), or None.
///
/// Runs with the cache locked: the system calls it makes (`mremap`,
/// `munmap`, `mmap`) change mappings only and take microseconds.
fn mapping_for(need: usize) -> Option<(usize, usize, bool)> {
    let mut c = cache();
    c.purge(now_ms(), &mut unmap);
    match c.pick(need) {
        Pick::Fit(s) => Some((s.base, s.len, true)),
        // SAFETY: the mapping left the cache; nothing else refers to it.
        Pick::Grow(s) => match unsafe { remap(s.base, s.len, need) } {
            Some(base) => {
                // Give back as much as the mapping grew by.
                c.release_oldest(need - s.len, &mut unmap);
                Some((base, need, true))
            }
            None => {
                unmap(s);
                c.release_oldest(need, &mut unmap);
                map(need).map(|base| (base, need, false))
            }
        },
        // Shrinking never moves the mapping; if it fails, the oversized
        // mapping is used whole.
        // SAFETY: as above.
        Pick::Shrink(s) => match unsafe { remap(s.base, s.len, need) } {
            Some(base) => Some((base, need, true)),
            None => Some((s.base, s.len, true)),
        },
        Pick::Miss => map(need).map(|base| (base, need, false)),
    }
}

/// A big block of `size` bytes (zeroed when `zeroed`), or null.
fn alloc_big(size: usize, zeroed: bool) -> *mut u8 {
    let Some(need) = mapping_len(size) else { return std::ptr::null_mut() };
    let Some((base, len, used)) = mapping_for(need) else { return std::ptr::null_mut() };
    // SAFETY: the mapping is ours and at least one page long.
    unsafe { *(base as *mut usize) = len };
    let ptr = (base + PAGE) as *mut u8;
    if zeroed && used {
        // A fresh mapping is zero already; a reused one is not.
        // SAFETY: `size` bytes after the header lie inside the mapping.
        unsafe { std::ptr::write_bytes(ptr, 0, size) };
    }
    ptr
}

/// Return a big block's mapping to the cache (or to the kernel).
///
/// # Safety
/// `ptr` must be a big block returned by this allocator, not used again.
unsafe fn free_big(ptr: *mut u8) {
    // SAFETY: by the caller's contract.
    let (base, len) = unsafe { header(ptr) };
    let now = now_ms();
    let mut c = cache();
    c.purge(now, &mut unmap);
    c.put(Slot { base, len, freed_ms: now }, &mut unmap);
}

/// A global allocator: big blocks in mappings of their own (see the module
/// docs), the rest from the inner allocator `A`.
pub struct BigMapped<A>(pub A);

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
                let (base, len) = unsafe { header(ptr) };
                let Some(need) = mapping_len(new_size) else { return std::ptr::null_mut() };
                if need <= len {
                    return ptr;
                }
                // Grow the mapping; the kernel moves the pages if needed,
                // nothing is copied. On failure the block is unchanged.
                // SAFETY: `base..base + len` is the block's mapping.
                let Some(p) = (unsafe { remap(base, len, need) }) else { return std::ptr::null_mut() };
                // SAFETY: the (moved) mapping starts with its header page.
                unsafe { *(p as *mut usize) = need };
                (p + PAGE) as *mut u8
            }
            _ => {
                // SAFETY: `new` is a valid layout.
                let out = unsafe { self.alloc(new) };
                if !out.is_null() {
                    // SAFETY: both blocks hold at least the smaller size.
                    unsafe { std::ptr::copy_nonoverlapping(ptr, out, layout.size().min(new_size)) };
                    // SAFETY: `ptr` was allocated with `layout`.
                    unsafe { self.dealloc(ptr, layout) };
                }
                out
            }
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

    fn slot(base: usize, len: usize, freed_ms: u64) -> Slot {
        Slot { base, len, freed_ms }
    }

    #[test]
    fn cache_keeps_at_most_its_bytes_oldest_out_first() {
        let mut c = Cache { slots: [EMPTY; CACHE_SLOTS], len: 0, bytes: 0 };
        let mut gone = Vec::new();
        let mut rel = |s: Slot| gone.push(s.base);
        let m = CACHE_BYTES / 4;
        for i in 0..4 {
            c.put(slot(i + 1, m - i, 0), &mut rel);
        }
        // full: the oldest goes
        c.put(slot(5, m, 0), &mut rel);
        // larger than the whole cache: not kept
        c.put(slot(6, CACHE_BYTES + 1, 0), &mut rel);
        assert_eq!(gone, vec![1, 6]);
        assert_eq!(c.bytes, 4 * m - 6);
    }

    #[test]
    fn cache_picks_fit_then_grow_then_shrink() {
        let mut c = Cache { slots: [EMPTY; CACHE_SLOTS], len: 0, bytes: 0 };
        let mut gone = Vec::new();
        let mib = 1 << 20;
        for (base, len) in [(1, 4 * mib), (2, 2 * mib), (3, 16 * mib), (4, 3 * mib)] {
            c.put(slot(base, len, base as u64), &mut |s: Slot| gone.push(s.base));
        }
        // the smallest that holds it, when at most twice the size
        assert_eq!(c.pick(3 * mib), Pick::Fit(slot(4, 3 * mib, 4)));
        assert_eq!(c.pick(mib + 1), Pick::Fit(slot(2, 2 * mib, 2)));
        // 16 MiB is more than twice 5 MiB: grow the largest smaller one
        assert_eq!(c.pick(5 * mib), Pick::Grow(slot(1, 4 * mib, 1)));
        // only an oversized one left: shrink it
        assert_eq!(c.pick(mib), Pick::Shrink(slot(3, 16 * mib, 3)));
        assert_eq!(c.pick(mib), Pick::Miss);
        assert_eq!((c.len, c.bytes), (0, 0));
        assert!(gone.is_empty());
    }

    #[test]
    fn cache_purges_by_age_and_gives_back_what_a_grow_took() {
        let mut c = Cache { slots: [EMPTY; CACHE_SLOTS], len: 0, bytes: 0 };
        let mut gone = Vec::new();
        let mib = 1 << 20;
        for i in 0..6 {
            c.put(slot(i + 1, mib, 1000 * i as u64), &mut |s: Slot| gone.push(s.base));
        }
        // freed at 0 and 1000 ms: more than PURGE_AFTER_MS before now
        c.purge(1000 + PURGE_AFTER_MS + 1, &mut |s: Slot| gone.push(s.base));
        assert_eq!(gone, vec![1, 2]);
        // a grow of 2.5 MiB gives back the three oldest 1 MiB mappings
        c.release_oldest(5 * mib / 2, &mut |s: Slot| gone.push(s.base));
        assert_eq!(gone, vec![1, 2, 3, 4, 5]);
        assert_eq!((c.len, c.bytes), (1, mib));
    }

    /// The mapped bytes of big blocks never exceed the most that was live at
    /// once, whatever the order of sizes (the module's promise), and every
    /// block keeps its contents.
    #[test]
    fn mapped_bytes_stay_within_the_live_peak() {
        // A local cache driven like the allocator's, with fake mappings
        // (their sizes only), so the global cache and other tests do not
        // interfere.
        let mut c = Cache { slots: [EMPTY; CACHE_SLOTS], len: 0, bytes: 0 };
        let mut next = 1usize;
        let mut mapped = 0usize;
        let (mut live, mut peak) = (Vec::<Slot>::new(), 0usize);
        let mut x = 12345u64;
        for step in 0..20_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            if live.len() < 8 || (x >> 40) % 3 != 0 && live.len() < 40 {
                let need = ((1 + (x >> 33) % 64) as usize) << 16;
                let got = match c.pick(need) {
                    Pick::Fit(s) => s,
                    Pick::Grow(s) => {
                        mapped += need - s.len;
                        c.release_oldest(need - s.len, &mut |r: Slot| mapped -= r.len);
                        slot(s.base, need, 0)
                    }
                    Pick::Shrink(s) => {
                        mapped -= s.len - need;
                        slot(s.base, need, 0)
                    }
                    Pick::Miss => {
                        mapped += need;
                        next += 1;
                        slot(next, need, 0)
                    }
                };
                assert!(got.len >= need);
                live.push(got);
            } else {
                let s = live.swap_remove((x >> 20) as usize % live.len());
                c.put(slot(s.base, s.len, step), &mut |r: Slot| mapped -= r.len);
            }
            let now_live: usize = live.iter().map(|s| s.len).sum();
            peak = peak.max(now_live);
            assert_eq!(mapped, now_live + c.bytes);
            assert!(mapped <= peak, "step {step}: {mapped} mapped, live peak {peak}");
        }
    }
}
