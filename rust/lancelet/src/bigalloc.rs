//! A global allocator wrapper: ordinary blocks go to the inner allocator
//! (mimalloc in the Python extension), big ones get a mapping of their own,
//! kept in a bounded cache once freed.
//!
//! Why (benches/RESULTS.md, session 9): a streaming write allocates a few
//! hundred buffers of 1-18 MiB (column pages being filled, encoded pages,
//! FSST output sized for the worst case). mimalloc places them in arena
//! chunks of 32 MiB, searched from a different chunk by each thread, and
//! keeps freed memory mapped for a while (10 s in the extension) so that
//! the next write does not fault it in again. The freed holes rarely fit the next buffers
//! exactly, so the touched part of the arena kept growing: ~190 MiB
//! resident at the peak of a 4M-row write whose live data never exceeded
//! ~97 MiB. Purging sooner cut the peak but doubled the write's system
//! time (every buffer faulted in anew).
//!
//! A block of at least [`BIG`] bytes here is its own anonymous mapping
//! (one header page in front holds its length). Freed mappings go to a
//! cache of at most [`CACHE_BYTES`]; an allocation takes the smallest cached
//! mapping that holds it (or grows the largest one), so its pages are
//! already resident and nothing is faulted or zeroed. Growing a big block
//! remaps it (no copy). New memory is mapped only when the cache is empty,
//! so resident memory for big blocks is at most the most that was live at
//! once, plus what the cache keeps once they are freed; there are no
//! holes. Smaller blocks, and blocks aligned to more than a page, stay
//! with the inner allocator.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

/// Blocks of at least this many bytes get their own mapping.
pub const BIG: usize = 1 << 20;

/// Address space of freed mappings kept for reuse (their resident pages
/// are at most this much): about the big buffers a write of the benchmark
/// tables has live at once, so that the next write finds them resident
/// (with 64 MiB, a write alternating with pylance's faulted ~33k pages).
pub const CACHE_BYTES: usize = 128 << 20;

/// Freed mappings the cache holds at most.
const CACHE_SLOTS: usize = 32;

/// The page size assumed for mappings (the header takes one).
const PAGE: usize = 4096;

/// Freed mappings: `(base, length)`, oldest first.
struct Cache {
    slots: [(usize, usize); CACHE_SLOTS],
    len: usize,
    bytes: usize,
}

