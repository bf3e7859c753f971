//! Committing a compaction: `ReserveFragments`, then `Rewrite`, both with
//! the plan's read version, as pylance 14 writes them.
//!
//! 1. The versions committed since the plan are checked against the
//!    Rewrite first, so a compaction that cannot be rebased is refused
//!    before it commits anything.
//! 2. `ReserveFragments{n}` takes ids for the n new fragments: the ids
//!    `max_fragment_id - n + 1 ..= max_fragment_id` of the version it makes.
//! 3. The new fragments get those ids (in task order); indices covering
//!    rewritten fragments are offered to the remap hook ([`super::remap`]).
//! 4. `Rewrite{groups, rewritten_indices}` is committed through the normal
//!    commit loop (rebased over compatible commits, see [`crate::table::apply_rewrite`]).
//!
//! If anything fails, the new data files are removed; at most the
//! ReserveFragments version stays (it changes no data, as in pylance).

use std::collections::HashSet;
use std::sync::Arc;

use roaring::{RoaringBitmap, RoaringTreemap};

use crate::error::{Error, Result};
use crate::index::frag_reuse;
use crate::proto::table as pb;
use crate::table::commit::{commit, commit_with_frag_reuse, transaction_of, CommitOptions};
use crate::table::dataset::{Dataset, VersionRef};
use crate::table::manifest::{list_versions, read_manifest};
use crate::table::properties::{CommitProperties, Committed};
use crate::table::transaction::new_transaction;

use super::execute::{CompactionMetrics, RewriteResult};
use super::plan::CompactionOptions;
use super::remap::{IndexRemapper, RowAddressMap};
use crate::table::apply_rewrite::check_compaction;

use pb::transaction::Operation;

/// Remove the data files of fragments that will not be committed.
pub fn remove_fragment_files(ds: &Dataset, frags: &[pb::DataFragment]) {
    for df in frags.iter().flat_map(|f| &f.files) {
        if let Ok(s) = ds.root().child(&format!("data/{}", df.path)) {
            let _ = s.delete();
        }
    }
}

/// Refuse early when a commit since `read_version` rules the Rewrite out.
fn precheck(ds: &Dataset, rewrite: &pb::Transaction) -> Result<()> {
    for loc in list_versions(ds.root())?.iter().filter(|l| l.version > rewrite.read_version) {
        let file = read_manifest(ds.root(), &loc.name)?;
        match transaction_of(ds.root(), &file)? {
            Some(other) => check_compaction(rewrite, &other, loc.version)?,
            None => return Err(Error::Conflict { what: format!("version {} was committed concurrently without a transaction record", loc.version) }),
        }
    }
    Ok(())
}

/// The row address map of the groups (ids assigned), read at `old_ds`.
fn address_map(old_ds: &Dataset, groups: &[pb::transaction::RewriteGroup]) -> Result<RowAddressMap> {
    let mut map = RowAddressMap::default();
    for g in groups {
        let mut old = Vec::with_capacity(g.old_fragments.len());
        for f in &g.old_fragments {
            let i = old_ds.fragment_index(f.id).ok_or_else(|| Error::Internal { what: format!("fragment {} vanished from its version", f.id) })?;
            old.push((f.id, old_ds.physical_rows(i)?, old_ds.deletions(i)?.unwrap_or_default()));
        }
        map.push_group(old, g.new_fragments.iter().map(|f| (f.id, f.physical_rows)).collect());
    }
    Ok(map)
}

