//! Opening a dataset at a version: listing `_versions/`, tags, the
//! checked-out manifest and its fragments.
//!
//! On disk (relative to the dataset root):
//!
//! ```text
//! _versions/{…}.manifest           one per version (see `manifest`)
//! _versions/latest_version_hint.json   a hint only; the listing decides
//! data/{name}.lance                data files named by DataFile.path
//! _deletions/{frag}-{rv}-{id}.arrow|.bin   deletion files
//! _transactions/{rv}-{uuid}.txn    transaction of each commit
//! _refs/tags/{tag}.json            {"version": N, "createdAt": …, …}
//! ```
//!
//! A [`Dataset`] is one checked-out version: its manifest, schema and
//! fragments. Deletion files and row id sequences are read on demand; the
//! row-id index (row id → address) is built once, on first use.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use arrow_schema::SchemaRef;
use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::file::schema::LanceSchema;
use crate::file::FileReader;
use crate::io::{Storage, StorageOptions};
use crate::proto::table as pb;
use crate::table::deletion::{decode_deletions, deletion_file_path, live_ranges};
use crate::table::features::{check_reader_flags, STABLE_ROW_IDS};
use crate::table::file_cache::FileCache;
use crate::table::fragment::{resolve, schema_of, FragmentReader};
use crate::table::manifest::{list_versions, read_manifest, ManifestFile, ManifestLocation};
use crate::table::rowids::{RowIdIndex, RowIdSequence};

/// Directory of tag files, relative to the root.
pub const TAGS_DIR: &str = "_refs/tags";

/// Which version to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionRef {
    /// A version number.
    Number(u64),
    /// A tag name (`_refs/tags/{name}.json`).
    Tag(String),
}

/// One entry of the version history.
#[derive(Debug, Clone)]
pub struct VersionInfo {
    /// The version number.
    pub version: u64,
    /// Commit time: seconds and nanoseconds since the epoch.
    pub timestamp: (i64, i32),
    /// Summary counts of the version, as pylance reports them
    /// (`total_rows`, `total_fragments`, …), values as strings.
    pub metadata: Vec<(String, String)>,
}

/// A tag: its name and the raw JSON of its file.
#[derive(Debug, Clone)]
pub struct TagInfo {
    /// Tag name.
    pub name: String,
    /// Version the tag points at.
    pub version: u64,
    /// The branch whose version that is (`None`: the main line).
    pub branch: Option<String>,
    /// The tag file's JSON text.
    pub json: String,
}

/// One version of a dataset, opened for reading.
#[derive(Debug)]
pub struct Dataset {
    root: Storage,
    uri: String,
    location: ManifestLocation,
    file: ManifestFile,
    schema: LanceSchema,
    arrow_schema: SchemaRef,
    row_id_index: OnceLock<Arc<RowIdIndex>>,
    /// Data files opened through this handle (see `file_cache`).
    files: FileCache,
}

/// The root storage; local paths are made absolute with `..` resolved
/// (object_store paths may not contain `..`).
fn open_root(uri: &str, options: &StorageOptions) -> Result<Storage> {
    if !uri.contains("://") {
        let p = std::path::Path::new(uri);
        if p.components().any(|c| c == std::path::Component::ParentDir) {
            if let Ok(canon) = p.canonicalize() {
                return Storage::open_with(&canon.to_string_lossy(), options);
            }
        }
    }
    Storage::open_with(uri, options)
}

/// Pull `"version": N` out of a tag file (a flat JSON object).
/// The `"branch"` of a tag file: `None` when absent or `null` (the main
/// line). `Err` when it is something else than a string or null.
fn tag_branch(json: &str) -> Result<Option<String>> {
    let v: serde_json::Value = serde_json::from_str(json).map_err(|e| Error::corrupt(format!("tag file is not JSON: {e}")).with_source(e))?;
    match v.get("branch") {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(b)) => Ok(Some(b.clone())),
        Some(other) => Err(Error::corrupt(format!("tag file's \"branch\" is {other}, not a string or null"))),
    }
}

