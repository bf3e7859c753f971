//! Directory-level operations on a [`Storage`] path: listing the
//! sub-directories directly below it, asking whether anything lies below
//! it, and deleting everything below it.
//!
//! Object stores have no directories, only key prefixes; a local file
//! system has real ones, which may be empty. So "a directory exists" is
//! always answered by looking for an object below it, and deleting a prefix
//! on a local file system also removes the directories it leaves empty —
//! those below the prefix and the prefix itself, never anything above it
//! (object_store's own cleanup would climb up to the file system root).

use futures::{StreamExt, TryStreamExt};
use object_store::ObjectStoreExt;

use super::{block_on, io_err, Storage};
use crate::error::{Error, Result};

/// What lies directly below a path: the names of objects and of
/// sub-directories (common prefixes), as stored (`%41` is the name `%41`:
/// listings are not decoded, as paths are not encoded; see [`super`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// Objects directly below the path.
    pub files: Vec<String>,
    /// Sub-directories (on object stores: prefixes of deeper objects; on
    /// local file systems: directories, possibly empty).
    pub dirs: Vec<String>,
}

impl Storage {
    /// The objects and sub-directories directly below this path (one list
    /// request). A missing path lists as empty.
    pub fn list_entries(&self) -> Result<Listing> {
        self.reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let prefix = if self.path.as_ref().is_empty() { None } else { Some(&self.path) };
        let listing = match block_on(self.store.get().list_with_delimiter(prefix)) {
            Ok(l) => l,
            Err(object_store::Error::NotFound { .. }) => return Ok(Listing::default()),
            Err(e) => return Err(io_err(&self.display, e)),
        };
        // Some stores (SeaweedFS) list a directory's own placeholder object
        // (key `<path>/`) in it: that is not content.
        let mut out = Listing {
            files: listing.objects.iter().filter(|m| m.location != self.path).filter_map(|m| m.location.filename().map(str::to_string)).collect(),
            dirs: listing.common_prefixes.iter().filter_map(|p| p.filename().map(str::to_string)).collect(),
        };
        out.files.sort();
        out.dirs.sort();
        Ok(out)
    }

    /// Whether at least one object lies anywhere below this path (stops at
    /// the first one found).
    pub fn has_objects(&self) -> Result<bool> {
        self.reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let prefix = if self.path.as_ref().is_empty() { None } else { Some(&self.path) };
        block_on(async {
            let mut stream = self.store.get().list(prefix);
            loop {
                match stream.next().await {
                    None => return Ok(false),
                    Some(Ok(m)) if m.location == self.path || m.location.as_ref().ends_with('/') => continue,
                    Some(Ok(_)) => return Ok(true),
                    Some(Err(object_store::Error::NotFound { .. })) => return Ok(false),
                    Some(Err(e)) => return Err(io_err(&self.display, e)),
                }
            }
        })
    }

    /// Whether this object exists (one `HEAD` request).
    pub fn exists(&self) -> Result<bool> {
        self.reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        match block_on(self.store.get().head(&self.path)) {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(io_err(&self.display, e)),
        }
    }

    /// Delete every object below this path; on a local file system also the
    /// directories below it and the path's own directory once empty.
    /// Returns how many objects were deleted.
    pub fn delete_all(&self) -> Result<usize> {
        if self.path.as_ref().is_empty() {
            return Err(Error::invalid_input(format!("refusing to delete everything in the store of {}", self.display)));
        }
        let deleted = block_on(async {
            let locations = self.store.get().list(Some(&self.path)).map_ok(|m| m.location).boxed();
            let results: Vec<object_store::Result<object_store::path::Path>> = self.store.get().delete_stream(locations).collect().await;
            let mut n = 0usize;
            for r in results {
                match r {
                    Ok(_) => n += 1,
                    Err(object_store::Error::NotFound { .. }) => {}
                    Err(e) => return Err(io_err(&self.display, e)),
                }
            }
            Ok(n)
        })?;
        if let Some(dir) = &self.local_dir {
            remove_empty_dirs(dir);
        }
        Ok(deleted)
    }
}