/// Indices of `old_ds` covering any rewritten fragment, remapped by
/// `remapper`. After a deferred remap (a `__lance_frag_reuse` index, e.g.
/// from pylance's `compact_files(defer_index_remap=True)`) an index covers
/// the fragments its bitmap names as moved by the recorded compactions, and
/// its addresses are mapped through them first: the rewritten index holds
/// current addresses only.
fn remap_indices(
    old_ds: &Dataset,
    groups: &[pb::transaction::RewriteGroup],
    remapper: &dyn IndexRemapper,
) -> Result<Vec<pb::transaction::RewrittenIndex>> {
    let Some(section) = old_ds.manifest_file().index_section()? else { return Ok(Vec::new()) };
    let reuse = frag_reuse::find(&section.indices, old_ds.root())?.map(Arc::new);
    let old_ids: HashSet<u32> = groups.iter().flat_map(|g| g.old_fragments.iter().map(|f| f.id as u32)).collect();
    let mut map = None;
    let mut out = Vec::new();
    for idx in section.indices.iter().filter(|i| i.name != frag_reuse::NAME) {
        let covers = if idx.fragment_bitmap.is_empty() {
            false
        } else {
            let b = RoaringBitmap::deserialize_from(&idx.fragment_bitmap[..])
                .map_err(|e| Error::corrupt(format!("fragment bitmap of index {:?}: {e}", idx.name)).with_source(e))?;
            let b = match &reuse {
                Some(r) => r.remap_coverage(&b, false),
                None => b,
            };
            old_ids.iter().any(|id| b.contains(*id))
        };
        if !covers {
            continue;
        }
        if map.is_none() {
            map = Some(address_map(old_ds, groups)?.after_deferred(reuse.clone()));
        }
        if let Some(r) = remapper.remap(old_ds, idx, map.as_ref().expect("built"))? {
            out.push(r);
        }
    }
    Ok(out)
}

