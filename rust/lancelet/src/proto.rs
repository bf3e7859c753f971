//! Rust types generated from `protos/` at build time.
#![allow(clippy::all, missing_docs)]

/// `lance.file`: schema fields and the 2.x file descriptor.
pub mod file {
    include!(concat!(env!("OUT_DIR"), "/lance.file.rs"));
    /// `lance.file.v2`: column metadata of 2.x files.
    pub mod v2 {
        include!(concat!(env!("OUT_DIR"), "/lance.file.v2.rs"));
    }
}

/// `lance.encodings`: 2.0 page encodings and the column encoding.
pub mod encodings {
    include!(concat!(env!("OUT_DIR"), "/lance.encodings.rs"));
}

/// `lance.encodings21`: 2.1/2.2 page layouts and compressive encodings.
pub mod encodings21 {
    include!(concat!(env!("OUT_DIR"), "/lance.encodings21.rs"));
}

/// `lance.table`: manifests, fragments, transactions and row id sequences.
pub mod table {
    include!(concat!(env!("OUT_DIR"), "/lance.table.rs"));
}

/// `lance.index.pb`: vector index models and details (IVF, tensors).
pub mod index {
    include!(concat!(env!("OUT_DIR"), "/lance.index.pb.rs"));
}

/// Type URLs of the `google.protobuf.Any` wrappers Lance writes.
pub mod type_url {
    pub const COLUMN_ENCODING: &str = "/lance.encodings.ColumnEncoding";
    pub const ARRAY_ENCODING: &str = "/lance.encodings.ArrayEncoding";
    pub const PAGE_LAYOUT: &str = "/lance.encodings21.PageLayout";
    pub const VECTOR_INDEX_DETAILS: &str = "/lance.index.pb.VectorIndexDetails";
}
