//! Lance directory namespaces: a catalog of tables (and, in V2, nested
//! namespaces) kept in a directory on local disk or an object store,
//! interchangeable with pylance's `DirectoryNamespace`.
//!
//! On-disk layout below the namespace root:
//!
//! ```text
//! <root>/
//!   t1.lance/                 V1 table `t1` (a table exists when the prefix holds
//!     _versions/ data/ ...    an object and no `.lance-deregistered` marker)
//!   t2.lance/.lance-reserved  V1 table `t2`, declared but not written yet
//!   t3.lance/.lance-deregistered   deregistered: data kept, table hidden
//!   __manifest/               V2 catalog: a Lance table, one row per namespace
//!                             and table (see [`catalog`])
//!   1a2b3c4d_ns$t4/           V2 table `ns.t4` (`<8 random hex>_<object id>`)
//! ```
//!
//! Three modes, from the properties `manifest_enabled` and
//! `dir_listing_enabled` (both on by default):
//!
//! * **V1** (listing only): one level, tables are the `<name>.lance`
//!   directories; declare writes `.lance-reserved`, deregister writes
//!   `.lance-deregistered`, drop deletes the directory; nested ids,
//!   namespaces and rename are unsupported. `__manifest` is never written.
//! * **V2** (manifest only): every namespace and table is a `__manifest` row;
//!   new tables live at `<8 random hex>_<object id>`.
//! * **Compatibility** (both): root lookups try the manifest, then the
//!   `<name>.lance` directory (unless a manifest row claims that
//!   directory); listings merge both, the manifest winning; new root tables
//!   are rows located at `<name>.lance`; removing a root row located at a
//!   `<name>.lance` directory also writes `.lance-deregistered` there, so
//!   the directory does not come back as a V1 table.
//!
//! Every catalog change is decided on one snapshot of `__manifest` and
//! committed as exactly the next version (put-if-not-exists); when another
//! writer got that version first the operation re-reads and decides again
//! (never rebases), so two creators of one id cannot both succeed.
//! Everything a failed operation wrote is removed again. Names and
//! locations are checked before any I/O ([`names`]), and every table
//! directory is reached through [`names::below_root`].

pub mod catalog;
mod listing;
pub mod names;
mod namespaces;
mod tables;
#[cfg(test)]
mod tests;

use crate::error::Error;
use crate::io::{Storage, StorageOptions};

pub use catalog::Snapshot;
pub use listing::{DEREGISTERED_MARKER, RESERVED_MARKER};
pub use namespaces::Properties;
pub use tables::{CreateMode, TableInfo};

/// A namespace-level error, or a core error (I/O, invalid input, ...).
#[derive(Debug, thiserror::Error)]
pub enum NsError {
    /// The namespace does not exist.
    #[error("namespace not found: {0}")]
    NamespaceNotFound(String),
    /// The table does not exist.
    #[error("table not found: {0}")]
    TableNotFound(String),
    /// A namespace (or a table) already has this id.
    #[error("namespace already exists: {0}")]
    NamespaceAlreadyExists(String),
    /// A table (or a namespace) already has this id.
    #[error("table already exists: {0}")]
    TableAlreadyExists(String),
    /// The namespace still holds tables or namespaces.
    #[error("namespace not empty: {0}")]
    NamespaceNotEmpty(String),
    /// Anything else.
    #[error(transparent)]
    Core(#[from] Error),
}

/// Result of namespace operations.
pub type NsResult<T> = std::result::Result<T, NsError>;

/// How many times an operation re-reads the catalog after losing a commit race.
const MAX_ATTEMPTS: usize = 64;

fn unsupported(what: impl Into<String>) -> NsError {
    NsError::Core(Error::unsupported(what))
}

fn invalid(what: impl Into<String>) -> NsError {
    NsError::Core(Error::invalid_input(what))
}

/// Sleep a little before re-reading after a lost commit race.
fn backoff(attempt: usize) {
    let base = 1u64 << attempt.min(6);
    let ms = base + crate::ids::random_u64() % (base * 2 + 3);
    std::thread::sleep(std::time::Duration::from_millis(ms));
}

/// The id printed in messages: levels joined by `.`, `<root>` for `[]`.
fn show(id: &[String]) -> String {
    if id.is_empty() {
        "<root>".to_string()
    } else {
        id.join(".")
    }
}

/// A directory namespace rooted at one directory.
#[derive(Debug, Clone)]
pub struct DirectoryNamespace {
    root: Storage,
    root_uri: String,
    manifest: bool,
    dir_listing: bool,
}

impl DirectoryNamespace {
    /// Open the namespace at `root` (local path, `file://`, `s3://`,
    /// `memory://`). Nothing is read or written until an operation runs.
    pub fn open(root: &str, options: &StorageOptions, manifest_enabled: bool, dir_listing_enabled: bool) -> NsResult<Self> {
        if root.trim().is_empty() {
            return Err(invalid("the namespace root may not be empty"));
        }
        if !manifest_enabled && !dir_listing_enabled {
            return Err(invalid("manifest_enabled and dir_listing_enabled cannot both be false (no way to find tables)"));
        }
        let storage = Storage::open_with(root, options)?;
        let root_uri = match root.split_once("://") {
            Some(("s3" | "s3a" | "memory", _)) => root.trim_end_matches('/').to_string(),
            _ => storage.display().to_string(),
        };
        Ok(DirectoryNamespace { root: storage, root_uri, manifest: manifest_enabled, dir_listing: dir_listing_enabled })
    }

