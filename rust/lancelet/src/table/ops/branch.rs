//! Creating, deleting and describing branches (the layout is in
//! [`crate::table::branches`]).
//!
//! Creating branch `b` from version `v` of a source (the main line or
//! another branch) writes, in this order:
//!
//! 1. `tree/b/_transactions/{v}-{uuid}.txn`: a `Clone` transaction
//!    (`is_shallow`, `ref_name` = the source branch, `ref_version` = `v`,
//!    `ref_path` = the source root, `branch_name` = `b`), as pylance 14
//!    writes it;
//! 2. `tree/b/_versions/{v}.manifest` (put-if-not-exists): the source
//!    manifest with the source root added as a dataset-root base path and
//!    every file of the source's own (data, deletion and index files
//!    without a base id) pointed at it, `branch` = `b`, the transaction
//!    embedded;
//! 3. `_refs/branches/{b}.json` (put-if-not-exists): the record.
//!
//! The record comes last: until it exists the branch does not (listing,
//! checkout and cleanup go by records), and when a step fails the files of
//! the earlier steps are removed again, so a failed creation leaves
//! nothing. Deleting removes the record first, then the branch's tree
//! (never the trees of other branches nested below it, as `b/s` is below
//! `b`).

use bytes::Bytes;
use prost::Message;

use crate::error::{Error, Result};
use crate::io::Storage;
use crate::proto::table as pb;
use crate::table::branches::{
    branch_file_name, branch_json, branch_root, check_branch_name, list_branches, read_branch, require_branch, BranchInfo, BRANCHES_DIR, MAIN,
};
use crate::table::commit::{remove_files, TRANSACTIONS_DIR};
use crate::table::dataset::{Dataset, VersionRef};
use crate::table::manifest::{list_versions, manifest_file_bytes, read_manifest, VERSIONS_DIR};
use crate::table::properties::{CommitProperties, Committed};
use crate::table::transaction::{feature_flags, transaction_file_name, writer_version};

/// What a branch is made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BranchSource {
    /// Version `version` (the latest when `None`) of branch `branch`
    /// (`None` or `"main"`: the main line).
    Version {
        /// The source branch.
        branch: Option<String>,
        /// The source version.
        version: Option<u64>,
    },
    /// The version a tag names (on whichever branch it is).
    Tag(String),
}

fn seconds_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// The source as (branch, root) with the source's record when a branch.
fn source_root(main: &Storage, branch: Option<&str>) -> Result<(Option<BranchInfo>, Storage)> {
    match branch {
        None | Some(MAIN) => Ok((None, main.clone())),
        Some(b) => Ok((Some(require_branch(main, b)?), branch_root(main, b)?)),
    }
}

/// The first manifest of a branch made from `src` (whose root is
/// `src_root`, a branch named `src_branch` or the main line), and its
/// transaction.
fn branch_manifest(
    src: &pb::Manifest,
    src_root: &Storage,
    src_branch: Option<&str>,
    name: &str,
    props: &CommitProperties,
) -> (pb::Manifest, pb::Transaction, u32) {
    let mut m = src.clone();
    let id = m.base_paths.iter().map(|b| b.id + 1).max().unwrap_or(0);
    m.base_paths.push(pb::BasePath { id, name: src_branch.map(str::to_string), is_dataset_root: true, path: src_root.display().to_string() });
    for f in &mut m.fragments {
        for df in &mut f.files {
            df.base_id = df.base_id.or(Some(id));
        }
        if let Some(d) = &mut f.deletion_file {
            d.base_id = d.base_id.or(Some(id));
        }
    }
    m.branch = Some(name.to_string());
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    m.timestamp = Some(prost_types::Timestamp { seconds: now.as_secs() as i64, nanos: now.subsec_nanos() as i32 });
    m.writer_version = Some(writer_version());
    let stable = m.reader_feature_flags & crate::table::features::STABLE_ROW_IDS != 0;
    let (r, w) = feature_flags(&m, stable);
    m.reader_feature_flags = r;
    m.writer_feature_flags = w;
    let txn = pb::Transaction {
        read_version: src.version,
        uuid: crate::ids::new_uuid(),
        transaction_properties: props.recorded(),
        operation: Some(pb::transaction::Operation::Clone(pb::transaction::Clone {
            is_shallow: true,
            ref_name: src_branch.map(str::to_string),
            ref_version: src.version,
            ref_path: src_root.display().to_string(),
            branch_name: Some(name.to_string()),
        })),
        ..Default::default()
    };
    m.transaction_file = transaction_file_name(&txn);
    (m, txn, id)
}

