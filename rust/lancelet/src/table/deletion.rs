//! Deletion files: which rows of a fragment are deleted.
//!
//! A fragment's `DeletionFile` names `_deletions/{fragment_id}-{read_version}-{id}.{ext}`
//! (under the base path's root when `base_id` is set). The values are row
//! *offsets* within the fragment (0-based physical positions), in one of two
//! encodings:
//!
//! * `.arrow` (`ARROW_ARRAY`): an Arrow IPC **file** with one record batch of
//!   one non-null `UInt32` column `row_id`. pylance declares ZSTD body
//!   compression; small buffers are stored raw (length prefix -1), larger
//!   ones as zstd frames. Values come in hash-set order, unsorted.
//! * `.bin` (`BITMAP`): a 32-bit Roaring bitmap in the portable serialization
//!   (cookie 12346, or 12347 with run containers).
//!
//! pylance picks `.arrow` below 5000 deleted rows and `.bin` from 5000 on.
//! Both become a [`RoaringBitmap`]; the scanner turns its complement into the
//! sorted row ranges the file reader takes.

use std::io::Cursor;
use std::ops::Range;

use arrow_array::{Array, Int32Array, Int64Array, UInt32Array, UInt64Array};
use bytes::Bytes;
use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::proto::table as pb;

/// Directory of deletion files, relative to a dataset (or base path) root.
pub const DELETIONS_DIR: &str = "_deletions";

/// The file name of a deletion file, relative to the root.
pub fn deletion_file_path(fragment_id: u64, d: &pb::DeletionFile) -> String {
    let ext = match pb::deletion_file::DeletionFileType::try_from(d.file_type) {
        Ok(pb::deletion_file::DeletionFileType::Bitmap) => "bin",
        _ => "arrow",
    };
    format!("{DELETIONS_DIR}/{fragment_id}-{}-{}.{ext}", d.read_version, d.id)
}

/// Decode a deletion file's bytes into the set of deleted offsets, checking
/// every offset lies below `physical_rows`. Errors carry no path.
pub fn decode_deletions(file_type: i32, bytes: Bytes, physical_rows: u64) -> Result<RoaringBitmap> {
    let set = match pb::deletion_file::DeletionFileType::try_from(file_type) {
        Ok(pb::deletion_file::DeletionFileType::ArrowArray) => decode_arrow(bytes)?,
        Ok(pb::deletion_file::DeletionFileType::Bitmap) => RoaringBitmap::deserialize_from(Cursor::new(&bytes[..]))
            .map_err(|e| Error::corrupt(format!("deletion bitmap: {e}")))?,
        Err(_) => return Err(Error::unsupported(format!("deletion file type {file_type}"))),
    };
    if let Some(max) = set.max() {
        if u64::from(max) >= physical_rows {
            return Err(Error::corrupt(format!(
                "deletes row {max}, but the fragment has only {physical_rows} rows"
            )));
        }
    }
    Ok(set)
}

fn decode_arrow(bytes: Bytes) -> Result<RoaringBitmap> {
    let reader = arrow_ipc::reader::FileReader::try_new(Cursor::new(bytes), None)
        .map_err(|e| Error::corrupt(format!("deletion file is not an Arrow IPC file: {e}")))?;
    let schema = reader.schema();
    if schema.fields().len() != 1 {
        return Err(Error::corrupt(format!("deletion file has {} columns, expected one (row_id)", schema.fields().len())));
    }
    let mut set = RoaringBitmap::new();
    for batch in reader {
        let batch = batch.map_err(|e| Error::corrupt(format!("deletion file: {e}")))?;
        let col = batch.column(0);
        let bad = |v: i128| Error::corrupt(format!("deletion file holds row offset {v}, outside 0..2^32"));
        if let Some(a) = col.as_any().downcast_ref::<UInt32Array>() {
            set.extend(a.iter().flatten());
        } else if let Some(a) = col.as_any().downcast_ref::<Int32Array>() {
            for v in a.iter().flatten() {
                set.insert(u32::try_from(v).map_err(|_| bad(v as i128))?);
            }
        } else if let Some(a) = col.as_any().downcast_ref::<UInt64Array>() {
            for v in a.iter().flatten() {
                set.insert(u32::try_from(v).map_err(|_| bad(v as i128))?);
            }
        } else if let Some(a) = col.as_any().downcast_ref::<Int64Array>() {
            for v in a.iter().flatten() {
                set.insert(u32::try_from(v).map_err(|_| bad(v as i128))?);
            }
        } else {
            return Err(Error::corrupt(format!("deletion file column has type {}, expected UInt32", col.data_type())));
        }
        if col.null_count() > 0 {
            return Err(Error::corrupt("deletion file row_id column has nulls"));
        }
    }
    Ok(set)
}

