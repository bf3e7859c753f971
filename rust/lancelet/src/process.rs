//! Process-wide resources that survive `fork()`.
//!
//! Lancelet keeps a few resources for the life of a process: the thread
//! pool that decodes and encodes pages, the tokio runtime of object-store
//! I/O, the filter planning thread. A `fork()` copies their memory into the
//! child but not their threads, so a child that used the parent's pool or
//! runtime would wait forever for workers that do not exist there (Python's
//! `multiprocessing` forks by default on Linux before 3.14).
//!
//! Each such resource is a [`PerProcess`] value: a `pthread_atfork` child
//! handler bumps a process generation, and the first use in the child
//! builds a fresh value. The parent's value is leaked in the child, never
//! dropped: dropping a runtime or pool joins threads that were not copied.

use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Once;

/// Forks survived since the process started (0 in the original process).
static GENERATION: AtomicU64 = AtomicU64::new(0);

extern "C" fn after_fork_in_child() {
    // Only an atomic add: a fork handler runs where little else is safe.
    GENERATION.fetch_add(1, Ordering::SeqCst);
}

/// The current process generation, registering the fork handler on first
/// call. Every [`PerProcess`] value calls this before building, so the
/// handler is in place before anything that a fork could strand exists.
pub fn generation() -> u64 {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        #[cfg(unix)]
        // SAFETY: the handler only touches an atomic; registering has no
        // other precondition.
        unsafe {
            libc::pthread_atfork(None, None, Some(after_fork_in_child));
        }
    });
    GENERATION.load(Ordering::Acquire)
}

/// A value built lazily once per process: after a `fork()` the child
/// builds its own on first use.
pub struct PerProcess<T: 'static> {
    current: AtomicPtr<(u64, T)>,
}

impl<T: Send + Sync + 'static> PerProcess<T> {
    /// An empty slot (for a `static`).
    pub const fn new() -> Self {
        PerProcess { current: AtomicPtr::new(std::ptr::null_mut()) }
    }

    /// This process's value, built by `init` on the first call in this
    /// process. Values are leaked (one per process generation), which makes
    /// the returned reference `'static`.
    pub fn get(&'static self, init: impl FnOnce() -> T) -> &'static T {
        let gen = generation();
        let seen = self.current.load(Ordering::Acquire);
        // SAFETY: a non-null pointer was leaked from a Box below and is
        // never freed.
        if let Some((g, value)) = unsafe { seen.as_ref() } {
            if *g == gen {
                return value;
            }
        }
        let fresh = Box::into_raw(Box::new((gen, init())));
        match self.current.compare_exchange(seen, fresh, Ordering::AcqRel, Ordering::Acquire) {
            // The old value (the parent's, if any) is leaked on purpose.
            Ok(_) => unsafe { &(*fresh).1 },
            Err(winner) => {
                // Another thread of this process built one first: keep
                // theirs and drop ours (it was never shared).
                drop(unsafe { Box::from_raw(fresh) });
                // SAFETY: as above; the winner was stored by this process.
                unsafe { &(*winner).1 }
            }
        }
    }
}

impl<T: Send + Sync + 'static> Default for PerProcess<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// The thread pool for data-parallel work (page encoding and decoding,
/// per-fragment planning). Sized like rayon's global pool
/// (`RAYON_NUM_THREADS`, else one thread per core); unlike the global pool
/// it is rebuilt in a forked child.
pub fn pool() -> &'static rayon::ThreadPool {
    static POOL: PerProcess<rayon::ThreadPool> = PerProcess::new();
    POOL.get(|| {
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("lancelet-{i}"))
            .build()
            .unwrap_or_else(|_| rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a one-thread pool"))
    })
}

/// Run `f` on [`pool`]: parallel iterators inside it use this process's
/// pool. Called from one of its own threads, it runs `f` in place.
pub fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    pool().install(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_value_per_generation() {
        static SLOT: PerProcess<u64> = PerProcess::new();
        let a = SLOT.get(|| 7) as *const u64;
        let b = SLOT.get(|| 8) as *const u64;
        assert_eq!(a, b);
        assert_eq!(*SLOT.get(|| 9), 7);
        // A fork in this process (simulated): the next use builds anew.
        after_fork_in_child();
        assert_eq!(*SLOT.get(|| 10), 10);
        assert_eq!(*SLOT.get(|| 11), 10);
    }

    #[test]
    fn pool_runs_parallel_work() {
        use rayon::prelude::*;
        let sum: u64 = install(|| (0..10_000u64).into_par_iter().sum());
        assert_eq!(sum, 49_995_000);
    }
}
