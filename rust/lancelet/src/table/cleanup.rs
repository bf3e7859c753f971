//! Removing old versions and the files only they use, as pylance 14's
//! `cleanup_old_versions` does.
//!
//! Every manifest in `_versions/` is read. A version is *old* (its manifest
//! is removed) when it is older than `before_timestamp` and below
//! `before_version` (whichever are set), unless it is the latest (any
//! version at or after the one the caller has open stays), tagged (by a
//! tag on the main line: a tag on a branch names a branch version), or the
//! version a branch was made from. The files the kept versions reference
//! (data files under `data/`, deletion files, transaction files,
//! `_indices/{uuid}/` of their indices) are the working set, and so is
//! every file of this dataset that any version of any branch references
//! (branch manifests name the main line's files through a base path that
//! is a dataset root; see [`crate::table::branches`]). A branch's parent
//! version keeps its manifest, but only what the branch itself references
//! joins the working set (pylance 14 removes the parent's transaction
//! file, for one).
//!
//! Cleaning a branch (`ds` checked out on it) works the same way on the
//! branch's own tree: its versions, its own files (those without a base
//! id), the tags naming its versions, the branches made from it and the
//! files other branches reference in it (through a base path to its
//! tree); files of the main line or of a parent branch it uses are never
//! touched, and neither are the trees of branches nested inside its own
//! (`b/s` below `b`).
//!
//! Shallow clones: a clone's cleanup only ever removes files below the
//! clone's root (the source's files have a base id). The source cannot
//! know its clones, so a clone must be made from a tag (as pylance's docs
//! imply): the tag keeps the version, and with it every file the clone
//! uses, until the tag is deleted. Every other file of those kinds is
//! removed when
//!
//! * an old manifest references it (it is then known not to belong to a
//!   write in progress), or
//! * it is at least [`UNVERIFIED_DAYS`] days old, or `delete_unverified`
//!   is set.
//!
//! Leftover `_versions/.tmp*` files go under the same age rule (they are
//! removed and, as in pylance, counted in `bytes_removed` only). Files elsewhere
//! (other base paths, `_refs/`, `tree/`, `_staging/`, unknown extensions)
//! are never touched. When a tagged version would be old and
//! `error_if_tagged_old_versions` is set, nothing is removed and the error
//! names the tags. A file that cannot be removed is counted in
//! `failed_deletes` and the cleanup goes on, as pylance's does.
//!
//! Old manifests are removed first, so a crash part-way leaves versions
//! that either are complete or are gone.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, SystemTime};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::proto::table as pb;
use crate::table::branches::{branch_root, list_branches};
use crate::table::dataset::{Dataset, VersionRef};
use crate::table::deletion::deletion_file_path;
use crate::table::manifest::{list_versions, read_manifest, VERSIONS_DIR};
use crate::table::ops::branch::{in_nested_tree, nested_trees};
use crate::table::ops::{report, Progress};
use crate::table::properties::{CommitProperties, Committed};

/// Unreferenced files younger than this many days may belong to a write in
/// progress and stay (unless `delete_unverified`).
pub const UNVERIFIED_DAYS: u64 = 7;

/// Which versions to remove.
#[derive(Debug, Clone, Default)]
pub struct CleanupPolicy {
    /// Only versions committed before this time.
    pub before_timestamp: Option<SystemTime>,
    /// Only versions below this number.
    pub before_version: Option<u64>,
    /// Also remove unreferenced files younger than [`UNVERIFIED_DAYS`].
    pub delete_unverified: bool,
    /// Refuse (removing nothing) when a tagged version would be old.
    pub error_if_tagged_old_versions: bool,
}

/// What a cleanup removed (pylance's `CleanupStats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CleanupStats {
    /// Bytes of every file removed, manifests included.
    pub bytes_removed: u64,
    /// Manifests removed.
    pub old_versions: u64,
    /// Data files removed.
    pub data_files_removed: u64,
    /// Transaction files removed.
    pub transaction_files_removed: u64,
    /// Deletion files removed.
    pub deletion_files_removed: u64,
    /// Index files removed (every file under `_indices/{uuid}/`).
    pub index_files_removed: u64,
    /// Files that could not be removed (they stay; a later cleanup retries).
    pub failed_deletes: u64,
}

/// Files referenced by a set of manifests (paths relative to the root).
#[derive(Debug, Default)]
struct Refs {
    data: HashSet<String>,
    deletions: HashSet<String>,
    transactions: HashSet<String>,
    index_uuids: HashSet<String>,
}

