//! HNSW graphs of IVF_HNSW_* indices (`index.idx`), searched per partition.
//!
//! ```text
//! index.idx rows, grouped by partition (IVF offsets/lengths of index.idx),
//! inside a partition by level (level 0 first; level l = rows
//! level_offsets[l] .. level_offsets[l+1] of the partition):
//!   __vector_id: uint32          partition-local node (row of the partition
//!                                in auxiliary.idx), ascending within a level
//!   __neighbors: list<uint32>    neighbours on that level (local ids)
//!   _distance: list<float>       their distances (not needed to search)
//! schema metadata lance:hnsw = JSON list, one JSON string per partition:
//!   {"entry_point": n, "params": {...}, "level_offsets": [0, l0, l0+l1, ...]}
//! ```
//!
//! Search is the usual HNSW descent: greedy from the entry point on the
//! levels above 0, then a beam of width `ef` on level 0, with distances
//! from the partition's storage ([`super::search::Scorer`]). Graphs are
//! read the first time a partition is searched and kept.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::UInt32Type;
use arrow_array::Array;

use super::layout;
use super::search::Scorer;
use crate::error::{Error, Result};
use crate::file::FileReader;

/// One level: the nodes on it (ascending) and their neighbour lists.
#[derive(Debug, Default)]
struct Level {
    ids: Vec<u32>,
    offsets: Vec<u32>,
    neighbors: Vec<u32>,
}

impl Level {
    fn neighbors_of(&self, node: u32) -> &[u32] {
        let i = if self.ids.get(node as usize) == Some(&node) { Some(node as usize) } else { self.ids.binary_search(&node).ok() };
        match i {
            Some(i) => &self.neighbors[self.offsets[i] as usize..self.offsets[i + 1] as usize],
            None => &[],
        }
    }
}

/// The graph of one partition.
#[derive(Debug, Default)]
pub struct Graph {
    entry_point: u32,
    levels: Vec<Level>,
}

#[derive(Clone, Copy, PartialEq)]
struct Near(f32, u32);
impl Eq for Near {}
impl PartialOrd for Near {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Near {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.total_cmp(&o.0).then(self.1.cmp(&o.1))
    }
}

impl Graph {
    /// The `ef` nearest nodes found, `(distance, node)` ascending.
    pub(crate) fn search(&self, scorer: &Scorer<'_>, ef: usize) -> Vec<(f32, usize)> {
        let n = scorer.len();
        if n == 0 || self.levels.is_empty() {
            return Vec::new();
        }
        let mut cur = self.entry_point;
        let mut cur_d = scorer.one(cur as usize);
        for level in self.levels[1..].iter().rev() {
            if level.ids.is_empty() {
                continue;
            }
            loop {
                let mut moved = false;
                for &nb in level.neighbors_of(cur) {
                    let d = scorer.one(nb as usize);
                    if d < cur_d {
                        (cur, cur_d, moved) = (nb, d, true);
                    }
                }
                if !moved {
                    break;
                }
            }
        }
        let base = &self.levels[0];
        let mut visited = vec![false; n];
        visited[cur as usize] = true;
        let mut frontier = BinaryHeap::from([Reverse(Near(cur_d, cur))]);
        let mut best = BinaryHeap::from([Near(cur_d, cur)]);
        while let Some(Reverse(Near(d, node))) = frontier.pop() {
            if best.len() >= ef && best.peek().is_some_and(|w| d > w.0) {
                break;
            }
            for &nb in base.neighbors_of(node) {
                let seen = &mut visited[nb as usize];
                if *seen {
                    continue;
                }
                *seen = true;
                let dn = scorer.one(nb as usize);
                if best.len() < ef || best.peek().is_some_and(|w| dn < w.0) {
                    frontier.push(Reverse(Near(dn, nb)));
                    best.push(Near(dn, nb));
                    if best.len() > ef {
                        best.pop();
                    }
                }
            }
        }
        let mut out: Vec<(f32, usize)> = best.into_iter().map(|Near(d, i)| (d, i as usize)).collect();
        out.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        out
    }
}

/// Per-partition metadata of `lance:hnsw`.
#[derive(Debug)]
struct Meta {
    entry_point: u32,
    level_offsets: Vec<u64>,
}

/// The graphs of an index: `index.idx`, read a partition at a time.
#[derive(Debug)]
pub struct Graphs {
    reader: FileReader,
    ranges: Vec<Range<u64>>,
    metas: Vec<Meta>,
    columns: [usize; 2],
    cache: Vec<OnceLock<Arc<Graph>>>,
}

