//! Shallow and deep clones of one dataset version, laid out as pylance 14
//! lays them out.
//!
//! A **shallow clone** at `target` is metadata only:
//!
//! ```text
//! target/_versions/{u64::MAX - v:020}.manifest   version v of the source, same number
//! target/_versions/latest_version_hint.json
//! target/_transactions/{v}-{uuid}.txn           Clone { is_shallow: true, ref_version: v, ref_path }
//! ```
//!
//! Its manifest is the source's, with one more base path
//! (`BasePath { id, name: None, is_dataset_root: true, path: <source root> }`,
//! id 0 when the source had none, else one past the largest) and every data
//! file, deletion file and index entry that lived in the source's own root
//! marked with that `base_id`; files the source already read through a base
//! keep theirs. So the clone's first version reads the source's files in
//! place; what is written to the clone afterwards goes to the clone's own
//! `data/`, `_deletions/` and `_indices/`, and the source is never written.
//!
//! A **deep clone** copies every file the version uses (data files to
//! `data/`, deletion files to `_deletions/`, index directories to
//! `_indices/{uuid}/`, wherever the source kept them) and writes the
//! source's manifest with no base paths and no `base_id`s, plus a
//! `Clone { is_shallow: false }` transaction.
//!
//! Both refuse a target that already holds a version (`AlreadyExists`)
//! before writing anything, and take back what they wrote when they fail.
//!
//! [`add_bases`], the other operation on base paths, commits an
//! `UpdateBases` transaction (see [`crate::table::bases`]).

use bytes::Bytes;
use prost::Message;

use crate::error::{Error, Result};
use crate::io::{Storage, StorageOptions};
use crate::proto::table as pb;
use crate::table::commit::{remove_files, TRANSACTIONS_DIR};
use crate::table::dataset::{Dataset, VersionRef};
use crate::table::deletion::deletion_file_path;
use crate::table::features::BASE_PATHS;
use crate::table::manifest::{list_versions, manifest_file_bytes, ManifestNaming, VERSIONS_DIR};
use crate::table::properties::{CommitProperties, Committed};
use crate::table::transaction::{feature_flags, new_transaction, transaction_file_name, writer_version};

/// What a clone did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CloneMetrics {
    /// Files copied (0 for a shallow clone).
    pub files_copied: u64,
    /// Bytes copied (0 for a shallow clone).
    pub bytes_copied: u64,
}

/// Register more base paths (`UpdateBases`; ids are given at commit, one
/// past the largest in use). A name or path already registered is
/// `InvalidInput`, checked before anything is written.
pub fn add_bases(ds: &Dataset, new_bases: &[pb::BasePath], props: &CommitProperties) -> Result<Committed<()>> {
    if new_bases.is_empty() {
        return Err(Error::invalid_input("add_bases needs at least one base path"));
    }
    let ided: Vec<(Option<u32>, pb::BasePath)> = new_bases.iter().map(|b| (None, pb::BasePath { id: 0, ..b.clone() })).collect();
    crate::table::bases::register(&ds.manifest().base_paths, &ided)?;
    let op = pb::transaction::Operation::UpdateBases(pb::transaction::UpdateBases { new_bases: ided.into_iter().map(|(_, b)| b).collect() });
    let txn = new_transaction(ds.version(), op);
    let v = crate::table::commit::commit(ds.root(), &txn, &props.commit_options())?;
    Ok(Committed::new(ds.checkout(VersionRef::Number(v))?, ()))
}

/// The target's root, refused when it already holds a dataset version.
fn open_target(target: &str, options: &StorageOptions) -> Result<Storage> {
    let root = Storage::open_with(target, options)?;
    if !list_versions(&root)?.is_empty() {
        return Err(Error::already_exists(format!("dataset at {} (a clone target must not hold a dataset)", root.display())));
    }
    Ok(root)
}

