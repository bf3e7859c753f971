//! Table operations that change existing rows, one file each. Each reads
//! the dataset at a version, writes new files, builds one transaction and
//! hands it to the commit loop ([`crate::table::commit`]); what happens
//! when another writer committed meanwhile is decided by the one conflict
//! table ([`crate::table::conflict`]), and [`retry`] re-runs an operation
//! on the latest version when that table says so.
//!
//! * [`branch`]: create, list and delete branches (a `Clone` first version);
//! * [`delete`]: delete rows matching a predicate (`Delete`);
//! * [`update`]: set columns to SQL values where a predicate holds
//!   (`Update`, rows rewritten);
//! * [`merge_insert`]: upsert / delete by key columns (`Update`);
//! * [`merge_staged`]: a distributed merge_insert: tasks decide and write
//!   the rows of a join, the driver commits one `Update`;
//! * [`merge_deletions`]: its deletion files, one task per touched fragment;
//! * [`retry`]: the re-run loop (`conflict_retries`, `retry_timeout`);
//! * [`index`]: create / replace / optimize / drop scalar indices (`CreateIndex`);
//! * [`inverted_index`]: build INVERTED (full-text search) indices (`CreateIndex`);
//! * [`vector_index`]: build IVF_FLAT / IVF_PQ / IVF_SQ vector indices (`CreateIndex`).
//! * [`vector_optimize`]: vector index deltas, merges, retraining and compaction remaps.

use crate::error::Result;

pub mod branch;
pub mod delete;
pub mod index;
pub mod inverted_index;
pub(crate) mod keys;
pub mod merge_deletions;
pub mod merge_insert;
pub mod merge_staged;
pub mod retry;
mod rewrite;
pub mod update;
pub mod vector_index;
pub mod vector_optimize;

#[cfg(test)]
mod tests;

pub use crate::table::properties::{report, Progress};

/// Reports fragments of a scan as done while the scan moves past them
/// (the scan returns fragments in order; a fragment is done once a row of a
/// later one arrives).
pub(crate) struct FragmentProgress {
    stage: &'static str,
    position: std::collections::HashMap<u64, u64>,
    total: u64,
    done: u64,
}

impl FragmentProgress {
    /// Track the fragments of `ds` (in manifest order).
    pub(crate) fn new(stage: &'static str, ds: &crate::table::Dataset, progress: &Option<Progress>) -> Result<Self> {
        let position = ds.fragments().iter().enumerate().map(|(i, f)| (f.id, i as u64)).collect();
        let total = ds.fragments().len() as u64;
        report(progress, stage, 0, total)?;
        Ok(FragmentProgress { stage, position, total, done: 0 })
    }

    /// A row of fragment `id` arrived.
    pub(crate) fn at(&mut self, id: u64, progress: &Option<Progress>) -> Result<()> {
        let pos = self.position.get(&id).copied().unwrap_or(0);
        if pos > self.done {
            self.done = pos;
            report(progress, self.stage, pos, self.total)?;
        }
        Ok(())
    }

    /// The scan ended.
    pub(crate) fn finish(&mut self, progress: &Option<Progress>) -> Result<()> {
        if self.done < self.total {
            self.done = self.total;
            report(progress, self.stage, self.total, self.total)?;
        }
        Ok(())
    }
}
