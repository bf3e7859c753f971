//! The scalar indices of one dataset version, ready for queries: which
//! index serves which column, which fragments it covers, and where its
//! answers land in each fragment.
//!
//! **Coverage rule.** An index answers only for the fragments in its
//! `fragment_bitmap` (after the moves recorded by a `__lance_frag_reuse`
//! index, see [`crate::index::frag_reuse`]). Of a covered fragment, the rows
//! an index returns are kept only if they still sit there and are not
//! deleted: row addresses name the fragment and offset directly; stable row
//! ids (BITMAP / LABEL_LIST on datasets with stable row ids) are looked up
//! in the fragment's row id sequence. Fragments an index does not cover
//! (appended later, or holding rows an update moved) are scanned with the
//! filter, so results always equal an unindexed scan.

use std::sync::{Arc, Mutex};

use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::index::frag_reuse::{self, FragReuse};
use crate::index::meta::IndexInfo;
use crate::index::rowset::{Part, RowSet};
use crate::index::{IndexKind, IndexQuery, ScalarIndex};
use crate::io::Storage;
use crate::table::dataset::Dataset;

/// One index (segment) of the dataset that queries can use.
#[derive(Debug)]
pub struct UsableIndex {
    /// Its manifest entry.
    pub info: IndexInfo,
    /// The indexed top-level column.
    pub column: String,
    /// Its kind.
    pub kind: IndexKind,
    /// Fragments it answers for (after deferred remaps).
    pub coverage: RoaringBitmap,
    /// Its row sets hold stable row ids (else row addresses).
    pub keyed_by_row_id: bool,
    reuse: Option<Arc<FragReuse>>,
    /// Fragment ids of the dataset version (to spot stale addresses).
    present: Arc<RoaringBitmap>,
    /// A search found addresses the index cannot hold if it were current.
    stale: std::sync::atomic::AtomicBool,
    dir: Storage,
    opened: Mutex<Option<Arc<dyn ScalarIndex>>>,
}

impl UsableIndex {
    /// The opened index (opened once, and cached process-wide).
    pub fn index(&self) -> Result<Arc<dyn ScalarIndex>> {
        let mut slot = self.opened.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = slot.as_ref() {
            return Ok(i.clone());
        }
        let i = crate::index::open_cached(self.kind, &self.dir)
            .map_err(|e| e.context(format!("index {:?} ({}) of column {:?}", self.info.name(), self.info.uuid, self.column)))?;
        *slot = Some(i.clone());
        Ok(i)
    }

