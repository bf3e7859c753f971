//! Searching a column's vector index, as pylance 14 does (§11 of
//! docs/research/vector-index.md).
//!
//! * The index (all its segments: the original and its deltas) is asked
//!   for `k` candidates per query, `k * refine_factor` with a refine
//!   factor; with a prefilter, or when covered fragments have deletions or
//!   are gone, it gets the allowed row ids (as it stores them: addresses,
//!   or stable row ids) and probes until it has enough of them.
//! * With `refine_factor`, the candidates' vectors are read and the exact
//!   distances re-rank them (then `distance_range` applies again, on the
//!   exact distances).
//! * Fragments the index does not cover (appended since) are searched
//!   flat, unless `fast_search`: the index's candidates (`k`, or the top
//!   `k` of the refined `k * refine_factor`) get exact distances too and
//!   the union's top `k` is kept, so a poor approximate candidate is not
//!   replaced by a better one the index missed (what pylance does).
//!
//! Nothing here falls back to a flat search when the index cannot be opened:
//! the error is reported, since a silent flat search would change results
//! and plans.

use std::sync::Arc;

use prost::Message;
use roaring::RoaringBitmap;

use super::flat::{self, in_range, Kernel};
use super::{ElementType, Hit, NearestScan, VectorColumn};
use crate::error::{Error, Result};
use crate::index::meta::IndexInfo;
use crate::index::vector::{AllowedRows, AnnQuery, DistanceType, VectorIndex};
use crate::proto::type_url::VECTOR_INDEX_DETAILS;
use crate::table::dataset::Dataset;
use crate::table::scan::{ScanOptions, Scanner};

/// The vector index of a column, as the manifest describes it.
#[derive(Debug, Clone)]
pub struct IndexRoute {
    /// The index name.
    pub name: String,
    /// Its metric.
    pub metric: DistanceType,
    /// Its segments (entries of the index section with this name).
    pub segments: Vec<IndexInfo>,
    /// Fragments covered by any segment.
    pub covered: RoaringBitmap,
}

impl IndexRoute {
    /// Open every segment.
    pub fn open(&self, ds: &Dataset) -> Result<Vec<Arc<dyn VectorIndex>>> {
        self.segments
            .iter()
            .map(|s| {
                let dir = ds.index_dir(&s.pb)?;
                crate::index::vector::open::open(&dir, &s.pb).map_err(|e| e.context(format!("vector index {:?} ({})", s.name(), s.uuid)))
            })
            .collect()
    }

    /// The first segment's uuid (plans print it).
    pub fn uuid(&self) -> &str {
        self.segments.first().map_or("", |s| s.uuid.as_str())
    }
}

/// The vector index on `column`, if any (segments that cover no fragment,
/// such as pylance's empty index of a too-small table, are left out; none
/// left means none).
pub fn find_index(ds: &Dataset, column: &str) -> Result<Option<IndexRoute>> {
    let Some(field) = ds.project(Some(&[column.to_string()]))?.into_iter().next() else { return Ok(None) };
    let mut found: Option<IndexRoute> = None;
    for info in ds.manifest_file().indices()? {
        if info.type_url() != VECTOR_INDEX_DETAILS || info.pb.fields.first() != Some(&field.id) || info.fragment_bitmap.is_empty() {
            continue;
        }
        if found.as_ref().is_some_and(|f| f.name != info.name()) {
            continue;
        }
        let details = info.pb.index_details.as_ref().map(|d| d.value.as_slice()).unwrap_or_default();
        let details = crate::proto::index::VectorIndexDetails::decode(details).map_err(Error::bad_protobuf)?;
        let metric = DistanceType::from_pb(details.metric_type)?;
        let r =
            found.get_or_insert_with(|| IndexRoute { name: info.name().to_string(), metric, segments: Vec::new(), covered: RoaringBitmap::new() });
        r.covered |= &info.fragment_bitmap;
        r.segments.push(info);
    }
    Ok(found)
}

/// Fragment ids of the dataset the index does not cover.
pub fn unindexed(ds: &Dataset, r: &IndexRoute) -> Vec<u64> {
    ds.fragments().iter().map(|f| f.id).filter(|&id| u32::try_from(id).map_or(true, |i| !r.covered.contains(i))).collect()
}

/// The rows the index may return: live rows of covered fragments passing
/// the prefilter; `None` when that is every row the index holds.
fn allowed_rows(ds: &Arc<Dataset>, s: &NearestScan, r: &IndexRoute) -> Result<Option<AllowedRows>> {
    let covered: Vec<u64> = ds.fragments().iter().map(|f| f.id).filter(|&id| u32::try_from(id).is_ok_and(|i| r.covered.contains(i))).collect();
    let prefilter = if s.prefilter { s.filter.clone() } else { None };
    let deletions = ds.fragments().iter().any(|f| f.deletion_file.is_some() && u32::try_from(f.id).is_ok_and(|i| r.covered.contains(i)));
    let gone = r.covered.len() as usize != covered.len();
    if prefilter.is_none() && !deletions && !gone {
        return Ok(None);
    }
    let opts = ScanOptions { columns: Some(Vec::new()), filter: prefilter, with_row_id: true, fragments: Some(covered), ..Default::default() };
    let mut allowed = AllowedRows::new();
    for b in Scanner::new(ds.clone(), opts)?.stream()? {
        let b = b?;
        let ids = b.column(0).as_any().downcast_ref::<arrow_array::UInt64Array>().ok_or_else(|| Error::internal("_rowid is not uint64"))?;
        allowed.extend(ids.values().iter().copied());
    }
    Ok(Some(allowed))
}

