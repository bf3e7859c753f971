//! Committing a transaction: writing the next manifest atomically.
//!
//! 1. The latest version is listed. Every version committed after the
//!    transaction's `read_version` has its transaction read (embedded in
//!    the manifest, or its `.txn` file) and judged by the conflict table
//!    ([`crate::table::conflict`]): rebase over it, re-run the operation
//!    ([`Outcome::Rerun`]; [`commit`] reports it as `Error::Conflict`), or
//!    refuse (`Error::Conflict`). A Delete/Update whose fragments only had
//!    their deletion files changed meanwhile gets merged deletion files.
//! 2. The (possibly rebased) transaction is written to
//!    `_transactions/{read_version}-{uuid}.txn`.
//! 3. The manifest `[IndexSection]? [Transaction] [Manifest] footer` of
//!    version `latest + 1`, built from the latest manifest, is written with
//!    put-if-not-exists (`PutMode::Create`). If another writer took that
//!    version first, go back to 1 (at most [`MAX_ATTEMPTS`] times).
//! 4. `_versions/latest_version_hint.json` is updated (best effort: it is
//!    only a hint).
//!
//! With an external manifest store (`s3+ddb://`) the store decides steps 1
//! and 3 instead: the latest version is the store's, and the manifest is
//! staged, claimed in the store and then finished (see
//! [`crate::table::commit_store`]).
//!
//! Nothing is visible before step 3 succeeds, so a failure anywhere leaves
//! the dataset as it was. When the commit surely did not happen (a
//! conflict, a re-run verdict, a failure before the manifest put, the put
//! refused), the transaction files and the files the caller wrote for it
//! ([`CommitOptions::owned_files`]) are removed too, so not even orphans
//! remain; when the manifest put itself failed with an I/O error the
//! manifest may exist after all, and everything is left in place.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use prost::Message;

use crate::error::{Error, Result};
use crate::io::Storage;
use crate::proto::table as pb;
use crate::table::conflict::{AffectedRows, Conflict, Kind, Rebase};
use crate::table::hooks::step;
use crate::table::manifest::{list_versions, manifest_file_bytes, read_manifest, ManifestFile, ManifestNaming, VERSIONS_DIR};
use crate::table::transaction::{build_manifest, transaction_file_name, BuildOptions};

/// Directory of transaction files.
pub const TRANSACTIONS_DIR: &str = "_transactions";
/// How many times a commit retries after losing a race for a version.
pub const MAX_ATTEMPTS: usize = 100;

/// How to commit.
#[derive(Clone, Default)]
pub struct CommitOptions {
    /// Manifest building options (stable row ids / data version of a new dataset).
    pub build: BuildOptions,
    /// Refuse to commit when any version exists (mode "create").
    pub must_not_exist: bool,
    /// Recorded in the transaction (`transaction_properties`), over what
    /// the operation put there.
    pub transaction_properties: HashMap<String, String>,
    /// Rows a Delete/Update removes from existing fragments, so that it can
    /// be rebased over a concurrent delete of other rows of the same
    /// fragments (without them such overlaps re-run).
    pub affected_rows: Option<Arc<AffectedRows>>,
    /// Commit exactly as version `read_version + 1`, or fail with
    /// `Error::Conflict` when another writer got there first: no rebase,
    /// no retry, so the caller can re-read and re-check (the namespace
    /// catalog's `__manifest` changes are decided on what they read).
    pub exact_version: bool,
    /// Files (relative to the dataset root) written for this commit only:
    /// removed when the commit surely failed.
    pub owned_files: Vec<String>,
}

/// Remove files (relative to `root`), best effort: used to take back what
/// a failed write put down.
pub fn remove_files(root: &Storage, paths: &[String]) {
    for p in paths {
        if let Ok(s) = root.child(p) {
            let _ = s.delete();
        }
    }
}

/// How a commit ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Committed as this version.
    Committed(u64),
    /// A concurrent commit changed what the operation read: run it again
    /// on the latest version (the message says why).
    Rerun(String),
}

/// The transaction of a committed version.
pub fn transaction_of(root: &Storage, file: &ManifestFile) -> Result<Option<pb::Transaction>> {
    if let Some(t) = file.transaction()? {
        return Ok(Some(t));
    }
    let name = &file.manifest.transaction_file;
    if name.is_empty() {
        return Ok(None);
    }
    let bytes = root.child(&format!("{TRANSACTIONS_DIR}/{name}"))?.read_all()?;
    Ok(Some(pb::Transaction::decode(bytes).map_err(|e| Error::corrupt(format!("transaction {name}: {e}")).with_source(e))?))
}