/// Remove `dir` and the directories below it that hold no file, bottom up;
/// errors (a file appeared, permissions) leave the rest in place.
fn remove_empty_dirs(dir: &std::path::Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                remove_empty_dirs(&e.path());
            }
        }
    }
    let _ = std::fs::remove_dir(dir);
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    #[test]
    fn local_tree_operations_stay_below_the_path() {
        let tmp = std::env::temp_dir().join(format!("lancelet-tree-{}", crate::ids::random_u64()));
        std::fs::create_dir_all(tmp.join("keep")).unwrap();
        let root = Storage::open(tmp.to_str().unwrap()).unwrap();
        let t = root.child("a#b.lance").unwrap();
        assert!(!t.has_objects().unwrap());
        std::fs::create_dir_all(tmp.join("empty.lance/sub")).unwrap();
        assert!(!root.child("empty.lance").unwrap().has_objects().unwrap());
        t.child("_versions/1.manifest").unwrap().write_new(Bytes::from_static(b"x")).unwrap();
        t.child(".lance-reserved").unwrap().write_new(Bytes::new()).unwrap();
        assert!(t.has_objects().unwrap());
        assert!(t.child(".lance-reserved").unwrap().exists().unwrap());
        assert!(!t.child(".lance-deregistered").unwrap().exists().unwrap());
        let l = root.list_entries().unwrap();
        assert_eq!(l.dirs, vec!["a#b.lance", "empty.lance", "keep"]);
        assert!(tmp.join("a#b.lance/_versions/1.manifest").is_file(), "stored under its own name");
        let l = t.list_entries().unwrap();
        assert_eq!((l.files, l.dirs), (vec![".lance-reserved".to_string()], vec!["_versions".to_string()]));
        assert_eq!(t.delete_all().unwrap(), 2);
        assert!(!tmp.join("a#b.lance").exists());
        assert!(tmp.join("keep").is_dir() && tmp.is_dir());
        assert!(root.delete_all().is_ok());
        std::fs::remove_dir_all(&tmp).ok();
    }

    /// Names reach the object of exactly that name and list as they are, on
    /// a local file system and in memory (no percent-encoding either way).
    #[test]
    fn names_are_stored_and_listed_as_they_are() {
        let tmp = std::env::temp_dir().join(format!("lancelet-names-{}", crate::ids::random_u64()));
        let roots = [Storage::open(tmp.to_str().unwrap()).unwrap(), Storage::open("memory://tree-names/r").unwrap()];
        for root in &roots {
            for name in ["q1 ü", "%41", "a#1", "😀 x", "[~]", "e\u{301}"] {
                let dir = root.child(&format!("d/{name}")).unwrap();
                dir.child("f").unwrap().write_new(Bytes::from_static(b"x")).unwrap();
                assert_eq!(dir.list_entries().unwrap().files, vec!["f"]);
                assert_eq!(&dir.child("f").unwrap().read_all().unwrap()[..], b"x");
                assert!(root.child("d").unwrap().list_entries().unwrap().dirs.iter().any(|d| d == name), "{name}");
            }
            let mut dirs = root.child("d").unwrap().list_entries().unwrap().dirs;
            dirs.sort();
            assert_eq!(dirs.len(), 6, "{dirs:?}");
        }
        for name in ["q1 ü", "%41", "a#1", "😀 x", "[~]"] {
            assert!(tmp.join("d").join(name).join("f").is_file(), "{name}");
        }
        assert_eq!(std::fs::read_dir(tmp.join("d")).unwrap().count(), 6);
        assert!(roots[0].child("a\u{1}b").is_err());
        std::fs::remove_dir_all(&tmp).ok();
    }
}