/// Create branch `name` of the dataset `ds` belongs to, from `source`
/// (versions numbers of `BranchSource::Version` with no branch given are
/// of `ds`'s own branch, as pylance reads an integer reference). Returns
/// the branch's first version. A bad name is `InvalidInput`; a name in use
/// `AlreadyExists` (a reference); an unknown source branch, version or tag
/// `NotFound`. Nothing is left behind when it fails.
pub fn create_branch(ds: &Dataset, name: &str, source: BranchSource, props: &CommitProperties) -> Result<Committed<()>> {
    check_branch_name(name)?;
    let main = ds.main_root()?;
    let (src_branch, version) = match source {
        BranchSource::Version { branch, version } => (branch.filter(|b| b != MAIN), version),
        BranchSource::Tag(t) => {
            let tagged = ds.checkout(VersionRef::Tag(t))?;
            (tagged.branch().map(str::to_string), Some(tagged.version()))
        }
    };
    let (src_info, src_root) = source_root(&main, src_branch.as_deref())?;
    let versions = list_versions(&src_root)?;
    let on = src_branch.as_deref().map(|b| format!("branch {b:?} of ")).unwrap_or_default();
    let loc = match version {
        None => versions.last(),
        Some(v) => versions.iter().find(|l| l.version == v),
    }
    .ok_or_else(|| {
        let have: Vec<String> = versions.iter().map(|l| l.version.to_string()).collect();
        Error::not_found(format!(
            "version {} of {on}dataset {} (versions present: {})",
            version.map(|v| v.to_string()).unwrap_or_else(|| "(latest)".into()),
            main.display(),
            if have.is_empty() { "none".into() } else { have.join(", ") }
        ))
    })?
    .clone();
    let taken = |what: String| Error::already_exists(what).as_reference_exists();
    if read_branch(&main, name)?.is_some() {
        return Err(taken(format!("branch {name:?} of dataset {}", main.display())));
    }
    let root = branch_root(&main, name)?;
    if !list_versions(&root)?.is_empty() {
        return Err(taken(format!(
            "branch {name:?} of dataset {}: it has no record but {} holds versions (left by a failed delete? remove that directory)",
            main.display(),
            root.display()
        )));
    }
    let src = read_manifest(&src_root, &loc.name)?;
    let (mut m, txn, base) = branch_manifest(&src.manifest, &src_root, src_branch.as_deref(), name, props);
    let mut indices = src.index_section()?.map(|s| s.indices).unwrap_or_default();
    for i in &mut indices {
        i.base_id = i.base_id.or(Some(base));
    }
    let txn_bytes = txn.encode_to_vec();
    let index_bytes = crate::table::index_section::encode(indices);
    // v0.1 dictionary values stay at the positions the fields name.
    let prefix = if m.fields.iter().any(|f| f.dictionary.is_some()) { src.leading_bytes() } else { Bytes::new() };
    m.transaction_section_old = None;
    let file = manifest_file_bytes(&prefix, &mut m, index_bytes.as_deref(), &txn_bytes);
    let manifest_size = src.bytes.len() as u64;

    let txn_path = format!("{TRANSACTIONS_DIR}/{}", transaction_file_name(&txn));
    let manifest_path = format!("{VERSIONS_DIR}/{}", loc.naming.file_name(loc.version));
    let mut written: Vec<String> = Vec::new();
    let result = (|| {
        root.child(&txn_path)?.write_all(Bytes::from(txn_bytes.clone()))?;
        written.push(txn_path.clone());
        root.child(&manifest_path)?.write_new(Bytes::from(file))?;
        written.push(manifest_path.clone());
        let _ = root.child(&format!("{VERSIONS_DIR}/latest_version_hint.json"))?.write_all(Bytes::from(format!("{{\"version\":{}}}", loc.version)));
        written.push(format!("{VERSIONS_DIR}/latest_version_hint.json"));
        let mut identifier = src_info.as_ref().map(|i| i.identifier.clone()).unwrap_or_default();
        identifier.push((loc.version, crate::ids::new_uuid().replace('-', "")));
        let record = BranchInfo {
            name: name.to_string(),
            parent_branch: src_branch.clone(),
            parent_version: loc.version,
            identifier,
            create_at: seconds_now(),
            manifest_size,
            metadata: Vec::new(),
        };
        main.child(&format!("{BRANCHES_DIR}/{}", branch_file_name(name)))?.write_new(Bytes::from(branch_json(&record))).map_err(|e| match e {
            e @ Error::AlreadyExists { .. } => e.reworded(format!("branch {name:?} of dataset {}", main.display())).as_reference_exists(),
            e => e,
        })
    })();
    if let Err(e) = result {
        remove_files(&root, &written);
        return Err(e);
    }
    let dataset = Dataset::open_in(root, ds.uri(), Some(VersionRef::Number(loc.version)))?;
    Ok(Committed::new(dataset, ()))
}

