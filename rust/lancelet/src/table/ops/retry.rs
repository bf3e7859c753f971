//! Re-running an operation when a concurrent commit changed what it read.
//!
//! update, merge_insert and delete compute their changes from the rows of
//! one version. When the conflict table says a concurrent commit makes that
//! stale ([`Outcome::Rerun`]), the operation runs again on the latest
//! version, as pylance's `execute_with_retry`: at most `conflict_retries`
//! re-runs (so `conflict_retries + 1` runs), none started once
//! `retry_timeout` has passed since the first run began; then
//! `Error::Conflict` (pylance's "too much write contention"). The files
//! a discarded run wrote are removed (best effort): nothing refers to them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::proto::table as pb;
use crate::table::commit::{commit_or_rerun, remove_files, CommitOptions, Outcome};
use crate::table::conflict::AffectedRows;
use crate::table::dataset::{Dataset, VersionRef};
use crate::table::properties::{CommitProperties, Committed};

pub use crate::table::properties::RetryPolicy;

/// What one run of an operation prepared.
pub struct Prepared<T> {
    /// The transaction to commit (`None`: nothing to commit).
    pub txn: Option<pb::Transaction>,
    /// Rows a Delete/Update removes from existing fragments (lets it be
    /// rebased over concurrent deletes of other rows of those fragments).
    pub affected: Option<AffectedRows>,
    /// Files the run wrote, relative to the dataset root (removed if the
    /// run is discarded).
    pub written: Vec<String>,
    /// The operation's result (counts).
    pub result: T,
}

/// Run `op` on `ds` and commit what it prepares (with `props`'
/// transaction properties), re-running it on the latest version as
/// `props.retry` allows. Returns the new version, opened, and the result
/// of the run that was committed.
pub fn run_with_retries<T>(
    ds: &Arc<Dataset>,
    props: &CommitProperties,
    mut op: impl FnMut(&Arc<Dataset>) -> Result<Prepared<T>>,
) -> Result<Committed<T>> {
    let policy = &props.retry;
    let start = Instant::now();
    let mut current = ds.clone();
    let mut reruns = 0u32;
    loop {
        let p = op(&current)?;
        let Some(txn) = p.txn else {
            return Ok(Committed::new(current.checkout(VersionRef::Number(current.version()))?, p.result));
        };
        let opts = CommitOptions { affected_rows: p.affected.map(Arc::new), owned_files: p.written.clone(), ..props.commit_options() };
        let outcome = commit_or_rerun(current.root(), &txn, &opts);
        let why = match outcome {
            Ok(Outcome::Committed(v)) => return Ok(Committed::new(current.checkout(VersionRef::Number(v))?, p.result)),
            Ok(Outcome::Rerun(why)) => why,
            Err(e) => {
                // A refused commit wrote no manifest: its files are garbage.
                if matches!(e, Error::Conflict { .. }) {
                    remove_files(current.root(), &p.written);
                }
                return Err(e);
            }
        };
        remove_files(current.root(), &p.written);
        if reruns >= policy.conflict_retries {
            return Err(Error::Conflict {
                what: format!("{why} (gave up after {} run(s): conflict_retries = {})", reruns + 1, policy.conflict_retries),
            });
        }
        if start.elapsed() > policy.retry_timeout {
            return Err(Error::Conflict {
                what: format!("{why} (gave up after {} run(s): retry_timeout of {:.3} s passed)", reruns + 1, policy.retry_timeout.as_secs_f64()),
            });
        }
        reruns += 1;
        backoff(reruns, start, policy.retry_timeout);
        current = Arc::new(current.checkout_ref(None)?);
    }
}

/// Wait a little (growing, randomized) before re-running, within the timeout.
fn backoff(rerun: u32, start: Instant, timeout: Duration) {
    let base = 2u64.saturating_pow(rerun.min(8));
    let ms = base * 5 + crate::ids::random_u64() % (base * 5 + 1);
    let left = timeout.saturating_sub(start.elapsed());
    std::thread::sleep(Duration::from_millis(ms).min(left));
}