impl Refs {
    fn extend(&mut self, other: &Refs) {
        self.data.extend(other.data.iter().cloned());
        self.deletions.extend(other.deletions.iter().cloned());
        self.transactions.extend(other.transactions.iter().cloned());
        self.index_uuids.extend(other.index_uuids.iter().cloned());
    }
}

/// What one manifest references.
struct ManifestRefs {
    version: u64,
    name: String,
    timestamp: SystemTime,
    refs: Refs,
}

/// A uuid as pylance names index directories.
fn uuid_string(b: &[u8]) -> String {
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    if h.len() != 32 {
        return h;
    }
    format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
}

/// Which files of a manifest count as the cleaned dataset's own.
#[derive(Debug, Clone, Copy)]
enum Owner {
    /// The dataset's own manifest: files without a base id.
    Own,
    /// A branch's manifest: files whose base is a dataset root (the main
    /// line's files, named relative to that root). A branch's own files
    /// (no base id) live in its tree, which the cleanup never touches.
    /// Every dataset-root base counts, not only one whose path equals this
    /// dataset's: a moved or re-addressed (`file://` vs plain path)
    /// dataset still keeps what its branches need, and the file names are
    /// random, so keeping a same-named file of another root costs nothing.
    Branch,
}

fn refs_of(file: &crate::table::manifest::ManifestFile, owner: Owner) -> Result<Refs> {
    let m = &file.manifest;
    let roots: HashSet<u32> = m.base_paths.iter().filter(|b| b.is_dataset_root).map(|b| b.id).collect();
    let ours = |base_id: Option<u32>| match owner {
        Owner::Own => base_id.is_none(),
        Owner::Branch => base_id.is_some_and(|b| roots.contains(&b)),
    };
    let mut refs = Refs::default();
    for f in &m.fragments {
        for df in f.files.iter().filter(|d| ours(d.base_id)) {
            refs.data.insert(format!("data/{}", df.path));
        }
        if let Some(d) = f.deletion_file.as_ref().filter(|d| ours(d.base_id)) {
            refs.deletions.insert(deletion_file_path(f.id, d));
        }
    }
    // A branch's transaction files are its own (in its tree).
    if matches!(owner, Owner::Own) && !m.transaction_file.is_empty() {
        refs.transactions.insert(format!("_transactions/{}", m.transaction_file));
    }
    if let Some(section) = file.index_section()? {
        for idx in section.indices.iter().filter(|i: &&pb::IndexMetadata| ours(i.base_id)) {
            if let Some(u) = &idx.uuid {
                refs.index_uuids.insert(uuid_string(&u.uuid));
            }
        }
    }
    Ok(refs)
}

fn read_refs(ds: &Dataset, name: &str, version: u64) -> Result<ManifestRefs> {
    let file = read_manifest(ds.root(), name)?;
    let m = &file.manifest;
    let refs = refs_of(&file, Owner::Own)?;
    let ts = m.timestamp.as_ref().map(|t| Duration::new(t.seconds.max(0) as u64, t.nanos.max(0) as u32)).unwrap_or_default();
    Ok(ManifestRefs { version, name: name.to_string(), timestamp: SystemTime::UNIX_EPOCH + ts, refs })
}

/// The `before_version` that keeps the newest `n` versions.
pub fn retain_versions_bound(ds: &Dataset, n: u64) -> Result<u64> {
    if n == 0 {
        return Err(Error::invalid_input("retain_versions must be greater than 0, got 0"));
    }
    let versions = list_versions(ds.root())?;
    let n = n as usize;
    Ok(if versions.len() <= n { versions.first().map(|v| v.version).unwrap_or(0) } else { versions[versions.len() - n].version })
}

/// The kinds of files a cleanup may remove.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Data,
    Deletion,
    Transaction,
    Index,
    TempManifest,
}

fn kind_of(path: &str) -> Option<Kind> {
    let ext = path.rsplit_once('.').map(|(_, e)| e);
    if path.starts_with("_indices/") {
        return Some(Kind::Index);
    }
    if path.starts_with(&format!("{VERSIONS_DIR}/.tmp")) {
        return Some(Kind::TempManifest);
    }
    match ext {
        Some("lance") if path.starts_with("data/") => Some(Kind::Data),
        Some("arrow") | Some("bin") if path.starts_with("_deletions/") => Some(Kind::Deletion),
        Some("txn") if path.starts_with("_transactions/") => Some(Kind::Transaction),
        _ => None,
    }
}

