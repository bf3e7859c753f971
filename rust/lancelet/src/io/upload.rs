//! Streaming object writes.
//!
//! A data file is written while it is encoded: finished pages go out at
//! once instead of the whole file being assembled in memory first (that
//! held each file twice and copied it once more). Small objects are still
//! stored with one put; once [`PART_BYTES`] are pending, an object_store
//! multipart upload starts (the local store stages it in a temporary file
//! that is renamed into place on completion), and parts are written in the
//! background while encoding goes on. Until [`ObjectWriter::finish`]
//! succeeds nothing is visible under the object's name, and dropping an
//! unfinished writer aborts the upload, so a failed write leaves no file.
//!
//! Local files are written in `write()` calls of at most
//! [`LOCAL_WRITE_BYTES`] (zero-copy slices of the buffers handed in; every
//! local write goes through [`write_pieces`]: data files here, whole objects
//! such as manifests and index files in [`Storage::write_all`] and
//! [`Storage::write_new`]): the
//! kernel sizes the page-cache folios of a buffered write by the length of
//! the call, and on a VM that reports free memory to its host in 2 MiB
//! blocks (virtio-balloon free page reporting at order 9) folios of 1 MiB
//! and more are cut from blocks the host has taken back, so the copy into
//! them faults on the host page by page (benches/RESULTS.md, session 8;
//! the mechanism is deduced from measurements, the effect is measured).

use std::sync::Mutex;

use bytes::Bytes;
use object_store::{MultipartUpload, ObjectStoreExt, PutPayload, WriteMultipart};

use super::{block_on, io_err, runtime, Storage};
use crate::error::Result;

/// Pending bytes that start a multipart upload, and its part size (S3
/// needs at least 5 MiB per part but the last).
pub const PART_BYTES: usize = 8 << 20;

/// The longest `write()` a local file gets (see the module docs): calls of
/// 256 KiB get page-cache folios of at most 256 KiB. Measured on the
/// session-8 VM (plain `os.write` of 440 MiB, alternating with pylance's
/// writes, 2 s after the previous copy was deleted): calls of 16-256 KiB
/// cost 0.11-0.14 s of system time in every run, calls of 1-8 MiB
/// 0.19-1.1 s. The ~1,700 calls of a 440 MB write cost no measurable time.
pub const LOCAL_WRITE_BYTES: usize = 256 << 10;

/// Parts in flight before [`ObjectWriter::put`] waits for one to finish
/// (bounds the memory held by a fast producer).
const MAX_PARTS_IN_FLIGHT: usize = 4;

/// Writes one object as a stream of byte buffers; see the module docs.
pub struct ObjectWriter {
    storage: Storage,
    pending: Vec<Bytes>,
    pending_bytes: usize,
    /// In a mutex only to make the writer `Sync` (Python objects hold
    /// it); it is reached through `&mut self`, never locked.
    upload: Option<Mutex<WriteMultipart>>,
    written: u64,
    /// Why the writer stopped (a failed put, or [`ObjectWriter::abort`]):
    /// its upload is aborted and every later call fails with this reason,
    /// since the bytes already handed in cannot be taken back and an
    /// object finished after a gap would not hold what its writer meant.
    failed: Option<String>,
}

/// `data` as consecutive zero-copy slices of at most `max` bytes each.
fn pieces(data: Bytes, max: usize) -> impl Iterator<Item = Bytes> {
    let max = max.max(1);
    (0..data.len().div_ceil(max)).map(move |i| data.slice(i * max..((i + 1) * max).min(data.len())))
}

/// The buffers that store `data` in `storage`: for a local file, zero-copy
/// slices of at most [`LOCAL_WRITE_BYTES`] (object_store writes each with
/// one `write_all`; see the module docs); elsewhere `data` itself. An empty
/// `data` gives no buffer.
pub(crate) fn write_pieces(storage: &Storage, data: Bytes) -> impl Iterator<Item = Bytes> {
    let max = if storage.local_dir.is_some() { LOCAL_WRITE_BYTES } else { usize::MAX };
    pieces(data, max)
}

fn inner(m: &mut Mutex<WriteMultipart>) -> &mut WriteMultipart {
    m.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl std::fmt::Debug for ObjectWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectWriter").field("object", &self.storage).field("written", &self.written).finish()
    }
}

impl ObjectWriter {
    /// A writer for the object of `storage` (nothing is stored yet).
    pub fn new(storage: Storage) -> Self {
        ObjectWriter { storage, pending: Vec::new(), pending_bytes: 0, upload: None, written: 0, failed: None }
    }

