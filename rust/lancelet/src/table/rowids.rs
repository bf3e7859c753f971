//! Stable row ids: a fragment's `RowIdSequence` and the dataset-wide index
//! from row id to row address.
//!
//! With stable row ids (feature flag 2) every fragment carries a serialized
//! `RowIdSequence` (`DataFragment.inline_row_ids`, or a byte range of another
//! file for `external_row_ids`): the id of physical row `i` is the `i`-th
//! value of the concatenated segments. Segments:
//!
//! | segment | values |
//! |---|---|
//! | `Range{start,end}` | `start..end` |
//! | `RangeWithHoles{start,end,holes}` | `start..end` without `holes` |
//! | `RangeWithBitmap{start,end,bitmap}` | `start + i` for each bit `i` set (LSB of byte 0 = `start`) |
//! | `SortedArray` / `Array` | the listed values |
//!
//! and arrays (`EncodedU64Array`) are `base + u16/u32 LE offsets` or raw u64 LE.
//! Deleting rows does not rewrite the sequence (the deletion file masks
//! positions); an update keeps a row's id and moves it to a new fragment.
//!
//! Without stable row ids a row's id is its address `fragment_id << 32 | offset`.

use std::ops::Range;

use prost::Message;

use crate::error::{Error, Result};
use crate::proto::table as pb;

/// One decoded segment.
#[derive(Debug, Clone, PartialEq)]
pub enum Segment {
    /// `start..end`.
    Range(Range<u64>),
    /// A range minus some sorted holes.
    RangeWithHoles { range: Range<u64>, holes: Vec<u64> },
    /// A range filtered by a bitmap (bit set = present).
    RangeWithBitmap { range: Range<u64>, bitmap: Vec<u8>, len: u64 },
    /// Explicit values (sorted or not).
    Array(Vec<u64>),
}

impl Segment {
    /// Number of ids in the segment.
    pub fn len(&self) -> u64 {
        match self {
            Segment::Range(r) => r.end - r.start,
            Segment::RangeWithHoles { range, holes } => range.end - range.start - holes.len() as u64,
            Segment::RangeWithBitmap { len, .. } => *len,
            Segment::Array(v) => v.len() as u64,
        }
    }

    /// True when the segment holds no ids.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Append the ids at positions `pos` (within this segment) to `out`.
    fn extend_range(&self, pos: Range<u64>, out: &mut Vec<u64>) {
        self.for_each_run(pos, |id, _, len| out.extend((0..len).map(|k| id + k)));
    }

    /// Call `f(first id, first position, length)` for each run of
    /// consecutive ids at consecutive positions among positions `pos`
    /// (within this segment). The work is proportional to the runs and to
    /// the bytes of the segment, never to the width of a range: a corrupt
    /// `RangeWithHoles` may span 2^64 ids.
    fn for_each_run(&self, pos: Range<u64>, mut f: impl FnMut(u64, u64, u64)) {
        if pos.start >= pos.end {
            return;
        }
        match self {
            Segment::Range(r) => f(r.start + pos.start, pos.start, pos.end - pos.start),
            Segment::RangeWithHoles { range, holes } => {
                // Position p of the run between holes h[k-1] and h[k] holds
                // id `range.start + p + k`.
                let mut p = 0u64;
                let mut next_id = range.start;
                for end in holes.iter().copied().chain(std::iter::once(range.end)) {
                    let run = end - next_id;
                    let (lo, hi) = (p.max(pos.start), (p + run).min(pos.end));
                    if lo < hi {
                        f(next_id + (lo - p), lo, hi - lo);
                    }
                    p += run;
                    if p >= pos.end {
                        return;
                    }
                    // (unused after the last run, where `end` may be 2^64 - 1)
                    next_id = end.wrapping_add(1);
                }
            }
            Segment::RangeWithBitmap { range, bitmap, .. } => {
                let mut p = 0u64;
                let mut run: Option<(u64, u64, u64)> = None;
                for (i, id) in (0..range.end - range.start).map(|i| (i, range.start + i)) {
                    if bitmap[(i / 8) as usize] & (1 << (i % 8)) == 0 {
                        continue;
                    }
                    if p >= pos.end {
                        break;
                    }
                    if p >= pos.start {
                        match &mut run {
                            Some((first, _, len)) if *first + *len == id => *len += 1,
                            _ => {
                                if let Some((a, b, c)) = run.take() {
                                    f(a, b, c);
                                }
                                run = Some((id, p, 1));
                            }
                        }
                    }
                    p += 1;
                }
                if let Some((a, b, c)) = run {
                    f(a, b, c);
                }
            }
            Segment::Array(v) => {
                let end = pos.end.min(v.len() as u64) as usize;
                let start = (pos.start as usize).min(end);
                for (k, &id) in v[start..end].iter().enumerate() {
                    f(id, pos.start + k as u64, 1);
                }
            }
        }
    }
}

