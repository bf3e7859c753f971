//! Rewriting an index for new row addresses (after a compaction).
//!
//! The index's `(value, row)` pairs are read back, each row address is
//! mapped (`None`: the row was deleted, the pair is dropped) and the index
//! is written anew into another directory with the same layout, so a
//! remapped index is exactly what building it on the compacted rows gives.
//! Indices holding stable row ids never need this (their ids do not move).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{Array, ArrayRef, UInt32Array, UInt64Array};
use bytes::Bytes;

use super::rowset::RowSet;
use super::{bitmap, btree, label_list, IndexKind, TrainingData};
use crate::error::{Error, Result};
use crate::file::{FileReader, FileVersion};
use crate::io::Storage;

/// `(values, ids)` of a BTREE index, all pages.
fn btree_pairs(dir: &Storage) -> Result<TrainingData> {
    let r = FileReader::open_storage(dir.child(btree::DATA_FILE)?)?;
    let b = r.read_range(&[0, 1], 0..r.num_rows())?;
    Ok(TrainingData { values: b.column(0).clone(), ids: b.column(1).as_primitive::<UInt64Type>().clone() })
}

/// `(key, id)` pairs of a bitmap file, the key repeated per row.
fn bitmap_pairs(dir: &Storage) -> Result<(TrainingData, FileReader)> {
    let r = FileReader::open_storage(dir.child(bitmap::FILE)?)?;
    let b = r.read_range(&[0, 1], 0..r.num_rows())?;
    let (keys, maps) = (b.column(0), b.column(1));
    let mut take = Vec::new();
    let mut ids = Vec::new();
    for i in 0..keys.len() {
        if maps.is_null(i) {
            continue;
        }
        let bytes = match maps.data_type() {
            arrow_schema::DataType::LargeBinary => maps.as_binary::<i64>().value(i),
            _ => maps.as_binary::<i32>().value(i),
        };
        let set = RowSet::from_bytes(bytes).map_err(|e| e.in_file(r.path()))?;
        for v in set.values()? {
            take.push(i as u32);
            ids.push(v);
        }
    }
    let values: ArrayRef = arrow_select::take::take(keys.as_ref(), &UInt32Array::from(take), None).map_err(Error::internal_arrow)?;
    Ok((TrainingData { values, ids: UInt64Array::from(ids) }, r))
}

/// Keep the pairs whose row still exists, with its new address.
fn mapped(data: TrainingData, f: &dyn Fn(u64) -> Option<u64>) -> Result<TrainingData> {
    let mut keep = Vec::with_capacity(data.ids.len());
    let mut ids = Vec::with_capacity(data.ids.len());
    for (i, id) in data.ids.values().iter().enumerate() {
        if let Some(n) = f(*id) {
            keep.push(i as u32);
            ids.push(n);
        }
    }
    let values = arrow_select::take::take(data.values.as_ref(), &UInt32Array::from(keep), None).map_err(Error::internal_arrow)?;
    Ok(TrainingData { values: Arc::new(values) as ArrayRef, ids: UInt64Array::from(ids) })
}

/// Rewrite the `kind` index in `src` into `dst` (files of `version`) with
/// every row address mapped by `f`; returns the files written.
pub fn remap(kind: IndexKind, src: &Storage, dst: &Storage, version: FileVersion, f: &dyn Fn(u64) -> Option<u64>) -> Result<Vec<(String, u64)>> {
    match kind {
        IndexKind::BTree => btree::write(dst, version, &mapped(btree_pairs(src)?, f)?),
        IndexKind::Bitmap => bitmap::write(dst, version, &mapped(bitmap_pairs(src)?.0, f)?),
        IndexKind::LabelList => {
            let (pairs, reader) = bitmap_pairs(src)?;
            let nulls = if reader.schema().metadata().contains_key(label_list::NULLS_KEY) {
                let old = RowSet::from_bytes(&reader.read_global_buffer(1)?)?;
                RowSet::from_ids(old.values()?.into_iter().filter_map(f).collect())
            } else {
                RowSet::new()
            };
            bitmap::write_pairs(dst, version, &mapped(pairs, f)?, &[(label_list::NULLS_KEY, "1")], Some(Bytes::from(nulls.to_bytes())))
        }
        // Zones of row addresses cannot follow moved rows (pylance: "does
        // not support remap"); compaction leaves these indices as they are.
        IndexKind::NGram => super::ngram::remap(src, dst, version, f),
        IndexKind::ZoneMap | IndexKind::BloomFilter => Err(Error::unsupported(format!("{} does not support remap", kind.display_name()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{build, open, IndexQuery};
    use arrow_array::builder::{ListBuilder, StringBuilder};
    use arrow_array::{Int32Array, StringArray};

    fn dir(tag: &str) -> Storage {
        Storage::open(&format!("memory://remap-{tag}-{}/d", crate::ids::new_uuid())).unwrap()
    }

    /// Rows 0..n of fragment 0 move to fragment 5 without the odd ones.
    fn f(a: u64) -> Option<u64> {
        (a % 2 == 0).then_some((5 << 32) | (a / 2))
    }

    #[test]
    fn remapped_index_equals_a_fresh_build() {
        let n = 9000u64;
        let ids = UInt64Array::from((0..n).collect::<Vec<_>>());
        let vals: ArrayRef = Arc::new(Int32Array::from((0..n as i32).map(|i| (i * 7) % 100).collect::<Vec<_>>()));
        let mut lb = ListBuilder::new(StringBuilder::new());
        for i in 0..n {
            if i % 11 == 0 {
                lb.append(false);
            } else {
                lb.values().append_value(format!("t{}", i % 5));
                lb.append(true);
            }
        }
        let lists: ArrayRef = Arc::new(lb.finish());
        for (kind, values) in [(IndexKind::BTree, vals.clone()), (IndexKind::Bitmap, vals), (IndexKind::LabelList, lists)] {
            let (src, dst, fresh) = (dir("s"), dir("d"), dir("f"));
            build(kind, &src, FileVersion::V2_1, &TrainingData { values: values.clone(), ids: ids.clone() }).unwrap();
            remap(kind, &src, &dst, FileVersion::V2_1, &f).unwrap();
            let kept: Vec<u32> = (0..n as u32).filter(|i| i % 2 == 0).collect();
            let fresh_values = arrow_select::take::take(values.as_ref(), &UInt32Array::from(kept.clone()), None).unwrap();
            let fresh_ids = UInt64Array::from(kept.iter().map(|&i| (5u64 << 32) | (i as u64 / 2)).collect::<Vec<_>>());
            build(kind, &fresh, FileVersion::V2_1, &TrainingData { values: fresh_values, ids: fresh_ids }).unwrap();
            let (a, b) = (open(kind, &dst).unwrap(), open(kind, &fresh).unwrap());
            let queries = match kind {
                IndexKind::LabelList => vec![
                    IndexQuery::HasAny(Arc::new(StringArray::from(vec!["t1", "t3"]))),
                    IndexQuery::HasAll(Arc::new(StringArray::from(vec!["t2"]))),
                    IndexQuery::IsNull,
                ],
                _ => vec![IndexQuery::Equals(Arc::new(Int32Array::from(vec![14]))), IndexQuery::IsNull],
            };
            for q in queries {
                assert_eq!(a.search(&q).unwrap(), b.search(&q).unwrap(), "{kind:?} {q:?}");
            }
        }
    }
}