impl Graphs {
    /// Check `index.idx`'s graph columns and metadata (`ranges` = each
    /// partition's rows, from its IVF message).
    pub fn open(reader: FileReader, ranges: Vec<Range<u64>>) -> Result<Self> {
        let schema = reader.schema().clone();
        let col = |name: &str| schema.index_of(name).map_err(|_| Error::corrupt(format!("HNSW index.idx has no {name} column")));
        let columns = [col(layout::VECTOR_ID_COLUMN)?, col(layout::NEIGHBORS_COLUMN)?];
        let raw = schema.metadata().get(layout::HNSW_METADATA_KEY).ok_or_else(|| Error::corrupt("HNSW index.idx has no lance:hnsw metadata"))?;
        let list: Vec<String> = serde_json::from_str(raw).map_err(|e| Error::corrupt(format!("lance:hnsw is not a JSON list of strings: {e}")))?;
        if list.len() != ranges.len() {
            return Err(Error::corrupt(format!("lance:hnsw describes {} partitions, the IVF model {}", list.len(), ranges.len())));
        }
        let mut metas = Vec::with_capacity(list.len());
        for (p, s) in list.iter().enumerate() {
            let v: serde_json::Value = serde_json::from_str(s).map_err(|e| Error::corrupt(format!("lance:hnsw of partition {p}: {e}")))?;
            let entry_point = v.get("entry_point").and_then(|x| x.as_u64()).and_then(|x| u32::try_from(x).ok());
            let level_offsets: Option<Vec<u64>> =
                v.get("level_offsets").and_then(|x| x.as_array()).and_then(|a| a.iter().map(|x| x.as_u64()).collect());
            let (Some(entry_point), Some(level_offsets)) = (entry_point, level_offsets) else {
                return Err(Error::corrupt(format!("lance:hnsw of partition {p} lacks entry_point or level_offsets")));
            };
            let rows = ranges[p].end - ranges[p].start;
            let ok = level_offsets.first() == Some(&0) && level_offsets.windows(2).all(|w| w[0] <= w[1]) && level_offsets.last() == Some(&rows);
            if !ok {
                return Err(Error::corrupt(format!("lance:hnsw level_offsets {level_offsets:?} of partition {p} do not cover its {rows} rows")));
            }
            metas.push(Meta { entry_point, level_offsets });
        }
        let cache = (0..ranges.len()).map(|_| OnceLock::new()).collect();
        Ok(Graphs { reader, ranges, metas, columns, cache })
    }

    /// The graph of partition `p`, whose storage holds `n` vectors.
    pub fn partition(&self, p: usize, n: usize) -> Result<Arc<Graph>> {
        let slot = self.cache.get(p).ok_or_else(|| Error::invalid_input(format!("no partition {p}")))?;
        if let Some(g) = slot.get() {
            return Ok(g.clone());
        }
        let g = Arc::new(self.load(p, n).map_err(|e| e.in_file(self.reader.path()))?);
        Ok(slot.get_or_init(|| g).clone())
    }

    fn load(&self, p: usize, n: usize) -> Result<Graph> {
        let meta = &self.metas[p];
        let range = self.ranges[p].clone();
        if range.start == range.end {
            if n > 0 {
                return Err(Error::corrupt(format!("HNSW partition {p} has {n} vectors and no graph rows")));
            }
            return Ok(Graph::default());
        }
        if meta.entry_point as usize >= n {
            return Err(Error::corrupt(format!("HNSW entry point {} of partition {p} beyond its {n} vectors", meta.entry_point)));
        }
        let batch = self.reader.read_range(&self.columns, range)?;
        let ids = batch.column(0).as_primitive_opt::<UInt32Type>().ok_or_else(|| Error::corrupt("__vector_id is not uint32"))?;
        let lists = batch.column(1).as_list_opt::<i32>().ok_or_else(|| Error::corrupt("__neighbors is not a list"))?;
        let values = lists.values().as_primitive_opt::<UInt32Type>().ok_or_else(|| Error::corrupt("__neighbors items are not uint32"))?;
        let (ids, offsets, values) = (ids.values(), lists.value_offsets(), values.values());
        let mut levels = Vec::new();
        for w in meta.level_offsets.windows(2) {
            let (a, b) = (w[0] as usize, w[1] as usize);
            let mut level = Level { ids: ids[a..b].to_vec(), offsets: vec![0], neighbors: Vec::new() };
            if level.ids.windows(2).any(|x| x[0] >= x[1]) || level.ids.last().is_some_and(|&x| x as usize >= n) {
                return Err(Error::corrupt(format!("HNSW level ids of partition {p} are not ascending ids below {n}")));
            }
            for r in a..b {
                let (s, e) = (offsets[r], offsets[r + 1]);
                let nbs = usize::try_from(s).ok().zip(usize::try_from(e).ok()).and_then(|(s, e)| values.get(s..e));
                let nbs = nbs.ok_or_else(|| Error::corrupt("__neighbors offsets out of range"))?;
                if nbs.iter().any(|&x| x as usize >= n) {
                    return Err(Error::corrupt(format!("HNSW neighbour beyond the {n} vectors of partition {p}")));
                }
                level.neighbors.extend_from_slice(nbs);
                level.offsets.push(u32::try_from(level.neighbors.len()).map_err(|_| Error::corrupt("HNSW level too large"))?);
            }
            levels.push(level);
        }
        if levels.first().is_none_or(|l| l.ids.len() != n) {
            return Err(Error::corrupt(format!("HNSW level 0 of partition {p} does not hold its {n} vectors")));
        }
        if ids.len() != batch.num_rows() || batch.column(0).null_count() > 0 {
            return Err(Error::corrupt("null __vector_id"));
        }
        Ok(Graph { entry_point: meta.entry_point, levels })
    }
}
