//! Stable row ids and row version sequences of compacted fragments.
//!
//! With stable row ids a compaction keeps every live row's id: the new
//! fragments' `RowIdSequence`s list the ids of the rows they received, in
//! order, and their created-at / last-updated-at version sequences keep each
//! row's versions. pylance 14 derives them in two steps, which this module
//! reproduces so the bytes match:
//!
//! 1. **mask**: every segment (version run) of an old fragment that holds a
//!    deleted position is rebuilt from its surviving values; segments left
//!    empty are dropped; the others keep their boundaries;
//! 2. **rechunk**: the segments of all old fragments, in order, are cut into
//!    pieces at the new fragments' row counts; every piece is rebuilt from
//!    its values ([`encode_segment`]). Row id pieces that are adjacent
//!    `Range`s (`a..b` then `b..c`) merge into one; version runs never merge.
//!
//! A version sequence's runs have a `span` (a `U64Segment` whose *length*
//! is the number of rows) and a version. Spans are masked and cut like row
//! ids, so after a compaction they hold surviving old positions, not
//! `0..n`: only their lengths matter to readers.
//!
//! [`encode_segment`] picks a segment's representation as pylance does:
//! empty → `Range{0,0}`; sorted without gaps → `Range`; sorted with gaps →
//! the smallest of `RangeWithHoles` (24 + 4·holes bytes), `RangeWithBitmap`
//! (24 + ⌈span/8⌉) and `SortedArray` (24 + 2·values), ties in that order;
//! unsorted → `Array`. Arrays are `u16`/`u32` offsets from their minimum
//! when the spread fits, else raw `u64`s.

use prost::Message;

use crate::error::{Error, Result};
use crate::proto::table as pb;
use crate::table::rowids::RowIdSequence;

use pb::u64_segment::Segment as S;

/// The values of one segment.
fn segment_values(seg: &pb::U64Segment) -> Result<Vec<u64>> {
    let bytes = pb::RowIdSequence { segments: vec![seg.clone()] }.encode_to_vec();
    Ok(RowIdSequence::decode(&bytes)?.to_vec())
}

/// Offsets from the minimum in the narrowest width that holds them.
fn encode_array(values: &[u64]) -> pb::EncodedU64Array {
    use pb::encoded_u64_array::{Array, U16Array, U32Array, U64Array};
    let (Some(&min), Some(&max)) = (values.iter().min(), values.iter().max()) else {
        return pb::EncodedU64Array { array: Some(Array::U64Array(U64Array { values: Vec::new() })) };
    };
    let array = if max - min <= u64::from(u16::MAX) {
        Array::U16Array(U16Array { base: min, offsets: values.iter().flat_map(|v| ((v - min) as u16).to_le_bytes()).collect() })
    } else if max - min <= u64::from(u32::MAX) {
        Array::U32Array(U32Array { base: min, offsets: values.iter().flat_map(|v| ((v - min) as u32).to_le_bytes()).collect() })
    } else {
        Array::U64Array(U64Array { values: values.iter().flat_map(|v| v.to_le_bytes()).collect() })
    };
    pb::EncodedU64Array { array: Some(array) }
}

fn range(start: u64, end: u64) -> pb::U64Segment {
    pb::U64Segment { segment: Some(S::Range(pb::u64_segment::Range { start, end })) }
}

/// The segment pylance builds for `values` (see the module docs).
pub fn encode_segment(values: &[u64]) -> pb::U64Segment {
    let Some(&first) = values.first() else { return range(0, 0) };
    let sorted = values.windows(2).all(|w| w[0] <= w[1]);
    if !sorted {
        return pb::U64Segment { segment: Some(S::Array(encode_array(values))) };
    }
    let (min, max) = (first, *values.last().expect("non-empty"));
    let slots = max - min + 1;
    let count = values.len() as u64;
    let holes = slots - count;
    if holes == 0 {
        return range(min, max + 1);
    }
    let with_holes = 24 + 4 * holes;
    let with_bitmap = 24 + slots.div_ceil(8);
    let sorted_array = 24 + 2 * count;
    let smallest = with_holes.min(with_bitmap).min(sorted_array);
    let missing = || {
        let mut it = values.iter().peekable();
        (min..=max).filter(move |v| {
            if it.peek() == Some(&v) {
                it.next();
                false
            } else {
                true
            }
        })
    };
    let segment = if smallest == with_holes {
        let holes: Vec<u64> = missing().collect();
        S::RangeWithHoles(pb::u64_segment::RangeWithHoles { start: min, end: max + 1, holes: Some(encode_array(&holes)) })
    } else if smallest == with_bitmap {
        let mut bitmap = vec![0u8; slots.div_ceil(8) as usize];
        for v in values {
            let i = (v - min) as usize;
            bitmap[i / 8] |= 1 << (i % 8);
        }
        S::RangeWithBitmap(pb::u64_segment::RangeWithBitmap { start: min, end: max + 1, bitmap })
    } else {
        S::SortedArray(encode_array(values))
    };
    pb::U64Segment { segment: Some(segment) }
}