/// The sorted ranges of offsets in `0..physical_rows` that are not deleted.
pub fn live_ranges(physical_rows: u64, deleted: Option<&RoaringBitmap>) -> Vec<Range<u64>> {
    let mut out = Vec::new();
    let mut next = 0u64;
    if let Some(d) = deleted {
        // Walk the deleted values in runs.
        let mut iter = d.iter().map(u64::from).peekable();
        while let Some(start) = iter.next() {
            let mut end = start + 1;
            while iter.peek() == Some(&end) {
                iter.next();
                end += 1;
            }
            if start >= physical_rows {
                break;
            }
            if start > next {
                out.push(next..start);
            }
            next = end;
        }
    }
    if next < physical_rows {
        out.push(next..physical_rows);
    }
    out
}

/// Encode offsets as the `.arrow` deletion file pylance writes (tests and,
/// later, the writer).
pub fn encode_arrow(offsets: &[u32]) -> Result<Vec<u8>> {
    use std::sync::Arc;
    let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new("row_id", arrow_schema::DataType::UInt32, false)]));
    let batch = arrow_array::RecordBatch::try_new(schema.clone(), vec![Arc::new(UInt32Array::from(offsets.to_vec()))])?;
    let opts = arrow_ipc::writer::IpcWriteOptions::default()
        .try_with_compression(Some(arrow_ipc::CompressionType::ZSTD))
        .map_err(|e| Error::Internal { what: e.to_string() })?;
    let mut out = Vec::new();
    {
        let mut w = arrow_ipc::writer::FileWriter::try_new_with_options(&mut out, &schema, opts)?;
        w.write(&batch)?;
        w.finish()?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARROW: i32 = 0;
    const BITMAP: i32 = 1;

    #[test]
    fn ranges() {
        assert_eq!(live_ranges(5, None), vec![0..5]);
        let d: RoaringBitmap = [0u32, 1, 3].into_iter().collect();
        assert_eq!(live_ranges(5, Some(&d)), vec![2..3, 4..5]);
        let d: RoaringBitmap = (0u32..5).collect();
        assert!(live_ranges(5, Some(&d)).is_empty());
        let d: RoaringBitmap = [4u32].into_iter().collect();
        assert_eq!(live_ranges(5, Some(&d)), vec![0..4]);
        assert_eq!(live_ranges(0, None), Vec::<Range<u64>>::new());
    }

    #[test]
    fn arrow_round_trip_and_bounds() {
        for n in [4u32, 4000] {
            let vals: Vec<u32> = (0..n).rev().collect();
            let bytes = Bytes::from(encode_arrow(&vals).unwrap());
            let set = decode_deletions(ARROW, bytes.clone(), 10_000).unwrap();
            assert_eq!(set.len(), n as u64);
            let e = decode_deletions(ARROW, bytes, n as u64 - 1).unwrap_err();
            assert!(e.to_string().contains("only"), "{e}");
        }
        assert!(matches!(decode_deletions(ARROW, Bytes::from_static(b"garbage"), 10), Err(Error::Corrupt { .. })));
    }

    #[test]
    fn bitmap_with_and_without_runs() {
        let mut bm: RoaringBitmap = (0u32..5000).collect();
        let mut plain = Vec::new();
        bm.serialize_into(&mut plain).unwrap();
        assert_eq!(&plain[..2], &[0x3a, 0x30]);
        assert_eq!(decode_deletions(BITMAP, Bytes::from(plain), 6000).unwrap().len(), 5000);
        bm.optimize(); // run containers -> cookie 12347
        let mut runs = Vec::new();
        bm.serialize_into(&mut runs).unwrap();
        assert_eq!(&runs[..2], &[0x3b, 0x30]);
        assert_eq!(decode_deletions(BITMAP, Bytes::from(runs), 6000).unwrap().len(), 5000);
        assert!(decode_deletions(BITMAP, Bytes::from_static(&[1, 2, 3]), 10).is_err());
    }

    #[test]
    fn fixture_files() {
        let root = crate::testdata::pylance14("");
        for (ds, ty, n) in [("deletion_arrow", ARROW, 4u64), ("deletion_arrow_zstd", ARROW, 4000), ("deletion_bitmap", BITMAP, 5000)] {
            let dir = root.join(ds).join(DELETIONS_DIR);
            let entries = std::fs::read_dir(&dir).unwrap();
            for e in entries {
                let bytes = Bytes::from(std::fs::read(e.unwrap().path()).unwrap());
                let set = decode_deletions(ty, bytes, 6000).unwrap();
                assert_eq!(set.len(), n, "{ds}");
                if ds == "deletion_arrow" {
                    assert_eq!(set.iter().collect::<Vec<_>>(), vec![0, 1, 2, 50]);
                }
            }
        }
    }
}
