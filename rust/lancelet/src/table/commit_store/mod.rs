//! Commits through an external manifest store (`s3+ddb://`), as pylance 14
//! makes them; the protocol, its failure cases and their recovery are in
//! docs/commit-store.md.
//!
//! Writing version `v` whose manifest is `_versions/{name}`:
//!
//! 1. the manifest is written to the staging path
//!    `_versions/{name}-{uuid}` (plain put: nothing reads it yet);
//! 2. the store item `(dataset, v) -> staging path, size` is put if absent:
//!    the one atomic step. If `v` already has an item another writer took
//!    it: the staging file is deleted and the commit loop rebases and tries
//!    `v + 1` (unless the item is ours, from a retried request that had
//!    gone through). From here on the version is committed;
//! 3. the staging manifest is copied to `_versions/{name}`;
//! 4. the item is pointed at the final path;
//! 5. the staging manifest is deleted.
//!
//! Steps 3-5 are "finishing" the commit: any reader or writer that finds
//! the newest item still pointing at a staging path does them (a copy that
//! finds no staging file means another finisher got there first). The
//! store decides which version is the newest; listing `_versions/` (for
//! the history, time travel, cleanup) shows the finished manifests, and
//! manifests above the store's newest version (written around the store)
//! are not part of the history.

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::io::manifest_store::{ManifestStore, StoreItem};
use crate::io::Storage;
use crate::table::hooks::step;
use crate::table::manifest::{parse_manifest_name, ManifestLocation, ManifestNaming, VERSIONS_DIR};

#[cfg(test)]
mod tests;

/// The final manifest name of a staging name (`{name}-{uuid}`), or `None`
/// when `file` is not a staging name.
pub fn final_name_of(file: &str) -> Option<&str> {
    let at = file.find(".manifest-")?;
    let name = &file[..at + ".manifest".len()];
    parse_manifest_name(name).map(|_| name)
}

/// The key of the dataset at `root` in a store: its path inside the bucket.
fn base_of(root: &Storage) -> &str {
    root.object_path()
}

/// `item.path` relative to the dataset root (a path under `_versions/`).
fn relative(root: &Storage, store: &dyn ManifestStore, item: &StoreItem) -> Result<String> {
    let base = base_of(root);
    let rel = if base.is_empty() { Some(item.path.as_str()) } else { item.path.strip_prefix(base).and_then(|r| r.strip_prefix('/')) };
    match rel {
        Some(r) if r.starts_with(&format!("{VERSIONS_DIR}/")) && !r[VERSIONS_DIR.len() + 1..].contains('/') => Ok(r.to_string()),
        _ => Err(Error::corrupt(format!(
            "{}: the item of version {} of {base:?} points at {:?}, not at a manifest of this dataset",
            store.describe(),
            item.version,
            item.path
        ))),
    }
}

fn full_path(root: &Storage, rel: &str) -> String {
    match base_of(root) {
        "" => rel.to_string(),
        base => format!("{base}/{rel}"),
    }
}

/// Step 1: write the manifest of `version` to a fresh staging path;
/// returns the store item that claims it.
pub fn stage(root: &Storage, version: u64, naming: ManifestNaming, manifest: Bytes) -> Result<StoreItem> {
    let rel = format!("{VERSIONS_DIR}/{}-{}", naming.file_name(version), crate::ids::new_uuid());
    let size = manifest.len() as u64;
    let target = root.child(&rel)?;
    if let Err(e) = target.write_all(manifest) {
        let _ = target.delete();
        return Err(e);
    }
    Ok(StoreItem { version, path: full_path(root, &rel), size: Some(size) })
}