/// Remove the sorted `deleted` positions from runs (segments with a tag:
/// a version, or nothing for row ids), dropping runs left empty. Runs
/// without deleted positions are kept as they are.
fn mask<T>(runs: Vec<(Vec<u64>, T)>, deleted: &[u32]) -> Vec<(Vec<u64>, T)> {
    let mut out = Vec::with_capacity(runs.len());
    let mut d = deleted.iter().map(|&p| u64::from(p)).peekable();
    let mut start = 0u64;
    for (values, tag) in runs {
        let end = start + values.len() as u64;
        let values = if d.peek().is_some_and(|&p| p < end) {
            let mut kept = Vec::with_capacity(values.len());
            for (i, v) in values.into_iter().enumerate() {
                let pos = start + i as u64;
                if d.peek() == Some(&pos) {
                    d.next();
                } else {
                    kept.push(v);
                }
            }
            kept
        } else {
            values
        };
        if !values.is_empty() {
            out.push((values, tag));
        }
        start = end;
    }
    out
}

/// Cut the segments (in order) into chunks of `sizes` rows; each chunk is
/// a list of pieces (a piece lies within one segment).
fn rechunk<T: Clone>(segments: Vec<(Vec<u64>, T)>, sizes: &[u64]) -> Result<Vec<Vec<(Vec<u64>, T)>>> {
    let total: u64 = segments.iter().map(|(s, _)| s.len() as u64).sum();
    let want: u64 = sizes.iter().sum();
    if total != want {
        return Err(Error::Internal { what: format!("compaction wrote {want} rows but the old fragments hold {total} live rows") });
    }
    let mut out = Vec::with_capacity(sizes.len());
    let mut segs = segments.into_iter();
    let mut current: Option<(Vec<u64>, T, usize)> = None;
    for &size in sizes {
        let mut chunk = Vec::new();
        let mut remaining = size as usize;
        while remaining > 0 {
            let (values, tag, offset) = match current.take() {
                Some(c) => c,
                None => {
                    let (v, t) = segs.next().expect("row counts checked above");
                    (v, t, 0)
                }
            };
            let n = (values.len() - offset).min(remaining);
            chunk.push((values[offset..offset + n].to_vec(), tag.clone()));
            remaining -= n;
            if offset + n < values.len() {
                current = Some((values, tag, offset + n));
            }
        }
        out.push(chunk);
    }
    Ok(out)
}

/// What the rechunking needs from one old fragment.
#[derive(Debug, Clone)]
pub struct OldRows {
    /// Its row id sequence (segments as values).
    pub row_ids: Vec<Vec<u64>>,
    /// Created-at runs `(span values, version)`.
    pub created: Vec<(Vec<u64>, u64)>,
    /// Last-updated-at runs.
    pub updated: Vec<(Vec<u64>, u64)>,
    /// Deleted physical positions, sorted.
    pub deleted: Vec<u32>,
}

/// Decode a version sequence into runs of `(span values, version)`.
pub fn decode_versions(bytes: &[u8]) -> Result<Vec<(Vec<u64>, u64)>> {
    let seq = pb::RowDatasetVersionSequence::decode(bytes)
        .map_err(|e| Error::corrupt(format!("row version sequence: bad protobuf: {e}")).with_source(e))?;
    seq.runs
        .iter()
        .map(|r| {
            let span = r.span.as_ref().ok_or_else(|| Error::corrupt("row version run without a span"))?;
            Ok((segment_values(span)?, r.version))
        })
        .collect()
}

/// Decode a row id sequence's segments as values.
pub fn decode_row_ids(seq: &RowIdSequence) -> Vec<Vec<u64>> {
    seq.segments.iter().map(|s| RowIdSequence { segments: vec![s.clone()] }.to_vec()).collect()
}