    /// The root directory.
    pub fn root(&self) -> &Storage {
        &self.root
    }

    /// The root as given (local roots as an absolute path).
    pub fn root_uri(&self) -> &str {
        &self.root_uri
    }

    /// Whether the `__manifest` catalog is used.
    pub fn manifest_enabled(&self) -> bool {
        self.manifest
    }

    /// Whether `<name>.lance` directories are tables.
    pub fn dir_listing_enabled(&self) -> bool {
        self.dir_listing
    }

    /// The URI (local roots: absolute path) of a location below the root:
    /// plain text for local and in-memory roots, percent-encoded path
    /// segments for `s3://` (which both lancelet and pylance decode).
    pub fn location_uri(&self, location: &str) -> String {
        if self.root_uri.starts_with("s3") {
            if let Ok(mut url) = url::Url::parse(&self.root_uri) {
                if let Ok(mut segs) = url.path_segments_mut() {
                    segs.pop_if_empty().extend(location.split('/'));
                }
                return url.to_string();
            }
        }
        format!("{}/{}", self.root_uri, location)
    }

    /// The catalog's latest snapshot (empty when there is none or the
    /// manifest is disabled).
    pub fn snapshot(&self) -> NsResult<Snapshot> {
        if !self.manifest {
            return Ok(Snapshot::default());
        }
        Ok(catalog::read(&self.root)?)
    }

    /// Refuse ids V1 cannot hold.
    fn v1_guard(&self, id: &[String], what: &str) -> NsResult<()> {
        if !self.manifest && id.len() > 1 {
            return Err(unsupported(format!(
                "{what} {} is nested; nested namespaces need manifest_enabled=true (this namespace is V1, directory listing only)",
                show(id)
            )));
        }
        Ok(())
    }

    /// Check that namespace `ns` (and each level above it) exists.
    fn check_namespace(&self, snap: &Snapshot, ns: &[String]) -> NsResult<()> {
        if ns.is_empty() {
            return Ok(());
        }
        if !self.manifest {
            return Err(unsupported(format!(
                "namespace {} cannot exist: child namespaces need manifest_enabled=true (this namespace is V1)",
                show(ns)
            )));
        }
        for i in 1..=ns.len() {
            if snap.find(&names::object_id(&ns[..i]), catalog::NAMESPACE).is_none() {
                return Err(NsError::NamespaceNotFound(format!("namespace {} does not exist in {}", show(&ns[..i]), self.root_uri)));
            }
        }
        Ok(())
    }

    /// The direct children of namespace `ns` among the catalog rows of `object_type`.
    fn children<'a>(&self, snap: &'a Snapshot, ns: &[String], object_type: &'a str) -> impl Iterator<Item = (usize, String)> + 'a {
        let prefix = if ns.is_empty() { String::new() } else { format!("{}{}", names::object_id(ns), names::DELIMITER) };
        snap.entries.iter().enumerate().filter_map(move |(i, e)| {
            let rest = e.object_id.strip_prefix(prefix.as_str())?;
            (e.object_type == object_type && !rest.is_empty() && !rest.contains(names::DELIMITER)).then(|| (i, rest.to_string()))
        })
    }
}
