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
//! Many small ranges at once (a take: a chunk or a vector row per value
//! and column, thousands of ranges) are served from one map of the span
//! they cover instead ([`map_span`]), not populated up front: the kernel
//! maps in only the pages the reader touches, without the per-range
//! syscall and without copying them (the copies out of the page cache were
//! ~40 % of a 1,000-row take's CPU). The map is advised `MADV_RANDOM`, so
//! a page not yet cached is read alone, as `pread` would (pages already
//! cached around it are still mapped in batches by the kernel's
//! fault-around). Only the touched pages count in the resident set, and
//! only while the returned bytes live. Data
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
            let ptr = unsafe {
                libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_PRIVATE | libc::MAP_POPULATE, file.as_raw_fd(), offset)
            };
            if ptr == libc::MAP_FAILED {
                return None;
            }
            let bytes = Bytes::from_owner(Mapping { ptr, len });
            Some(bytes.slice((r.start - start) as usize..))
        })
        .collect()
}

/// Fewest ranges [`map_span`] serves from one map: fewer are read (a point
/// lookup's few `pread`s cost less than a map and unmap).
pub const SPAN_MIN_RANGES: usize = 16;

/// The bytes of `ranges` (at least [`SPAN_MIN_RANGES`] of them, all inside
/// the file) of the local file `path`, all cut from one map of the span
/// they cover; `None` when they are too few, one lies past the end of
/// the file, or the map fails: read them instead.
pub fn map_span(path: &std::path::Path, ranges: &[Range<u64>]) -> Option<Vec<Bytes>> {
    if ranges.len() < SPAN_MIN_RANGES {
        return None;
    }
    let lo = ranges.iter().filter(|r| r.end > r.start).map(|r| r.start).min()?;
    let hi = ranges.iter().map(|r| r.end.max(r.start)).max()?;
    let file = std::fs::File::open(path).ok()?;
    let size = file.metadata().ok()?.len();
    if hi > size {
        return None;
    }
    let start = lo / page_size() * page_size();
    let len = usize::try_from(hi - start).ok()?;
    let offset = libc::off_t::try_from(start).ok()?;
    // SAFETY: a fresh read-only private mapping of an open file; the kernel
    // picks the address.
    let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_PRIVATE, file.as_raw_fd(), offset) };
    if ptr == libc::MAP_FAILED {
        return None;
    }
    // SAFETY: advice on the mapping just made; failing advice is harmless.
    unsafe {
        libc::madvise(ptr, len, libc::MADV_RANDOM);
    }
    let whole = Bytes::from_owner(Mapping { ptr, len });
    Some(
        ranges
            .iter()
            .map(|r| if r.end > r.start { whole.slice((r.start - start) as usize..(r.end - start) as usize) } else { Bytes::new() })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_serves_many_small_ranges() {
        let dir = std::env::temp_dir().join(format!("lancelet-span-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("f.bin");
        let data: Vec<u8> = (0..200_000usize).map(|i| (i * 131 % 251) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        let n = data.len() as u64;
        // unsorted, overlapping, empty, touching the end
        let mut ranges: Vec<Range<u64>> = (0..SPAN_MIN_RANGES as u64).map(|i| 9_000 + i * 7_001..9_100 + i * 7_001).collect();
        ranges.extend([150_000..150_001, 5..5, 9_050..9_060, n - 10..n, 4_097..4_200]);
        let got = map_span(&p, &ranges).expect("mapped");
        for (r, g) in ranges.iter().zip(&got) {
            assert_eq!(&g[..], &data[r.start as usize..r.end.max(r.start) as usize], "{r:?}");
        }
        // too few ranges, or one past the end: read instead
        assert!(map_span(&p, &ranges[..SPAN_MIN_RANGES - 1]).is_none());
        let mut past = ranges.clone();
        past.push(n - 1..n + 1);
        assert!(map_span(&p, &past).is_none());
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
