//! The one shape of a table operation: what every operation takes
//! ([`CommitProperties`]: conflict re-runs, progress, the properties and
//! message recorded in its transaction) and what it returns
//! ([`Committed`]: the dataset after it, and the operation's metrics).
//!
//! Operations build on the commit kernel ([`crate::table::commit`]); the
//! kernel knows nothing of them, only the [`CommitOptions`] an operation
//! derives from its properties ([`CommitProperties::commit_options`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::error::Result;
use crate::table::commit::CommitOptions;
use crate::table::dataset::Dataset;

/// Key under which a commit message is stored in a transaction's
/// properties (as pylance stores `commit_message`).
pub const COMMIT_MESSAGE_KEY: &str = "__lance_commit_message";

/// Progress of a long operation: called with `(stage, done, total)` as
/// units (fragments, tasks) complete; an error returned aborts the
/// operation with that error.
pub type Progress = Arc<dyn Fn(&str, u64, u64) -> Result<()> + Send + Sync>;

/// Report progress, if anyone listens.
pub fn report(progress: &Option<Progress>, stage: &str, done: u64, total: u64) -> Result<()> {
    match progress {
        Some(p) => p(stage, done, total),
        None => Ok(()),
    }
}

/// How often and how long an operation re-runs after conflicts.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Re-runs allowed after the first run (pylance's default: 10).
    pub conflict_retries: u32,
    /// No re-run starts after this much time since the first run began
    /// (pylance's default: 30 s).
    pub retry_timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { conflict_retries: 10, retry_timeout: Duration::from_secs(30) }
    }
}

/// What every table operation takes besides its own parameters.
///
/// Operations that compute their changes from the rows of one version
/// (delete, update, merge_insert) re-run on the latest version after a
/// conflicting concurrent commit as [`CommitProperties::retry`] allows;
/// the others are rebased by the commit kernel or refused, and ignore it.
/// Operations that commit nothing (cleanup) ignore the transaction fields.
#[derive(Clone, Default)]
pub struct CommitProperties {
    /// Re-runs after conflicts.
    pub retry: RetryPolicy,
    /// Called as the operation makes progress (stages are named by the
    /// operation: `"update"`, `"merge_insert"`, `"compaction"`, ...).
    pub progress: Option<Progress>,
    /// Recorded in the transaction (`Transaction.transaction_properties`).
    pub transaction_properties: HashMap<String, String>,
    /// Recorded in the transaction's properties under
    /// [`COMMIT_MESSAGE_KEY`].
    pub commit_message: Option<String>,
}

impl CommitProperties {
    /// The properties the transaction records: the given ones, and the
    /// commit message under its key.
    pub fn recorded(&self) -> HashMap<String, String> {
        let mut all = self.transaction_properties.clone();
        if let Some(m) = &self.commit_message {
            all.insert(COMMIT_MESSAGE_KEY.to_string(), m.clone());
        }
        all
    }

    /// Commit options carrying these properties (the rest defaulted).
    pub fn commit_options(&self) -> CommitOptions {
        CommitOptions { transaction_properties: self.recorded(), ..Default::default() }
    }
}

/// What a table operation returns: the dataset as the operation left it
/// (its new version, or the same version when nothing was committed) and
/// the operation's own metrics.
pub struct Committed<M> {
    /// The dataset after the operation, opened.
    pub dataset: Dataset,
    /// What the operation did (rows deleted, files compacted, ...).
    pub metrics: M,
}

impl<M> Committed<M> {
    /// The result of an operation that left `dataset` with `metrics`.
    pub fn new(dataset: Dataset, metrics: M) -> Self {
        Committed { dataset, metrics }
    }

    /// The dataset after the operation.
    pub fn dataset(&self) -> &Dataset {
        &self.dataset
    }

    /// `(dataset, metrics)`.
    pub fn into_parts(self) -> (Dataset, M) {
        (self.dataset, self.metrics)
    }
}

impl<M: std::fmt::Debug> std::fmt::Debug for Committed<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Committed")
            .field("uri", &self.dataset.uri())
            .field("version", &self.dataset.version())
            .field("metrics", &self.metrics)
            .finish()
    }
}