fn sleep_jitter(attempt: usize) {
    let base = 2u64.saturating_pow(attempt.min(6) as u32);
    let ms = base + crate::ids::random_u64() % (base * 3 + 5);
    std::thread::sleep(std::time::Duration::from_millis(ms));
}

/// Commit `txn` to the dataset at `root`. Returns the new version; a
/// conflict that would need the operation to re-run is `Error::Conflict`.
pub fn commit(root: &Storage, txn: &pb::Transaction, opts: &CommitOptions) -> Result<u64> {
    commit_with_frag_reuse(root, txn, opts, None)
}

/// [`commit`] a Rewrite that defers index remapping, adding (or
/// replacing) the `__lance_frag_reuse` index entry `frag_reuse`.
pub fn commit_with_frag_reuse(root: &Storage, txn: &pb::Transaction, opts: &CommitOptions, frag_reuse: Option<&pb::IndexMetadata>) -> Result<u64> {
    match commit_or_rerun_with(root, txn, opts, frag_reuse)? {
        Outcome::Committed(v) => Ok(v),
        Outcome::Rerun(what) => Err(Error::Conflict { what }),
    }
}

/// Commit `txn`, or say that the operation must run again.
pub fn commit_or_rerun(root: &Storage, txn: &pb::Transaction, opts: &CommitOptions) -> Result<Outcome> {
    commit_or_rerun_with(root, txn, opts, None)
}

fn commit_or_rerun_with(root: &Storage, txn: &pb::Transaction, opts: &CommitOptions, frag_reuse: Option<&pb::IndexMetadata>) -> Result<Outcome> {
    let mut unsure = false;
    let mut txn_files = Vec::new();
    let r = try_commit(root, txn, opts, frag_reuse, &mut unsure, &mut txn_files);
    if !matches!(r, Ok(Outcome::Committed(_))) && !unsure {
        let mut ours = opts.owned_files.clone();
        ours.extend(txn_files.iter().map(|n| format!("{TRANSACTIONS_DIR}/{n}")));
        remove_files(root, &ours);
    }
    r
}

