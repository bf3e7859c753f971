//! The compaction planner: which fragments to rewrite together, and into
//! how many fragments.
//!
//! The rules are pylance 14's (checked against its plans on the same
//! datasets, see `tests/test_compaction.py`):
//!
//! 1. A fragment is a *candidate* when `deleted / physical_rows >
//!    materialize_deletions_threshold` (compared as `f32`, only with
//!    `materialize_deletions`; it is then rewritten even alone), or else
//!    when `physical_rows < target_rows_per_fragment` (rewritten only
//!    together with neighbours).
//! 2. Consecutive candidates (manifest order) covered by the same set of
//!    indices form a bin; a non-candidate or a change of index set ends it.
//!    An index covers the fragments of its `fragment_bitmap` (an index
//!    without one covers ids `0 .. max_fragment_id` of the version it was
//!    built on, as pylance reads it).
//! 3. A bin of one fragment that is not rewritten for its deletions does
//!    nothing and is dropped.
//! 4. A bin is cut after the first fragments whose live rows reach the
//!    target, as long as the rest still reaches it too (repeatedly).
//! 5. A task of `R` live rows writes `max(1, R / target)` fragments of
//!    near-equal size, the larger ones first ([`output_sizes`]).

use std::collections::HashMap;
use std::sync::Arc;

use rayon::prelude::*;
use roaring::RoaringBitmap;

use super::remap::{IndexRemapper, ScalarIndexRemapper};
use crate::error::{Error, Result};
use crate::proto::table as pb;
use crate::table::dataset::{Dataset, VersionRef};

/// Options of a compaction (pylance's names and defaults).
#[derive(Debug, Clone)]
pub struct CompactionOptions {
    /// Fragments with fewer physical rows are candidates; outputs aim at
    /// this many rows.
    pub target_rows_per_fragment: u64,
    /// Start a new data file once one holds this many bytes.
    pub max_bytes_per_file: Option<u64>,
    /// Rewrite fragments to drop their deleted rows.
    pub materialize_deletions: bool,
    /// Fraction of deleted rows above which a fragment is rewritten.
    pub materialize_deletions_threshold: f32,
    /// Leave index remapping to a later step (a fragment-reuse index).
    pub defer_index_remap: bool,
    /// Tasks run at once by [`super::compact_files`] (default: the cores).
    pub num_threads: Option<usize>,
    /// Rows per batch read from the old fragments.
    pub batch_size: Option<usize>,
    /// Rewrites the indices of the rewritten fragments for their new row
    /// addresses (unless `defer_index_remap`).
    pub index_remapper: Arc<dyn IndexRemapper>,
}

impl Default for CompactionOptions {
    fn default() -> Self {
        CompactionOptions {
            target_rows_per_fragment: 1024 * 1024,
            max_bytes_per_file: None,
            materialize_deletions: true,
            materialize_deletions_threshold: 0.1,
            defer_index_remap: false,
            num_threads: None,
            batch_size: None,
            index_remapper: Arc::new(ScalarIndexRemapper),
        }
    }
}

/// Prefix of the table config keys that give compaction defaults
/// (`lance.compaction.target_rows_per_fragment`, ...), as in pylance.
pub const CONFIG_PREFIX: &str = "lance.compaction.";

impl CompactionOptions {
    /// The defaults, overridden by the dataset's `lance.compaction.*`
    /// config keys (explicit arguments override these in turn).
    pub fn from_config(config: &HashMap<String, String>) -> Result<Self> {
        let mut o = CompactionOptions::default();
        for (key, value) in config {
            let Some(name) = key.strip_prefix(CONFIG_PREFIX) else { continue };
            o.set(name, value)?;
        }
        Ok(o)
    }

