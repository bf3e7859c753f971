//! Large reads of local files through read-only memory maps.
//!
//! Reading a range of a local file through `pread` copies it from the OS
//! page cache into fresh memory, and fresh memory is page-faulted in and
//! zeroed by the kernel before the copy lands: for a full scan, the copy
//! and the faults cost about as much CPU as decoding (the reads of a
//! 440 MB scan made ~110k page faults). A mapped range instead shares the
//! cache's pages: no copy, no zeroing, and the values of plain columns
//! (vectors, see `file::structural::direct`) reach Arrow straight from
//! the cache. The map is populated up front (`MAP_POPULATE`) because the
//! whole range is about to be read, and is unmapped when the last
//! [`Bytes`] over it is dropped.
//!
//! Only ranges of at least [`MAP_MIN_BYTES`] are mapped (a map and unmap
//! cost more than a small `pread`), and only ranges lying inside the file
//! as it is now; anything else (or a failing `mmap`) is read as before.
//!
//! Small ranges (a point lookup's few, up to [`FILE_MAP_MAX_RANGE`]) and
//! the many ranges of a take (its chunks and vector rows, thousands of
//! them) are cut from one map
//! of the whole file kept for the life of the handle reading it
//! ([`FileMap`]), not populated: the kernel maps in only the pages the
//! reader touches, once, with no syscall per range and no copy (the copies
//! out of the page cache were ~40 % of a 1,000-row take's CPU, and a map
//! made per read spent as much again on faulting and unmapping). The map is
//! advised `MADV_RANDOM`, so a page not yet cached is read alone, as
//! `pread` would (pages already cached around it are mapped in batches by
//! the kernel's fault-around); its resident pages are bounded by
//! [`FILE_MAP_BUDGET`]. A scan unit's few medium ranges are read. Data
//! files are immutable once written (a new version writes new files), so
//! a mapped file does not change under a reader; a file truncated by
//! someone else while mapped would fault the reader, as with any mapped
//! file.

use std::ops::Range;
use std::os::fd::AsRawFd;

use bytes::Bytes;

/// Ranges at least this long are mapped instead of read.
pub const MAP_MIN_BYTES: u64 = 1 << 20;

/// One mapping, unmapped on drop.
struct Mapping {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is read-only and owned: shared references to its
// bytes are safe from any thread, and only `drop` unmaps it.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len come from a successful mmap, unmapped only here.
        unsafe {
            libc::munmap(self.ptr, self.len);
        }
    }
}

impl AsRef<[u8]> for Mapping {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: the mapping is `len` readable bytes for its lifetime.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// The bytes of `ranges` of the local file `path`, each mapped when it is
/// at least [`MAP_MIN_BYTES`] long and lies inside the file; `None` at a
/// position means "read it instead".
pub fn map_ranges(path: &std::path::Path, ranges: &[Range<u64>]) -> Vec<Option<Bytes>> {
    if !ranges.iter().any(|r| r.end.saturating_sub(r.start) >= MAP_MIN_BYTES) {
        return vec![None; ranges.len()];
    }
    let Ok(file) = std::fs::File::open(path) else { return vec![None; ranges.len()] };
    let Ok(size) = file.metadata().map(|m| m.len()) else { return vec![None; ranges.len()] };
    let page = page_size();
    ranges
        .iter()
        .map(|r| {
            if r.end.saturating_sub(r.start) < MAP_MIN_BYTES || r.end > size {
                return None;
            }
            let start = r.start / page * page;
            let len = usize::try_from(r.end - start).ok()?;
            let offset = libc::off_t::try_from(start).ok()?;
            // SAFETY: a fresh read-only private mapping of an open file;
            // the kernel picks the address.
            let ptr =
                unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_PRIVATE | libc::MAP_POPULATE, file.as_raw_fd(), offset) };
            if ptr == libc::MAP_FAILED {
                return None;
            }
            let bytes = Bytes::from_owner(Mapping { ptr, len });
            Some(bytes.slice((r.start - start) as usize..))
        })
        .collect()
}

/// Ranges at most this long are cut from the file's [`FileMap`] (a point
/// lookup's), and so are all ranges of a read of at least
/// [`FILE_MAP_MIN_RANGES`] (a take's chunks and vector rows); other ranges
/// below [`MAP_MIN_BYTES`] (a scan unit's smaller pages, each read once)
/// are read, so that the map does not keep their pages resident (through
/// the map, a streaming scan's peak RSS rose ~90 MB).
pub const FILE_MAP_MAX_RANGE: u64 = 64 << 10;

/// See [`FILE_MAP_MAX_RANGE`].
pub const FILE_MAP_MIN_RANGES: usize = 16;

/// Bytes served through [`FileMap`]s, all files together, after which
/// every live one drops its pages from the process's page tables (see
/// [`FileMap`]).
pub const FILE_MAP_BUDGET: u64 = 256 << 20;

/// A local data file mapped whole, once, for the life of the handle that
/// reads it: small reads (a take's chunks and vector rows, a point
/// lookup's few values) are cut from it with no syscall and no copy, and
/// the page faults of a page are paid once, not on every read (a map per
/// read was mapped, faulted and unmapped each time: half of a take's CPU).
///
/// Pages the reads touch stay mapped, and count in the resident set, until
/// the map is dropped. So that a long-lived handle taking rows all over a
/// large dataset does not grow its resident set up to the files' size,
/// once [`FILE_MAP_BUDGET`] bytes have been served since the last time,
/// every live map drops its pages (`MADV_DONTNEED`: the page cache keeps
/// them; a later read faults them in again, and a reader still holding
/// bytes of the map reads the same values).
pub struct FileMap {
    whole: Bytes,
    ptr: usize,
    len: usize,
}