    /// The rows matching `query`, with addresses moved by deferred remaps.
    pub fn search(&self, query: &IndexQuery) -> Result<RowSet> {
        let set = self.index()?.search(query)?;
        match &self.reuse {
            Some(r) if !self.keyed_by_row_id => {
                let set = set.map(|a| r.remap(a), |frag| r.moves(frag as u64))?;
                // An address that lands neither in a fragment the index
                // covers nor in any fragment of the version means the index
                // was rewritten without the deferred moves (pylance 14's own
                // compaction after `defer_index_remap=True` does that to
                // BTREE indices): its answers cannot be trusted, so it is
                // treated as covering nothing (the fragments are scanned).
                if set.parts().any(|(hi, _)| !self.coverage.contains(hi) && !self.present.contains(hi)) {
                    self.stale.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                Ok(set)
            }
            _ => Ok(set),
        }
    }

    /// Whether a search showed the index holds addresses no current
    /// fragment has (see [`Self::search`]); its answers are then unused.
    pub fn is_stale(&self) -> bool {
        self.stale.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The offsets of fragment `i` of `ds` in `set` (a result of this index).
    pub fn offsets(&self, ds: &Dataset, i: usize, set: &RowSet) -> Result<RoaringBitmap> {
        let f = &ds.fragments()[i];
        let rows = ds.physical_rows(i)?;
        if self.keyed_by_row_id {
            let seq = ds
                .row_id_sequence(i)?
                .ok_or_else(|| Error::corrupt(format!("fragment {} has no row id sequence but index {:?} holds row ids", f.id, self.info.name())))?;
            let mut out = RoaringBitmap::new();
            #[allow(clippy::single_range_in_vec_init)]
            let all = [0..rows];
            for (id, pos, len) in seq.runs(&all) {
                set.values_in(id, id + len, |v| {
                    out.insert((pos + (v - id)) as u32);
                });
            }
            return Ok(out);
        }
        let hi = u32::try_from(f.id).map_err(|_| Error::corrupt(format!("fragment id {} does not fit a row address", f.id)))?;
        let mut out = match set.part(hi) {
            None => RoaringBitmap::new(),
            Some(Part::Full) => {
                let mut b = RoaringBitmap::new();
                b.insert_range(0..rows as u32);
                b
            }
            Some(Part::Some(b)) => b.clone(),
        };
        if out.max().is_some_and(|m| m as u64 >= rows) {
            out.remove_range(rows as u32..);
        }
        Ok(out)
    }
}

/// What a filter's indices say about each fragment of a scan (see
/// [`crate::expr::index`]).
pub trait IndexSelection: Send + Sync + std::fmt::Debug {
    /// Rows of fragment `i` of `ds` that may / surely match (`None`: the
    /// indices say nothing about this fragment; scan it whole).
    fn select(&self, ds: &Dataset, i: usize) -> Result<Option<crate::file::stats::Pruned>>;
    /// pylance's `ScalarIndexQuery` text, e.g. `[id = 5]@id_idx(BTree)`.
    fn describe(&self) -> String;
    /// Whether the indices answer the whole filter (nothing is left to
    /// evaluate on the rows they select, where they cover a fragment).
    fn exact(&self) -> bool;
    /// Whether an index used covers fragment `id`.
    fn covers(&self, id: u64) -> bool;
}

/// The usable indices of a dataset version.
#[derive(Debug, Default)]
pub struct DatasetIndices {
    /// Every usable segment, in manifest order.
    pub indices: Vec<Arc<UsableIndex>>,
}

impl DatasetIndices {
    /// Read the index section of `ds` and prepare every index lancelet can
    /// use: a known kind on one top-level column whose type it can take.
    pub fn load(ds: &Dataset) -> Result<Self> {
        let infos = ds.manifest_file().indices()?;
        if infos.is_empty() {
            return Ok(DatasetIndices::default());
        }
        let reuse = match infos.iter().find(|i| i.is_system() && i.name() == frag_reuse::NAME) {
            Some(r) => {
                let details = r.pb.index_details.as_ref().ok_or_else(|| Error::corrupt("the fragment reuse index has no details"))?;
                Some(Arc::new(FragReuse::from_details(details, &ds.index_dir(&r.pb)?)?))
            }
            None => None,
        };
        let stable = ds.has_stable_row_ids();
        let present: Arc<RoaringBitmap> = Arc::new(ds.fragments().iter().filter_map(|f| u32::try_from(f.id).ok()).collect());
        let mut out = Vec::new();
        for info in infos {
            let Some(kind) = info.kind else { continue };
            let [field_id] = info.pb.fields[..] else { continue };
            let Some(field) = ds.lance_schema().fields.iter().find(|f| f.id == field_id) else { continue };
            if kind.check_type(field.arrow.name(), field.arrow.data_type()).is_err() {
                continue;
            }
            let keyed_by_row_id = kind.keyed_by_row_id(stable);
            let coverage = match &reuse {
                Some(r) => r.remap_coverage(&info.fragment_bitmap, !keyed_by_row_id),
                None => info.fragment_bitmap.clone(),
            };
            let dir = ds.index_dir(&info.pb)?;
            out.push(Arc::new(UsableIndex {
                column: field.arrow.name().clone(),
                kind,
                coverage,
                keyed_by_row_id,
                reuse: reuse.clone(),
                present: present.clone(),
                stale: std::sync::atomic::AtomicBool::new(false),
                dir,
                opened: Mutex::new(None),
                info,
            }));
        }
        Ok(DatasetIndices { indices: out })
    }

    /// The segments that answer `query` on `column`, widest coverage first.
    pub fn for_query(&self, column: &str, query: &IndexQuery) -> Vec<Arc<UsableIndex>> {
        let mut v: Vec<Arc<UsableIndex>> = self.indices.iter().filter(|i| i.column == column && query.answered_by(i.kind)).cloned().collect();
        // BTREE answers ranges from sorted pages; for the rest prefer the
        // index covering most fragments.
        v.sort_by_key(|i| std::cmp::Reverse(i.coverage.len()));
        v
    }
}
