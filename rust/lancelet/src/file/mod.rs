//! The Lance data file (`.lance`): container, schema, versions, and the
//! readers and writers of each version's pages.

pub(crate) mod fetch;
pub mod footer;
pub mod legacy;
pub mod pieces;
pub mod reader;
pub mod schema;
pub(crate) mod source;
pub mod stats;
pub mod structural;
pub mod v2_0;
pub mod version;
pub mod write;
pub mod writer;

pub use reader::FileReader;
pub use version::FileVersion;
pub use writer::FileWriter;
