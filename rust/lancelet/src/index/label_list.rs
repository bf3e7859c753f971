//! LABEL_LIST indices: a bitmap index over the elements of a list column,
//! answering `array_has_any` / `array_has_all` (and `array_contains`).
//!
//! ```text
//! _indices/{uuid}/bitmap_page_lookup.lance
//!     keys:    <element type> (nullable)  distinct elements, sorted, null
//!                                         first (rows with a null element)
//!     bitmaps: binary                     rows whose list holds the element
//!     global buffer 1 (written first, at offset 0): the rows whose list
//!                                         is null, a serialized RowIdTreeMap
//!     schema metadata: lance:index_stats = {"num_bitmaps":N},
//!                      lance:label_list_nulls = "1"
//! ```
//!
//! pylance 14 records `index_version` 1 for this layout. Files without the
//! `lance:label_list_nulls` key (older releases) carry no null set; lancelet
//! then treats the index as unable to tell null lists apart (it is only
//! asked `array_has_*`, which null lists never satisfy).

use std::sync::Arc;

use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;
use bytes::Bytes;

use super::bitmap::{write_keyed, BitmapIndex};
use super::group::group;
use super::rowset::RowSet;
use super::{IndexKind, IndexQuery, ScalarIndex, TrainingData};
use crate::error::{Error, Result};
use crate::file::FileVersion;
use crate::io::Storage;

/// Schema metadata key marking the null-lists global buffer.
pub const NULLS_KEY: &str = "lance:label_list_nulls";

/// Write a LABEL_LIST index for list column `data.values`: the list
/// elements grouped by value (each paired with its row's id, never copied),
/// and the ids of null lists.
pub fn write(dir: &Storage, version: FileVersion, data: &TrainingData) -> Result<Vec<(String, u64)>> {
    let v = &data.values;
    let (elements, offsets): (ArrayRef, Vec<usize>) = match v.data_type() {
        DataType::List(_) => {
            let l = v.as_any().downcast_ref::<arrow_array::ListArray>().expect("list");
            (l.values().clone(), l.value_offsets().iter().map(|&o| o as usize).collect())
        }
        DataType::LargeList(_) => {
            let l = v.as_any().downcast_ref::<arrow_array::LargeListArray>().expect("large list");
            (l.values().clone(), l.value_offsets().iter().map(|&o| o as usize).collect())
        }
        other => return Err(Error::invalid_input(format!("a LABEL_LIST index needs a list column, not {other}"))),
    };
    let ids = data.ids.values();
    let nulls: Vec<u64> = (0..v.len()).filter(|&i| v.is_null(i)).map(|i| ids[i]).collect();
    let pairs = (0..v.len()).filter(|&i| v.is_valid(i)).flat_map(|i| (offsets[i]..offsets[i + 1]).map(move |e| (e, ids[i])));
    let groups = group(&elements, pairs)?;
    write_keyed(dir, version, elements.data_type(), &groups, &[(NULLS_KEY, "1")], Some(Bytes::from(RowSet::from_ids(nulls).to_bytes())))
}

/// An opened LABEL_LIST index.
#[derive(Debug)]
pub struct LabelListIndex {
    values: BitmapIndex,
    /// Rows whose list is null (empty for files that do not record them).
    null_lists: Arc<RowSet>,
}

impl LabelListIndex {
    /// Open the index in `dir`.
    pub fn open(dir: &Storage) -> Result<Self> {
        let values = BitmapIndex::open(dir, true)?;
        let r = values.reader();
        let null_lists = if r.schema().metadata().get(NULLS_KEY).is_some() {
            let bytes = r.read_global_buffer(1)?;
            RowSet::from_bytes(&bytes).map_err(|e| e.in_file(r.path()).context("null lists (global buffer 1)"))?
        } else {
            RowSet::new()
        };
        Ok(LabelListIndex { values, null_lists: Arc::new(null_lists) })
    }

    /// Rows whose list is null.
    pub fn null_lists(&self) -> &RowSet {
        &self.null_lists
    }
}

impl ScalarIndex for LabelListIndex {
    fn kind(&self) -> IndexKind {
        IndexKind::LabelList
    }

    fn value_type(&self) -> &DataType {
        self.values.value_type()
    }

    fn search(&self, query: &IndexQuery) -> Result<RowSet> {
        match query {
            IndexQuery::HasAny(vs) => self.values.combine(vs, false),
            IndexQuery::HasAll(vs) if vs.is_empty() => {
                Err(Error::Internal { what: "array_has_all with no values is true for every row and is not asked of an index".into() })
            }
            IndexQuery::HasAll(vs) => self.values.combine(vs, true),
            IndexQuery::IsNull => Ok((*self.null_lists).clone()),
            _ => Err(Error::Internal { what: format!("{query:?} asked of a LABEL_LIST index") }),
        }
    }
}
