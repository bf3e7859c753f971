//! The object store behind a [`super::Storage`] handle.
//!
//! Local and in-memory stores hold no threads or connections, so one value
//! serves the process and any child it forks. An S3 client keeps pooled
//! connections whose tasks run on the I/O runtime of the process that made
//! them: a forked child that sent a request through the parent's client
//! would wait on a task that does not exist there. Such a store is built
//! again, from the handle's URI and options, on its first use in each
//! process (S3, GCS and Azure stores alike) (see [`crate::process`]).

use std::sync::{Arc, Mutex};

use object_store::ObjectStore;

use super::StorageOptions;
use crate::error::Result;

/// How a store is built again in a forked child.
type Rebuild = Arc<dyn Fn() -> Result<Arc<dyn ObjectStore>> + Send + Sync>;

/// A handle's object store; clones share it.
#[derive(Clone)]
pub(crate) enum StoreCell {
    /// A store usable from any process.
    Shared(Arc<dyn ObjectStore>),
    /// A store built once per process: (process generation, store).
    PerProcess { built: Arc<Mutex<(u64, Arc<dyn ObjectStore>)>>, rebuild: Rebuild },
}

impl StoreCell {
    /// A store that holds no threads or connections.
    pub(crate) fn shared(store: Arc<dyn ObjectStore>) -> Self {
        StoreCell::Shared(store)
    }

    /// A store holding connections: rebuilt by `rebuild` in a forked child.
    pub(crate) fn per_process(store: Arc<dyn ObjectStore>, rebuild: Rebuild) -> Self {
        let gen = crate::process::generation();
        StoreCell::PerProcess { built: Arc::new(Mutex::new((gen, store))), rebuild }
    }

    /// The store to use in this process.
    pub(crate) fn get(&self) -> Arc<dyn ObjectStore> {
        match self {
            StoreCell::Shared(s) => s.clone(),
            StoreCell::PerProcess { built, rebuild } => {
                let gen = crate::process::generation();
                let mut b = built.lock().unwrap_or_else(|e| e.into_inner());
                if b.0 != gen {
                    // It was built from these options before, so it builds
                    // again; if not, the old client is the best left.
                    if let Ok(fresh) = rebuild() {
                        // The parent's client is leaked, not dropped: its
                        // connections belong to the parent's runtime.
                        std::mem::forget(std::mem::replace(&mut b.1, fresh));
                        b.0 = gen;
                    }
                }
                b.1.clone()
            }
        }
    }
}

/// A rebuild closure for an S3 URI and its options.
#[cfg(feature = "s3")]
pub(crate) fn s3_rebuild(uri: &str, options: &Arc<StorageOptions>) -> Rebuild {
    rebuild(super::s3::open, uri, options)
}

/// How a store that holds connections is opened.
type Open = fn(&str, &StorageOptions) -> Result<(Arc<dyn ObjectStore>, object_store::path::Path)>;

/// A rebuild closure: `open` again with the same URI and options.
#[allow(dead_code)] // unused when built with no remote store
pub(crate) fn rebuild(open: Open, uri: &str, options: &Arc<StorageOptions>) -> Rebuild {
    let (uri, options) = (uri.to_string(), options.clone());
    Arc::new(move || open(&uri, &options).map(|(store, _)| store))
}