fn tag_version(json: &str) -> Option<u64> {
    let at = json.find("\"version\"")? + "\"version\"".len();
    let rest = json[at..].trim_start().strip_prefix(':')?.trim_start();
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

fn manifest_summary(m: &pb::Manifest) -> Vec<(String, String)> {
    let frags = &m.fragments;
    let data_files: usize = frags.iter().map(|f| f.files.len()).sum();
    // Saturating: the counts come from the manifest, which may be corrupt.
    let sum = |it: &mut dyn Iterator<Item = u64>| it.fold(0u64, u64::saturating_add);
    let size = sum(&mut frags.iter().flat_map(|f| &f.files).map(|d| d.file_size_bytes));
    let del_files = frags.iter().filter(|f| f.deletion_file.is_some()).count();
    let rows = sum(&mut frags.iter().map(|f| f.physical_rows));
    let deleted = sum(&mut frags.iter().filter_map(|f| f.deletion_file.as_ref()).map(|d| d.num_deleted_rows));
    [
        ("total_data_file_rows", rows.to_string()),
        ("total_data_files", data_files.to_string()),
        ("total_deletion_file_rows", deleted.to_string()),
        ("total_deletion_files", del_files.to_string()),
        ("total_files_size", size.to_string()),
        ("total_fragments", frags.len().to_string()),
        ("total_rows", rows.saturating_sub(deleted).to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

impl Dataset {
    /// Open the dataset at `uri` (local path, `file://`, `s3://`,
    /// `memory://`) at `version` (the latest when `None`).
    pub fn open(uri: &str, version: Option<VersionRef>) -> Result<Self> {
        Self::open_with(uri, version, &StorageOptions::new())
    }

    /// [`Dataset::open`] with storage options (credentials, endpoint, ...;
    /// see [`crate::io::s3`]).
    pub fn open_with(uri: &str, version: Option<VersionRef>, options: &StorageOptions) -> Result<Self> {
        Self::open_in(open_root(uri, options)?, uri, version)
    }

    /// Open the dataset whose root is `root` (named `uri` in messages).
    pub fn open_in(root: Storage, uri: &str, version: Option<VersionRef>) -> Result<Self> {
        let versions = list_versions(&root)?;
        if versions.is_empty() {
            return Err(Error::not_found(format!("dataset at {uri} (no manifests in {}/_versions)", root.display())));
        }
        let number = match version {
            None => versions.last().expect("non-empty").version,
            Some(VersionRef::Number(n)) => n,
            Some(VersionRef::Tag(t)) => Self::tag_target(&root, uri, &t)?,
        };
        let Some(location) = versions.iter().find(|l| l.version == number).cloned() else {
            let have: Vec<String> = versions.iter().map(|v| v.version.to_string()).collect();
            return Err(Error::not_found(format!("version {number} of dataset {uri} (versions present: {})", have.join(", "))));
        };
        Self::open_location(root, uri, location)
    }

    fn tag_target(root: &Storage, uri: &str, tag: &str) -> Result<u64> {
        if tag.is_empty() || tag.contains('/') || tag.contains("..") {
            return Err(Error::invalid_input(format!("bad tag name {tag:?}")));
        }
        let s = root.child(&format!("{TAGS_DIR}/{tag}.json"))?;
        let bytes = match s.read_all() {
            Ok(b) => b,
            Err(e @ Error::NotFound { .. }) => return Err(e.reworded(format!("tag {tag:?} of dataset {uri}"))),
            Err(e) => return Err(e),
        };
        let text = String::from_utf8_lossy(&bytes);
        let corrupt = |what: String| Error::corrupt_in(s.display().to_string(), what);
        let version = tag_version(&text).ok_or_else(|| corrupt("tag file has no \"version\" number".into()))?;
        // A tag on a branch names a version of the branch, not of the main
        // line: opening the main line's version of that number would be a
        // silently wrong answer.
        if let Some(branch) = tag_branch(&text).map_err(|e| e.in_file(s.display()))? {
            return Err(Error::unsupported(format!(
                "tag {tag:?} of dataset {uri} points at version {version} of branch {branch:?}; lancelet does not \
                 open branch versions by tag yet (open {uri}/tree/{branch} at version {version} instead)"
            )));
        }
        Ok(version)
    }

    fn open_location(root: Storage, uri: &str, location: ManifestLocation) -> Result<Self> {
        let file = read_manifest(&root, &location.name)?;
        let mpath = format!("{}/_versions/{}", root.display(), location.name);
        let m = &file.manifest;
        if m.version != location.version {
            return Err(Error::corrupt_in(mpath, format!("manifest says version {} but its name says {}", m.version, location.version)));
        }
        check_reader_flags(m.reader_feature_flags, &mpath)?;
        let schema = LanceSchema::from_pb(&m.fields, &m.schema_metadata).map_err(|e| e.in_file(&mpath).context("schema"))?;
        let arrow_schema = Arc::new(schema.to_arrow());
        let stable = m.reader_feature_flags & STABLE_ROW_IDS != 0;
        for f in &m.fragments {
            // A row address is `fragment id << 32 | offset`: neither may
            // need more than 32 bits.
            if f.id > u64::from(u32::MAX) || f.physical_rows > 1 << 32 {
                return Err(Error::corrupt_in(
                    mpath,
                    format!("fragment {} claims {} rows; row addresses allow fragment ids and row counts of at most 32 bits", f.id, f.physical_rows),
                ));
            }
            if stable && f.row_id_sequence.is_none() {
                return Err(Error::corrupt_in(mpath, format!("stable row ids are on but fragment {} has no row id sequence", f.id)));
            }
        }
        Ok(Dataset { root, uri: uri.to_string(), location, file, schema, arrow_schema, row_id_index: OnceLock::new(), files: FileCache::default() })
    }

    /// The same dataset at another version.
    pub fn checkout(&self, version: VersionRef) -> Result<Self> {
        Self::open_in(self.root.fresh(), &self.uri, Some(version))
    }

    /// The same dataset at another version, or at the latest when `None`
    /// (a fresh look at the version list).
    pub fn checkout_ref(&self, version: Option<VersionRef>) -> Result<Self> {
        Self::open_in(self.root.fresh(), &self.uri, version)
    }

    /// The URI it was opened with.
    pub fn uri(&self) -> &str {
        &self.uri
    }
    /// The dataset root.
    pub fn root(&self) -> &Storage {
        &self.root
    }
    /// The checked-out version.
    pub fn version(&self) -> u64 {
        self.location.version
    }
    /// Where its manifest lives.
    pub fn manifest_location(&self) -> &ManifestLocation {
        &self.location
    }
    /// The decoded manifest.
    pub fn manifest(&self) -> &pb::Manifest {
        &self.file.manifest
    }
    /// The manifest file (for the embedded transaction and index sections).
    pub fn manifest_file(&self) -> &ManifestFile {
        &self.file
    }
    /// The dataset schema (Lance form, with field ids).
    pub fn lance_schema(&self) -> &LanceSchema {
        &self.schema
    }
    /// The dataset schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.arrow_schema
    }
    /// The fragments of this version.
    pub fn fragments(&self) -> &[pb::DataFragment] {
        &self.file.manifest.fragments
    }
    /// True when the dataset has stable row ids.
    pub fn has_stable_row_ids(&self) -> bool {
        self.file.manifest.reader_feature_flags & STABLE_ROW_IDS != 0
    }

    /// The newest version in `_versions/`.
    pub fn latest_version(&self) -> Result<u64> {
        list_versions(&self.root)?.last().map(|l| l.version).ok_or_else(|| Error::not_found(format!("manifests of dataset {}", self.uri)))
    }

    /// Every version, oldest first, with timestamps and summaries.
    pub fn versions(&self) -> Result<Vec<VersionInfo>> {
        let locs = list_versions(&self.root)?;
        use rayon::prelude::*;
        crate::process::install(|| {
            locs.par_iter()
                .map(|l| {
                    let f = read_manifest(&self.root, &l.name)?;
                    let ts = f.manifest.timestamp.as_ref().map(|t| (t.seconds, t.nanos)).unwrap_or((0, 0));
                    Ok(VersionInfo { version: l.version, timestamp: ts, metadata: manifest_summary(&f.manifest) })
                })
                .collect()
        })
    }

    /// Summary of the checked-out version.
    pub fn summary(&self) -> Vec<(String, String)> {
        manifest_summary(&self.file.manifest)
    }

    /// Every tag, sorted by name.
    pub fn tags(&self) -> Result<Vec<TagInfo>> {
        let dir = self.root.child(TAGS_DIR)?;
        let mut out = Vec::new();
        for (name, _) in dir.list()? {
            let Some(tag) = name.strip_suffix(".json") else { continue };
            let s = dir.child(&name)?;
            let json = String::from_utf8_lossy(&s.read_all()?).into_owned();
            let corrupt = |what: String| Error::corrupt_in(s.display().to_string(), what);
            let version = tag_version(&json).ok_or_else(|| corrupt("tag file has no \"version\" number".into()))?;
            let branch = tag_branch(&json).map_err(|e| e.in_file(s.display()))?;
            out.push(TagInfo { name: tag.to_string(), version, branch, json });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// The fragment at index `i` of the manifest.
    fn fragment(&self, i: usize) -> &pb::DataFragment {
        &self.file.manifest.fragments[i]
    }

    /// Physical rows of fragment `i` (old manifests may omit it: then the
    /// first data file tells).
    pub fn physical_rows(&self, i: usize) -> Result<u64> {
        let f = self.fragment(i);
        if f.physical_rows > 0 || f.files.is_empty() {
            return Ok(f.physical_rows);
        }
        Ok(self.open_data_file(f, &f.files[0])?.num_rows())
    }

    /// Open one data file of a fragment (or take it from the handle's
    /// cache of opened files); a missing file is reported with its fragment
    /// and version. The manifest's file size, when it has one, saves asking
    /// the store for it.
    pub fn open_data_file(&self, frag: &pb::DataFragment, df: &pb::DataFile) -> Result<Arc<FileReader>> {
        let s = resolve(&self.root, &self.file.manifest.base_paths, df.base_id, "data", &df.path)?;
        let display = s.display().to_string();
        let known_size = (df.file_size_bytes > 0).then_some(df.file_size_bytes);
        self.files.get_or_open(&display, || {
            FileReader::open_storage_sized(s, known_size).map_err(|e| match e {
                e @ Error::NotFound { .. } => e.reworded(format!("data file {display} of fragment {} (dataset version {})", frag.id, self.version())),
                other => other.context(format!("fragment {}", frag.id)),
            })
        })
    }

    /// The directory holding the files of index entry `m` (resolved
    /// through the manifest's base paths when the entry has a `base_id`).
    pub fn index_dir(&self, m: &pb::IndexMetadata) -> Result<Storage> {
        crate::index::meta::index_dir(&self.root, &self.file.manifest.base_paths, m)
    }

    /// The deleted offsets of fragment `i`, if it has a deletion file.
    pub fn deletions(&self, i: usize) -> Result<Option<RoaringBitmap>> {
        let f = self.fragment(i);
        let Some(d) = &f.deletion_file else { return Ok(None) };
        let rel = deletion_file_path(f.id, d);
        let rel = rel.strip_prefix("_deletions/").unwrap_or(&rel).to_string();
        let s = resolve(&self.root, &self.file.manifest.base_paths, d.base_id, "_deletions", &rel)?;
        let display = s.display().to_string();
        let bytes = s.read_all().map_err(|e| match e {
            e @ Error::NotFound { .. } => e.reworded(format!("deletion file {display} of fragment {} (dataset version {})", f.id, self.version())),
            other => other,
        })?;
        let rows = self.physical_rows(i)?;
        decode_deletions(d.file_type, bytes, rows).map(Some).map_err(|e| e.in_file(&display).context(format!("deletion file of fragment {}", f.id)))
    }

    /// Live (not deleted) row ranges of fragment `i`.
    pub fn live_ranges(&self, i: usize) -> Result<Vec<Range<u64>>> {
        Ok(live_ranges(self.physical_rows(i)?, self.deletions(i)?.as_ref()))
    }

    /// Rows of fragment `i` that are not deleted, from the manifest's counts
    /// when it has them.
    pub fn live_rows(&self, i: usize) -> Result<u64> {
        let f = self.fragment(i);
        match &f.deletion_file {
            None => self.physical_rows(i),
            Some(d) if d.num_deleted_rows > 0 => Ok(self.physical_rows(i)?.saturating_sub(d.num_deleted_rows)),
            Some(_) => Ok(self.live_ranges(i)?.iter().map(|r| r.end - r.start).sum()),
        }
    }

    /// The stable row ids of fragment `i` (`None` without stable row ids).
    pub fn row_id_sequence(&self, i: usize) -> Result<Option<RowIdSequence>> {
        use pb::data_fragment::RowIdSequence as R;
        let f = self.fragment(i);
        let seq = match &f.row_id_sequence {
            None => return Ok(None),
            Some(R::InlineRowIds(b)) => RowIdSequence::decode(b),
            Some(R::ExternalRowIds(ext)) => {
                let s = self.root.child(&ext.path)?;
                let bytes = s.read_range(ext.offset..ext.offset + ext.size)?;
                RowIdSequence::decode(&bytes).map_err(|e| e.in_file(s.display()))
            }
        }
        .map_err(|e| e.context(format!("row ids of fragment {}", f.id)))?;
        let rows = self.physical_rows(i)?;
        if seq.len() != rows {
            return Err(Error::corrupt(format!("fragment {} has {rows} rows but {} row ids", f.id, seq.len())));
        }
        Ok(Some(seq))
    }

    /// The row id → address index (stable row ids only), built on first use.
    pub fn row_id_index(&self) -> Result<Arc<RowIdIndex>> {
        if let Some(i) = self.row_id_index.get() {
            return Ok(i.clone());
        }
        use rayon::prelude::*;
        let parts = crate::process::install(|| {
            (0..self.fragments().len())
                .into_par_iter()
                .map(|i| Ok((self.fragment(i).id, self.row_id_sequence(i)?.unwrap_or_default(), self.live_ranges(i)?)))
                .collect::<Result<Vec<_>>>()
        })?;
        let index = Arc::new(RowIdIndex::build(parts.iter().map(|(id, s, l)| (*id, s, l.as_slice())))?);
        Ok(self.row_id_index.get_or_init(|| index).clone())
    }

    /// Resolve column names to dataset fields (all when `None`).
    pub fn project(&self, columns: Option<&[String]>) -> Result<Vec<crate::file::schema::LanceField>> {
        match columns {
            None => Ok(self.schema.fields.clone()),
            Some(names) => names
                .iter()
                .map(|n| {
                    self.schema.fields.iter().find(|f| f.arrow.name() == n).cloned().ok_or_else(|| {
                        Error::invalid_input(format!(
                            "no column {n:?} in dataset {} (columns: {})",
                            self.uri,
                            self.schema.fields.iter().map(|f| f.arrow.name().as_str()).collect::<Vec<_>>().join(", ")
                        ))
                    })
                })
                .collect(),
        }
    }

    /// A reader of fragment `i` for the given dataset fields.
    pub fn fragment_reader(&self, i: usize, fields: &[crate::file::schema::LanceField]) -> Result<FragmentReader> {
        let f = self.fragment(i);
        let rows = self.physical_rows(i)?;
        let schema = schema_of(fields, &self.schema.metadata);
        FragmentReader::open(f, rows, fields, schema, |df| self.open_data_file(f, df))
    }

    /// Index of the fragment with this id.
    pub fn fragment_index(&self, id: u64) -> Option<usize> {
        self.fragments().iter().position(|f| f.id == id)
    }

    /// The path of fragment `i`'s deletion file relative to the root.
    pub fn deletion_file_name(&self, i: usize) -> Option<String> {
        let f = self.fragment(i);
        f.deletion_file.as_ref().map(|d| deletion_file_path(f.id, d))
    }

    /// Table config (manifest field 16).
    pub fn config(&self) -> HashMap<String, String> {
        self.file.manifest.config.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_json() {
        let j = "{\n  \"branch\": null,\n  \"version\": 2,\n  \"createdAt\": \"x\"\n}";
        assert_eq!(tag_version(j), Some(2));
        assert_eq!(tag_version("{\"version\" : 17}"), Some(17));
        assert_eq!(tag_version("{}"), None);
    }
}