/// The row ids of one fragment, in physical row order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RowIdSequence {
    /// Segments in order.
    pub segments: Vec<Segment>,
}

fn decode_array(a: &pb::EncodedU64Array) -> Result<Vec<u64>> {
    use pb::encoded_u64_array::Array;
    let chunks = |bytes: &[u8], w: usize| -> Result<()> {
        if bytes.len() % w != 0 {
            return Err(Error::corrupt(format!("row id array of {} bytes is not a multiple of {w}", bytes.len())));
        }
        Ok(())
    };
    Ok(match &a.array {
        Some(Array::U16Array(x)) => {
            chunks(&x.offsets, 2)?;
            x.offsets.chunks_exact(2).map(|c| offset_id(x.base, u64::from(u16::from_le_bytes([c[0], c[1]])))).collect::<Result<_>>()?
        }
        Some(Array::U32Array(x)) => {
            chunks(&x.offsets, 4)?;
            x.offsets.chunks_exact(4).map(|c| offset_id(x.base, u64::from(u32::from_le_bytes(c.try_into().expect("4"))))).collect::<Result<_>>()?
        }
        Some(Array::U64Array(x)) => {
            chunks(&x.values, 8)?;
            x.values.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8"))).collect()
        }
        None => Vec::new(),
    })
}

/// `base + offset` of an offset-encoded array; past 2^64 is corrupt.
fn offset_id(base: u64, offset: u64) -> Result<u64> {
    base.checked_add(offset).ok_or_else(|| Error::corrupt(format!("row id array base {base} + offset {offset} exceeds 2^64")))
}

fn check_range(start: u64, end: u64) -> Result<Range<u64>> {
    if end < start {
        return Err(Error::corrupt(format!("row id range {start}..{end} runs backwards")));
    }
    Ok(start..end)
}