    /// Set one option from its text form (`name` without the prefix);
    /// unknown names are ignored, as pylance does with config keys.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        let bad = || Error::invalid_input(format!("compaction option {name}: cannot parse {value:?}"));
        let int = || value.trim().parse::<u64>().map_err(|_| bad());
        let boolean = || match value.trim().to_ascii_lowercase().as_str() {
            "true" | "1" => Ok(true),
            "false" | "0" => Ok(false),
            _ => Err(bad()),
        };
        match name {
            "target_rows_per_fragment" => self.target_rows_per_fragment = int()?,
            "max_bytes_per_file" => self.max_bytes_per_file = Some(int()?),
            "materialize_deletions" => self.materialize_deletions = boolean()?,
            "materialize_deletions_threshold" => self.materialize_deletions_threshold = value.trim().parse().map_err(|_| bad())?,
            "defer_index_remap" => self.defer_index_remap = boolean()?,
            "batch_size" => self.batch_size = Some(int()? as usize),
            "num_threads" => self.num_threads = Some(int()? as usize),
            _ => {}
        }
        Ok(())
    }

    /// Check the values; a threshold of 1 or more turns materialization off.
    pub fn validated(mut self) -> Result<Self> {
        if self.target_rows_per_fragment == 0 {
            return Err(Error::invalid_input("target_rows_per_fragment must be positive"));
        }
        if self.max_bytes_per_file == Some(0) {
            return Err(Error::invalid_input("max_bytes_per_file must be positive"));
        }
        if self.materialize_deletions_threshold.is_nan() {
            return Err(Error::invalid_input("materialize_deletions_threshold must be a number"));
        }
        if self.batch_size == Some(0) {
            return Err(Error::invalid_input("batch_size must be positive"));
        }
        if self.num_threads == Some(0) {
            return Err(Error::invalid_input("num_threads must be positive"));
        }
        if self.materialize_deletions && self.materialize_deletions_threshold >= 1.0 {
            self.materialize_deletions = false;
        }
        Ok(self)
    }
}

/// One group of consecutive fragments rewritten together.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionTask {
    /// The fragments, as the planned version lists them.
    pub fragments: Vec<pb::DataFragment>,
}

/// What to rewrite, read at one version.
#[derive(Debug, Clone)]
pub struct CompactionPlan {
    /// The version planned on; tasks read it and the commit starts from it.
    pub read_version: u64,
    /// The tasks, in manifest order.
    pub tasks: Vec<CompactionTask>,
    /// The options the plan was made with.
    pub options: CompactionOptions,
}

/// Why a fragment is a candidate.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Candidacy {
    /// Too small: rewritten only with neighbours.
    WithNeighbours,
    /// Too many deletions: rewritten even alone.
    Itself,
}

struct Bin {
    fragments: Vec<pb::DataFragment>,
    candidacy: Vec<Candidacy>,
    live_rows: Vec<u64>,
    indices: Vec<usize>,
}

impl Bin {
    fn is_noop(&self) -> bool {
        self.fragments.len() == 1 && self.candidacy[0] == Candidacy::WithNeighbours
    }

    /// Cut after the first fragments reaching `target` live rows while the
    /// rest reaches it too.
    fn split_for_size(self, target: u64) -> Vec<Vec<pb::DataFragment>> {
        let mut out = Vec::new();
        let mut frags = self.fragments;
        let mut rows = self.live_rows;
        loop {
            let (mut n, mut sum) = (0, 0u64);
            while sum < target && n < rows.len() {
                sum += rows[n];
                n += 1;
            }
            if rows[n..].iter().sum::<u64>() >= target {
                out.push(frags.drain(..n).collect());
                rows.drain(..n);
            } else {
                out.push(frags);
                return out;
            }
        }
    }
}

/// The fragment ids each index of the version covers.
fn index_coverage(ds: &Dataset) -> Result<Vec<RoaringBitmap>> {
    let Some(section) = ds.manifest_file().index_section()? else { return Ok(Vec::new()) };
    section
        .indices
        .iter()
        .map(|idx| {
            if !idx.fragment_bitmap.is_empty() {
                return RoaringBitmap::deserialize_from(&idx.fragment_bitmap[..])
                    .map_err(|e| Error::corrupt(format!("fragment bitmap of index {:?}: {e}", idx.name)).with_source(e));
            }
            let at = ds.checkout(VersionRef::Number(idx.dataset_version))?;
            Ok((0..at.manifest().max_fragment_id.unwrap_or(0)).collect())
        })
        .collect()
}

/// `(physical rows, deleted rows)` of every fragment.
fn fragment_counts(ds: &Dataset) -> Result<Vec<(u64, u64)>> {
    crate::process::install(|| {
        (0..ds.fragments().len())
            .into_par_iter()
            .map(|i| {
                let physical = ds.physical_rows(i)?;
                Ok((physical, physical.saturating_sub(ds.live_rows(i)?)))
            })
            .collect()
    })
}