/// Row ids → addresses (identity without stable row ids); rows not found
/// (deleted) are dropped.
fn with_addresses(ds: &Dataset, rows: Vec<(u64, f32)>) -> Result<Vec<Hit>> {
    if !ds.has_stable_row_ids() {
        return Ok(rows.into_iter().map(|(id, d)| Hit { distance: d, row_id: id, addr: id }).collect());
    }
    let index = ds.row_id_index()?;
    Ok(rows.into_iter().filter_map(|(id, d)| index.get(id).map(|a| Hit { distance: d, row_id: id, addr: a })).collect())
}

/// Replace the hits' distances by exact ones (reading their vectors).
fn exact(ds: &Arc<Dataset>, column: &str, vc: &VectorColumn, kernel: &Kernel, q: usize, hits: &mut [Hit]) -> Result<()> {
    if hits.is_empty() {
        return Ok(());
    }
    let addrs: Vec<u64> = hits.iter().map(|h| h.addr).collect();
    let batch = ds.take_addresses(&addrs, Some(&[column.to_string()]))?;
    let ids = arrow_array::UInt64Array::from(hits.iter().map(|h| h.row_id).collect::<Vec<_>>());
    let with_ids = arrow_array::RecordBatch::try_from_iter([
        ("v", batch.column(0).clone()),
        ("i", Arc::new(ids.clone()) as arrow_array::ArrayRef),
        ("a", Arc::new(arrow_array::UInt64Array::from(addrs)) as arrow_array::ArrayRef),
    ])
    .map_err(Error::internal_arrow)?;
    // One query's distances for every row: reuse the batch kernel with k = all.
    let one = Kernel::single(kernel, q);
    let heaps = flat::batch_topk(&with_ids, vc, &one, hits.len(), 1, (None, None))?;
    let mut exact: std::collections::HashMap<u64, f32> = std::collections::HashMap::new();
    for h in heaps.into_iter().next().map(|h| h.into_sorted()).unwrap_or_default() {
        exact.insert(h.addr, h.distance);
    }
    for h in hits.iter_mut() {
        h.distance = exact.get(&h.addr).copied().unwrap_or(f32::NAN);
    }
    Ok(())
}

/// Search the index segments (and the unindexed fragments) for every query.
pub fn search(ds: &Arc<Dataset>, s: &NearestScan, vc: &VectorColumn, r: &IndexRoute, index: &[Arc<dyn VectorIndex>]) -> Result<Vec<Vec<Hit>>> {
    let n = &s.nearest;
    if vc.element == ElementType::U8 && r.metric != DistanceType::Hamming {
        return Err(Error::invalid_input(format!("uint8 vector column {} supports only the hamming metric", n.column)));
    }
    let rest = if s.fast_search { Vec::new() } else { unindexed(ds, r) };
    let merge_flat = !rest.is_empty();
    let refine = n.refine_factor;
    let k_index = n.k * refine.map_or(1, |f| f.max(1) as usize);
    let allowed = allowed_rows(ds, s, r)?;
    let kernel = Kernel::new(r.metric, vc.dim, &flat::column_queries(&n.queries, vc.element));
    let flat_hits = if merge_flat {
        let prefilter = if s.prefilter { s.filter.clone() } else { None };
        flat::search(ds, n, vc, r.metric, prefilter, Some(rest))?
    } else {
        vec![Vec::new(); n.num_queries]
    };
    let mut out = Vec::with_capacity(n.num_queries);
    for (q, flat_q) in flat_hits.into_iter().enumerate() {
        let query = AnnQuery {
            vector: n.queries[q * vc.dim..(q + 1) * vc.dim].to_vec(),
            k: k_index,
            probes: n.probes,
            ef: n.ef,
            distance_range: n.distance_range,
        };
        let mut rows: Vec<(u64, f32)> = Vec::new();
        for ix in index {
            rows.extend(ix.search(&query, allowed.as_ref())?.rows);
        }
        rows.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        rows.truncate(k_index);
        let mut hits = with_addresses(ds, rows)?;
        if merge_flat || refine.is_some() {
            exact(ds, &n.column, vc, &kernel, q, &mut hits)?;
            hits.retain(|h| in_range(h.distance, n.distance_range));
            hits.extend(flat_q);
            hits.sort_by(|a, b| a.cmp_key(b));
            hits.dedup_by_key(|h| h.addr);
            hits.truncate(n.k);
        }
        out.push(hits);
    }
    Ok(out)
}