impl RowIdSequence {
    /// Decode a serialized `RowIdSequence`.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        use pb::u64_segment::Segment as S;
        let msg = pb::RowIdSequence::decode(bytes).map_err(|e| Error::corrupt(format!("row id sequence: bad protobuf: {e}")).with_source(e))?;
        let mut segments = Vec::with_capacity(msg.segments.len());
        let mut total = 0u64;
        for s in msg.segments {
            segments.push(match s.segment {
                Some(S::Range(r)) => Segment::Range(check_range(r.start, r.end)?),
                Some(S::RangeWithHoles(r)) => {
                    let range = check_range(r.start, r.end)?;
                    let mut holes = r.holes.as_ref().map(decode_array).transpose()?.unwrap_or_default();
                    holes.sort_unstable();
                    holes.dedup();
                    if holes.iter().any(|h| !range.contains(h)) {
                        return Err(Error::corrupt(format!("row id range {range:?} has holes outside it")));
                    }
                    Segment::RangeWithHoles { range, holes }
                }
                Some(S::RangeWithBitmap(r)) => {
                    let range = check_range(r.start, r.end)?;
                    let n = range.end - range.start;
                    if (r.bitmap.len() as u64) < n.div_ceil(8) {
                        return Err(Error::corrupt(format!("row id bitmap of {} bytes is too short for {n} ids", r.bitmap.len())));
                    }
                    let len = (0..n as usize).filter(|&i| r.bitmap[i / 8] & (1 << (i % 8)) != 0).count() as u64;
                    Segment::RangeWithBitmap { range, bitmap: r.bitmap, len }
                }
                Some(S::SortedArray(a)) | Some(S::Array(a)) => Segment::Array(decode_array(&a)?),
                None => return Err(Error::corrupt("row id segment with no content")),
            });
            total = total
                .checked_add(segments.last().expect("just pushed").len())
                .ok_or_else(|| Error::corrupt("row id sequence holds more than 2^64 ids"))?;
        }
        Ok(RowIdSequence { segments })
    }

    /// Number of ids (must equal the fragment's physical rows; a decoded
    /// sequence holds fewer than 2^64).
    pub fn len(&self) -> u64 {
        self.segments.iter().map(Segment::len).sum()
    }

    /// True when there are no ids.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ids at the sorted, non-overlapping positions `ranges`.
    pub fn select(&self, ranges: &[Range<u64>]) -> Vec<u64> {
        let mut out = Vec::with_capacity(ranges.iter().map(|r| (r.end - r.start) as usize).sum());
        let mut seg_start = 0u64;
        let mut si = 0;
        for r in ranges {
            let mut pos = r.start;
            while pos < r.end && si < self.segments.len() {
                let seg = &self.segments[si];
                let seg_end = seg_start + seg.len();
                if pos >= seg_end {
                    seg_start = seg_end;
                    si += 1;
                    continue;
                }
                let take_end = r.end.min(seg_end);
                seg.extend_range(pos - seg_start..take_end - seg_start, &mut out);
                pos = take_end;
            }
        }
        out
    }

    /// Every id in order.
    pub fn to_vec(&self) -> Vec<u64> {
        #[allow(clippy::single_range_in_vec_init)]
        let all = [0..self.len()];
        self.select(&all)
    }

    /// Runs `(first id, first position, length)` of consecutive ids at
    /// consecutive positions, restricted to positions in `ranges` (sorted).
    pub fn runs(&self, ranges: &[Range<u64>]) -> Vec<(u64, u64, u64)> {
        let mut out: Vec<(u64, u64, u64)> = Vec::new();
        let mut seg_start = 0u64;
        let mut ri = 0;
        for seg in &self.segments {
            let seg_end = seg_start + seg.len();
            while ri < ranges.len() && ranges[ri].end <= seg_start {
                ri += 1;
            }
            let mut rj = ri;
            while rj < ranges.len() && ranges[rj].start < seg_end {
                let lo = ranges[rj].start.max(seg_start);
                let hi = ranges[rj].end.min(seg_end);
                seg.for_each_run(lo - seg_start..hi - seg_start, |id, p, len| push_run(&mut out, id, seg_start + p, len));
                rj += 1;
            }
            seg_start = seg_end;
        }
        out
    }
}

fn push_run(out: &mut Vec<(u64, u64, u64)>, id: u64, pos: u64, len: u64) {
    if len == 0 {
        return;
    }
    if let Some(last) = out.last_mut() {
        if last.0.checked_add(last.2) == Some(id) && last.1 + last.2 == pos {
            last.2 += len;
            return;
        }
    }
    out.push((id, pos, len));
}

/// Maps live row ids to row addresses (`fragment_id << 32 | offset`).
///
/// Built from every fragment's sequence restricted to its live (not deleted)
/// positions, as sorted runs of consecutive ids, so a dataset written in
/// ranges costs one entry per run, not per row.
#[derive(Debug, Default)]
pub struct RowIdIndex {
    /// `(first id, first address, length)`, sorted by id, non-overlapping.
    runs: Vec<(u64, u64, u64)>,
}

