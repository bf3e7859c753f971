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
//! as it is now; anything else (or a failing `mmap`) is read as before. Data
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

#[cfg(test)]
mod tests {
    use super::*;

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
