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

use std::sync::Mutex;

use bytes::Bytes;
use object_store::{MultipartUpload, ObjectStoreExt, PutPayload, WriteMultipart};

use super::{block_on, io_err, runtime, Storage};
use crate::error::Result;

/// Pending bytes that start a multipart upload, and its part size (S3
/// needs at least 5 MiB per part but the last).
pub const PART_BYTES: usize = 8 << 20;

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