    /// The object's location, for messages.
    pub fn display(&self) -> &str {
        self.storage.display()
    }

    /// Give up the object: abort the upload (its staged parts, or the
    /// local temporary file, are removed now rather than when the writer
    /// is dropped) and drop the bytes pending. Every later call fails,
    /// naming `why`. Calling it again keeps the first reason.
    pub fn abort(&mut self, why: &str) {
        if self.failed.is_none() {
            self.failed = Some(why.to_string());
        }
        self.pending.clear();
        self.pending_bytes = 0;
        if let Some(up) = self.upload.take() {
            // Best effort: nothing of the object is visible yet, and a
            // staged part that cannot be removed is all that is left.
            let _ = block_on(up.into_inner().unwrap_or_else(|p| p.into_inner()).abort());
        }
    }

    /// The error of a call on a writer that stopped.
    fn stopped(&self, why: &str) -> crate::error::Error {
        crate::error::Error::io(self.storage.display(), format!("the write was abandoned after an earlier failure ({why}); nothing was stored"))
    }

    /// Bytes handed to the writer so far (the position of the next byte).
    pub fn position(&self) -> u64 {
        self.written
    }

    /// Append `data` (not copied).
    /// A failure stops the writer (see [`ObjectWriter::abort`]).
    pub fn put(&mut self, data: Bytes) -> Result<()> {
        if let Some(why) = &self.failed {
            return Err(self.stopped(why));
        }
        for piece in write_pieces(&self.storage, data) {
            if let Err(e) = self.put_unsplit(piece) {
                self.abort(&e.to_string());
                return Err(e);
            }
        }
        Ok(())
    }

    fn put_unsplit(&mut self, data: Bytes) -> Result<()> {
        if let Some(up) = self.upload.as_mut().map(inner) {
            block_on(up.wait_for_capacity(MAX_PARTS_IN_FLIGHT)).map_err(|e| io_err(self.storage.display(), e))?;
            self.written += data.len() as u64;
            // Parts are spawned as tasks of the I/O runtime.
            let _rt = runtime().enter();
            up.put(data);
            return Ok(());
        }
        self.written += data.len() as u64;
        self.pending_bytes += data.len();
        self.pending.push(data);
        if self.pending_bytes >= PART_BYTES {
            let upload: Box<dyn MultipartUpload> =
                block_on(self.storage.store.get().put_multipart(&self.storage.path)).map_err(|e| io_err(self.storage.display(), e))?;
            let mut up = WriteMultipart::new_with_chunk_size(upload, PART_BYTES);
            let _rt = runtime().enter();
            for b in self.pending.drain(..) {
                up.put(b);
            }
            self.pending_bytes = 0;
            self.upload = Some(Mutex::new(up));
        }
        Ok(())
    }

    /// Append a copy of `data`.
    pub fn write(&mut self, data: &[u8]) -> Result<()> {
        self.put(Bytes::copy_from_slice(data))
    }

    /// Store everything and make the object visible; returns its size.
    pub fn finish(mut self) -> Result<u64> {
        if let Some(why) = &self.failed {
            return Err(self.stopped(why));
        }
        let display = self.storage.display().to_string();
        match self.upload.take() {
            Some(up) => {
                block_on(up.into_inner().unwrap_or_else(|p| p.into_inner()).finish()).map_err(|e| io_err(&display, e))?;
            }
            None => {
                let payload: PutPayload = std::mem::take(&mut self.pending).into_iter().collect();
                block_on(self.storage.store.get().put(&self.storage.path, payload)).map_err(|e| io_err(&display, e))?;
            }
        }
        Ok(self.written)
    }
}

