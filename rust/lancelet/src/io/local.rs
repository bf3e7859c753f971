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
        return Err(Error::not_found(display.to_string()));
    }
    Ok(f)
}

/// An error of the file system on `display`, classified (a missing file is
/// not found, anything else a storage failure) and kept as the source.
fn io_error(display: &str, e: std::io::Error) -> Error {
    match e.kind() {
        std::io::ErrorKind::NotFound => Error::not_found(display.to_string()).with_source(e),
        _ => Error::io(display.to_string(), e.to_string()).with_source(e),
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
                return Err(Error::io(display.to_string(), format!("range {}..{} lies past the end of the file ({size} bytes)", r.start, r.end)));
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
    let n = usize::try_from(len).map_err(|_| Error::io(display.to_string(), format!("read of {len} bytes")))?;
    let mut buf: Vec<u8> = Vec::with_capacity(n);
    let mut done = 0usize;
    while done < n {
        let at = libc::off_t::try_from(offset + done as u64).map_err(|_| Error::io(display.to_string(), format!("offset {offset}")))?;
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
            return Err(Error::io(display.to_string(), format!("short read at {offset}: {done} of {len} bytes")));
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

    /// The `std::io::Error` of `e`'s source, which must be one.
    #[cfg(unix)]
    fn io_source(e: &Error) -> &std::io::Error {
        let source = std::error::Error::source(e).unwrap_or_else(|| panic!("no source: {e:?}"));
        source.downcast_ref::<std::io::Error>().unwrap_or_else(|| panic!("source is not an io::Error: {source:?}"))
    }

    #[cfg(unix)]
    #[test]
    fn io_errors_keep_their_source() {
        use std::io::ErrorKind;
        let dir = std::env::temp_dir().join(format!("lancelet-local-{}", crate::ids::new_uuid()));
        std::fs::create_dir_all(&dir).unwrap();
        // A missing file: not found, the file system's error kept.
        let e = read_all(&dir.join("missing"), "missing").unwrap_err();
        assert!(matches!(e, Error::NotFound { .. }), "{e:?}");
        assert_eq!(io_source(&e).kind(), ErrorKind::NotFound);
        assert_eq!(io_source(&e).raw_os_error(), Some(libc::ENOENT));
        assert_eq!(e.to_string(), "not found: missing");
        // Permission denied: a storage failure whose message keeps the
        // system's words. Root reads a mode-000 file anyway; the mapping
        // itself is checked below for everyone.
        let locked = dir.join("locked");
        std::fs::write(&locked, b"x").unwrap();
        std::fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
        match read_all(&locked, "locked") {
            Ok(_) => assert_eq!(unsafe { libc::geteuid() }, 0, "a mode-000 file read without root"),
            Err(e) => {
                assert!(matches!(e, Error::Io { .. }), "{e:?}");
                assert_eq!(io_source(&e).kind(), ErrorKind::PermissionDenied);
                assert!(e.to_string().contains("Permission denied"), "{e}");
            }
        }
        let e = io_error("locked", std::io::Error::from_raw_os_error(libc::EACCES));
        assert!(matches!(&e, Error::Io { path, .. } if path == "locked"), "{e:?}");
        assert_eq!(io_source(&e).kind(), ErrorKind::PermissionDenied);
        assert_eq!(e.to_string(), format!("I/O error on locked: {}", std::io::Error::from_raw_os_error(libc::EACCES)));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