/// Every branch of the dataset `ds` belongs to, sorted by name.
pub fn branches(ds: &Dataset) -> Result<Vec<BranchInfo>> {
    list_branches(&ds.main_root()?)
}

/// Delete branch `name`: its record, then its tree. Refused (nothing
/// removed; `InvalidInput`) while another branch was made from it or a tag
/// names one of its versions, as pylance refuses; an unknown branch is
/// `NotFound`.
pub fn delete_branch(ds: &Dataset, name: &str) -> Result<()> {
    let main = ds.main_root()?;
    if name.is_empty() || name == MAIN {
        return Err(Error::invalid_input(format!("cannot delete branch {name:?}: it is the main line")));
    }
    require_branch(&main, name)?;
    let all = list_branches(&main)?;
    let children: Vec<String> = all
        .iter()
        .filter(|b| b.parent_branch.as_deref() == Some(name))
        .map(|b| format!("{:?} (from version {})", b.name, b.parent_version))
        .collect();
    if !children.is_empty() {
        return Err(Error::invalid_input(format!(
            "cannot delete branch {name:?}: branches {} were made from it; delete them first",
            children.join(", ")
        )));
    }
    let tags: Vec<String> =
        ds.tags()?.into_iter().filter(|t| t.branch.as_deref() == Some(name)).map(|t| format!("{:?} (version {})", t.name, t.version)).collect();
    if !tags.is_empty() {
        return Err(Error::invalid_input(format!("cannot delete branch {name:?}: tags {} name its versions; delete them first", tags.join(", "))));
    }
    main.child(&format!("{BRANCHES_DIR}/{}", branch_file_name(name)))?.delete()?;
    let root = branch_root(&main, name)?;
    let nested = nested_trees(&all, name);
    // Each top-level entry of the tree goes whole, unless a nested branch's
    // tree lies in it: then file by file.
    let mut whole: Vec<String> = Vec::new();
    for obj in root.list_recursive()? {
        if in_nested_tree(&nested, &obj.path) {
            continue;
        }
        let top = obj.path.split('/').next().unwrap_or_default().to_string();
        if obj.path.contains('/') && !nested.iter().any(|n| n.starts_with(&format!("{top}/"))) {
            if !whole.contains(&top) {
                whole.push(top);
            }
            continue;
        }
        root.child(&obj.path)?.delete().or_else(|e| if matches!(e, Error::NotFound { .. }) { Ok(()) } else { Err(e) })?;
    }
    for top in whole {
        root.child(&top)?.delete_all()?;
    }
    Ok(())
}

/// The trees of other branches inside branch `name`'s (`b/s` inside `b`),
/// as prefixes relative to its root (`s/`).
pub fn nested_trees(all: &[BranchInfo], name: &str) -> Vec<String> {
    all.iter().filter_map(|b| b.name.strip_prefix(&format!("{name}/")).map(|rest| format!("{rest}/"))).collect()
}

/// Whether `path` (relative to a branch's root) lies in one of the nested
/// trees: below one of their prefixes and in a directory there (a tree's
/// files all are; `data/x.lance` of branch `b` is `b`'s own even when a
/// branch `b/data` exists, whose files are `data/data/...`, `data/_versions/...`).
pub fn in_nested_tree(nested: &[String], path: &str) -> bool {
    nested.iter().any(|n| path.strip_prefix(n.as_str()).is_some_and(|rest| rest.contains('/')))
}

/// Replace the `metadata` of branch `name`'s record.
pub fn replace_branch_metadata(ds: &Dataset, name: &str, metadata: Vec<(String, String)>) -> Result<()> {
    let main = ds.main_root()?;
    let mut info = require_branch(&main, name)?;
    let mut metadata = metadata;
    metadata.sort();
    metadata.dedup_by(|a, b| a.0 == b.0);
    info.metadata = metadata;
    main.child(&format!("{BRANCHES_DIR}/{}", branch_file_name(name)))?.write_all(Bytes::from(branch_json(&info)))
}
