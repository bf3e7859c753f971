//! Storage access through `object_store`.
//!
//! Every byte lancelet reads or writes goes through [`Storage`], which wraps
//! an `object_store::ObjectStore` plus the path of one object. URIs are
//! `file:///abs/path`, plain local paths, `s3://bucket/path` (see [`s3`]
//! for its storage options), `s3+ddb://bucket/path?ddbTableName=T` (S3
//! with a DynamoDB external manifest store, see [`dynamodb`] and
//! [`manifest_store`]), `gs://bucket/path` (Google Cloud Storage, see
//! [`gcs`]), `az://container/path` (Azure Blob Storage, see [`azure`]) or
//! `memory://name/path` (an in-process store, shared by name, used by
//! tests).
//!
//! A handle keeps the storage options it was opened with, so everything
//! reached from it ([`Storage::child`], [`Storage::open_uri`] for a
//! dataset's other base paths) is configured the same way.
//!
//! Names are stored as they are: a relative path given to
//! [`Storage::child`] reaches the object whose key (local: file name) is
//! exactly that UTF-8 text, `ü`, `%41` and `#` included, as pylance does
//! for the table directories it writes. (object_store's own `Path::child`
//! would percent-encode `ü` to `%C3%BC`, and a local file system then holds
//! a file literally named so.) `file://` URIs are URLs and are
//! percent-decoded (`file:///a%20b` is the directory `a b`), also as in
//! pylance; plain local paths are taken literally.
//!
//! The core API is synchronous; a single process-wide Tokio runtime drives
//! the async object_store calls ([`block_on`]). Reads of local files skip
//! it and read on the calling thread (see `local`).

use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::{Path, PathPart};
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use crate::error::{Error, Result};

#[cfg(feature = "azure")]
pub mod azure;
#[cfg(feature = "s3")]
pub mod dynamodb;
#[cfg(feature = "gcs")]
pub mod gcs;
mod local;
pub mod manifest_store;
#[cfg(unix)]
pub mod mapped;
#[cfg(feature = "s3")]
pub mod s3;
mod store_cell;
pub mod tree;
pub mod upload;

pub use tree::Listing;
pub use upload::ObjectWriter;

/// Storage options (pylance's `storage_options`): credentials, endpoint,
/// region and client settings of an object store, as string pairs. Local
/// and in-memory stores ignore them.
pub type StorageOptions = HashMap<String, String>;

/// Storage options from `(key, value)` pairs (the stores' unit tests).
#[cfg(test)]
pub(crate) fn test_options(pairs: &[(&str, &str)]) -> StorageOptions {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// The process-wide runtime used for object_store I/O (rebuilt in a forked
/// child: see [`crate::process`]).
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: crate::process::PerProcess<tokio::runtime::Runtime> = crate::process::PerProcess::new();
    RT.get(|| tokio::runtime::Builder::new_multi_thread().worker_threads(2).thread_name("lancelet-io").enable_all().build().expect("tokio runtime"))
}

/// Run a future to completion on the I/O runtime.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    runtime().block_on(f)
}

