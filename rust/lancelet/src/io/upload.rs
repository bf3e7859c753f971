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
//! [`LOCAL_WRITE_BYTES`] (zero-copy slices of the buffers handed in): the
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
}

/// `data` as consecutive zero-copy slices of at most `max` bytes each.
fn pieces(data: Bytes, max: usize) -> impl Iterator<Item = Bytes> {
    let max = max.max(1);
    (0..data.len().div_ceil(max)).map(move |i| data.slice(i * max..((i + 1) * max).min(data.len())))
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
        ObjectWriter { storage, pending: Vec::new(), pending_bytes: 0, upload: None, written: 0 }
    }

    /// Bytes handed to the writer so far (the position of the next byte).
    pub fn position(&self) -> u64 {
        self.written
    }

    /// Append `data` (not copied).
    pub fn put(&mut self, data: Bytes) -> Result<()> {
        if self.storage.local_dir.is_some() && data.len() > LOCAL_WRITE_BYTES {
            // object_store writes each buffer of a part with one
            // `write_all`: hand it slices of the bounded size instead.
            for piece in pieces(data, LOCAL_WRITE_BYTES) {
                self.put_unsplit(piece)?;
            }
            return Ok(());
        }
        self.put_unsplit(data)
    }

    fn put_unsplit(&mut self, data: Bytes) -> Result<()> {
        self.written += data.len() as u64;
        if let Some(up) = self.upload.as_mut().map(inner) {
            block_on(up.wait_for_capacity(MAX_PARTS_IN_FLIGHT)).map_err(|e| io_err(self.storage.display(), e))?;
            // Parts are spawned as tasks of the I/O runtime.
            let _rt = runtime().enter();
            up.put(data);
            return Ok(());
        }
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

    /// Buffers larger than a write call, around and past the size that
    /// starts a multipart upload, reach the local file whole and in order.
    #[test]
    fn large_local_writes_arrive_intact() {
        let dir = std::env::temp_dir().join(format!("lancelet-upload-{}", crate::table::transaction::new_uuid()));
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
