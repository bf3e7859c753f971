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

use arrow_array::UInt32Array;
use bytes::Bytes;
use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::proto::table as pb;
use crate::table::deletion_arrow::decode_arrow;

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
        Ok(pb::deletion_file::DeletionFileType::ArrowArray) => decode_arrow(&bytes, physical_rows)?,
        Ok(pb::deletion_file::DeletionFileType::Bitmap) => decode_bitmap(&bytes)?,
        Err(_) => return Err(Error::unsupported(format!("deletion file type {file_type}"))),
    };
    if let Some(max) = set.max() {
        if u64::from(max) >= physical_rows {
            return Err(Error::corrupt(format!("deletes row {max}, but the fragment has only {physical_rows} rows")));
        }
    }
    Ok(set)
}

/// A portable Roaring bitmap; the bytes must hold exactly one. The
/// `roaring` crate bounds every allocation by the format's limits (at most
/// 65536 containers of 8 KiB) and reads each container's bytes before the
/// next, so a short file fails early.
fn decode_bitmap(bytes: &[u8]) -> Result<RoaringBitmap> {
    let mut cursor = Cursor::new(bytes);
    let set = RoaringBitmap::deserialize_from(&mut cursor).map_err(|e| Error::corrupt(format!("deletion bitmap: {e}")).with_source(e))?;
    if cursor.position() != bytes.len() as u64 {
        return Err(Error::corrupt(format!("deletion bitmap ends at byte {} of {}: trailing bytes", cursor.position(), bytes.len())));
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
    let batch =
        arrow_array::RecordBatch::try_new(schema.clone(), vec![Arc::new(UInt32Array::from(offsets.to_vec()))]).map_err(Error::internal_arrow)?;
    let opts = arrow_ipc::writer::IpcWriteOptions::default()
        .try_with_compression(Some(arrow_ipc::CompressionType::ZSTD))
        .map_err(|e| Error::Internal { what: e.to_string() })?;
    let mut out = Vec::new();
    {
        let mut w = arrow_ipc::writer::FileWriter::try_new_with_options(&mut out, &schema, opts).map_err(Error::internal_arrow)?;
        w.write(&batch).map_err(Error::internal_arrow)?;
        w.finish().map_err(Error::internal_arrow)?;
    }
    Ok(out)
}

/// Deleted rows per fragment from which a `.bin` bitmap is written.
pub const BITMAP_THRESHOLD: u64 = 5000;

/// Encode a fragment's deleted offsets as pylance would.
pub fn encode_deletions(set: &RoaringBitmap) -> Result<(pb::deletion_file::DeletionFileType, Vec<u8>)> {
    if set.len() < BITMAP_THRESHOLD {
        let vals: Vec<u32> = set.iter().collect();
        Ok((pb::deletion_file::DeletionFileType::ArrowArray, encode_arrow(&vals)?))
    } else {
        let mut out = Vec::with_capacity(set.serialized_size());
        set.serialize_into(&mut out).map_err(|e| Error::Internal { what: format!("serializing a deletion bitmap: {e}") })?;
        Ok((pb::deletion_file::DeletionFileType::Bitmap, out))
    }
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

    /// A deletion file that the flatbuffer verifier or zstd rejects: corrupt
    /// data whose source is the library's error, its text in the message.
    #[test]
    fn corrupt_arrow_files_keep_their_source() {
        // Enough rows for the values to be stored compressed.
        let good = encode_arrow(&(0..4000).collect::<Vec<u32>>()).unwrap();
        let n = good.len();
        let source_of = |bytes: Vec<u8>| {
            let e = decode_deletions(ARROW, Bytes::from(bytes), 10_000).unwrap_err();
            assert!(matches!(e, Error::Corrupt { path: None, .. }), "{e:?}");
            let source = std::error::Error::source(&e).unwrap_or_else(|| panic!("no source: {e:?}"));
            assert!(e.to_string().ends_with(&source.to_string()), "{e}");
            (e.to_string(), source.to_string(), source.is::<flatbuffers::InvalidFlatbuffer>(), source.is::<std::io::Error>())
        };
        // The footer's root offset pointing past the footer.
        let footer_len = i32::from_le_bytes(good[n - 10..n - 6].try_into().unwrap()) as usize;
        let mut bad = good.clone();
        let at = n - 10 - footer_len;
        bad[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let (msg, _, flatbuffer, _) = source_of(bad);
        assert!(flatbuffer && msg.contains("footer is not a valid flatbuffer"), "{msg}");
        // The zstd frame's magic overwritten.
        let mut bad = good;
        let at = bad.windows(4).position(|w| w == [0x28, 0xb5, 0x2f, 0xfd]).expect("a zstd frame");
        bad[at..at + 4].copy_from_slice(&[0; 4]);
        let (msg, _, _, io) = source_of(bad);
        assert!(io && msg.contains("compressed buffer"), "{msg}");
    }

    /// Where `needle` (8 bytes) first occurs in `hay`.
    fn find(hay: &[u8], needle: [u8; 8]) -> usize {
        hay.windows(8).position(|w| w == needle).expect("pattern present")
    }

    fn assert_corrupt(r: Result<RoaringBitmap>, what: &str) {
        match r {
            Err(Error::Corrupt { .. }) => {}
            other => panic!("{what}: expected a corrupt-data error, got {other:?}"),
        }
    }

    #[test]
    fn allocation_bomb_is_corrupt_not_abort() {
        // A zstd-compressed values buffer starts with its uncompressed
        // length (i64 LE): 4000 u32 values = 16000 bytes. Claim 2^60.
        let vals: Vec<u32> = (0..4000).collect();
        let good = encode_arrow(&vals).unwrap();
        let at = find(&good, 16000i64.to_le_bytes());
        for claim in [1i64 << 60, i64::MAX, 16001, 15999, 1 << 33, -2] {
            let mut bad = good.clone();
            bad[at..at + 8].copy_from_slice(&claim.to_le_bytes());
            assert_corrupt(decode_deletions(ARROW, Bytes::from(bad), 10_000), &format!("claim {claim}"));
        }
        // The batch claiming 2^60 rows (the record batch length and its
        // one field node) is refused before anything is allocated.
        let mut bad = good.clone();
        let mut n = 0;
        while let Some(i) = bad.windows(8).position(|w| w == 4000i64.to_le_bytes()) {
            bad[i..i + 8].copy_from_slice(&(1i64 << 60).to_le_bytes());
            n += 1;
        }
        assert!(n >= 2, "row count found {n} times");
        let e = decode_deletions(ARROW, Bytes::from(bad), 10_000).unwrap_err();
        assert!(e.to_string().contains("only 10000 rows"), "{e}");
        // A fragment smaller than the file's batch: refused before decoding.
        assert_corrupt(decode_deletions(ARROW, Bytes::from(good), 3999), "batch larger than the fragment");
    }

    #[test]
    fn zstd_bomb_stops_at_the_row_count() {
        // A real zstd frame of 8 MiB of zeros behind a truthful prefix for
        // 4000 rows: decompression must stop after 16000 bytes.
        let vals: Vec<u32> = (0..4000).collect();
        let good = encode_arrow(&vals).unwrap();
        let at = find(&good, 16000i64.to_le_bytes());
        let frame = zstd::bulk::compress(&vec![0u8; 8 << 20], 3).unwrap();
        assert!(frame.len() < 1000, "bomb frame of {} bytes", frame.len());
        let mut bad = good.clone();
        bad[at + 8..at + 8 + frame.len()].copy_from_slice(&frame);
        assert_corrupt(decode_deletions(ARROW, Bytes::from(bad), 10_000), "zstd bomb");
    }

    #[test]
    fn every_byte_flip_is_data_or_corrupt() {
        // The small file (raw buffers) and the zstd one, every byte
        // changed three ways: never a panic, never an error other than
        // Corrupt/Unsupported; a file that still decodes stays in bounds.
        for vals in [vec![2u32, 1, 50, 0], (0..700).rev().collect::<Vec<u32>>()] {
            let good = encode_arrow(&vals).unwrap();
            for i in 0..good.len() {
                for x in [0x01u8, 0x80, 0xff] {
                    let mut bad = good.clone();
                    bad[i] ^= x;
                    match decode_deletions(ARROW, Bytes::from(bad), 1000) {
                        Ok(set) => assert!(set.max().is_none_or(|m| m < 1000)),
                        Err(Error::Corrupt { .. } | Error::Unsupported { .. }) => {}
                        Err(e) => panic!("byte {i} ^ {x:#x}: {e}"),
                    }
                }
            }
            // and every truncation
            for cut in 0..good.len() {
                assert!(decode_deletions(ARROW, Bytes::copy_from_slice(&good[..cut]), 1000).is_err());
            }
        }
    }

    #[test]
    fn other_integer_columns_and_bad_values() {
        use std::sync::Arc;
        let write = |array: arrow_array::ArrayRef| {
            let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new("row_id", array.data_type().clone(), true)]));
            let batch = arrow_array::RecordBatch::try_new(schema.clone(), vec![array]).unwrap();
            let mut out = Vec::new();
            let mut w = arrow_ipc::writer::FileWriter::try_new(&mut out, &schema).unwrap();
            w.write(&batch).unwrap();
            w.finish().unwrap();
            drop(w);
            Bytes::from(out)
        };
        let ok = decode_deletions(ARROW, write(Arc::new(arrow_array::Int64Array::from(vec![3i64, 1]))), 5).unwrap();
        assert_eq!(ok.iter().collect::<Vec<_>>(), vec![1, 3]);
        let ok = decode_deletions(ARROW, write(Arc::new(arrow_array::Int32Array::from(vec![4]))), 5).unwrap();
        assert_eq!(ok.len(), 1);
        assert_corrupt(decode_deletions(ARROW, write(Arc::new(arrow_array::Int32Array::from(vec![-1]))), 5), "negative");
        assert_corrupt(decode_deletions(ARROW, write(Arc::new(arrow_array::UInt64Array::from(vec![1u64 << 32]))), u64::MAX), "2^32");
        assert_corrupt(decode_deletions(ARROW, write(Arc::new(arrow_array::Int32Array::from(vec![Some(1), None]))), 5), "null");
        assert_corrupt(decode_deletions(ARROW, write(Arc::new(arrow_array::StringArray::from(vec!["1"]))), 5), "strings");
        // several batches count together against the fragment's rows
        let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new("row_id", arrow_schema::DataType::UInt32, false)]));
        let mut out = Vec::new();
        let mut w = arrow_ipc::writer::FileWriter::try_new(&mut out, &schema).unwrap();
        for part in [[0u32, 1], [2, 3]] {
            w.write(&arrow_array::RecordBatch::try_new(schema.clone(), vec![Arc::new(UInt32Array::from(part.to_vec()))]).unwrap()).unwrap();
        }
        w.finish().unwrap();
        drop(w);
        assert_eq!(decode_deletions(ARROW, Bytes::from(out.clone()), 4).unwrap().len(), 4);
        assert_corrupt(decode_deletions(ARROW, Bytes::from(out), 3), "4 rows in a 3-row fragment");
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