#[cfg(any(test, feature = "fuzzing"))]
thread_local! {
    /// Set by the fuzz targets on their thread: URIs read from fuzzed bytes
    /// (base paths of a manifest) must not reach the local disk or the
    /// network. Per thread, so that other tests of the process are free.
    pub static MEMORY_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn memory_store(name: &str) -> Arc<dyn ObjectStore> {
    static STORES: OnceLock<Mutex<HashMap<String, Arc<dyn ObjectStore>>>> = OnceLock::new();
    let mut stores = STORES.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    stores.entry(name.to_string()).or_insert_with(|| Arc::new(InMemory::new())).clone()
}

/// The in-memory manifest store of `memory+store://{name}/...` (unit tests).
#[cfg(test)]
pub(crate) fn test_manifest_store(name: &str) -> Arc<dyn manifest_store::ManifestStore> {
    static STORES: OnceLock<Mutex<HashMap<String, Arc<dyn manifest_store::ManifestStore>>>> = OnceLock::new();
    let mut stores = STORES.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    stores.entry(name.to_string()).or_insert_with(|| Arc::new(manifest_store::MemoryManifestStore::new())).clone()
}

/// Resolve `.` and `..` components without touching the file system
/// (object_store paths may not contain them).
fn lexically_normal(p: &std::path::Path) -> std::path::PathBuf {
    use std::path::Component;
    let mut out = std::path::PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Process-wide I/O counters: calls into [`Storage`] read methods, storage
/// requests they turn into (ranges after merging touching ones, as
/// object_store's local store does; one per whole-object or single-range
/// read) and bytes returned. Benchmarks read them through [`io_stats`].
static IO_CALLS: AtomicU64 = AtomicU64::new(0);
static IO_REQUESTS: AtomicU64 = AtomicU64::new(0);
static IO_BYTES: AtomicU64 = AtomicU64::new(0);
static IO_MAPPED: AtomicU64 = AtomicU64::new(0);

/// Totals of all reads made through any [`Storage`] in this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IoStats {
    /// Calls of the read methods.
    pub calls: u64,
    /// Storage requests (merged ranges).
    pub requests: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Of the requests, those served from a memory map of a local file
    /// (no copy; see `mapped`) rather than read.
    pub mapped: u64,
}

/// The process-wide read totals so far (see [`IoStats`]).
pub fn io_stats() -> IoStats {
    IoStats {
        calls: IO_CALLS.load(Ordering::Relaxed),
        requests: IO_REQUESTS.load(Ordering::Relaxed),
        bytes: IO_BYTES.load(Ordering::Relaxed),
        mapped: IO_MAPPED.load(Ordering::Relaxed),
    }
}

fn count_io(requests: u64, bytes: u64) {
    IO_CALLS.fetch_add(1, Ordering::Relaxed);
    IO_REQUESTS.fetch_add(requests, Ordering::Relaxed);
    IO_BYTES.fetch_add(bytes, Ordering::Relaxed);
}

/// Number of ranges left after merging overlapping or touching ones.
fn merged_count(ranges: &[Range<u64>]) -> u64 {
    let mut sorted: Vec<&Range<u64>> = ranges.iter().filter(|r| r.end > r.start).collect();
    sorted.sort_by_key(|r| r.start);
    let mut n = 0;
    let mut end = None;
    for r in sorted {
        match end {
            Some(e) if r.start <= e => end = Some(e.max(r.end)),
            _ => {
                n += 1;
                end = Some(r.end);
            }
        }
    }
    n
}

/// Largest request [`Storage::read_ranges_coalesced`] makes by joining
/// ranges (a single larger range is read as it is).
pub const COALESCE_MAX: u64 = 8 << 20;

/// Requests covering a set of ranges: `groups` sorted by position, and for
/// each input range (in input order) the group holding it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Coalesced {
    pub groups: Vec<Range<u64>>,
    pub group_of: Vec<usize>,
}

/// Join `ranges` whose gap is at most `gap` bytes, as long as a joined
/// group spans at most `max` bytes (see [`Storage::read_ranges_coalesced`]).
pub(crate) fn coalesce(ranges: &[Range<u64>], gap: u64, max: u64) -> Coalesced {
    let mut order: Vec<usize> = (0..ranges.len()).collect();
    order.sort_by_key(|&i| (ranges[i].start, ranges[i].end));
    let mut groups: Vec<Range<u64>> = Vec::new();
    let mut group_of = vec![0; ranges.len()];
    for i in order {
        let r = ranges[i].start..ranges[i].end.max(ranges[i].start);
        match groups.last_mut() {
            Some(g) if r.start <= g.end.saturating_add(gap) && (r.end.max(g.end) - g.start <= max || r.end <= g.end) => g.end = g.end.max(r.end),
            _ => groups.push(r),
        }
        group_of[i] = groups.len() - 1;
    }
    Coalesced { groups, group_of }
}

/// An object store plus one path inside it, with counts of the reads made
/// and bytes received through it (benchmarks check how many storage
/// requests a take costs; tests check what statistics pruning saves).
#[derive(Clone)]
pub struct Storage {
    store: store_cell::StoreCell,
    path: Path,
    display: String,
    reads: Arc<AtomicU64>,
    bytes_read: Arc<AtomicU64>,
    options: Arc<StorageOptions>,
    /// This path on a local file system (`None` for object stores and
    /// memory): read directly (see `local`) and used for cleaning up empty
    /// directories.
    local_dir: Option<std::path::PathBuf>,
    /// What one request costs, in bytes transferred (see `request_cost`).
    request_cost: u64,
    /// A local file's map, made on its first small read (see
    /// `mapped::FileMap`); shared by the clones of a handle, not by its
    /// children.
    file_map: FileMapCell,
    /// The external manifest store that decides commits (`s3+ddb://`), if
    /// any: see [`manifest_store`].
    manifest_store: Option<Arc<dyn manifest_store::ManifestStore>>,
}