/// Step 2: claim the version for `item`. `Ok(true)`: committed;
/// `Ok(false)`: another writer holds the version (our staging file is
/// deleted). An error leaves the outcome unknown (the staging file stays:
/// the item may point at it).
pub fn claim(root: &Storage, store: &dyn ManifestStore, item: &StoreItem) -> Result<bool> {
    let base = base_of(root);
    match store.put_if_absent(base, item) {
        Ok(()) => Ok(true),
        Err(Error::AlreadyExists { .. }) => {
            // A retried request whose first try went through finds its own item.
            if store.get(base, item.version)?.is_some_and(|i| i.path == item.path) {
                return Ok(true);
            }
            if let Ok(s) = root.child(&relative(root, store, item)?) {
                let _ = s.delete();
            }
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// Steps 3-5: finish a committed version whose item points at a staging
/// manifest; returns the final manifest's name under `_versions/`. An item
/// already final is returned as it is. Safe to run by several processes
/// at once.
pub fn finish(root: &Storage, store: &dyn ManifestStore, item: &StoreItem) -> Result<String> {
    let rel = relative(root, store, item)?;
    let file = &rel[VERSIONS_DIR.len() + 1..];
    let Some(name) = final_name_of(file) else {
        return Ok(file.to_string());
    };
    let name = name.to_string();
    let staging = root.child(&rel)?;
    let target = root.child(&format!("{VERSIONS_DIR}/{name}"))?;
    step(root, "store_copy")?;
    match staging.copy_to(&target) {
        Ok(()) => {}
        // Another finisher copied it and deleted the staging file (after
        // pointing the item at the final path).
        Err(Error::NotFound { .. }) => {
            return match target.size() {
                Ok(_) => Ok(name),
                Err(e @ Error::NotFound { .. }) => Err(e.reworded(format!(
                    "the manifest of version {} of {}: {} points at {:?}, which does not exist (nor does {name})",
                    item.version,
                    root.display(),
                    store.describe(),
                    item.path
                ))),
                Err(e) => Err(e),
            };
        }
        Err(e) => return Err(e),
    }
    step(root, "store_finalize")?;
    let size = match item.size {
        Some(s) => s,
        None => target.size()?,
    };
    store
        .finalize(base_of(root), &StoreItem { version: item.version, path: full_path(root, &format!("{VERSIONS_DIR}/{name}")), size: Some(size) })?;
    step(root, "store_delete_staging")?;
    match staging.delete() {
        Ok(()) | Err(Error::NotFound { .. }) => Ok(name),
        Err(e) => Err(e),
    }
}

/// Commit `manifest` as `version` through `store` (steps 1-5). A version
/// another writer holds is `Error::AlreadyExists` (nothing of ours is
/// left). Once the claim succeeded the commit stands: a failure while
/// finishing is left for the next reader to repair, and `Ok` is returned.
/// `unsure` is set when an error leaves it unknown whether the claim went
/// through.
pub fn commit_manifest(
    root: &Storage,
    store: &dyn ManifestStore,
    version: u64,
    naming: ManifestNaming,
    manifest: Bytes,
    unsure: &mut bool,
) -> Result<()> {
    step(root, "staging_manifest")?;
    let item = stage(root, version, naming, manifest)?;
    // A failed step after this point stands for the process dying there:
    // nothing is cleaned up.
    if let Err(e) = step(root, "store_put") {
        *unsure = true;
        return Err(e);
    }
    match claim(root, store, &item) {
        Ok(true) => {}
        Ok(false) => return Err(Error::already_exists(format!("version {version} of {} (taken in {})", root.display(), store.describe()))),
        Err(e) => {
            *unsure = true;
            return Err(e);
        }
    }
    let _ = finish(root, store, &item);
    Ok(())
}

/// Bring a listing of `_versions/` in line with the store: the newest item
/// decides the latest version (finished first if it still points at a
/// staging manifest; when finishing fails for another reason than a
/// missing manifest, the staging manifest is read as it is); versions
/// above it are dropped, and it is added when the listing does not show it
/// yet. A dataset the store has no items for
/// keeps its listing (it was written without the store; the next commit
/// claims the next version).
pub fn reconcile(root: &Storage, store: &dyn ManifestStore, listing: &mut Vec<ManifestLocation>) -> Result<()> {
    let Some(item) = store.latest(base_of(root))? else {
        return Ok(());
    };
    let name = match finish(root, store, &item) {
        Ok(name) => name,
        // Nothing to read, or an item that is not ours to follow.
        Err(e @ (Error::NotFound { .. } | Error::Corrupt { .. })) => return Err(e),
        // Finishing is a write (a reader may hold read-only credentials,
        // or the store may be failing): read the staging manifest itself
        // and leave the finishing to the next writer.
        Err(_) => relative(root, store, &item)?[VERSIONS_DIR.len() + 1..].to_string(),
    };
    let Some((version, naming)) = parse_manifest_name(final_name_of(&name).unwrap_or(&name)).filter(|(v, _)| *v == item.version) else {
        return Err(Error::corrupt(format!(
            "{}: the item of version {} of {} names {name:?}, not that version's manifest",
            store.describe(),
            item.version,
            root.display()
        )));
    };
    listing.retain(|l| l.version <= version);
    if listing.last().is_none_or(|l| l.version != version) {
        listing.push(ManifestLocation { version, name, naming, size: item.size });
    }
    Ok(())
}
