//! Opened data files (and vector index segments) of one dataset handle,
//! kept for its later reads.
//!
//! Opening a data file costs a storage round trip or two (its tail: footer,
//! column metadata, schema) before any page is read; on an object store
//! that is as much as the read itself for a take of a few rows. Data files
//! are immutable once a manifest names them, so a [`Dataset`] keeps the
//! files it has opened (their parsed metadata, not their pages) and every
//! later scan, take or count through the same handle starts from them.
//!
//! The cache holds at most [`MAX_FILES`] files; past that it starts over
//! (a scan of a huge dataset does not pin every file's metadata).
//!
//! Index segments are kept the same way, by uuid (a segment's directory
//! never changes once a manifest names it): a process that runs many
//! searches through one handle, such as a Spark task joining a batch of
//! query vectors at a time, opens the index once. Full-text searches keep
//! a column's opened INVERTED index (and the tokenized rows of fragments
//! it does not cover) the same way.
//!
//! [`Dataset`]: crate::table::dataset::Dataset

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::Result;
use crate::file::FileReader;
use crate::index::vector::VectorIndex;

/// Files kept per dataset handle.
pub const MAX_FILES: usize = 1024;

/// Opened things by key: data files by their resolved location
/// ([`FileCache`]), index segments by uuid ([`IndexCache`]).
pub struct OpenedCache<T: ?Sized> {
    files: Mutex<HashMap<String, Arc<T>>>,
}

/// Opened data files by their resolved location.
pub type FileCache = OpenedCache<FileReader>;

/// Opened vector index segments by uuid.
pub type IndexCache = OpenedCache<dyn VectorIndex>;

/// What a search keeps of one version (e.g. a column's opened full-text
/// index), by a key the search chooses; the search downcasts it.
pub type SearchCache = OpenedCache<dyn std::any::Any + Send + Sync>;

impl<T: ?Sized> Default for OpenedCache<T> {
    fn default() -> Self {
        OpenedCache { files: Mutex::new(HashMap::new()) }
    }
}

impl<T: ?Sized> std::fmt::Debug for OpenedCache<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OpenedCache({} entries)", self.files.lock().map(|m| m.len()).unwrap_or(0))
    }
}

impl<T: ?Sized> OpenedCache<T> {
    /// The entry at `key`, opened by `open` unless an earlier read opened
    /// it. (Two threads may both open an entry not yet cached; one copy is
    /// kept.)
    pub fn get_or_open(&self, key: &str, open: impl FnOnce() -> Result<Arc<T>>) -> Result<Arc<T>> {
        if let Some(f) = self.files.lock().unwrap_or_else(|e| e.into_inner()).get(key) {
            return Ok(f.clone());
        }
        let opened = open()?;
        let mut map = self.files.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_FILES {
            map.clear();
        }
        Ok(map.entry(key.to_string()).or_insert(opened).clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::Storage;

    fn storage() -> Storage {
        Storage::open(&crate::testdata::pylance14_data_file("v2_2_encodings").display().to_string()).unwrap()
    }

    #[test]
    fn a_known_size_saves_nothing_but_a_request_and_a_wrong_one_is_ignored() {
        let real = storage().size().unwrap();
        let plain = FileReader::open_storage(storage()).unwrap();
        for size in [Some(real), Some(real + 100), Some(real - 1), Some(3), None] {
            let r = FileReader::open_storage_sized(storage(), size).unwrap();
            assert_eq!((r.num_rows(), r.schema()), (plain.num_rows(), plain.schema()), "{size:?}");
        }
    }

    #[test]
    fn files_are_opened_once() {
        let cache = FileCache::default();
        let mut opened = 0;
        for _ in 0..3 {
            cache
                .get_or_open("k", || {
                    opened += 1;
                    FileReader::open_storage(storage()).map(Arc::new)
                })
                .unwrap();
        }
        assert_eq!(opened, 1);
        assert!(cache.get_or_open("bad", || Err(crate::error::Error::corrupt("no"))).is_err());
        // a failed open is not cached
        assert!(cache.get_or_open("bad", || FileReader::open_storage(storage()).map(Arc::new)).is_ok());
    }
}
