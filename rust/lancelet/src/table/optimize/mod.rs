//! Compaction: rewriting small fragments, and fragments with many deleted
//! rows, into fewer, full ones — as pylance 14 does, so either library
//! reads and keeps writing what the other compacted.
//!
//! A compaction is planned on one version ([`plan`]), its tasks run
//! independently — here on threads, or as Spark tasks — each writing new
//! data files ([`execute`]), and one commit makes them visible
//! ([`commit`]). On disk it is two versions, both with the plan's
//! `read_version`:
//!
//! ```text
//! v+1  ReserveFragments{num_fragments: n}      max_fragment_id += n
//! v+2  Rewrite{groups: [{old_fragments, new_fragments}, ...],
//!              rewritten_indices: [...]}        old fragments out, new ones
//!                                               (reserved ids) after the rest
//! ```
//!
//! New fragments hold the live rows of their group's old fragments in
//! order (deleted rows and dropped columns are gone), one data file each;
//! with stable row ids they keep the rows' ids and versions
//! ([`sequences`]). A plan with no task commits nothing. How the two
//! transactions change manifests and index sections, and which concurrent
//! commits they survive, is in [`crate::table::apply_rewrite`]; index remapping plugs in through
//! [`remap`].

pub mod commit;
pub mod execute;
pub mod plan;
pub mod remap;
pub mod sequences;
#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use prost::Message;

use crate::error::{Error, Result};
use crate::proto::table as pb;
use crate::table::dataset::{Dataset, VersionRef};
use crate::table::ops::{report, Progress};

pub use commit::{commit_compaction, compact_files};
pub use execute::{execute_task, CompactionMetrics, RewriteResult};
pub use plan::{output_sizes, plan_compaction, CompactionOptions, CompactionPlan, CompactionTask};

/// Decode fragments passed around as encoded `DataFragment` protobufs
/// (compaction tasks and results travel between processes that way).
pub fn decode_fragments(frags: &[Vec<u8>]) -> Result<Vec<pb::DataFragment>> {
    frags
        .iter()
        .enumerate()
        .map(|(i, b)| {
            pb::DataFragment::decode(b.as_slice())
                .map_err(|e| Error::invalid_input(format!("fragment #{i} is not an encoded DataFragment: {e}")).with_source(e))
        })
        .collect()
}

/// Encode fragments for [`decode_fragments`].
pub fn encode_fragments(frags: &[pb::DataFragment]) -> Vec<Vec<u8>> {
    frags.iter().map(|f| f.encode_to_vec()).collect()
}

/// Run the plan's tasks on `ds` (checked out at the plan's version when it
/// is not), `num_threads` at a time, reporting `("rewrite", done, total)`.
/// If a task fails, or `progress` returns an error, no further task starts
/// and the files every task wrote are removed.
pub fn run_tasks(ds: &Arc<Dataset>, plan: &CompactionPlan, name_prefix: &str, progress: &Option<Progress>) -> Result<Vec<RewriteResult>> {
    let ds = if ds.version() == plan.read_version { ds.clone() } else { Arc::new(ds.checkout(VersionRef::Number(plan.read_version))?) };
    let total = plan.tasks.len();
    let threads =
        plan.options.num_threads.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)).clamp(1, total.max(1));
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<RewriteResult>>>> = Mutex::new((0..total).map(|_| None).collect());
    report(progress, "rewrite", 0, total as u64)?;
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    return;
                }
                let r = execute_task(&ds, &plan.tasks[i], &plan.options, name_prefix).and_then(|res| {
                    let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                    match report(progress, "rewrite", d as u64, total as u64) {
                        Ok(()) => Ok(res),
                        Err(e) => {
                            commit::remove_fragment_files(&ds, &res.new_fragments);
                            Err(e)
                        }
                    }
                });
                let failed = r.is_err();
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
                if failed {
                    // Stop handing out tasks; the others finish what they do.
                    next.store(total, Ordering::Relaxed);
                    return;
                }
            });
        }
    });
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    if results.iter().all(|r| matches!(r, Some(Ok(_)))) {
        return Ok(results.into_iter().map(|r| r.expect("checked").expect("checked")).collect());
    }
    let mut first_err = None;
    for r in results.into_iter().flatten() {
        match r {
            Ok(res) => commit::remove_fragment_files(&ds, &res.new_fragments),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    Err(first_err.expect("a task failed"))
}