/// The serialized row id sequences and (created, last-updated) version
/// sequences of the new fragments of `sizes` rows, from the old fragments
/// they replace (in order).
pub fn rechunk_fragments(old: &[OldRows], sizes: &[u64]) -> Result<Vec<(Vec<u8>, Vec<u8>, Vec<u8>)>> {
    let ids = old.iter().flat_map(|o| mask(o.row_ids.iter().map(|s| (s.clone(), ())).collect(), &o.deleted)).collect();
    let created = old.iter().flat_map(|o| mask(o.created.clone(), &o.deleted)).collect();
    let updated = old.iter().flat_map(|o| mask(o.updated.clone(), &o.deleted)).collect();
    let (ids, created, updated) = (rechunk(ids, sizes)?, rechunk(created, sizes)?, rechunk(updated, sizes)?);
    let mut out = Vec::with_capacity(sizes.len());
    for ((id_chunk, c_chunk), u_chunk) in ids.into_iter().zip(created).zip(updated) {
        let mut segments: Vec<pb::U64Segment> = Vec::new();
        for (values, _) in id_chunk {
            let seg = encode_segment(&values);
            // Adjacent ranges merge (`a..b` + `b..c` → `a..c`).
            if let (Some(pb::U64Segment { segment: Some(S::Range(last)) }), Some(S::Range(next))) = (segments.last_mut(), &seg.segment) {
                if last.end == next.start {
                    last.end = next.end;
                    continue;
                }
            }
            segments.push(seg);
        }
        let versions = |chunk: Vec<(Vec<u64>, u64)>| {
            pb::RowDatasetVersionSequence {
                runs: chunk.into_iter().map(|(v, version)| pb::RowDatasetVersionRun { span: Some(encode_segment(&v)), version }).collect(),
            }
            .encode_to_vec()
        };
        out.push((pb::RowIdSequence { segments }.encode_to_vec(), versions(c_chunk), versions(u_chunk)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values_of(seg: &pb::U64Segment) -> Vec<u64> {
        segment_values(seg).unwrap()
    }

    #[test]
    fn representation_choice() {
        assert_eq!(encode_segment(&[]), range(0, 0));
        assert_eq!(encode_segment(&[5, 6, 7]), range(5, 8));
        // few holes: RangeWithHoles (24 + 4 < 24 + 2 and < bitmap of 13 bits)
        let s = encode_segment(&(0..100).filter(|&v| v != 50).collect::<Vec<_>>());
        assert!(matches!(s.segment, Some(S::RangeWithHoles(_))), "{s:?}");
        // every third value gone: bitmap wins (24 + 13 bytes)
        let v: Vec<u64> = (0..100).filter(|v| v % 3 != 0).collect();
        let s = encode_segment(&v);
        assert!(matches!(s.segment, Some(S::RangeWithBitmap(_))), "{s:?}");
        assert_eq!(values_of(&s), v);
        // sparse: sorted array
        let v = vec![1, 1000, 5000];
        let s = encode_segment(&v);
        assert!(matches!(s.segment, Some(S::SortedArray(_))), "{s:?}");
        assert_eq!(values_of(&s), v);
        // unsorted, wide: u64 array
        let v = vec![1u64 << 40, 3];
        let s = encode_segment(&v);
        assert!(matches!(&s.segment, Some(S::Array(pb::EncodedU64Array { array: Some(pb::encoded_u64_array::Array::U64Array(_)) }))));
        assert_eq!(values_of(&s), v);
    }

    #[test]
    fn pylance_bytes() {
        // pylance 14: fragment 0 of 100 rows (ids 0..100) with positions
        // 0, 3, ..., 99 deleted masks to RangeWithBitmap{1, 99, ...}
        let v: Vec<u64> = (0..100).filter(|v| v % 3 != 0).collect();
        let bytes = pb::RowIdSequence { segments: vec![encode_segment(&v)] }.encode_to_vec();
        let want = b"\n\x15\x1a\x13\x08\x01\x10c\x1a\r\xdb\xb6m\xdb\xb6m\xdb\xb6m\xdb\xb6m\x03";
        assert_eq!(bytes, want.to_vec());
    }

    #[test]
    fn rechunk_keeps_ids_and_versions() {
        let old = vec![
            OldRows {
                row_ids: vec![(0..10).collect()],
                created: vec![((0..10).collect(), 1)],
                updated: vec![((0..10).collect(), 1)],
                deleted: vec![0, 5],
            },
            OldRows {
                row_ids: vec![(10..15).collect(), (20..25).collect()],
                created: vec![((0..10).collect(), 2)],
                updated: vec![((0..4).collect(), 2), ((4..10).collect(), 3)],
                deleted: vec![9],
            },
        ];
        let out = rechunk_fragments(&old, &[9, 8]).unwrap();
        let ids = |b: &[u8]| RowIdSequence::decode(b).unwrap().to_vec();
        assert_eq!(ids(&out[0].0), vec![1, 2, 3, 4, 6, 7, 8, 9, 10]);
        assert_eq!(ids(&out[1].0), vec![11, 12, 13, 14, 20, 21, 22, 23]);
        let versions =
            |b: &[u8]| -> Vec<u64> { decode_versions(b).unwrap().into_iter().flat_map(|(s, v)| std::iter::repeat_n(v, s.len())).collect() };
        assert_eq!(versions(&out[0].1), vec![1, 1, 1, 1, 1, 1, 1, 1, 2]);
        assert_eq!(versions(&out[1].2), vec![2, 2, 2, 3, 3, 3, 3, 3]);
        // row counts must add up
        assert!(rechunk_fragments(&old, &[5]).is_err());
    }
}