/// With `defer_index_remap`: when an index covers a rewritten fragment,
/// the `__lance_frag_reuse` entry recording where the groups' rows went
/// (the indices keep their files and bitmaps; readers map old addresses
/// through it, see [`crate::index::frag_reuse`]).
fn deferred_reuse(old_ds: &Dataset, groups: &[pb::transaction::RewriteGroup], version: u64) -> Result<Option<pb::IndexMetadata>> {
    let Some(section) = old_ds.manifest_file().index_section()? else { return Ok(None) };
    let old_ids: HashSet<u32> = groups.iter().flat_map(|g| g.old_fragments.iter().map(|f| f.id as u32)).collect();
    let mut previous = None;
    let mut indexed = false;
    for idx in &section.indices {
        if idx.name == frag_reuse::NAME {
            previous = Some(idx);
            continue;
        }
        if !idx.fragment_bitmap.is_empty() {
            let b = RoaringBitmap::deserialize_from(&idx.fragment_bitmap[..])
                .map_err(|e| Error::corrupt(format!("fragment bitmap of index {:?}: {e}", idx.name)).with_source(e))?;
            indexed |= old_ids.iter().any(|id| b.contains(*id));
        }
    }
    if !indexed {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(groups.len());
    for g in groups {
        let mut old = Vec::with_capacity(g.old_fragments.len());
        let mut kept = RoaringTreemap::new();
        for f in &g.old_fragments {
            let i = old_ds.fragment_index(f.id).ok_or_else(|| Error::Internal { what: format!("fragment {} vanished from its version", f.id) })?;
            let rows = old_ds.physical_rows(i)?;
            let deleted = old_ds.deletions(i)?.unwrap_or_default();
            kept.extend((0..rows).filter(|o| !deleted.contains(*o as u32)).map(|o| (f.id << 32) | o));
            old.push((f.id, rows, deleted.len()));
        }
        out.push(frag_reuse::Group::new(old, g.new_fragments.iter().map(|f| (f.id, f.physical_rows)).collect(), kept));
    }
    let dir = |idx: &pb::IndexMetadata| -> Result<crate::io::Storage> { old_ds.index_dir(idx) };
    let dir = match previous {
        Some(p) => dir(p)?,
        None => old_ds.root().clone(),
    };
    Ok(Some(frag_reuse::deferred_entry(previous, &dir, version, out)?))
}

/// Commit the results of a compaction's tasks (in plan order) to the
/// dataset `ds` belongs to. Returns the new version and the summed metrics;
/// no results commit nothing.
pub fn commit_compaction(
    ds: &Dataset,
    results: Vec<RewriteResult>,
    options: &CompactionOptions,
    props: &CommitProperties,
) -> Result<Committed<CompactionMetrics>> {
    if results.is_empty() {
        return Ok(Committed::new(ds.checkout(VersionRef::Number(ds.version()))?, CompactionMetrics::default()));
    }
    let all_new: Vec<pb::DataFragment> = results.iter().flat_map(|r| r.new_fragments.iter().cloned()).collect();
    match commit_inner(ds, results, options, props) {
        Ok((version, metrics)) => Ok(Committed::new(ds.checkout(VersionRef::Number(version))?, metrics)),
        Err(e) => {
            // Keep whatever the latest version references (a commit whose
            // success was not reported, e.g. after a storage timeout).
            // If the latest version cannot be read, nothing is removed.
            let Ok(latest) = ds.checkout_ref(None) else { return Err(e) };
            let referenced: HashSet<String> = latest.fragments().iter().flat_map(|f| f.files.iter().map(|d| d.path.clone())).collect();
            let unreferenced: Vec<pb::DataFragment> = all_new.into_iter().filter(|f| !f.files.iter().any(|d| referenced.contains(&d.path))).collect();
            remove_fragment_files(ds, &unreferenced);
            Err(e)
        }
    }
}

/// Commit; returns the Rewrite's version.
fn commit_inner(
    ds: &Dataset,
    results: Vec<RewriteResult>,
    options: &CompactionOptions,
    props: &CommitProperties,
) -> Result<(u64, CompactionMetrics)> {
    let read_version = results[0].read_version;
    if let Some(r) = results.iter().find(|r| r.read_version != read_version) {
        return Err(Error::invalid_input(format!(
            "compaction results were made from different versions ({} and {}); commit the tasks of one plan together",
            read_version, r.read_version
        )));
    }
    let mut seen = HashSet::new();
    for f in results.iter().flat_map(|r| &r.old_fragments) {
        if !seen.insert(f.id) {
            return Err(Error::invalid_input(format!("fragment {} is rewritten by two compaction results", f.id)));
        }
    }
    let mut metrics = CompactionMetrics::default();
    let mut groups: Vec<pb::transaction::RewriteGroup> = Vec::with_capacity(results.len());
    for r in results {
        metrics += r.metrics;
        groups.push(pb::transaction::RewriteGroup { old_fragments: r.old_fragments, new_fragments: r.new_fragments });
    }
    let rewrite = |groups: Vec<pb::transaction::RewriteGroup>, rewritten_indices| {
        new_transaction(read_version, Operation::Rewrite(pb::transaction::Rewrite { groups, rewritten_indices, ..Default::default() }))
    };
    precheck(ds, &rewrite(groups.clone(), Vec::new()))?;

    let n: usize = groups.iter().map(|g| g.new_fragments.len()).sum();
    let n = u32::try_from(n).map_err(|_| Error::invalid_input(format!("a compaction cannot add {n} fragments")))?;
    let reserve = new_transaction(read_version, Operation::ReserveFragments(pb::transaction::ReserveFragments { num_fragments: n }));
    let reserved_at = commit(ds.root(), &reserve, &CommitOptions::default())?;
    let reserved = ds.checkout(VersionRef::Number(reserved_at))?;
    let max =
        reserved.manifest().max_fragment_id.map(u64::from).ok_or_else(|| Error::Internal { what: "reserved fragment ids are missing".into() })?;
    let mut next = max + 1 - u64::from(n);
    for f in groups.iter_mut().flat_map(|g| g.new_fragments.iter_mut()) {
        f.id = next;
        next += 1;
    }

    let old_ds = ds.checkout(VersionRef::Number(read_version))?;
    let (rewritten_indices, frag_reuse) = if options.defer_index_remap {
        (Vec::new(), deferred_reuse(&old_ds, &groups, reserved_at)?)
    } else {
        (remap_indices(&old_ds, &groups, options.index_remapper.as_ref())?, None)
    };
    let version = commit_with_frag_reuse(ds.root(), &rewrite(groups, rewritten_indices), &props.commit_options(), frag_reuse.as_ref())?;
    Ok((version, metrics))
}

/// Plan, run every task (`num_threads` at a time) and commit; the
/// progress callback hears `("rewrite", done, total)` of every finished
/// task, all before the commit, so an error it returns aborts the
/// compaction with nothing committed and the new files removed.
pub fn compact_files(ds: &Arc<Dataset>, options: &CompactionOptions, props: &CommitProperties) -> Result<Committed<CompactionMetrics>> {
    let plan = super::plan::plan_compaction(ds, options)?;
    if plan.tasks.is_empty() {
        return Ok(Committed::new(ds.checkout(VersionRef::Number(ds.version()))?, CompactionMetrics::default()));
    }
    let results = super::run_tasks(ds, &plan, "", &props.progress)?;
    commit_compaction(ds, results, &plan.options, props)
}
