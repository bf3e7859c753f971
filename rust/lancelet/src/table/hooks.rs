//! Fault injection for tests: before each step of a write that puts a file
//! down, [`step`] asks whether a test wants that step to fail, so tests can
//! make any step fail and check that nothing is left half-done. A leaf of
//! the table room: the commit kernel and the operations both call it.
//!
//! Hooks are not part of any operation's signature: a test installs one for
//! a dataset root with [`install`] (unit tests only; in other builds
//! [`step`] does nothing). Installing per root keeps tests that run in
//! parallel, on datasets of their own, out of each other's way.

use crate::error::Result;
use crate::io::Storage;

/// Test hook: called with the name of each step just before it runs
/// (`"data_file"`, `"deletion_file"`, `"transaction_file"`, `"manifest"`);
/// an error returned from it aborts the write there.
#[cfg(test)]
pub type FailHook = std::sync::Arc<dyn Fn(&str) -> Result<()> + Send + Sync>;

#[cfg(test)]
static HOOKS: std::sync::Mutex<Vec<(String, FailHook)>> = std::sync::Mutex::new(Vec::new());

/// Removes its hook when dropped.
#[cfg(test)]
pub struct Installed(String);

#[cfg(test)]
impl Drop for Installed {
    fn drop(&mut self) {
        HOOKS.lock().unwrap_or_else(|e| e.into_inner()).retain(|(k, _)| *k != self.0);
    }
}

/// Call `hook` before every step of writes to the dataset at `root` (a
/// path or URI as the dataset's storage shows it, or a parent of it) until
/// the returned guard is dropped.
#[cfg(test)]
pub fn install(root: &str, hook: FailHook) -> Installed {
    let key = root.trim_end_matches('/').to_string();
    HOOKS.lock().unwrap_or_else(|e| e.into_inner()).push((key.clone(), hook));
    Installed(key)
}

/// Run the hook installed for `root`, if any.
#[cfg(test)]
pub fn step(root: &Storage, name: &str) -> Result<()> {
    let shown = root.display().trim_end_matches('/');
    let hook = HOOKS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(k, _)| shown == k || shown.strip_prefix(k.as_str()).is_some_and(|rest| rest.starts_with('/')))
        .map(|(_, h)| h.clone());
    match hook {
        Some(h) => h(name),
        None => Ok(()),
    }
}

/// Does nothing outside unit tests.
#[cfg(not(test))]
#[inline(always)]
pub fn step(_root: &Storage, _name: &str) -> Result<()> {
    Ok(())
}
