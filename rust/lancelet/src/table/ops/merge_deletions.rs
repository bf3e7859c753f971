//! Deletion files of a distributed merge, written by tasks.
//!
//! The rows a distributed merge replaces or deletes are marked deleted by
//! tasks, not by the driver: the merge tasks' row addresses are grouped by
//! fragment (Spark repartitions them on the fragment id), so one task owns
//! each touched fragment and writes its one new deletion file
//! ([`stage_deletion`]): the fragment's deletion vector at the version the
//! job read, plus the job's rows. The driver commits those files
//! ([`super::merge_staged::commit_merge`]); when a concurrent commit changed
//! a touched fragment's deletions meanwhile, the commit kernel's rebase
//! merges the job's rows into the newer vector and writes a fresh file (the
//! task's file is then removed), so no concurrent delete is lost.
//!
//! Deletion file names are fixed by the format
//! (`_deletions/{fragment}-{read_version}-{id}.{ext}`), so a job cannot name
//! them with its prefix as it names its data files. Instead the job tags
//! the `id`: its upper [`TAG_BITS`] bits are a hash of the job's prefix, the
//! rest random. The driver can then find (and, on abort, remove) every
//! deletion file the job's tasks wrote, including files of tasks that died
//! before reporting them ([`remove_staged_deletions`]). A file of another
//! writer is only taken for the job's when it has the same read version and
//! its random id happens to carry the same 40-bit tag.

use std::collections::HashSet;

use bytes::Bytes;
use prost::Message;
use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::io::StorageOptions;
use crate::proto::table as pb;
use crate::table::dataset::Dataset;
use crate::table::deletion::{deletion_file_path, encode_deletions, DELETIONS_DIR};
use crate::table::hooks::step;
use crate::table::write::open_root_with;

/// Bits of a staged deletion file's id that name the job.
pub const TAG_BITS: u32 = 40;

/// The tag of the job with file prefix `name_prefix` (FNV-1a: the same in
/// every process, unlike the std hasher).
pub fn job_tag(name_prefix: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name_prefix.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h >> (64 - TAG_BITS)
}

fn tagged(id: u64, tag: u64) -> bool {
    id >> (64 - TAG_BITS) == tag
}

/// One fragment's new deletion file, as a task staged it.
#[derive(Debug, Clone, PartialEq)]
pub struct StagedDeletion {
    /// The fragment.
    pub fragment_id: u64,
    /// The new deletion file (already written); `None` when the job deletes
    /// every row left, so the fragment goes (no file written).
    pub deletion_file: Option<pb::DeletionFile>,
    /// The offsets this job removes (without those deleted before).
    pub rows: RoaringBitmap,
}

impl StagedDeletion {
    /// The file's path relative to the dataset root, if one was written.
    pub fn path(&self) -> Option<String> {
        self.deletion_file.as_ref().map(|d| deletion_file_path(self.fragment_id, d))
    }

    /// `(fragment id, encoded DeletionFile or None, serialized rows)`: how
    /// it travels from a task to the driver.
    pub fn encode(&self) -> Result<(u64, Option<Vec<u8>>, Vec<u8>)> {
        let mut rows = Vec::with_capacity(self.rows.serialized_size());
        self.rows.serialize_into(&mut rows).map_err(|e| Error::Internal { what: format!("serializing a bitmap: {e}") })?;
        Ok((self.fragment_id, self.deletion_file.as_ref().map(|d| d.encode_to_vec()), rows))
    }

    /// The inverse of [`StagedDeletion::encode`].
    pub fn decode(fragment_id: u64, deletion_file: Option<&[u8]>, rows: &[u8]) -> Result<Self> {
        let bad = |what: String| Error::invalid_input(format!("staged deletion of fragment {fragment_id}: {what}"));
        let deletion_file =
            deletion_file.map(|b| pb::DeletionFile::decode(b).map_err(|e| bad(format!("not a DeletionFile: {e}")).with_source(e))).transpose()?;
        let rows = RoaringBitmap::deserialize_from(rows).map_err(|e| bad(format!("rows are not a bitmap: {e}")))?;
        if rows.is_empty() {
            return Err(bad("it removes no rows".into()));
        }
        Ok(StagedDeletion { fragment_id, deletion_file, rows })
    }
}

fn ambiguous(fragment_id: u64, offset: u32) -> Error {
    let addr = (fragment_id << 32) | u64::from(offset);
    Error::invalid_input(format!(
        "Ambiguous merge inserts are prohibited: multiple source rows match the same target row on (_rowaddr = {addr} \
         (fragment {fragment_id}, row {offset})). Please ensure each target row is matched by at most one source row."
    ))
}

