//! What a table directory holds: objects at all, the V1 markers, table
//! versions. Two requests at most per directory: one listing of its top
//! level (markers are top-level objects), and, when that shows only
//! sub-directories, one look for the first object below (a local file
//! system, or an object store that keeps emptied prefixes, may show empty
//! directories).

use crate::error::Result;
use crate::io::Storage;
use crate::table::manifest::list_versions;

/// Marker of a declared table (name reserved, nothing written yet).
pub const RESERVED_MARKER: &str = ".lance-reserved";
/// Marker of a deregistered table (data kept, table hidden).
pub const DEREGISTERED_MARKER: &str = ".lance-deregistered";

/// The state of a table directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DirState {
    /// At least one object lies below the directory.
    pub has_objects: bool,
    /// `.lance-deregistered` is there.
    pub deregistered: bool,
}

impl DirState {
    /// A V1 table: something is there and it is not deregistered.
    pub fn is_table(&self) -> bool {
        self.has_objects && !self.deregistered
    }
}

/// Look at a table directory.
pub fn dir_state(dir: &Storage) -> Result<DirState> {
    let top = dir.list_entries()?;
    let deregistered = top.files.iter().any(|f| f == DEREGISTERED_MARKER);
    let has_objects = !top.files.is_empty() || (!top.dirs.is_empty() && dir.has_objects()?);
    Ok(DirState { has_objects, deregistered })
}

/// Whether the directory holds a Lance table (a manifest in `_versions/`).
pub fn has_versions(dir: &Storage) -> Result<bool> {
    Ok(!list_versions(dir)?.is_empty())
}

/// Write a marker; `false` when it was already there.
pub fn put_marker(dir: &Storage, marker: &str) -> Result<bool> {
    match dir.child(marker)?.write_new(bytes::Bytes::new()) {
        Ok(()) => Ok(true),
        Err(crate::Error::AlreadyExists { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Remove a marker this operation wrote (and, on a local file system, the
/// directory when nothing else is left in it). Best effort: the caller is
/// already reporting another error.
pub fn remove_marker(dir: &Storage, marker: &str) {
    if let Ok(m) = dir.child(marker) {
        let _ = m.delete();
    }
    if matches!(dir.has_objects(), Ok(false)) {
        let _ = dir.delete_all();
    }
}