static SERVED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static LIVE: std::sync::Mutex<Vec<std::sync::Weak<FileMap>>> = std::sync::Mutex::new(Vec::new());

impl FileMap {
    /// Map the local file `path` whole (read-only, not populated, random
    /// access advised); `None` if it is empty or cannot be mapped.
    pub fn open(path: &std::path::Path) -> Option<std::sync::Arc<FileMap>> {
        let file = std::fs::File::open(path).ok()?;
        let len = usize::try_from(file.metadata().ok()?.len()).ok()?;
        if len == 0 {
            return None;
        }
        // SAFETY: a fresh read-only private mapping of an open file; the
        // kernel picks the address.
        let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_PRIVATE, file.as_raw_fd(), 0) };
        if ptr == libc::MAP_FAILED {
            return None;
        }
        // SAFETY: advice on the mapping just made; failing advice is harmless.
        unsafe {
            libc::madvise(ptr, len, libc::MADV_RANDOM);
        }
        let map = std::sync::Arc::new(FileMap { whole: Bytes::from_owner(Mapping { ptr, len }), ptr: ptr as usize, len });
        let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|w| w.strong_count() > 0);
        live.push(std::sync::Arc::downgrade(&map));
        Some(map)
    }

    /// Size of the mapped file.
    pub fn len(&self) -> u64 {
        self.len as u64
    }

    /// Whether the map is empty (never: empty files are not mapped).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes of `ranges` (each inside the file), cut from the map;
    /// `None` if one lies past its end.
    pub fn slices(&self, ranges: &[Range<u64>]) -> Option<Vec<Bytes>> {
        if ranges.iter().any(|r| r.end > self.len as u64) {
            return None;
        }
        let served: u64 = ranges.iter().map(|r| r.end.saturating_sub(r.start)).sum();
        if SERVED.fetch_add(served, std::sync::atomic::Ordering::Relaxed) + served > FILE_MAP_BUDGET {
            SERVED.store(0, std::sync::atomic::Ordering::Relaxed);
            drop_all_pages();
        }
        Some(ranges.iter().map(|r| if r.end > r.start { self.whole.slice(r.start as usize..r.end as usize) } else { Bytes::new() }).collect())
    }

    fn drop_pages(&self) {
        // SAFETY: the mapping is alive (`whole` owns it) and read-only and
        // private: its pages hold the file's bytes, so dropping them only
        // makes the next access fault them in again from the page cache.
        unsafe {
            libc::madvise(self.ptr as *mut libc::c_void, self.len, libc::MADV_DONTNEED);
        }
    }
}

/// Every live [`FileMap`] drops its pages (see there).
fn drop_all_pages() {
    let live: Vec<std::sync::Arc<FileMap>> = {
        let mut l = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        l.retain(|w| w.strong_count() > 0);
        l.iter().filter_map(|w| w.upgrade()).collect()
    };
    live.iter().for_each(|m| m.drop_pages());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_map_serves_ranges_and_survives_dropping_its_pages() {
        let dir = std::env::temp_dir().join(format!("lancelet-filemap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("f.bin");
        let data: Vec<u8> = (0..200_000usize).map(|i| (i * 131 % 251) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        let n = data.len() as u64;
        let m = FileMap::open(&p).expect("mapped");
        assert_eq!(m.len(), n);
        // unsorted, overlapping, empty, touching the end
        let ranges = vec![150_000..150_001, 5..5, 9_050..9_060, n - 10..n, 4_097..4_200, 0..n];
        let got = m.slices(&ranges).expect("inside");
        let check = |got: &[Bytes]| {
            for (r, g) in ranges.iter().zip(got) {
                assert_eq!(&g[..], &data[r.start as usize..r.end.max(r.start) as usize], "{r:?}");
            }
        };
        check(&got);
        // dropping the pages keeps every value readable
        drop_all_pages();
        check(&got);
        assert!(m.slices(&[n - 1..n + 1]).is_none());
        // the bytes outlive the map's owner and the file's name
        drop(m);
        std::fs::remove_file(&p).unwrap();
        check(&got);
        assert!(FileMap::open(&dir.join("missing")).is_none());
        std::fs::write(dir.join("empty"), b"").unwrap();
        assert!(FileMap::open(&dir.join("empty")).is_none());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn mapped_ranges_match_the_file() {
        let dir = std::env::temp_dir().join(format!("lancelet-mapped-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("f.bin");
        let data: Vec<u8> = (0..3 * MAP_MIN_BYTES as usize + 12345).map(|i| (i * 31 % 251) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        let n = data.len() as u64;
        let ranges = [7..7 + MAP_MIN_BYTES, 100..200, 5000..n, 0..n, n - MAP_MIN_BYTES..n + 1, 0..0];
        let got = map_ranges(&p, &ranges);
        for (r, g) in ranges.iter().zip(&got) {
            let big = r.end - r.start >= MAP_MIN_BYTES && r.end <= n;
            assert_eq!(g.is_some(), big, "{r:?}");
            if let Some(b) = g {
                assert_eq!(&b[..], &data[r.start as usize..r.end as usize], "{r:?}");
            }
        }
        // The bytes outlive the file's name (a cleanup may delete it).
        std::fs::remove_file(&p).unwrap();
        let b = got[3].clone().unwrap();
        drop(got);
        assert_eq!(b.len(), data.len());
        assert_eq!(b[n as usize - 1], data[n as usize - 1]);
        std::fs::remove_dir_all(&dir).ok();
    }
}
