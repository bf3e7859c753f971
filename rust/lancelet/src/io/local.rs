//! Reads of local files on the calling thread.
//!
//! object_store's `LocalFileSystem` runs every read on Tokio's blocking
//! pool: the caller parks, a pool thread wakes, reads and wakes the caller
//! again. An indexed point lookup makes a few such reads, and on a busy
//! machine each wake-up can wait for a scheduler tick (4 ms at HZ=250)
//! while the read itself takes microseconds. The same reads made here,
//! on the thread that needs the bytes, cost the same syscalls and no
//! thread switches. Writes, listings and deletes still go through
//! object_store. Each call opens the file (a handle per read, as
//! object_store does), so reads on several threads never share a seek
//! position.

use std::fs::File;
use std::ops::Range;
use std::path::Path;

use bytes::Bytes;

use crate::error::{Error, Result};

fn open(path: &Path, display: &str) -> Result<File> {
    let f = File::open(path).map_err(|e| io_error(display, e))?;
    // object_store reports a directory as not found; so do we.
    if f.metadata().map_err(|e| io_error(display, e))?.is_dir() {
        return Err(Error::NotFound { what: display.to_string() });
    }
    Ok(f)
}

fn io_error(display: &str, e: std::io::Error) -> Error {
    match e.kind() {
        std::io::ErrorKind::NotFound => Error::NotFound { what: display.to_string() },
        _ => Error::Io { path: display.to_string(), message: e.to_string() },
    }
}

/// The byte ranges of local file `path` (each must lie within the file).
pub(crate) fn read_ranges(path: &Path, display: &str, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
    let f = open(path, display)?;
    let size = f.metadata().map_err(|e| io_error(display, e))?.len();
    ranges
        .iter()
        .map(|r| {
            let end = r.end.max(r.start);
            if end > size {
                return Err(Error::Io {
                    path: display.to_string(),
                    message: format!("range {}..{} lies past the end of the file ({size} bytes)", r.start, r.end),
                });
            }
            read_at(&f, display, r.start, end - r.start)
        })
        .collect()
}

/// `len` bytes at `offset`, read into a buffer that is not zeroed first
/// (zeroing and then overwriting large reads cost a tenth of a scan's CPU),
/// with `pread` (one syscall per range, no seek).
#[cfg(unix)]
fn read_at(f: &File, display: &str, offset: u64, len: u64) -> Result<Bytes> {
    use std::os::fd::AsRawFd;
    let n = usize::try_from(len).map_err(|_| Error::Io { path: display.to_string(), message: format!("read of {len} bytes") })?;
    let mut buf: Vec<u8> = Vec::with_capacity(n);
    let mut done = 0usize;
    while done < n {
        let at = libc::off_t::try_from(offset + done as u64).map_err(|_| Error::Io { path: display.to_string(), message: format!("offset {offset}") })?;
        // SAFETY: writes at most `n - done` bytes into the vector's spare
        // capacity, which holds `n` bytes.
        let got = unsafe { libc::pread(f.as_raw_fd(), buf.as_mut_ptr().add(done) as *mut libc::c_void, n - done, at) };
        if got < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(io_error(display, e));
        }
        if got == 0 {
            return Err(Error::Io { path: display.to_string(), message: format!("short read at {offset}: {done} of {len} bytes") });
        }
        done += got as usize;
    }
    // SAFETY: the first `n` bytes were written by pread above.
    unsafe { buf.set_len(n) };
    Ok(Bytes::from(buf))
}

/// `len` bytes at `offset` (see the unix version).
#[cfg(not(unix))]
fn read_at(mut f: &File, display: &str, offset: u64, len: u64) -> Result<Bytes> {
        let mut buf = Vec::with_capacity(len as usize);
    f.seek(SeekFrom::Start(offset)).map_err(|e| io_error(display, e))?;
    f.take(len).read_to_end(&mut buf).map_err(|e| io_error(display, e))?;
    if buf.len() as u64 != len {
        return Err(Error::Io { path: display.to_string(), message: format!("short read at {offset}: {} of {len} bytes", buf.len()) });
    }
    Ok(Bytes::from(buf))
}

/// The whole of local file `path`.
pub(crate) fn read_all(path: &Path, display: &str) -> Result<Bytes> {
    let f = open(path, display)?;
    let size = f.metadata().map_err(|e| io_error(display, e))?.len();
    read_at(&f, display, 0, size)
}

/// The size of local file `path`.
pub(crate) fn size(path: &Path, display: &str) -> Result<u64> {
    Ok(open(path, display)?.metadata().map_err(|e| io_error(display, e))?.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_whole_and_errors() {
        let dir = std::env::temp_dir().join(format!("lancelet-local-{}", crate::ids::new_uuid()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("f");
        std::fs::write(&p, b"0123456789").unwrap();
        let got = read_ranges(&p, "f", &[2..5, 0..1, 7..10, 4..4]).unwrap();
        assert_eq!(got, vec![Bytes::from_static(b"234"), Bytes::from_static(b"0"), Bytes::from_static(b"789"), Bytes::new()]);
        assert_eq!(read_all(&p, "f").unwrap(), Bytes::from_static(b"0123456789"));
        assert_eq!(size(&p, "f").unwrap(), 10);
        assert!(matches!(read_ranges(&p, "f", &[8..11]), Err(Error::Io { .. })));
        assert!(matches!(read_all(&dir.join("missing"), "m"), Err(Error::NotFound { .. })));
        assert!(matches!(size(&dir, "d"), Err(Error::NotFound { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