/// The cache: a fixed array (the allocator cannot call itself to grow
/// one) behind [`CacheLock`].
static CACHE: CacheLock = CacheLock {
    locked: AtomicBool::new(false),
    cache: UnsafeCell::new(Cache { slots: [(0, 0); CACHE_SLOTS], len: 0, bytes: 0 }),
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
/// lock in one function and unlock in another; the sections it guards are a
/// few dozen instructions and never make a system call.
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

impl Cache {
    /// Remove and return the smallest mapping of at least `need` bytes, or
    /// else the largest one (the caller grows it).
    fn take(&mut self, need: usize) -> Option<(usize, usize)> {
        let fits = (0..self.len).filter(|&i| self.slots[i].1 >= need).min_by_key(|&i| self.slots[i].1);
        let i = fits.or_else(|| (0..self.len).max_by_key(|&i| self.slots[i].1))?;
        Some(self.remove(i))
    }

    fn remove(&mut self, i: usize) -> (usize, usize) {
        let got = self.slots[i];
        self.slots.copy_within(i + 1..self.len, i);
        self.len -= 1;
        self.bytes -= got.1;
        got
    }

    /// Keep `(base, len)`; returns the mappings to unmap (the oldest ones
    /// that no longer fit, or this one when it is larger than the cache).
    fn put(&mut self, base: usize, len: usize, evicted: &mut [(usize, usize); CACHE_SLOTS + 1]) -> usize {
        let mut n = 0;
        if len > CACHE_BYTES {
            evicted[0] = (base, len);
            return 1;
        }
        while self.len > 0 && (self.len == CACHE_SLOTS || self.bytes + len > CACHE_BYTES) {
            evicted[n] = self.remove(0);
            n += 1;
        }
        self.slots[self.len] = (base, len);
        self.len += 1;
        self.bytes += len;
        n
    }
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

/// `base..base + len` grown to `need` bytes (moved by the kernel if need
/// be; the pages are not copied), or None (the mapping is then unchanged).
///
/// # Safety
/// `base..base + len` must be a mapping of this module that nothing uses.
unsafe fn grow(base: usize, len: usize, need: usize) -> Option<usize> {
    // SAFETY: by the caller's contract.
    let p = unsafe { libc::mremap(base as *mut libc::c_void, len, need, libc::MREMAP_MAYMOVE) };
    (p != libc::MAP_FAILED).then_some(p as usize)
}

/// A big block of `size` bytes (zeroed when `zeroed`), or null.
///
/// A freed mapping is reused whenever the cache holds one, grown when none
/// is large enough, so new memory is mapped only when the cache is empty:
/// the big blocks' resident memory never exceeds the most that was live at
/// once plus what the cache keeps.
fn alloc_big(size: usize, zeroed: bool) -> *mut u8 {
    let Some(need) = mapping_len(size) else { return std::ptr::null_mut() };
    let cached = cache().take(need);
    let (base, len) = match cached {
        Some((b, l)) if l >= need => (b, l),
        // SAFETY: the mapping left the cache; nothing else refers to it.
        Some((b, l)) => match unsafe { grow(b, l, need) } {
            Some(nb) => (nb, need),
            None => {
                // SAFETY: as above; it is given back to the kernel.
                unsafe { libc::munmap(b as *mut libc::c_void, l) };
                match map(need) {
                    Some(nb) => (nb, need),
                    None => return std::ptr::null_mut(),
                }
            }
        },
        None => match map(need) {
            Some(b) => (b, need),
            None => return std::ptr::null_mut(),
        },
    };
    // SAFETY: the mapping is ours and at least one page long.
    unsafe { *(base as *mut usize) = len };
    let ptr = (base + PAGE) as *mut u8;
    if zeroed && cached.is_some() {
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
    let mut evicted = [(0usize, 0usize); CACHE_SLOTS + 1];
    let n = cache().put(base, len, &mut evicted);
    for &(b, l) in &evicted[..n] {
        // SAFETY: the mapping left the cache, so nothing refers to it.
        unsafe { libc::munmap(b as *mut libc::c_void, l) };
    }
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
                let Some(p) = (unsafe { grow(base, len, need) }) else { return std::ptr::null_mut() };
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

    #[test]
    fn cache_keeps_at_most_its_bytes_oldest_out_first() {
        let mut c = Cache { slots: [(0, 0); CACHE_SLOTS], len: 0, bytes: 0 };
        let mut ev = [(0usize, 0usize); CACHE_SLOTS + 1];
        let m = CACHE_BYTES / 4;
        for i in 0..4 {
            assert_eq!(c.put(i + 1, m - i, &mut ev), 0);
        }
        // full: the oldest goes
        assert_eq!(c.put(5, m, &mut ev), 1);
        assert_eq!(ev[0], (1, m));
        // larger than the whole cache: not kept
        assert_eq!(c.put(6, CACHE_BYTES + 1, &mut ev), 1);
        assert_eq!(ev[0], (6, CACHE_BYTES + 1));
        assert_eq!(c.bytes, 4 * m - 6);
        // the smallest that fits; else the largest
        assert_eq!(c.take(m - 2), Some((3, m - 2)));
        assert_eq!(c.take(m + 1), Some((5, m)));
        assert_eq!(c.bytes, 2 * m - 4);
        assert_eq!((c.take(1), c.take(1), c.take(1)), (Some((4, m - 3)), Some((2, m - 1)), None));
    }
}