/// A local file's map, once made (`None` inside: the file cannot be mapped).
#[cfg(unix)]
type FileMapCell = Arc<OnceLock<Option<Arc<mapped::FileMap>>>>;
#[cfg(not(unix))]
type FileMapCell = ();

/// One object found by [`Storage::list_recursive`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedObject {
    /// Path relative to the listed directory (`/`-separated).
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Last modification time.
    pub last_modified: std::time::SystemTime,
}

/// What a request to local storage costs, in bytes it would take to read
/// in the same time: a `pread` and a buffer per range, about a microsecond
/// against memory bandwidth of several GB/s. 4 KiB (a page of the OS
/// cache) is also the gap below which pylance reads through between
/// ranges locally; counted in requests and bytes on the wide table, 16 KiB
/// read 1.5-1.7x pylance's bytes at 1-10 % selectivity (gaps between
/// sparse vector rows read through) for no fewer syscalls worth having.
pub const LOCAL_REQUEST_COST: u64 = 4 << 10;
/// What a request to an object store costs, in bytes: a round trip of
/// milliseconds against tens to hundreds of MB/s per connection (also the
/// gap below which object_store itself merges ranges into one request).
pub const REMOTE_REQUEST_COST: u64 = 1 << 20;

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display)
    }
}

/// The local path of a `file:` URI, read as a URL the way pylance reads
/// it: percent-escapes decoded, a `?query` or `#fragment` not part of the
/// path. A host other than `localhost` is refused (pylance ignores it).
fn file_uri_path(uri: &str) -> Result<std::path::PathBuf> {
    let bad = |why: String| Error::invalid_input(format!("bad file URI {uri:?}: {why}"));
    let url = url::Url::parse(uri).map_err(|e| bad(e.to_string()).with_source(e))?;
    if let Some(host) = url.host_str().filter(|h| !h.is_empty() && *h != "localhost") {
        return Err(bad(format!("a file URI names a local path (file:///abs/path), not host {host:?}")));
    }
    let path = percent_encoding::percent_decode_str(url.path()).decode_utf8().map_err(|_| bad("the path is not UTF-8 once decoded".into()))?;
    Ok(std::path::PathBuf::from(path.as_ref()))
}

