//! Vector indices in pylance 14's format, and the interface vector search
//! uses them through.
//!
//! pylance 14 builds IVF indices: vectors are assigned to the nearest of
//! `num_partitions` centroids (k-means), and each partition's vectors are
//! stored unquantized (FLAT), product-quantized (PQ), scalar-quantized (SQ)
//! or RaBitQ-coded (RQ), optionally with an HNSW graph per partition. An
//! index lives in `_indices/{uuid}/` as two Lance files, `index.idx` (the
//! IVF model; HNSW graphs) and `auxiliary.idx` (the stored vectors or
//! codes, grouped by partition, ascending row id within one); its
//! manifest entry carries `VectorIndexDetails` ([`crate::proto::index`]).
//! The layouts are written down in docs/research/vector-index.md.
//!
//! * [`distance`]: the distance functions (`_distance` as pylance defines it);
//! * [`layout`]: file, column and metadata names of the two files;
//! * [`tensor`]: centroid and codebook tensors as f32 rows;
//! * [`open`]: opening an index for search;
//! * [`VectorIndex`]: what the table room's search asks of an opened index.
//!
//! Like the scalar indices, a vector index never scans a table: building one
//! is handed the column's vectors and row ids, and searching one returns
//! row ids with distances; the table room merges them with a flat search of
//! the fragments the index does not cover.

pub mod build;
pub mod distance;
#[cfg(test)]
mod fixture_tests;
pub mod hnsw;
pub mod ivf;
pub mod kmeans;
pub mod layout;
pub mod open;
pub mod pq;
pub mod pq_train;
pub mod probes;
pub mod search;
pub mod segment;
pub mod sq;
pub mod sq_train;
pub mod storage;
pub mod tensor;
#[cfg(any(test, feature = "fuzzing"))]
pub mod testing;
pub mod write;

use std::fmt;

use crate::error::{Error, Result};

/// How vectors are compared (pylance's `metric` / `distance_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DistanceType {
    /// Squared Euclidean distance (`"l2"`, also `"euclidean"`).
    L2,
    /// `1 - cos(a, b)`.
    Cosine,
    /// `1 - a·b`.
    Dot,
    /// Differing bits of uint8 vectors.
    Hamming,
}

impl DistanceType {
    /// Parse a metric name as pylance accepts it (case-insensitive).
    pub fn parse(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "l2" | "euclidean" => Ok(DistanceType::L2),
            "cosine" => Ok(DistanceType::Cosine),
            "dot" => Ok(DistanceType::Dot),
            "hamming" => Ok(DistanceType::Hamming),
            _ => Err(Error::invalid_input(format!("Metric {s} not supported."))),
        }
    }

    /// The name stored in index files and shown by `describe_indices`
    /// (`"l2"`, `"cosine"`, `"dot"`, `"hamming"`).
    pub fn as_str(self) -> &'static str {
        match self {
            DistanceType::L2 => "l2",
            DistanceType::Cosine => "cosine",
            DistanceType::Dot => "dot",
            DistanceType::Hamming => "hamming",
        }
    }

    /// The name plans print (`metric=L2`).
    pub fn plan_name(self) -> &'static str {
        match self {
            DistanceType::L2 => "L2",
            DistanceType::Cosine => "Cosine",
            DistanceType::Dot => "Dot",
            DistanceType::Hamming => "Hamming",
        }
    }

    /// The `VectorIndexDetails.metric_type` value.
    pub fn to_pb(self) -> crate::proto::index::VectorMetricType {
        use crate::proto::index::VectorMetricType as M;
        match self {
            DistanceType::L2 => M::L2,
            DistanceType::Cosine => M::Cosine,
            DistanceType::Dot => M::Dot,
            DistanceType::Hamming => M::Hamming,
        }
    }

    /// From `VectorIndexDetails.metric_type`.
    pub fn from_pb(v: i32) -> Result<Self> {
        use crate::proto::index::VectorMetricType as M;
        match M::try_from(v) {
            Ok(M::L2) => Ok(DistanceType::L2),
            Ok(M::Cosine) => Ok(DistanceType::Cosine),
            Ok(M::Dot) => Ok(DistanceType::Dot),
            Ok(M::Hamming) => Ok(DistanceType::Hamming),
            Err(_) => Err(Error::corrupt(format!("unknown vector index metric {v}"))),
        }
    }
}

