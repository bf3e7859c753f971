//! Opening a vector index for search: reads `index.idx` and `auxiliary.idx`
//! of `_indices/{uuid}/` into a [`VectorIndex`].

use std::sync::Arc;

use super::VectorIndex;
use crate::error::{Error, Result};
use crate::io::Storage;
use crate::proto::table as pb;

/// Open the vector index described by `meta` whose files are in `dir`.
pub fn open(dir: &Storage, meta: &pb::IndexMetadata) -> Result<Arc<dyn VectorIndex>> {
    let _ = (dir, meta);
    Err(Error::unsupported("searching vector indices is not implemented yet"))
}
