//! Vector columns (wide fixed-size lists) handed to storage without a copy.
//!
//! A top-level `FixedSizeList` of fixed-width items whose rows are at
//! least [`super::MINIBLOCK_MAX_VALUE_BYTES`] wide (see
//! [`super::is_wide_fixed`]) is stored in full-zip pages. Without nulls
//! such a page has no control words and no repetition index: its one
//! buffer is the rows back to back, which is byte for byte the Arrow child
//! values of those rows. When one array of such a column fills a page
//! alone (exactly when the shredding path would cut a page holding just
//! that array), the page's buffer is the Arrow memory itself: a
//! [`Bytes`] that owns a slice of the Arrow buffer and is released once
//! storage has written it. Shredding copied every vector once into freshly
//! allocated memory (a tenth of the wide table's write CPU, and a quarter
//! of its page faults).
//!
//! Arrays with nulls (in the rows or the items) and arrays smaller than a
//! page go through [`super::shred`] as before, so files are unchanged.

use arrow_array::{Array, ArrayRef, FixedSizeListArray};
use arrow_schema::{DataType, Field};
use bytes::Bytes;

use crate::file::write::choose::{self, flat};
use crate::file::write::fullzip;
use crate::file::write::shred::{fixed_bytes, LeafPath, PageLevels, Piece, Values};
use crate::proto::encodings21 as pb;
use crate::proto::encodings21::compressive_encoding::Compression as Enc;
use crate::proto::encodings21::full_zip_layout::Details;

/// The shape of a vector column: `dim` items of `item_bytes` bytes a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VectorKind {
    /// Items per row.
    pub dim: usize,
    /// Bytes per item.
    pub item_bytes: usize,
}

impl VectorKind {
    /// Bytes per row.
    pub fn row_bytes(&self) -> usize {
        self.dim * self.item_bytes
    }
}

/// The vector shape of a top-level `field` whose pages can take Arrow
/// memory uncopied, or None (other types, narrow rows, mini-block
/// requested, nested fixed-size lists, boolean items).
pub fn vector_kind(field: &Field) -> Option<VectorKind> {
    let DataType::FixedSizeList(item, dim) = field.data_type() else { return None };
    if matches!(item.data_type(), DataType::Boolean) || !super::is_wide_fixed(field) {
        return None;
    }
    let item_bytes = fixed_bytes(item.data_type()).filter(|b| *b > 0)?;
    let dim = usize::try_from(*dim).ok().filter(|d| *d > 0)?;
    Some(VectorKind { dim, item_bytes })
}

/// The rows of `array` as one buffer sharing the Arrow memory, or None
/// when a row or an item is null, or the child values are shorter than the
/// rows (such arrays are shredded, which reports the error).
pub fn rows_bytes(kind: VectorKind, array: &ArrayRef) -> Option<Bytes> {
    let list = array.as_any().downcast_ref::<FixedSizeListArray>()?;
    if usize::try_from(list.value_length()).ok()? != kind.dim || list.logical_null_count() > 0 {
        return None;
    }
    let child = list.values();
    if child.logical_null_count() > 0 {
        return None;
    }
    let data = child.to_data();
    let buffer = data.buffers().first()?;
    let n = list.len();
    let start = (data.offset() + if n == 0 { 0 } else { list.value_offset_at(0) }).checked_mul(kind.item_bytes)?;
    let len = n.checked_mul(kind.row_bytes())?;
    if start.checked_add(len)? > buffer.len() {
        return None;
    }
    Some(Bytes::from(buffer.slice_with_length(start, len)))
}

/// What [`rows_bytes`]' rows add to a page's buffered size, measured as a
/// shredded piece of them is (values plus a validity bit per row).
pub fn measured_bytes(kind: VectorKind, rows: usize) -> usize {
    rows * kind.row_bytes() + rows.div_ceil(8)
}

/// The shredded piece of `rows` rows held in `bytes` (a copy): what
/// [`super::shred::shred`] makes of the array they came from.
pub fn piece(kind: VectorKind, bytes: &[u8], rows: usize) -> Piece {
    Piece {
        rep: None,
        def: vec![0; rows],
        values: Values::Fsl { dims: vec![kind.dim], item_bytes: kind.item_bytes, items: bytes.to_vec(), valid: vec![None] },
        num_rows: rows,
    }
}