/// Shallow-clone `src` (opened at the version to clone) to `target`.
pub fn shallow_clone(src: &Dataset, target: &str, options: &StorageOptions, props: &CommitProperties) -> Result<Committed<CloneMetrics>> {
    let dst = open_target(target, options)?;
    let mut m = src.manifest().clone();
    let mut indices = src.manifest_file().index_section()?.map(|s| s.indices).unwrap_or_default();
    let id = match m.base_paths.iter().map(|b| b.id).max() {
        Some(x) => x.checked_add(1).ok_or_else(|| Error::corrupt("base path ids exhausted"))?,
        None => 0,
    };
    m.base_paths.push(pb::BasePath { id, name: None, is_dataset_root: true, path: src.root().display().to_string() });
    for f in m.fragments.iter_mut() {
        for df in f.files.iter_mut() {
            df.base_id = df.base_id.or(Some(id));
        }
        if let Some(d) = f.deletion_file.as_mut() {
            d.base_id = d.base_id.or(Some(id));
        }
    }
    for i in indices.iter_mut() {
        i.base_id = i.base_id.or(Some(id));
    }
    let op = pb::transaction::Clone {
        is_shallow: true,
        ref_name: None,
        ref_version: src.version(),
        ref_path: src.root().display().to_string(),
        branch_name: None,
    };
    write_first_version(src, &dst, m, indices, op, props)?;
    let ds = Dataset::open_in(dst.fresh(), target, Some(VersionRef::Number(src.version())))?;
    Ok(Committed::new(ds, CloneMetrics::default()))
}

/// Deep-clone `src` (opened at the version to clone) to `target`: copy
/// every file it uses, then write its manifest there.
pub fn deep_clone(src: &Dataset, target: &str, options: &StorageOptions, props: &CommitProperties) -> Result<Committed<CloneMetrics>> {
    let dst = open_target(target, options)?;
    let mut copied: Vec<String> = Vec::new();
    let mut metrics = CloneMetrics::default();
    let result = copy_files(src, &dst, &mut copied, &mut metrics).and_then(|(m, indices)| {
        let op = pb::transaction::Clone {
            is_shallow: false,
            ref_name: None,
            ref_version: src.version(),
            ref_path: src.root().display().to_string(),
            branch_name: None,
        };
        write_first_version(src, &dst, m, indices, op, props)
    });
    if let Err(e) = result {
        remove_files(&dst, &copied);
        return Err(e);
    }
    let ds = Dataset::open_in(dst.fresh(), target, Some(VersionRef::Number(src.version())))?;
    Ok(Committed::new(ds, metrics))
}

/// Copy one object between stores (the two may differ: a local source,
/// an S3 target), counting it.
fn copy_one(from: &Storage, to: &Storage, rel: String, copied: &mut Vec<String>, metrics: &mut CloneMetrics) -> Result<()> {
    let bytes = from.read_all()?;
    metrics.bytes_copied += bytes.len() as u64;
    metrics.files_copied += 1;
    copied.push(rel);
    to.write_all(bytes)
}