/// Remove old versions of `ds`'s dataset (see the module docs). `progress`
/// hears `("read", done, total)` per manifest, then `("delete", 0, total)`
/// before anything is removed and `("delete", done, total)` per file. An
/// error it returns stops the cleanup at once: before the removal starts
/// nothing is removed; later, the versions and files removed so far stay
/// removed (manifests go first, so every version left is complete, and the
/// files of removed versions a later cleanup takes once they are
/// [`UNVERIFIED_DAYS`] old, or with `delete_unverified`).
///
/// Cleanup commits no version: the dataset it returns is `ds` (reopened);
/// only the progress callback of `props` is used.
pub fn cleanup_old_versions(ds: &Dataset, policy: &CleanupPolicy, props: &CommitProperties) -> Result<Committed<CleanupStats>> {
    let stats = cleanup(ds, policy, &props.progress)?;
    Ok(Committed::new(ds.checkout(VersionRef::Number(ds.version()))?, stats))
}

fn cleanup(ds: &Dataset, policy: &CleanupPolicy, progress: &Option<Progress>) -> Result<CleanupStats> {
    let tags = ds.tags()?;
    // Tags naming versions of the branch being cleaned (the main line's
    // when `ds.branch()` is `None`).
    let tagged: HashMap<u64, Vec<&str>> = tags.iter().filter(|t| t.branch.as_deref() == ds.branch()).fold(HashMap::new(), |mut m, t| {
        m.entry(t.version).or_default().push(t.name.as_str());
        m
    });
    let (branch_refs, branch_parents, nested) = branch_needs(ds)?;
    let locations = list_versions(ds.root())?;
    let total = locations.len() as u64;
    let read = std::sync::atomic::AtomicU64::new(0);
    let manifests = crate::process::install(|| {
        locations
            .par_iter()
            .map(|l| {
                let r = read_refs(ds, &l.name, l.version)?;
                report(progress, "read", read.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1, total)?;
                Ok(r)
            })
            .collect::<Result<Vec<_>>>()
    })?;

    let mut keep = branch_refs;
    let mut verified = Refs::default();
    let mut old: Vec<&ManifestRefs> = Vec::new();
    let mut tagged_old: BTreeMap<&str, u64> = BTreeMap::new();
    for m in &manifests {
        let is_latest = ds.version() <= m.version;
        let is_tagged = tagged.contains_key(&m.version);
        let should_clean = policy.before_timestamp.is_none_or(|t| m.timestamp < t) && policy.before_version.is_none_or(|v| m.version < v);
        if is_tagged && !is_latest && should_clean {
            for name in &tagged[&m.version] {
                tagged_old.insert(name, m.version);
            }
        }
        let kept = is_latest || !should_clean || is_tagged;
        let into = if kept { &mut keep } else { &mut verified };
        into.extend(&m.refs);
        if !kept && !branch_parents.contains(&m.version) {
            old.push(m);
        }
    }
    if policy.error_if_tagged_old_versions && !tagged_old.is_empty() {
        let list: Vec<String> = tagged_old.iter().map(|(n, v)| format!("{n:?} (version {v})")).collect();
        return Err(Error::invalid_input(format!(
            "{} tagged version(s) would be removed by this cleanup: tags {}; delete those tags or pass \
             error_if_tagged_old_versions=False to keep tagged versions and clean up the rest",
            tagged_old.len(),
            list.join(", ")
        )));
    }

    let unverified_before = SystemTime::now() - Duration::from_secs(UNVERIFIED_DAYS * 24 * 3600);
    let mut doomed: Vec<(String, u64, Kind)> = Vec::new();
    for obj in ds.root().list_recursive()? {
        // The trees of branches nested in this one's (`b/data` below `b`)
        // are theirs.
        if in_nested_tree(&nested, &obj.path) {
            continue;
        }
        let Some(kind) = kind_of(&obj.path) else { continue };
        let maybe_in_progress = !policy.delete_unverified && obj.last_modified >= unverified_before;
        let (referenced, known_old) = match kind {
            Kind::Data => (keep.data.contains(&obj.path), verified.data.contains(&obj.path)),
            Kind::Deletion => (keep.deletions.contains(&obj.path), verified.deletions.contains(&obj.path)),
            Kind::Transaction => (keep.transactions.contains(&obj.path), verified.transactions.contains(&obj.path)),
            Kind::Index => {
                let uuid = obj.path.split('/').nth(1).unwrap_or_default();
                (keep.index_uuids.contains(uuid), verified.index_uuids.contains(uuid))
            }
            Kind::TempManifest => (false, false),
        };
        if !referenced && (!maybe_in_progress || known_old) {
            doomed.push((obj.path, obj.size, kind));
        }
    }

    let sizes: HashMap<String, u64> = ds.root().child(VERSIONS_DIR)?.list()?.into_iter().collect();
    let mut stats = CleanupStats::default();
    let all = (old.len() + doomed.len()) as u64;
    let mut done = 0u64;
    report(progress, "delete", 0, all)?;
    // Manifests first: a version is either complete or gone.
    for m in &old {
        match remove(ds, &format!("{VERSIONS_DIR}/{}", m.name)) {
            Ok(()) => {
                stats.old_versions += 1;
                stats.bytes_removed += sizes.get(&m.name).copied().unwrap_or(0);
            }
            Err(_) => stats.failed_deletes += 1,
        }
        done += 1;
        report(progress, "delete", done, all)?;
    }
    for (path, size, kind) in doomed {
        match remove(ds, &path) {
            Ok(()) => {
                stats.bytes_removed += size;
                match kind {
                    Kind::Data => stats.data_files_removed += 1,
                    Kind::Deletion => stats.deletion_files_removed += 1,
                    Kind::Transaction => stats.transaction_files_removed += 1,
                    Kind::Index => stats.index_files_removed += 1,
                    // Counted in bytes only, as in pylance.
                    Kind::TempManifest => {}
                }
            }
            Err(_) => stats.failed_deletes += 1,
        }
        done += 1;
        report(progress, "delete", done, all)?;
    }
    Ok(stats)
}