/// The commit loop; sets `unsure` when a manifest put failed in a way that
/// does not tell whether the manifest was stored, and lists the
/// transaction files it wrote in `txn_files`.
fn try_commit(
    root: &Storage,
    txn: &pb::Transaction,
    opts: &CommitOptions,
    frag_reuse: Option<&pb::IndexMetadata>,
    unsure: &mut bool,
    txn_files: &mut Vec<String>,
) -> Result<Outcome> {
    let restore_version = match &txn.operation {
        Some(pb::transaction::Operation::Restore(r)) => Some(r.version),
        _ => None,
    };
    let replaces_all = matches!(Kind::of(txn.operation.as_ref()), Kind::Overwrite | Kind::Restore);
    // Transactions of concurrent versions, read once.
    let mut others: HashMap<u64, Option<pb::Transaction>> = HashMap::new();
    let mut read_manifest_cache: Option<pb::Manifest> = None;
    let mut written: Option<String> = None;
    for attempt in 0..MAX_ATTEMPTS {
        let versions = list_versions(root)?;
        if opts.must_not_exist && !versions.is_empty() {
            return Err(Error::already_exists(format!("dataset at {} (use mode=\"overwrite\" or \"append\")", root.display())));
        }
        let latest = versions.last();
        if opts.exact_version && latest.map(|l| l.version).unwrap_or(0) != txn.read_version {
            return Err(Error::Conflict { what: format!("{} moved past version {} since it was read", root.display(), txn.read_version) });
        }
        let concurrent: Vec<_> = versions.iter().filter(|l| l.version > txn.read_version).collect();
        if !concurrent.is_empty() && read_manifest_cache.is_none() && !replaces_all {
            if let Some(loc) = versions.iter().find(|l| l.version == txn.read_version) {
                read_manifest_cache = Some(read_manifest(root, &loc.name)?.manifest);
            }
        }
        let mut rebase = Rebase::new(txn, read_manifest_cache.as_ref(), opts.affected_rows.as_deref());
        for loc in &concurrent {
            if let std::collections::hash_map::Entry::Vacant(e) = others.entry(loc.version) {
                let f = read_manifest(root, &loc.name)?;
                e.insert(transaction_of(root, &f)?);
            }
            let verdict = match &others[&loc.version] {
                Some(other) => rebase.check(other, loc.version),
                None if replaces_all => Ok(()),
                None => Err(Conflict::Refuse(format!("version {} was committed concurrently without a transaction record", loc.version))),
            };
            match verdict {
                Ok(()) => {}
                Err(Conflict::Retry(what)) => return Ok(Outcome::Rerun(what)),
                Err(refused) => return Err(refused.into_error()),
            }
        }
        let prev = latest.map(|l| read_manifest(root, &l.name)).transpose()?;
        let txn = match &prev {
            Some(p) => match rebase.finish(root, &p.manifest)? {
                Ok(t) => t,
                Err(Conflict::Retry(what)) => return Ok(Outcome::Rerun(what)),
                Err(refused) => return Err(refused.into_error()),
            },
            None => txn.clone(),
        };
        let mut txn = txn;
        txn.transaction_properties.extend(opts.transaction_properties.iter().map(|(k, v)| (k.clone(), v.clone())));
        let txn_bytes = txn.encode_to_vec();
        let txn_name = transaction_file_name(&txn);
        if written.as_deref() != Some(txn_name.as_str()) {
            step(root, "transaction_file")?;
            root.child(&format!("{TRANSACTIONS_DIR}/{txn_name}"))?.write_all(Bytes::from(txn_bytes.clone()))?;
            txn_files.push(txn_name.clone());
            written = Some(txn_name.clone());
        }
        let naming = latest.map(|l| l.naming).unwrap_or(ManifestNaming::V2);
        let version = match latest {
            Some(l) => l.version.checked_add(1).ok_or_else(|| Error::corrupt(format!("{} is the last possible version", l.version)))?,
            None => 1,
        };
        let restore_file = match restore_version {
            Some(v) => {
                let loc = versions.iter().find(|l| l.version == v).ok_or_else(|| Error::not_found(format!("version {v} to restore")))?;
                Some(read_manifest(root, &loc.name)?)
            }
            None => None,
        };
        let mut m =
            build_manifest(prev.as_ref().map(|p| &p.manifest), &txn, version, &opts.build, restore_file.as_ref().map(|f| &f.manifest), Some(root))?;
        // Indices follow the operation (see index_section.rs).
        let prev_indices = prev.as_ref().map(|p| p.index_section()).transpose()?.flatten().map(|s| s.indices);
        let restored_indices = restore_file.as_ref().map(|r| r.index_section()).transpose()?.flatten().map(|s| s.indices);
        let old_ids: std::collections::HashSet<u64> = prev.iter().flat_map(|p| p.manifest.fragments.iter().map(|f| f.id)).collect();
        let new_ids: Vec<u64> = m.fragments.iter().map(|f| f.id).filter(|id| !old_ids.contains(id)).collect();
        let indices = crate::table::index_section::next_indices(
            &txn,
            prev_indices.as_deref(),
            restored_indices.as_deref(),
            &m,
            &new_ids,
            frag_reuse,
            crate::index::frag_reuse::find(prev_indices.as_deref().unwrap_or_default(), root)?.as_ref(),
        )?;
        m.transaction_file = txn_name.clone();
        // v0.1 dictionary values stay at the positions the fields name.
        let prefix = match restore_file.as_ref().or(prev.as_ref()) {
            Some(src) if m.fields.iter().any(|f| f.dictionary.is_some()) => src.leading_bytes(),
            _ => Bytes::new(),
        };
        let index_bytes = crate::table::index_section::encode(indices);
        let file = manifest_file_bytes(&prefix, &mut m, index_bytes.as_deref(), &txn_bytes);
        step(root, "manifest")?;
        let put = match root.manifest_store() {
            // An external store decides (see commit_store); no hint file,
            // as pylance writes none there.
            Some(store) => crate::table::commit_store::commit_manifest(root, store.as_ref(), version, naming, Bytes::from(file), unsure),
            None => {
                let target = root.child(&format!("{VERSIONS_DIR}/{}", naming.file_name(version)))?;
                let put = target.write_new(Bytes::from(file));
                if let Err(e) = &put {
                    *unsure = !matches!(e, Error::Unsupported { .. } | Error::AlreadyExists { .. });
                }
                if put.is_ok() {
                    let hint = root.child(&format!("{VERSIONS_DIR}/latest_version_hint.json"))?;
                    let _ = hint.write_all(Bytes::from(format!("{{\"version\":{version}}}")));
                }
                put
            }
        };
        match put {
            Ok(()) => return Ok(Outcome::Committed(version)),
            Err(Error::AlreadyExists { .. }) if opts.exact_version => {
                return Err(Error::Conflict { what: format!("version {version} of {} was committed concurrently", root.display()) });
            }
            Err(Error::AlreadyExists { .. }) => {
                sleep_jitter(attempt);
                continue;
            }
            Err(e) => return Err(e),
        }
    }
    Err(Error::Conflict { what: format!("gave up after {MAX_ATTEMPTS} attempts: other writers kept committing first") })
}