impl Drop for ObjectWriter {
    fn drop(&mut self) {
        if let Some(up) = self.upload.take() {
            // Best effort: the write already failed; removing the staged
            // parts is all that is left to do.
            let _ = block_on(up.into_inner().unwrap_or_else(|p| p.into_inner()).abort());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_bounded_and_cover_the_buffer() {
        let data = Bytes::from((0..1000u32).map(|i| i as u8).collect::<Vec<u8>>());
        for max in [1, 7, 256, 999, 1000, 1001, 5000] {
            let got: Vec<Bytes> = pieces(data.clone(), max).collect();
            assert!(got.iter().all(|p| !p.is_empty() && p.len() <= max), "max {max}");
            assert_eq!(got.len(), data.len().div_ceil(max), "max {max}");
            assert_eq!(got.concat(), data.as_ref(), "max {max}");
        }
        assert_eq!(pieces(Bytes::new(), 8).count(), 0);
    }

    #[test]
    fn only_local_writes_are_sliced() {
        let data = Bytes::from(vec![7u8; 2 * LOCAL_WRITE_BYTES + 1]);
        let dir = std::env::temp_dir().join(format!("lancelet-pieces-{}", crate::ids::new_uuid()));
        let local = Storage::open(dir.join("x").to_str().unwrap()).unwrap();
        let sizes: Vec<usize> = write_pieces(&local, data.clone()).map(|p| p.len()).collect();
        assert_eq!(sizes, vec![LOCAL_WRITE_BYTES, LOCAL_WRITE_BYTES, 1]);
        let memory = Storage::open(&format!("memory://pieces{}/x", crate::ids::new_uuid())).unwrap();
        assert_eq!(write_pieces(&memory, data).map(|p| p.len()).collect::<Vec<_>>(), vec![2 * LOCAL_WRITE_BYTES + 1]);
    }

    /// Whole-object writes of local files (manifests, index files) go out
    /// in bounded slices too and arrive intact; `write_new` still refuses
    /// an existing object.
    #[test]
    fn large_whole_object_writes_arrive_intact() {
        let dir = std::env::temp_dir().join(format!("lancelet-whole-{}", crate::ids::new_uuid()));
        let data: Vec<u8> = (0..3 * LOCAL_WRITE_BYTES + 123).map(|j| (j * 13 + j / 7) as u8).collect();
        let a = Storage::open(dir.join("a.bin").to_str().unwrap()).unwrap();
        a.write_all(Bytes::from(data.clone())).unwrap();
        let b = Storage::open(dir.join("b.bin").to_str().unwrap()).unwrap();
        b.write_new(Bytes::from(data.clone())).unwrap();
        let again = b.write_new(Bytes::from_static(b"x"));
        let empty = Storage::open(dir.join("c.bin").to_str().unwrap()).unwrap();
        empty.write_all(Bytes::new()).unwrap();
        let (got_a, got_b, got_c) = (std::fs::read(dir.join("a.bin")), std::fs::read(dir.join("b.bin")), std::fs::read(dir.join("c.bin")));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(got_a.unwrap() == data, "write_all changed the bytes");
        assert!(got_b.unwrap() == data, "write_new changed the bytes");
        assert_eq!(got_c.unwrap(), Vec::<u8>::new());
        assert!(matches!(again, Err(crate::error::Error::AlreadyExists { .. })), "{again:?}");
    }

    /// An aborted writer removes its staged upload at once and refuses
    /// every later call, naming why it stopped.
    #[test]
    fn abort_removes_the_staged_upload_and_stops_the_writer() {
        let dir = std::env::temp_dir().join(format!("lancelet-abort-{}", crate::ids::new_uuid()));
        let storage = Storage::open(dir.join("object.bin").to_str().unwrap()).unwrap();
        let mut w = storage.writer();
        w.put(Bytes::from(vec![1u8; PART_BYTES + 1])).unwrap();
        let staged = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
        w.abort("the encoder failed");
        let left = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
        let put = w.put(Bytes::from_static(b"x"));
        let finished = w.finish();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!((staged, left), (1, 0), "the staged upload is removed by abort");
        for r in [put.map(|_| 0), finished] {
            match r {
                Err(crate::error::Error::Io { message, .. }) => assert!(message.contains("the encoder failed"), "{message}"),
                other => panic!("expected an I/O error naming the reason, got {other:?}"),
            }
        }
    }

    /// Buffers larger than a write call, around and past the size that
    /// starts a multipart upload, reach the local file whole and in order.
    #[test]
    fn large_local_writes_arrive_intact() {
        let dir = std::env::temp_dir().join(format!("lancelet-upload-{}", crate::ids::new_uuid()));
        let path = dir.join("object.bin");
        let storage = Storage::open(path.to_str().unwrap()).unwrap();
        let mut expected = Vec::new();
        let mut w = storage.writer();
        // one byte past a write call, a multipart part and a half, odd sizes
        for (i, len) in [LOCAL_WRITE_BYTES + 1, 3, PART_BYTES + PART_BYTES / 2, 5 * LOCAL_WRITE_BYTES - 17].into_iter().enumerate() {
            let chunk: Vec<u8> = (0..len).map(|j| (j * 31 + i * 7) as u8).collect();
            expected.extend_from_slice(&chunk);
            w.put(Bytes::from(chunk)).unwrap();
            assert_eq!(w.position(), expected.len() as u64);
        }
        assert_eq!(w.finish().unwrap(), expected.len() as u64);
        let got = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(got == expected, "file differs from what was put ({} vs {} bytes)", got.len(), expected.len());
    }
}