/// What the branches need of the line being cleaned (the main line, or
/// the branch `ds` is on): every file of it that a version of any other
/// branch references, the versions branches were made from (their
/// manifests stay), and the directories (relative to `ds`'s root) of
/// branches whose trees lie inside its own.
fn branch_needs(ds: &Dataset) -> Result<(Refs, HashSet<u64>, Vec<String>)> {
    let main = ds.main_root()?;
    let mut refs = Refs::default();
    let mut parents = HashSet::new();
    let all = list_branches(&main)?;
    let nested = ds.branch().map(|own| nested_trees(&all, own)).unwrap_or_default();
    for b in all {
        if b.parent_branch.as_deref() == ds.branch() {
            parents.insert(b.parent_version);
        }
        if Some(b.name.as_str()) == ds.branch() {
            continue;
        }
        let root = branch_root(&main, &b.name)?;
        for l in list_versions(&root)? {
            // A version removed by a cleanup of that branch running now
            // is no longer needed.
            let file = match read_manifest(&root, &l.name) {
                Err(Error::NotFound { .. }) => continue,
                other => other?,
            };
            refs.extend(&refs_of(&file, Owner::Branch)?);
        }
    }
    Ok((refs, parents, nested))
}

/// Remove one file below the dataset root; one already gone is fine.
fn remove(ds: &Dataset, path: &str) -> Result<()> {
    ds.root().child(path)?.delete().or_else(ignore_missing)
}

/// A file someone else removed meanwhile is fine.
fn ignore_missing(e: Error) -> Result<()> {
    match e {
        Error::NotFound { .. } => Ok(()),
        e => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_uuids() {
        assert_eq!(kind_of("data/abc.lance"), Some(Kind::Data));
        assert_eq!(kind_of("data/sub/abc.lance"), Some(Kind::Data));
        assert_eq!(kind_of("data/abc.txt"), None);
        assert_eq!(kind_of("other/abc.lance"), None);
        assert_eq!(kind_of("_deletions/0-1-2.arrow"), Some(Kind::Deletion));
        assert_eq!(kind_of("_deletions/0-1-2.bin"), Some(Kind::Deletion));
        assert_eq!(kind_of("_transactions/1-x.txn"), Some(Kind::Transaction));
        assert_eq!(kind_of("_indices/u/page_data.lance"), Some(Kind::Index));
        assert_eq!(kind_of("_versions/.tmp_x"), Some(Kind::TempManifest));
        assert_eq!(kind_of("_versions/1.manifest"), None);
        assert_eq!(kind_of("_refs/tags/t.json"), None);
        let u = uuid_string(&[0x55, 0xb2, 0x79, 0x75, 0x29, 0x05, 0x4f, 0x0c, 0x87, 0x42, 0xda, 0xcc, 0xa3, 0x3f, 0x74, 0x9a]);
        assert_eq!(u, "55b27975-2905-4f0c-8742-dacca33f749a");
    }
}