/// Plan a compaction of `ds`'s version (see the module docs).
pub fn plan_compaction(ds: &Dataset, options: &CompactionOptions) -> Result<CompactionPlan> {
    let opts = options.clone().validated()?;
    if opts.defer_index_remap && ds.has_stable_row_ids() {
        // As pylance 14, which records no row moves for stable row ids.
        return Err(Error::unsupported(format!(
            "cannot compact {} with defer_index_remap=True: the dataset uses stable row ids, whose moves a fragment \
             reuse index does not record; compact without deferring (indices are remapped in the same commit)",
            ds.uri()
        )));
    }
    let coverage = index_coverage(ds)?;
    let counts = fragment_counts(ds)?;
    let target = opts.target_rows_per_fragment;
    let mut bins: Vec<Bin> = Vec::new();
    let mut current: Option<Bin> = None;
    for (frag, &(physical, deleted)) in ds.fragments().iter().zip(&counts) {
        let ratio = if physical > 0 { deleted as f32 / physical as f32 } else { 0.0 };
        let candidacy = if opts.materialize_deletions && ratio > opts.materialize_deletions_threshold {
            Some(Candidacy::Itself)
        } else if physical < target {
            Some(Candidacy::WithNeighbours)
        } else {
            None
        };
        let indices: Vec<usize> = coverage.iter().enumerate().filter(|(_, b)| b.contains(frag.id as u32)).map(|(i, _)| i).collect();
        let Some(candidacy) = candidacy else {
            bins.extend(current.take());
            continue;
        };
        match &mut current {
            Some(bin) if bin.indices == indices => {
                bin.fragments.push(frag.clone());
                bin.candidacy.push(candidacy);
                bin.live_rows.push(physical - deleted);
            }
            _ => {
                bins.extend(current.take());
                current = Some(Bin { fragments: vec![frag.clone()], candidacy: vec![candidacy], live_rows: vec![physical - deleted], indices });
            }
        }
    }
    bins.extend(current);
    let tasks =
        bins.into_iter().filter(|b| !b.is_noop()).flat_map(|b| b.split_for_size(target)).map(|fragments| CompactionTask { fragments }).collect();
    Ok(CompactionPlan { read_version: ds.version(), tasks, options: opts })
}

/// Row counts of the fragments `live` rows are rewritten into:
/// `max(1, live / target)` near-equal parts, larger first (none for 0 rows).
pub fn output_sizes(live: u64, target: u64) -> Vec<u64> {
    if live == 0 {
        return Vec::new();
    }
    let n = (live / target.max(1)).max(1);
    let (base, extra) = (live / n, live % n);
    (0..n).map(|i| base + u64::from(i < extra)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_match_pylance() {
        // observed with pylance 14.0.2
        assert_eq!(output_sizes(7, 2), vec![3, 2, 2]);
        assert_eq!(output_sizes(1000, 300), vec![334, 333, 333]);
        assert_eq!(output_sizes(801, 300), vec![401, 400]);
        assert_eq!(output_sizes(300, 250), vec![300]);
        assert_eq!(output_sizes(810, 100), vec![102, 102, 101, 101, 101, 101, 101, 101]);
        assert_eq!(output_sizes(5, 100), vec![5]);
        assert!(output_sizes(0, 100).is_empty());
    }

    fn bin(rows: &[u64], candidacy: Candidacy) -> Bin {
        let fragments = (0..rows.len() as u64).map(|id| pb::DataFragment { id, ..Default::default() }).collect();
        Bin { fragments, candidacy: vec![candidacy; rows.len()], live_rows: rows.to_vec(), indices: vec![] }
    }

    #[test]
    fn bins_split_at_target() {
        let ids = |v: Vec<Vec<pb::DataFragment>>| v.into_iter().map(|b| b.into_iter().map(|f| f.id).collect::<Vec<_>>()).collect::<Vec<_>>();
        assert_eq!(ids(bin(&[100; 10], Candidacy::WithNeighbours).split_for_size(250)), vec![vec![0, 1, 2], vec![3, 4, 5], vec![6, 7, 8, 9]]);
        assert_eq!(ids(bin(&[100, 100, 700, 50, 60], Candidacy::WithNeighbours).split_for_size(300)), vec![vec![0, 1, 2, 3, 4]]);
        assert!(bin(&[5], Candidacy::WithNeighbours).is_noop());
        assert!(!bin(&[5], Candidacy::Itself).is_noop());
    }

    #[test]
    fn options_from_config() {
        let mut c = HashMap::new();
        c.insert("lance.compaction.target_rows_per_fragment".to_string(), "500".to_string());
        c.insert("lance.compaction.materialize_deletions".to_string(), "false".to_string());
        c.insert("other".to_string(), "x".to_string());
        let o = CompactionOptions::from_config(&c).unwrap();
        assert_eq!((o.target_rows_per_fragment, o.materialize_deletions), (500, false));
        c.insert("lance.compaction.target_rows_per_fragment".to_string(), "lots".to_string());
        assert!(CompactionOptions::from_config(&c).is_err());
        let o = CompactionOptions { materialize_deletions_threshold: 1.0, ..Default::default() }.validated().unwrap();
        assert!(!o.materialize_deletions);
        assert!(CompactionOptions { target_rows_per_fragment: 0, ..Default::default() }.validated().is_err());
    }
}
