//! Fault injection for tests: a hook called with the name of each step of
//! a write just before it runs, so that tests can make any step fail and
//! check that nothing is left half-done. A leaf of the table room: the
//! commit kernel and the operations both call it.

use std::sync::Arc;

use crate::error::Result;

/// Test hook: called with the name of each step just before it runs
/// (`"data_file"`, `"deletion_file"`, `"transaction_file"`, `"manifest"`);
/// an error returned from it aborts the write there.
pub type FailHook = Arc<dyn Fn(&str) -> Result<()> + Send + Sync>;

/// Run the hook, if any.
pub fn step(hook: &Option<FailHook>, name: &str) -> Result<()> {
    match hook {
        Some(h) => h(name),
        None => Ok(()),
    }
}
