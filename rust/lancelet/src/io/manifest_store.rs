//! External manifest stores: a key-value store that decides which writer
//! commits each version of a dataset, for object stores that cannot put an
//! object only if it does not exist.
//!
//! A store keeps one item per (dataset, version): the path of the
//! version's manifest (first a staging path, then the final one) and its
//! size. Its one atomic operation is [`ManifestStore::put_if_absent`]: of
//! the writers that put an item for the same version, exactly one
//! succeeds. The commit protocol built on it (staging manifest, claim,
//! copy, finalize) lives in `table::commit_store`; this room only moves
//! items. DynamoDB ([`super::dynamodb`]) is the store pylance 14 uses
//! (`s3+ddb://`); [`MemoryManifestStore`] serves unit tests.
//!
//! Datasets are keyed by their path inside the bucket (`p/d` for
//! `s3+ddb://bucket/p/d`), as pylance keys them; item paths are full
//! object paths inside the bucket (`p/d/_versions/….manifest`).

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::error::{Error, Result};

/// One item of a store: where a version's manifest is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreItem {
    /// The dataset version.
    pub version: u64,
    /// Object path of its manifest inside the bucket (a staging path until
    /// the commit is finalized).
    pub path: String,
    /// Manifest size in bytes, when recorded.
    pub size: Option<u64>,
}

/// A store of manifest locations with put-if-absent (see the module docs).
/// Calls block; errors are typed (`AlreadyExists` for a version another
/// writer took, `NotFound` for an item that is not there, `Io` for the
/// store failing, naming its endpoint).
pub trait ManifestStore: std::fmt::Debug + Send + Sync {
    /// Record `item` for `base` unless that version already has an item:
    /// then `Error::AlreadyExists`, and the store is unchanged.
    fn put_if_absent(&self, base: &str, item: &StoreItem) -> Result<()>;
    /// The item of `version`, if any.
    fn get(&self, base: &str, version: u64) -> Result<Option<StoreItem>>;
    /// The item of the newest version, if any.
    fn latest(&self, base: &str) -> Result<Option<StoreItem>>;
    /// Every item of `base`, oldest version first.
    fn list(&self, base: &str) -> Result<Vec<StoreItem>>;
    /// Replace the item of an existing version (pointing it at the final
    /// manifest); `Error::NotFound` when the version has no item.
    fn finalize(&self, base: &str, item: &StoreItem) -> Result<()>;
    /// How the store is named in messages.
    fn describe(&self) -> String;
}

/// An in-process store (tests): items in a map, shared by its clones'
/// users through an `Arc`.
#[derive(Debug, Default)]
pub struct MemoryManifestStore {
    items: Mutex<BTreeMap<(String, u64), StoreItem>>,
}

impl MemoryManifestStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn items(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, u64), StoreItem>> {
        self.items.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl ManifestStore for MemoryManifestStore {
    fn put_if_absent(&self, base: &str, item: &StoreItem) -> Result<()> {
        let mut items = self.items();
        let key = (base.to_string(), item.version);
        if items.contains_key(&key) {
            return Err(Error::already_exists(format!("version {} of {base} in {}", item.version, self.describe())));
        }
        items.insert(key, item.clone());
        Ok(())
    }

    fn get(&self, base: &str, version: u64) -> Result<Option<StoreItem>> {
        Ok(self.items().get(&(base.to_string(), version)).cloned())
    }

    fn latest(&self, base: &str) -> Result<Option<StoreItem>> {
        Ok(self.list(base)?.pop())
    }

    fn list(&self, base: &str) -> Result<Vec<StoreItem>> {
        Ok(self.items().iter().filter(|((b, _), _)| b == base).map(|(_, i)| i.clone()).collect())
    }

    fn finalize(&self, base: &str, item: &StoreItem) -> Result<()> {
        let mut items = self.items();
        match items.get_mut(&(base.to_string(), item.version)) {
            Some(slot) => {
                *slot = item.clone();
                Ok(())
            }
            None => Err(Error::not_found(format!("version {} of {base} in {}", item.version, self.describe()))),
        }
    }

    fn describe(&self) -> String {
        "an in-memory manifest store".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_writer_per_version() {
        let s = MemoryManifestStore::new();
        let item = |v: u64, p: &str| StoreItem { version: v, path: p.into(), size: Some(1) };
        s.put_if_absent("a", &item(1, "x-1")).unwrap();
        assert!(matches!(s.put_if_absent("a", &item(1, "y")), Err(Error::AlreadyExists { .. })));
        s.put_if_absent("b", &item(1, "b1")).unwrap();
        s.put_if_absent("a", &item(2, "x-2")).unwrap();
        assert_eq!(s.latest("a").unwrap().unwrap().path, "x-2");
        assert_eq!(s.get("a", 1).unwrap().unwrap().path, "x-1");
        assert_eq!(s.get("a", 3).unwrap(), None);
        s.finalize("a", &item(2, "x")).unwrap();
        assert_eq!(s.list("a").unwrap().iter().map(|i| i.path.as_str()).collect::<Vec<_>>(), ["x-1", "x"]);
        assert!(matches!(s.finalize("a", &item(9, "z")), Err(Error::NotFound { .. })));
        assert_eq!(s.latest("c").unwrap(), None);
    }
}