/// Mark `offsets` of fragment `fragment_id` of `ds` (the version the job
/// read) deleted: write the fragment's new deletion file (its deletions at
/// that version plus these), with an id tagged for the job `name_prefix`.
/// An offset listed twice is pylance's ambiguous-merge error (two source
/// rows met one dataset row in different tasks). Writes nothing when it fails.
pub fn stage_deletion(ds: &Dataset, fragment_id: u64, offsets: &[u32], name_prefix: &str) -> Result<StagedDeletion> {
    if name_prefix.is_empty() {
        return Err(Error::invalid_input("a distributed merge needs a job prefix"));
    }
    let i = ds
        .fragment_index(fragment_id)
        .ok_or_else(|| Error::invalid_input(format!("merge deletions: fragment {fragment_id} is not in version {} of the dataset", ds.version())))?;
    let physical = ds.physical_rows(i)?;
    let mut rows = RoaringBitmap::new();
    for &o in offsets {
        if u64::from(o) >= physical {
            return Err(Error::invalid_input(format!("merge deletions: fragment {fragment_id} has {physical} rows, not a row {o}")));
        }
        if !rows.insert(o) {
            return Err(ambiguous(fragment_id, o));
        }
    }
    if rows.is_empty() {
        return Err(Error::invalid_input(format!("merge deletions: no rows of fragment {fragment_id} to delete")));
    }
    let before = ds.deletions(i)?.unwrap_or_default();
    if let Some(o) = (&before & &rows).min() {
        return Err(Error::invalid_input(format!(
            "merge deletions: row {o} of fragment {fragment_id} was already deleted in version {} (the job read another version?)",
            ds.version()
        )));
    }
    let all = before | &rows;
    if all.len() >= physical {
        return Ok(StagedDeletion { fragment_id, deletion_file: None, rows });
    }
    let (kind, bytes) = encode_deletions(&all)?;
    let id = (job_tag(name_prefix) << (64 - TAG_BITS)) | (crate::ids::random_u64() >> TAG_BITS);
    let d = pb::DeletionFile { file_type: kind as i32, read_version: ds.version(), id, num_deleted_rows: all.len(), base_id: None };
    step(ds.root(), "deletion_file")?;
    ds.root().child(&deletion_file_path(fragment_id, &d))?.write_new(Bytes::from(bytes))?;
    Ok(StagedDeletion { fragment_id, deletion_file: Some(d), rows })
}

/// Delete these deletion files (names relative to `_deletions/`; missing
/// ones are fine). Returns how many were named.
pub fn remove_deletion_files(uri: &str, options: &StorageOptions, names: &[String]) -> Result<usize> {
    let dir = open_root_with(uri, options)?.child(DELETIONS_DIR)?;
    for name in names {
        if name.contains('/') || name.is_empty() {
            return Err(Error::invalid_input(format!("{name:?} is not a deletion file name")));
        }
        match dir.child(name)?.delete() {
            Ok(()) | Err(Error::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(names.len())
}

/// Delete the deletion files the job `name_prefix` (which read
/// `read_version`) wrote, except those named in `keep` (relative to
/// `_deletions/`). Returns how many were deleted.
pub fn remove_staged_deletions(uri: &str, options: &StorageOptions, name_prefix: &str, read_version: u64, keep: &[String]) -> Result<usize> {
    if name_prefix.is_empty() {
        return Err(Error::invalid_input("refusing to remove staged deletion files without a job prefix"));
    }
    let tag = job_tag(name_prefix);
    let keep: HashSet<&str> = keep.iter().map(|s| s.as_str()).collect();
    let dir = open_root_with(uri, options)?.child(DELETIONS_DIR)?;
    let mut n = 0;
    for (name, _) in dir.list()? {
        // {fragment}-{read_version}-{id}.{ext}
        let stem = name.rsplit_once('.').map(|(s, _)| s).unwrap_or(&name);
        let mut parts = stem.split('-');
        let (Some(_), Some(rv), Some(id), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else { continue };
        let (Ok(rv), Ok(id)) = (rv.parse::<u64>(), id.parse::<u64>()) else { continue };
        if rv == read_version && tagged(id, tag) && !keep.contains(name.as_str()) {
            match dir.child(&name)?.delete() {
                Ok(()) | Err(Error::NotFound { .. }) => n += 1,
                Err(e) => return Err(e),
            }
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_stable_and_fit() {
        assert_eq!(job_tag("abc-"), job_tag("abc-"));
        assert_ne!(job_tag("abc-"), job_tag("abd-"));
        assert!(job_tag("x") < (1 << TAG_BITS));
        let t = job_tag("job-");
        let id = (t << (64 - TAG_BITS)) | (u64::MAX >> TAG_BITS);
        assert!(tagged(id, t) && !tagged(id, t ^ 1));
        let s = StagedDeletion { fragment_id: 3, deletion_file: None, rows: [1u32, 7].into_iter().collect() };
        let (f, d, r) = s.encode().unwrap();
        assert_eq!(StagedDeletion::decode(f, d.as_deref(), &r).unwrap(), s);
        assert!(StagedDeletion::decode(3, None, b"junk").is_err());
    }
}