impl RowIdIndex {
    /// Build from `(fragment id, sequence, live position ranges)`.
    pub fn build<'a>(fragments: impl IntoIterator<Item = (u64, &'a RowIdSequence, &'a [Range<u64>])>) -> Result<Self> {
        let mut runs = Vec::new();
        for (frag, seq, live) in fragments {
            for (id, pos, len) in seq.runs(live) {
                // A row address keeps 32 bits for the position.
                if pos + len > 1 << 32 {
                    return Err(Error::corrupt(format!("fragment {frag} has row ids at positions beyond 2^32")));
                }
                runs.push((id, (frag << 32) | pos, len));
            }
        }
        runs.sort_unstable_by_key(|r| r.0);
        for w in runs.windows(2) {
            if w[1].0 - w[0].0 < w[0].2 {
                return Err(Error::corrupt(format!("row id {} is live at two addresses ({} and {})", w[1].0, w[0].1 + (w[1].0 - w[0].0), w[1].1)));
            }
        }
        Ok(RowIdIndex { runs })
    }

    /// The address of a live row id.
    pub fn get(&self, id: u64) -> Option<u64> {
        let i = self.runs.partition_point(|r| r.0 <= id);
        let (start, addr, len) = *self.runs.get(i.checked_sub(1)?)?;
        (id - start < len).then(|| addr + (id - start))
    }

    /// Number of runs (a measure of how compact the index is).
    pub fn num_runs(&self) -> usize {
        self.runs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pb::encoded_u64_array::{Array, U16Array, U64Array};
    use pb::u64_segment::Segment as S;

    fn seg(s: S) -> pb::U64Segment {
        pb::U64Segment { segment: Some(s) }
    }

    /// A corrupt `RangeWithHoles` may span 2^40 ids in a few bytes: reading
    /// its ends and indexing it cost the holes, not the width (the ids used
    /// to be walked one by one).
    #[test]
    fn wide_range_with_holes_is_cheap() {
        let holes =
            pb::EncodedU64Array { array: Some(Array::U64Array(U64Array { values: [7u64, 1 << 39].iter().flat_map(|x| x.to_le_bytes()).collect() })) };
        let msg = pb::RowIdSequence {
            segments: vec![seg(S::RangeWithHoles(pb::u64_segment::RangeWithHoles { start: 0, end: 1 << 40, holes: Some(holes) }))],
        };
        let seq = RowIdSequence::decode(&msg.encode_to_vec()).unwrap();
        let n = seq.len();
        assert_eq!(n, (1 << 40) - 2);
        assert_eq!(seq.select(&[5..9, n - 2..n]), vec![5, 6, 8, 9, (1 << 40) - 2, (1 << 40) - 1]);
        let index = RowIdIndex::build([(3u64, &seq, &[0..10][..])]).unwrap();
        assert_eq!(index.get(8), Some(3 << 32 | 7));
        assert_eq!(index.get(7), None);
        assert_eq!(index.num_runs(), 2);
        // Positions past 2^32 have no row address.
        assert!(matches!(RowIdIndex::build([(3u64, &seq, &[0..n][..])]), Err(Error::Corrupt { .. })));
    }

    /// `base + offset` past 2^64 is corrupt (it overflowed: a panic in debug
    /// builds, a wrapped id in release ones).
    #[test]
    fn offsets_past_the_end_of_u64_are_corrupt() {
        let arr = pb::EncodedU64Array { array: Some(Array::U16Array(U16Array { base: u64::MAX - 1, offsets: vec![1, 0, 2, 0] })) };
        let msg = pb::RowIdSequence { segments: vec![seg(S::SortedArray(arr))] };
        assert!(matches!(RowIdSequence::decode(&msg.encode_to_vec()), Err(Error::Corrupt { .. })));
    }

    #[test]
    fn fixture_bytes() {
        // one Range{0,10}, as pylance writes for a first fragment of 10 rows
        let seq = RowIdSequence::decode(&[0x0a, 0x04, 0x0a, 0x02, 0x10, 0x0a]).unwrap();
        assert_eq!(seq.segments, vec![Segment::Range(0..10)]);
        assert_eq!(seq.select(&[2..4, 8..10]), vec![2, 3, 8, 9]);
    }

    #[test]
    fn every_segment_kind() {
        let u16s = |base: u64, v: &[u16]| pb::EncodedU64Array {
            array: Some(Array::U16Array(U16Array { base, offsets: v.iter().flat_map(|x| x.to_le_bytes()).collect() })),
        };
        let msg = pb::RowIdSequence {
            segments: vec![
                seg(S::Range(pb::u64_segment::Range { start: 100, end: 103 })),
                seg(S::RangeWithHoles(pb::u64_segment::RangeWithHoles { start: 10, end: 15, holes: Some(u16s(10, &[1, 3])) })),
                seg(S::RangeWithBitmap(pb::u64_segment::RangeWithBitmap { start: 20, end: 30, bitmap: vec![0b0000_0101, 0b10] })),
                seg(S::SortedArray(u16s(1000, &[0, 5, 7]))),
                seg(S::Array(pb::EncodedU64Array {
                    array: Some(Array::U64Array(U64Array { values: [9u64, 4].iter().flat_map(|x| x.to_le_bytes()).collect() })),
                })),
            ],
        };
        let seq = RowIdSequence::decode(&msg.encode_to_vec()).unwrap();
        let all = vec![100, 101, 102, 10, 12, 14, 20, 22, 29, 1000, 1005, 1007, 9, 4];
        assert_eq!(seq.len(), all.len() as u64);
        assert_eq!(seq.to_vec(), all);
        assert_eq!(seq.select(&[1..2, 4..8, 13..14]), vec![101, 12, 14, 20, 22, 4]);
        // index over live positions (position 0 and 7 deleted)
        let live = vec![1..7, 8..14];
        let idx = RowIdIndex::build([(3u64, &seq, live.as_slice())]).unwrap();
        assert_eq!(idx.get(100), None);
        assert_eq!(idx.get(101), Some((3 << 32) | 1));
        assert_eq!(idx.get(102), Some((3 << 32) | 2));
        assert_eq!(idx.get(14), Some((3 << 32) | 5));
        assert_eq!(idx.get(22), None);
        assert_eq!(idx.get(4), Some((3 << 32) | 13));
        assert_eq!(idx.get(11), None);
    }

    #[test]
    fn index_after_update_and_errors() {
        // id 5 deleted in fragment 0, moved to fragment 2
        let f0 = RowIdSequence { segments: vec![Segment::Range(0..10)] };
        let f2 = RowIdSequence { segments: vec![Segment::Range(5..6)] };
        let live0 = vec![0..5, 6..10];
        let live2 = vec![0..1];
        let idx = RowIdIndex::build([(0, &f0, live0.as_slice()), (2, &f2, live2.as_slice())]).unwrap();
        assert_eq!(idx.get(5), Some(2 << 32));
        assert_eq!(idx.get(6), Some(6));
        assert_eq!(idx.num_runs(), 3);
        // duplicates among live rows are corrupt
        let all = vec![0..10];
        assert!(RowIdIndex::build([(0, &f0, all.as_slice()), (2, &f2, live2.as_slice())]).is_err());
        assert!(RowIdSequence::decode(&[0xff, 0xff]).is_err());
        let backwards = pb::RowIdSequence { segments: vec![seg(S::Range(pb::u64_segment::Range { start: 5, end: 1 }))] };
        assert!(RowIdSequence::decode(&backwards.encode_to_vec()).is_err());
    }
}