impl fmt::Display for DistanceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The vector index types pylance 14 builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VectorIndexType {
    /// IVF, vectors unquantized.
    IvfFlat,
    /// IVF, product-quantized residuals (raw vectors for dot).
    IvfPq,
    /// IVF, scalar-quantized vectors.
    IvfSq,
    /// IVF, RaBitQ codes.
    IvfRq,
    /// IVF with an HNSW graph per partition over unquantized vectors.
    IvfHnswFlat,
    /// IVF with HNSW over PQ codes.
    IvfHnswPq,
    /// IVF with HNSW over SQ codes.
    IvfHnswSq,
}

impl VectorIndexType {
    /// Every type.
    pub const ALL: [VectorIndexType; 7] = [
        VectorIndexType::IvfFlat,
        VectorIndexType::IvfPq,
        VectorIndexType::IvfSq,
        VectorIndexType::IvfRq,
        VectorIndexType::IvfHnswFlat,
        VectorIndexType::IvfHnswPq,
        VectorIndexType::IvfHnswSq,
    ];

    /// The `index_type` name (`"IVF_PQ"`, ...), as `lance:index` stores it.
    pub fn name(self) -> &'static str {
        match self {
            VectorIndexType::IvfFlat => "IVF_FLAT",
            VectorIndexType::IvfPq => "IVF_PQ",
            VectorIndexType::IvfSq => "IVF_SQ",
            VectorIndexType::IvfRq => "IVF_RQ",
            VectorIndexType::IvfHnswFlat => "IVF_HNSW_FLAT",
            VectorIndexType::IvfHnswPq => "IVF_HNSW_PQ",
            VectorIndexType::IvfHnswSq => "IVF_HNSW_SQ",
        }
    }

    /// Parse an `index_type` argument (case-insensitive).
    pub fn parse(s: &str) -> Result<Self> {
        let up = s.to_ascii_uppercase();
        Self::ALL.into_iter().find(|t| t.name() == up).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|t| t.name()).collect();
            Error::unsupported(format!("Only {names:?} index types supported. Got {s}"))
        })
    }

    /// Whether partitions carry an HNSW graph.
    pub fn has_hnsw(self) -> bool {
        matches!(self, VectorIndexType::IvfHnswFlat | VectorIndexType::IvfHnswPq | VectorIndexType::IvfHnswSq)
    }
}

impl fmt::Display for VectorIndexType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How many IVF partitions a query probes (pylance 14's parameters; the
/// rule that turns them into a number is [`VectorIndex::search`]'s).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Probes {
    /// `minimum_nprobes` (`nprobes` sets both bounds).
    pub minimum: Option<usize>,
    /// `maximum_nprobes`.
    pub maximum: Option<usize>,
    /// `search_effort` in [0, 1] (pylance's default budget is 0.5).
    pub search_effort: Option<f32>,
}

/// One approximate nearest-neighbour query against one index.
#[derive(Debug, Clone, PartialEq)]
pub struct AnnQuery {
    /// The query vector, as float32 (pylance converts queries to float32).
    pub vector: Vec<f32>,
    /// Candidates wanted (`k`, or `k * refine_factor` when refining).
    pub k: usize,
    /// Partitions to probe.
    pub probes: Probes,
    /// HNSW search breadth (`ef`); `None`: the index's default.
    pub ef: Option<usize>,
    /// Keep only distances `lower <= d < upper` (either bound optional), on
    /// the distance the index computes.
    pub distance_range: (Option<f32>, Option<f32>),
}

/// What a search found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AnnResult {
    /// `(row id, distance)`: row ids as the index stores them (row
    /// addresses, or stable row ids on datasets that have them); distances
    /// as the index computes them (approximate for PQ and SQ). Ascending by
    /// distance, then row id; at most `k`.
    pub rows: Vec<(u64, f32)>,
    /// Partitions searched (what `analyze_plan` reports).
    pub partitions_searched: usize,
}

/// Rows a search may return (a prefilter), by row id as the index stores them.
pub type AllowedRows = roaring::RoaringTreemap;

/// A vector index opened for search.
pub trait VectorIndex: Send + Sync + fmt::Debug {
    /// The index type.
    fn index_type(&self) -> VectorIndexType;
    /// The metric the index was built for (a query uses it whatever it asks).
    fn distance_type(&self) -> DistanceType;
    /// Vector dimension.
    fn dimension(&self) -> usize;
    /// IVF partitions.
    fn num_partitions(&self) -> usize;
    /// The nearest indexed rows to `query.vector` (see [`AnnResult`]),
    /// among `allowed` rows when given (a prefilter: the search probes more
    /// partitions until it has `k` allowed rows or has probed as many as it
    /// may).
    fn search(&self, query: &AnnQuery, allowed: Option<&AllowedRows>) -> Result<AnnResult>;
}