/// Whether `e` is an object store's error (a storage failure, which the
/// Python layer shows as an `OSError` cause).
pub fn is_object_store_error(e: &(dyn std::error::Error + 'static)) -> bool {
    e.is::<object_store::Error>()
}

/// An object store's error on `path`, classified, and kept as the source.
fn io_err(path: &str, e: object_store::Error) -> Error {
    let error = match &e {
        object_store::Error::NotFound { .. } => Error::not_found(path.to_string()),
        object_store::Error::AlreadyExists { .. } => Error::already_exists(path.to_string()),
        object_store::Error::NotImplemented { operation, .. } => {
            Error::unsupported_in(path.to_string(), format!("the object store cannot do {operation}"))
        }
        other => Error::io(path.to_string(), other.to_string()),
    };
    error.with_source(e)
}

impl Storage {
    /// Resolve a URI or local path to a store and object path (no storage
    /// options: S3 is configured from `AWS_*` environment variables alone).
    pub fn open(uri: &str) -> Result<Self> {
        Self::open_with(uri, &StorageOptions::new())
    }

    /// Resolve a URI or local path with storage options (see [`s3`]).
    pub fn open_with(uri: &str, options: &StorageOptions) -> Result<Self> {
        let options = Arc::new(options.clone());
        if let Some(rest) = uri.strip_prefix("memory://") {
            let (name, path) = rest.split_once('/').unwrap_or((rest, ""));
            let path = Path::parse(path).map_err(|e| Error::invalid_input(format!("bad path in {uri}: {e}")).with_source(e))?;
            return Ok(Self::new(store_cell::StoreCell::shared(memory_store(name)), path, uri.to_string(), options, None));
        }
        // Unit tests: an in-memory bucket whose commits go through an
        // in-memory manifest store (one per name), as `s3+ddb://` does.
        #[cfg(test)]
        if let Some(rest) = uri.strip_prefix("memory+store://") {
            let name = rest.split('/').next().unwrap_or_default().to_string();
            let storage = Self::open_with(&format!("memory://{rest}"), &options)?;
            return Ok(Storage { display: uri.trim_end_matches('/').to_string(), ..storage }.with_manifest_store(test_manifest_store(&name)));
        }
        #[cfg(any(test, feature = "fuzzing"))]
        if MEMORY_ONLY.with(|m| m.get()) {
            return Err(Error::invalid_input(format!("{uri:?}: fuzz targets reach memory:// stores only")));
        }
        if uri.starts_with("s3+ddb://") {
            #[cfg(feature = "s3")]
            {
                let (s3_uri, table) = dynamodb::parse_uri(uri)?;
                let store: Arc<dyn manifest_store::ManifestStore> = Arc::new(dynamodb::DynamoDbStore::open(&table, &options)?);
                let mut storage = Self::open_with(&s3_uri, &options)?;
                storage.display = format!("s3+ddb://{}", s3_uri.trim_start_matches("s3://").trim_end_matches('/'));
                return Ok(storage.with_manifest_store(store));
            }
            #[cfg(not(feature = "s3"))]
            return Err(Error::unsupported(format!("{uri:?}: lancelet was built without S3 support (feature \"s3\")")));
        }
        if uri.starts_with("s3://") || uri.starts_with("s3a://") {
            #[cfg(feature = "s3")]
            {
                let (store, path) = s3::open(uri, &options)?;
                let store = store_cell::StoreCell::per_process(store, store_cell::s3_rebuild(uri, &options));
                return Ok(Self::new(store, path, uri.trim_end_matches('/').to_string(), options, None));
            }
            #[cfg(not(feature = "s3"))]
            return Err(Error::unsupported(format!("{uri:?}: lancelet was built without S3 support (feature \"s3\")")));
        }
        if uri.starts_with("gs://") {
            #[cfg(feature = "gcs")]
            {
                let (store, path) = gcs::open(uri, &options)?;
                let store = store_cell::StoreCell::per_process(store, store_cell::rebuild(gcs::open, uri, &options));
                return Ok(Self::new(store, path, uri.trim_end_matches('/').to_string(), options, None));
            }
            #[cfg(not(feature = "gcs"))]
            return Err(Error::unsupported(format!("{uri:?}: lancelet was built without GCS support (feature \"gcs\")")));
        }
        if uri.starts_with("az://") {
            #[cfg(feature = "azure")]
            {
                let (store, path) = azure::open(uri, &options)?;
                let store = store_cell::StoreCell::per_process(store, store_cell::rebuild(azure::open, uri, &options));
                return Ok(Self::new(store, path, uri.trim_end_matches('/').to_string(), options, None));
            }
            #[cfg(not(feature = "azure"))]
            return Err(Error::unsupported(format!("{uri:?}: lancelet was built without Azure support (feature \"azure\")")));
        }
        let local = if uri.starts_with("file:") {
            file_uri_path(uri)?
        } else if uri.contains("://") {
            return Err(Error::invalid_input(format!(
                "unsupported URI scheme in {uri:?} (supported: s3://, s3+ddb://, gs://, az://, file://, memory://, local paths)"
            )));
        } else {
            std::path::PathBuf::from(uri)
        };
        let abs =
            lexically_normal(&std::path::absolute(&local).map_err(|e| Error::invalid_input(format!("bad local path {uri:?}: {e}")).with_source(e))?);
        let path = Path::from_absolute_path(&abs).map_err(|e| Error::invalid_input(format!("bad local path {uri:?}: {e}")).with_source(e))?;
        Ok(Self::new(store_cell::StoreCell::shared(Arc::new(LocalFileSystem::new())), path, abs.display().to_string(), options, Some(abs)))
    }

    fn new(store: store_cell::StoreCell, path: Path, display: String, options: Arc<StorageOptions>, local_dir: Option<std::path::PathBuf>) -> Self {
        let remote = ["s3://", "s3a://", "s3+ddb://", "gs://", "az://"].iter().any(|p| display.starts_with(p));
        let request_cost = if remote { REMOTE_REQUEST_COST } else { LOCAL_REQUEST_COST };
        Self {
            store,
            path,
            display,
            reads: Arc::new(AtomicU64::new(0)),
            bytes_read: Arc::new(AtomicU64::new(0)),
            options,
            local_dir,
            request_cost,
            file_map: FileMapCell::default(),
            manifest_store: None,
        }
    }

    /// This handle, with commits decided by `store` (see
    /// [`manifest_store`]); the handles derived from it share the store.
    pub fn with_manifest_store(mut self, store: Arc<dyn manifest_store::ManifestStore>) -> Self {
        self.manifest_store = Some(store);
        self
    }

    /// The external manifest store deciding commits here, if any.
    pub fn manifest_store(&self) -> Option<&Arc<dyn manifest_store::ManifestStore>> {
        self.manifest_store.as_ref()
    }

    /// The object path inside the store (bucket), `/`-separated, no
    /// leading slash: how an external manifest store keys a dataset.
    pub fn object_path(&self) -> &str {
        self.path.as_ref()
    }

    /// What one read request costs here, in bytes transferred in the same
    /// time: readers fetch a few more bytes rather than make another
    /// request when that is cheaper ([`LOCAL_REQUEST_COST`],
    /// [`REMOTE_REQUEST_COST`]).
    pub fn request_cost(&self) -> u64 {
        self.request_cost
    }

    /// Open another URI with this handle's storage options (a dataset's
    /// data under another base path).
    pub fn open_uri(&self, uri: &str) -> Result<Storage> {
        Self::open_with(uri, &self.options)
    }

    /// The storage options this handle was opened with.
    pub fn options(&self) -> &StorageOptions {
        &self.options
    }

    /// The same object through the same store, with a request counter of
    /// its own (starting at zero).
    pub fn fresh(&self) -> Storage {
        Storage { reads: Arc::new(AtomicU64::new(0)), bytes_read: Arc::new(AtomicU64::new(0)), ..self.clone() }
    }

    /// How this object is named in messages.
    pub fn display(&self) -> &str {
        &self.display
    }

    /// Number of storage requests made through this handle so far.
    pub fn read_count(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// Bytes received through this handle (and the handles derived from
    /// it) so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read.load(Ordering::Relaxed)
    }

    fn count_bytes(&self, n: usize) {
        self.bytes_read.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Size of the object in bytes.
    pub fn size(&self) -> Result<u64> {
        if let Some(p) = &self.local_dir {
            return local::size(p, &self.display);
        }
        let meta = block_on(self.store.get().head(&self.path)).map_err(|e| io_err(&self.display, e))?;
        Ok(meta.size)
    }

    /// Read one byte range.
    pub fn read_range(&self, range: Range<u64>) -> Result<Bytes> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        count_io(1, range.end.saturating_sub(range.start));
        let b = match &self.local_dir {
            Some(p) => local::read_ranges(p, &self.display, std::slice::from_ref(&range))?.pop().expect("one range"),
            None => block_on(self.store.get().get_range(&self.path, range)).map_err(|e| io_err(&self.display, e))?,
        };
        self.count_bytes(b.len());
        Ok(b)
    }

    /// Read several byte ranges; object_store coalesces nearby ranges into
    /// fewer requests.
    pub fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        if ranges.is_empty() {
            return Ok(Vec::new());
        }
        self.reads.fetch_add(1, Ordering::Relaxed);
        count_io(merged_count(ranges), ranges.iter().map(|r| r.end.saturating_sub(r.start)).sum());
        let bs = match &self.local_dir {
            Some(p) => local::read_ranges(p, &self.display, ranges)?,
            None => block_on(self.store.get().get_ranges(&self.path, ranges)).map_err(|e| io_err(&self.display, e))?,
        };
        self.count_bytes(bs.iter().map(|b| b.len()).sum());
        Ok(bs)
    }

    /// Read several byte ranges, reading ranges at most `gap` bytes apart as
    /// one request (the bytes between them are read and dropped): what a
    /// reader does when another request would cost more than the gap's
    /// bytes (see [`Storage::request_cost`]). Ranges may come in any order
    /// and overlap; each is returned as asked for. A group stops growing at
    /// [`COALESCE_MAX`] bytes, so a large page read whole stays a request of
    /// its own and the pieces cut from a group (which share its buffer) do
    /// not keep much else alive. The I/O counters count the groups and
    /// their bytes, gaps included.
    pub fn read_ranges_coalesced(&self, ranges: &[Range<u64>], gap: u64) -> Result<Vec<Bytes>> {
        if ranges.is_empty() {
            return Ok(Vec::new());
        }
        let plan = coalesce(ranges, gap, COALESCE_MAX);
        self.reads.fetch_add(1, Ordering::Relaxed);
        count_io(plan.groups.len() as u64, plan.groups.iter().map(|g| g.end - g.start).sum());
        let got = self.get_ranges(&plan.groups)?;
        self.count_bytes(got.iter().map(|b| b.len()).sum());
        ranges
            .iter()
            .zip(&plan.group_of)
            .map(|(r, &g)| {
                let (b, at) = (&got[g], plan.groups[g].start);
                let (s, e) = ((r.start - at) as usize, (r.end.max(r.start) - at) as usize);
                if e > b.len() {
                    return Err(Error::io(self.display.clone(), format!("short read: range {r:?} got {} bytes", b.len().saturating_sub(s))));
                }
                Ok(b.slice(s..e))
            })
            .collect()
    }

    /// The bytes of `ranges`: from a local file through memory maps (see
    /// [`mapped`]: large ranges mapped on their own, small ones and those
    /// of a read of many ranges cut from the file's map) or `pread` (the
    /// others), else from the store.
    fn get_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        #[cfg(unix)]
        if let Some(local) = &self.local_dir {
            let mut got = mapped::map_ranges(local, ranges);
            // A take's many ranges and any small one (a point lookup's)
            // from the file's map; a scan unit's few medium ranges are
            // read: it reads them once, and the map would keep their pages
            // resident.
            let many = ranges.len() >= mapped::FILE_MAP_MIN_RANGES;
            let small: Vec<usize> = (0..ranges.len())
                .filter(|&i| got[i].is_none() && (many || ranges[i].end.saturating_sub(ranges[i].start) <= mapped::FILE_MAP_MAX_RANGE))
                .collect();
            if !small.is_empty() {
                let map = self.file_map.get_or_init(|| mapped::FileMap::open(local));
                let wanted: Vec<Range<u64>> = small.iter().map(|&i| ranges[i].clone()).collect();
                if let Some(cut) = map.as_ref().and_then(|m| m.slices(&wanted)) {
                    small.iter().zip(cut).for_each(|(&i, b)| got[i] = Some(b));
                }
            }
            let rest: Vec<usize> = (0..ranges.len()).filter(|&i| got[i].is_none()).collect();
            IO_MAPPED.fetch_add((ranges.len() - rest.len()) as u64, Ordering::Relaxed);
            let wanted: Vec<Range<u64>> = rest.iter().map(|&i| ranges[i].clone()).collect();
            for (&i, b) in rest.iter().zip(local::read_ranges(local, &self.display, &wanted)?) {
                got[i] = Some(b);
            }
            return got.into_iter().map(|g| g.ok_or_else(|| Error::Internal { what: "fewer ranges read than asked".into() })).collect();
        }
        match &self.local_dir {
            Some(p) => local::read_ranges(p, &self.display, ranges),
            None => block_on(self.store.get().get_ranges(&self.path, ranges)).map_err(|e| io_err(&self.display, e)),
        }
    }

    /// Read the whole object.
    pub fn read_all(&self) -> Result<Bytes> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        let b = match &self.local_dir {
            Some(p) => local::read_all(p, &self.display)?,
            None => self.read_all_remote()?,
        };
        self.count_bytes(b.len());
        count_io(1, b.len() as u64);
        Ok(b)
    }

    fn read_all_remote(&self) -> Result<Bytes> {
        block_on(async {
            let r = self.store.get().get(&self.path).await?;
            r.bytes().await
        })
        .map_err(|e| io_err(&self.display, e))
    }

    /// A handle on `rel` (a `/`-separated relative path) below this path,
    /// sharing the store and the request counter. Datasets use this to reach
    /// their manifests, data and deletion files from the root.
    pub fn child(&self, rel: &str) -> Result<Storage> {
        let mut path = self.path.clone();
        let mut local_dir = self.local_dir.clone();
        for part in rel.split('/').filter(|p| !p.is_empty()) {
            if part == "." || part == ".." {
                return Err(Error::invalid_input(format!("relative path {rel:?} may not contain . or ..")));
            }
            // The part as it is (see the module docs): `PathPart::from`
            // would percent-encode it, so that writes (through the store)
            // and local reads (through `local_dir`) reached different files.
            let part = PathPart::parse(part).map_err(|e| Error::invalid_input(format!("relative path {rel:?}: {e}")).with_source(e))?;
            if let Some(d) = local_dir.as_mut() {
                d.push(part.as_ref());
            }
            path = path.join(part);
        }
        let display = format!("{}/{}", self.display.trim_end_matches('/'), rel.trim_start_matches('/'));
        Ok(Storage {
            store: self.store.clone(),
            path,
            display,
            reads: self.reads.clone(),
            bytes_read: self.bytes_read.clone(),
            options: self.options.clone(),
            local_dir,
            request_cost: self.request_cost,
            file_map: FileMapCell::default(),
            manifest_store: self.manifest_store.clone(),
        })
    }

    /// A handle on `rel` below the directory named after this object
    /// without its extension (`data/f.lance` -> `data/f/<rel>`): where the
    /// blob sidecar files of a data file live.
    pub fn sidecar(&self, rel: &str) -> Result<Storage> {
        let stem = |s: &str| -> String {
            match s.rsplit_once('.') {
                Some((a, ext)) if !ext.contains('/') => a.to_string(),
                _ => s.to_string(),
            }
        };
        let path =
            Path::parse(stem(self.path.as_ref())).map_err(|e| Error::invalid_input(format!("sidecar of {}: {e}", self.display)).with_source(e))?;
        let mut dir = Storage { path, display: stem(&self.display), ..self.clone_parts() };
        if let Some(d) = self.local_dir.as_ref() {
            dir.local_dir = Some(d.with_extension(""));
        }
        dir.child(rel)
    }

    /// The fields of this handle but its file map.
    fn clone_parts(&self) -> Storage {
        Storage {
            store: self.store.clone(),
            path: self.path.clone(),
            display: self.display.clone(),
            reads: self.reads.clone(),
            bytes_read: self.bytes_read.clone(),
            options: self.options.clone(),
            local_dir: self.local_dir.clone(),
            request_cost: self.request_cost,
            file_map: FileMapCell::default(),
            manifest_store: self.manifest_store.clone(),
        }
    }

    /// The objects directly below this path (treated as a directory): names
    /// relative to it and sizes. A missing directory lists as empty.
    pub fn list(&self) -> Result<Vec<(String, u64)>> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        let prefix = if self.path.as_ref().is_empty() { None } else { Some(&self.path) };
        let listing = match block_on(self.store.get().list_with_delimiter(prefix)) {
            Ok(l) => l,
            Err(object_store::Error::NotFound { .. }) => return Ok(Vec::new()),
            Err(e) => return Err(io_err(&self.display, e)),
        };
        Ok(listing.objects.into_iter().filter_map(|m| m.location.filename().map(|n| (n.to_string(), m.size))).collect())
    }

    /// Every object below this path (treated as a directory), at any
    /// depth: paths relative to it, sizes and modification times. A missing
    /// directory lists as empty.
    pub fn list_recursive(&self) -> Result<Vec<ListedObject>> {
        use futures::TryStreamExt;
        self.reads.fetch_add(1, Ordering::Relaxed);
        let prefix = if self.path.as_ref().is_empty() { None } else { Some(&self.path) };
        let metas: Vec<object_store::ObjectMeta> = match block_on(self.store.get().list(prefix).try_collect()) {
            Ok(m) => m,
            Err(object_store::Error::NotFound { .. }) => return Ok(Vec::new()),
            Err(e) => return Err(io_err(&self.display, e)),
        };
        Ok(metas
            .into_iter()
            .filter_map(|m| {
                let rel: Vec<String> = m.location.prefix_match(&self.path)?.map(|p| p.as_ref().to_string()).collect();
                let t = m.last_modified;
                let since_epoch = std::time::Duration::new(t.timestamp().max(0) as u64, t.timestamp_subsec_nanos());
                Some(ListedObject { path: rel.join("/"), size: m.size, last_modified: std::time::UNIX_EPOCH + since_epoch })
            })
            .collect())
    }

    /// A streaming writer for this object (see [`upload`]).
    pub fn writer(&self) -> ObjectWriter {
        ObjectWriter::new(self.clone())
    }

    /// Write the whole object (replacing any previous content); local files
    /// in bounded `write()` calls ([`upload::write_pieces`]).
    pub fn write_all(&self, data: Bytes) -> Result<()> {
        let payload: PutPayload = upload::write_pieces(self, data).collect();
        block_on(self.store.get().put(&self.path, payload)).map(|_| ()).map_err(|e| io_err(&self.display, e))
    }

    /// Write the whole object only if it does not exist yet (object_store
    /// `PutMode::Create`: atomic on local file systems and in memory).
    /// An existing object gives `Error::AlreadyExists`.
    pub fn write_new(&self, data: Bytes) -> Result<()> {
        let opts = PutOptions { mode: PutMode::Create, ..Default::default() };
        let payload: PutPayload = upload::write_pieces(self, data).collect();
        block_on(self.store.get().put_opts(&self.path, payload, opts)).map(|_| ()).map_err(|e| io_err(&self.display, e))
    }

    /// Copy this object to `dest` (a handle on the same store), replacing
    /// what is there; a missing source is `Error::NotFound`.
    pub fn copy_to(&self, dest: &Storage) -> Result<()> {
        block_on(self.store.get().copy(&self.path, &dest.path)).map_err(|e| io_err(&self.display, e))
    }

    /// Delete the object (a missing one is `Error::NotFound`).
    pub fn delete(&self) -> Result<()> {
        block_on(self.store.get().delete(&self.path)).map_err(|e| io_err(&self.display, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearby_ranges_are_read_as_one() {
        // out of order, overlapping, gaps of 5, 4 and 5 bytes
        let ranges = vec![20..30, 0..10, 5..8, 15..16, 35..40];
        let c = coalesce(&ranges, 4, 1 << 20);
        assert_eq!(c.groups, vec![0..10, 15..30, 35..40]);
        assert_eq!(c.group_of, vec![1, 0, 0, 1, 2]);
        assert_eq!(coalesce(&ranges, 5, 1 << 20).groups, vec![0..40]);
        // a group stops growing at `max` bytes; a larger range stands alone
        assert_eq!(coalesce(&[0..6, 6..12, 12..13], 0, 10).groups, vec![0..6, 6..13]);
        assert_eq!(coalesce(&[0..50, 50..51], 0, 10).groups, vec![0..50, 50..51]);
        assert_eq!(merged_count(&ranges), 4);
    }

    #[test]
    fn coalesced_reads_return_each_range() {
        let s = Storage::open("memory://io-tests/coalesce.bin").unwrap();
        let data: Vec<u8> = (0..=255u8).cycle().take(100_000).collect();
        s.write_all(Bytes::from(data.clone())).unwrap();
        let ranges = vec![90_000..90_010, 0..100, 50..60, 200..200, 5_000..5_100, 99_990..100_000];
        let before = io_stats();
        let got = s.read_ranges_coalesced(&ranges, 4096).unwrap();
        let after = io_stats();
        for (r, b) in ranges.iter().zip(&got) {
            assert_eq!(b.as_ref(), &data[r.start as usize..r.end as usize]);
        }
        // 0..5100 and 90000..100000 (other threads' tests may add more)
        assert!(after.requests - before.requests >= 2);
        assert!(s.read_ranges_coalesced(&[99_990..100_010], 0).is_err());
    }

    #[test]
    fn file_uris_are_urls() {
        let p = |u: &str| file_uri_path(u).map(|p| p.display().to_string());
        assert_eq!(p("file:///a%20b/%C3%BC%41.lance").unwrap(), "/a b/üA.lance");
        assert_eq!(p("file:///a b/ü").unwrap(), "/a b/ü");
        assert_eq!(p("file://localhost/x/%2541").unwrap(), "/x/%41");
        assert_eq!(p("file:///x/a#frag").unwrap(), "/x/a");
        assert_eq!(p("file:///x/a?q=1").unwrap(), "/x/a");
        assert!(matches!(file_uri_path("file://host/x"), Err(Error::InvalidInput { .. })));
        assert!(matches!(file_uri_path("file:///x/%FF"), Err(Error::InvalidInput { .. })));
        let s = Storage::open("file:///tmp/a%20b/%C3%BC").unwrap();
        assert_eq!(s.display(), "/tmp/a b/ü");
    }

    /// A write through a regular file fails in the object store: a storage
    /// failure that keeps the object store's error, and below it the file
    /// system's.
    #[test]
    fn object_store_errors_keep_their_source() {
        let dir = std::env::temp_dir().join(format!("lancelet-io-{}", crate::ids::new_uuid()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("plain"), b"x").unwrap();
        let s = Storage::open(dir.join("plain/obj").to_str().unwrap()).unwrap();
        let e = s.write_all(Bytes::from_static(b"data")).unwrap_err();
        assert!(matches!(&e, Error::Io { path, .. } if path.ends_with("plain/obj")), "{e:?}");
        let source = std::error::Error::source(&e).expect("a source");
        let store = source.downcast_ref::<object_store::Error>().unwrap_or_else(|| panic!("not an object_store error: {source:?}"));
        assert!(is_object_store_error(source));
        assert!(e.to_string().ends_with(&store.to_string()), "{e}");
        // The file system's error further down the chain.
        let mut chain = std::iter::successors(Some(source), |s| s.source());
        let io = chain.find_map(|s| s.downcast_ref::<std::io::Error>()).expect("an io::Error in the chain");
        assert_eq!(io.kind(), std::io::ErrorKind::NotADirectory, "{io:?}");
        // Not found and already exists keep theirs too.
        let e = io_err("p", object_store::Error::NotFound { path: "p".into(), source: "gone".into() });
        assert!(matches!(e, Error::NotFound { .. }) && std::error::Error::source(&e).is_some_and(|s| s.is::<object_store::Error>()));
        let e = Storage::open(dir.join("plain").to_str().unwrap()).unwrap().write_new(Bytes::from_static(b"y")).unwrap_err();
        assert!(matches!(e, Error::AlreadyExists { .. }), "{e:?}");
        assert!(std::error::Error::source(&e).is_some_and(|s| s.is::<object_store::Error>()), "{e:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
