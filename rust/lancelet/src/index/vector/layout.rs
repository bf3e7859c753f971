//! Names in pylance 14's vector index files (docs/research/vector-index.md
//! §3–§5): the two files of `_indices/{uuid}/`, their columns and schema
//! metadata keys. Readers and writers share these so both say the same.
//!
//! * `index.idx`: the IVF model (global buffer 1, [`IVF_METADATA_KEY`]
//!   names it) and, for HNSW types, the graph rows (`__vector_id`,
//!   `__neighbors`, `_distance`, one row range per partition and level);
//!   for other types zero rows of [`FLAT_MARKER_COLUMN`]. Metadata
//!   [`INDEX_METADATA_KEY`] = `{"type": .., "distance_type": ..}`.
//! * `auxiliary.idx`: the stored vectors or codes, `_rowid` first, grouped
//!   by partition in partition order and ascending row id within one;
//!   global buffer 1 holds an IVF message with only offsets and lengths,
//!   global buffer 2 the PQ codebook. Metadata [`DISTANCE_TYPE_KEY`],
//!   [`IVF_METADATA_KEY`], [`STORAGE_METADATA_KEY`] (a JSON list of one
//!   JSON string per storage).

/// The index file (IVF model, HNSW graphs).
pub const INDEX_FILE: &str = "index.idx";
/// The storage file (vectors or codes by partition).
pub const AUXILIARY_FILE: &str = "auxiliary.idx";

/// `{"type":"IVF_PQ","distance_type":"l2"}` in `index.idx`.
pub const INDEX_METADATA_KEY: &str = "lance:index";
/// The global buffer index (as a decimal string) holding the IVF message.
pub const IVF_METADATA_KEY: &str = "lance:ivf";
/// `index.idx` of non-HNSW types: one empty string per partition.
pub const FLAT_METADATA_KEY: &str = "lance:flat";
/// `index.idx` of HNSW types: one JSON string per partition
/// (`entry_point`, `params`, `level_offsets`).
pub const HNSW_METADATA_KEY: &str = "lance:hnsw";
/// `auxiliary.idx`: the metric name.
pub const DISTANCE_TYPE_KEY: &str = "distance_type";
/// `auxiliary.idx`: a JSON list holding the storage's JSON metadata string.
pub const STORAGE_METADATA_KEY: &str = "storage_metadata";

/// The only column of a non-HNSW `index.idx` (zero rows, uint64).
pub const FLAT_MARKER_COLUMN: &str = "__flat_marker";
/// HNSW graph rows: partition-local vector ordinal.
pub const VECTOR_ID_COLUMN: &str = "__vector_id";
/// HNSW graph rows: neighbour ordinals.
pub const NEIGHBORS_COLUMN: &str = "__neighbors";
/// HNSW graph rows: distances to the neighbours.
pub const NEIGHBOR_DISTANCE_COLUMN: &str = "_distance";

/// Storage: the row id of each stored vector.
pub const ROW_ID_COLUMN: &str = "_rowid";
/// FLAT storage: the vectors (normalized for cosine).
pub const FLAT_COLUMN: &str = "flat";
/// PQ storage: codes, transposed per partition.
pub const PQ_CODE_COLUMN: &str = "__pq_code";
/// SQ storage: one byte per dimension.
pub const SQ_CODE_COLUMN: &str = "__sq_code";

/// Global buffer of the IVF message in both files.
pub const IVF_BUFFER: u32 = 1;
/// Global buffer of the PQ codebook in `auxiliary.idx`.
pub const PQ_CODEBOOK_BUFFER: u32 = 2;

/// `IndexMetadata.index_version` of IVF_* indices other than IVF_RQ.
pub const INDEX_VERSION: i32 = 1;
/// `IndexMetadata.index_version` of IVF_RQ.
pub const RQ_INDEX_VERSION: i32 = 2;