/// Copy the files of `src`'s version into `dst`; the manifest and index
/// entries naming the copies (all in `dst`'s own root, no bases).
fn copy_files(src: &Dataset, dst: &Storage, copied: &mut Vec<String>, metrics: &mut CloneMetrics) -> Result<(pb::Manifest, Vec<pb::IndexMetadata>)> {
    let mut m = src.manifest().clone();
    for i in 0..m.fragments.len() {
        let frag = &src.fragments()[i];
        for (j, df) in frag.files.iter().enumerate() {
            let from = crate::table::fragment::resolve(src.root(), &src.manifest().base_paths, df.base_id, "data", &df.path)?;
            let rel = format!("data/{}", df.path);
            copy_one(&from, &dst.child(&rel)?, rel, copied, metrics)?;
            m.fragments[i].files[j].base_id = None;
        }
        if let Some(d) = &frag.deletion_file {
            let rel = deletion_file_path(frag.id, d);
            let name = rel.strip_prefix("_deletions/").unwrap_or(&rel).to_string();
            let from = crate::table::fragment::resolve(src.root(), &src.manifest().base_paths, d.base_id, "_deletions", &name)?;
            copy_one(&from, &dst.child(&rel)?, rel.clone(), copied, metrics)?;
            if let Some(d) = m.fragments[i].deletion_file.as_mut() {
                d.base_id = None;
            }
        }
    }
    let mut indices = src.manifest_file().index_section()?.map(|s| s.indices).unwrap_or_default();
    for idx in indices.iter_mut() {
        let dir = src.index_dir(idx)?;
        let uuid = crate::index::meta::uuid_string(idx.uuid.as_ref().map(|u| u.uuid.as_slice()).unwrap_or_default());
        // The entry lists its files when pylance 14 wrote it; older
        // entries do not, so the directory is listed.
        let names: Vec<String> = if idx.files.is_empty() {
            dir.list_recursive()?.into_iter().map(|o| o.path).collect()
        } else {
            idx.files.iter().map(|f| f.path.clone()).collect()
        };
        for name in names {
            let rel = format!("{}/{uuid}/{name}", crate::index::meta::INDICES_DIR);
            copy_one(&dir.child(&name)?, &dst.child(&rel)?, rel, copied, metrics)?;
        }
        idx.base_id = None;
    }
    m.base_paths.clear();
    Ok((m, indices))
}

/// Write `m` (the source's manifest, rebased for the target) as the
/// target's first version, with the same version number, and its Clone
/// transaction (files copied before it are the caller's to take back).
fn write_first_version(
    src: &Dataset,
    dst: &Storage,
    mut m: pb::Manifest,
    indices: Vec<pb::IndexMetadata>,
    op: pb::transaction::Clone,
    props: &CommitProperties,
) -> Result<()> {
    let version = src.version();
    let mut txn = new_transaction(version, pb::transaction::Operation::Clone(op));
    txn.transaction_properties = props.recorded();
    let txn_bytes = txn.encode_to_vec();
    let txn_name = transaction_file_name(&txn);
    let stable = m.reader_feature_flags & crate::table::features::STABLE_ROW_IDS != 0;
    // Flags come from the content (deletion files, bases); the writer-only
    // ones the source set for its own reasons stay.
    let (r, w) = feature_flags(&m, stable);
    let keep_w = m.writer_feature_flags & !(BASE_PATHS | crate::table::features::DELETION_FILES);
    m.reader_feature_flags = r;
    m.writer_feature_flags = w | keep_w;
    m.writer_version = Some(writer_version());
    m.transaction_file = txn_name.clone();
    m.tag = String::new();
    m.branch = None;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    m.timestamp = Some(prost_types::Timestamp { seconds: now.as_secs() as i64, nanos: now.subsec_nanos() as i32 });
    // v0.1 dictionary values stay at the positions the fields name.
    let prefix = if m.fields.iter().any(|f| f.dictionary.is_some()) { src.manifest_file().leading_bytes() } else { Bytes::new() };
    let index_bytes = crate::table::index_section::encode(indices);
    m.transaction_section_old = None;
    let file = manifest_file_bytes(&prefix, &mut m, index_bytes.as_deref(), &txn_bytes);
    let txn_rel = format!("{TRANSACTIONS_DIR}/{txn_name}");
    dst.child(&txn_rel)?.write_all(Bytes::from(txn_bytes.clone()))?;
    let manifest = dst.child(&format!("{VERSIONS_DIR}/{}", ManifestNaming::V2.file_name(version)))?;
    if let Err(e) = manifest.write_new(Bytes::from(file)) {
        // Someone else made a dataset here meanwhile, or the put failed:
        // our transaction file is an orphan either way.
        remove_files(dst, &[txn_rel]);
        return Err(match e {
            e @ Error::AlreadyExists { .. } => e.reworded(format!("dataset at {} (created while cloning into it)", dst.display())),
            other => other,
        });
    }
    let hint = dst.child(&format!("{VERSIONS_DIR}/latest_version_hint.json"))?;
    let _ = hint.write_all(Bytes::from(format!("{{\"version\":{version}}}")));
    Ok(())
}