/// The full-zip page of `rows` rows held in `bytes` (uncopied): the page
/// [`fullzip::encode`] makes of [`piece`]'s values.
pub fn page(kind: VectorKind, path: &LeafPath, bytes: Bytes, rows: usize) -> (Vec<Bytes>, pb::PageLayout) {
    let levels = PageLevels::finish(path, None, vec![0; rows]);
    let encoding = choose::enc(Enc::FixedSizeList(Box::new(pb::FixedSizeList {
        items_per_value: kind.dim as u64,
        has_validity: false,
        values: Some(Box::new(flat(8 * kind.item_bytes as u64))),
    })));
    let details = Details::BitsPerValue(8 * kind.row_bytes() as u32);
    let layout = fullzip::layout(&levels, (0, 0), details, rows, rows, encoding);
    (vec![bytes], layout)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Float32Array, Float64Array, Int16Array, Int8Array, RecordBatch};
    use arrow_buffer::NullBuffer;
    use arrow_schema::Schema;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::file::{FileReader, FileVersion, FileWriter};

    fn vectors(rng: &mut StdRng, item: &DataType, dim: i32, n: usize, row_nulls: bool, item_nulls: bool) -> ArrayRef {
        let m = n * dim as usize;
        let item_valid = item_nulls.then(|| NullBuffer::from((0..m).map(|_| !rng.random_bool(0.01)).collect::<Vec<bool>>()));
        let child: ArrayRef = match item {
            DataType::Float32 => Arc::new(Float32Array::new((0..m).map(|_| rng.random::<f32>()).collect(), item_valid)),
            DataType::Float64 => Arc::new(Float64Array::new((0..m).map(|_| rng.random::<f64>()).collect(), item_valid)),
            DataType::Int16 => Arc::new(Int16Array::new((0..m).map(|_| rng.random::<i16>()).collect(), item_valid)),
            _ => Arc::new(Int8Array::new((0..m).map(|_| rng.random::<i8>()).collect(), item_valid)),
        };
        let row_valid = row_nulls.then(|| NullBuffer::from((0..n).map(|_| !rng.random_bool(0.05)).collect::<Vec<bool>>()));
        Arc::new(FixedSizeListArray::new(Arc::new(Field::new("item", item.clone(), true)), dim, child, row_valid))
    }

    fn write(path: &str, batches: &[RecordBatch], version: FileVersion, page_bytes: usize, copy: bool) -> Vec<u8> {
        let mut w = FileWriter::create(path, &batches[0].schema(), version).unwrap();
        w.set_page_bytes(page_bytes);
        if copy {
            w.copy_vectors();
        }
        for b in batches {
            w.write(b).unwrap();
        }
        w.finish().unwrap();
        std::fs::read(path).unwrap()
    }

    /// Files written with vector rows handed over uncopied are byte for
    /// byte those written by shredding them, on seeded random vectors of
    /// several item types and widths: arrays with row or item nulls,
    /// sliced arrays (offsets into the child), arrays smaller than a page
    /// (buffered and concatenated) next to arrays that fill one, empty
    /// batches, in 2.1 and 2.2; and they read back as written.
    #[test]
    fn same_file_as_shredding() {
        let dir = std::env::temp_dir().join("lancelet-vector-pages");
        std::fs::create_dir_all(&dir).unwrap();
        let mut rng = StdRng::seed_from_u64(16);
        let shapes = [(DataType::Float32, 64), (DataType::Float64, 40), (DataType::Int16, 300), (DataType::Int8, 256)];
        for (round, (item, dim)) in shapes.iter().enumerate() {
            let field = Field::new("v", DataType::FixedSizeList(Arc::new(Field::new("item", item.clone(), true)), *dim), true);
            assert!(vector_kind(&field).is_some(), "{field:?}");
            let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false), field]));
            // Batch sizes around a 24 KiB page: smaller, larger, empty.
            let row = usize::try_from(*dim).unwrap() * fixed_bytes(item).unwrap();
            let sizes = [30, 24 * 1024 / row + 7, 0, 5, 3 * 24 * 1024 / row, 1, 24 * 1024 / row];
            let mut batches = Vec::new();
            for (k, &n) in sizes.iter().enumerate() {
                let (row_nulls, item_nulls) = (k % 3 == 1, k == 4 && round % 2 == 0);
                let full = vectors(&mut rng, item, *dim, n + 9, row_nulls, item_nulls);
                let v = full.slice(4, n);
                let id: ArrayRef = Arc::new(arrow_array::Int64Array::from_iter_values((0..n as i64).map(|i| i * 3)));
                batches.push(RecordBatch::try_new(schema.clone(), vec![id, v]).unwrap());
            }
            for version in [FileVersion::V2_1, FileVersion::V2_2] {
                let p = dir.join(format!("v-{round}-{version}.lance")).display().to_string();
                let fast = write(&p, &batches, version, 24 * 1024, false);
                let r = FileReader::open(&p).unwrap();
                let rows: usize = sizes.iter().sum();
                let all = r.read_range(&r.projection(None).unwrap(), 0..rows as u64).unwrap();
                let want = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
                assert_eq!(all.column(1).to_data(), want.column(1).to_data(), "{item} x {dim} {version}");
                let copied = write(&p, &batches, version, 24 * 1024, true);
                assert!(fast == copied, "{item} x {dim} {version}: files differ ({} vs {} bytes)", fast.len(), copied.len());
            }
        }
    }

    /// Rows with a null (row or item) or with short child values are not
    /// taken uncopied; clean rows are the child values of exactly those rows.
    #[test]
    fn rows_bytes_only_for_clean_rows() {
        let mut rng = StdRng::seed_from_u64(3);
        let kind = VectorKind { dim: 64, item_bytes: 4 };
        let clean = vectors(&mut rng, &DataType::Float32, 64, 10, false, false);
        let got = rows_bytes(kind, &clean.slice(3, 5)).unwrap();
        let child = clean.as_any().downcast_ref::<FixedSizeListArray>().unwrap().values().to_data();
        assert_eq!(&got[..], &child.buffers()[0].as_slice()[3 * 256..8 * 256]);
        assert!(rows_bytes(kind, &vectors(&mut rng, &DataType::Float32, 64, 50, true, false)).is_none());
        assert!(rows_bytes(kind, &vectors(&mut rng, &DataType::Float32, 64, 50, false, true)).is_none());
        assert!(rows_bytes(VectorKind { dim: 32, item_bytes: 4 }, &clean).is_none());
    }
}
