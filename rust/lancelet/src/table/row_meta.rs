//! Writing per-row metadata of stable row ids: `RowIdSequence`s and the
//! created-at / last-updated-at version sequences.
//!
//! Row ids (see [`crate::table::rowids`] for the layout) are encoded as
//! pylance chooses a segment for a list of ids: sorted and contiguous →
//! `Range`; sorted with gaps → the smallest of `RangeWithHoles` (24 + 4 per
//! hole bytes), `RangeWithBitmap` (24 + span/8) and `SortedArray` (24 + 2
//! per id); unsorted → `Array`. Arrays store `base` = the minimum and u16,
//! u32 or u64 offsets, whichever holds `max - min`.
//!
//! A version sequence (`DataFragment` fields 7/9 inline, 8/10 in a file) is a
//! list of runs `(span, version)`: `span` is a `U64Segment` of row
//! positions, consecutive runs covering positions `0..physical_rows`. A
//! fragment without one counts as written at version 1 (as pylance).

use prost::Message;

use crate::error::{Error, Result};
use crate::io::Storage;
use crate::proto::table as pb;
use crate::table::rowids::RowIdSequence;

use pb::encoded_u64_array::{Array, U16Array, U32Array, U64Array};
use pb::u64_segment::Segment as S;

fn encoded_array(values: &[u64]) -> pb::EncodedU64Array {
    let min = values.iter().copied().min().unwrap_or(0);
    let max = values.iter().copied().max().unwrap_or(0);
    let array = if max - min <= u64::from(u16::MAX) {
        Array::U16Array(U16Array { base: min, offsets: values.iter().flat_map(|v| ((v - min) as u16).to_le_bytes()).collect() })
    } else if max - min <= u64::from(u32::MAX) {
        Array::U32Array(U32Array { base: min, offsets: values.iter().flat_map(|v| ((v - min) as u32).to_le_bytes()).collect() })
    } else {
        Array::U64Array(U64Array { values: values.iter().flat_map(|v| v.to_le_bytes()).collect() })
    };
    pb::EncodedU64Array { array: Some(array) }
}

/// A `Range{start, end}` segment.
pub fn range_segment(start: u64, end: u64) -> pb::U64Segment {
    pb::U64Segment { segment: Some(S::Range(pb::u64_segment::Range { start, end })) }
}

/// The segment pylance would choose for `ids` (distinct values).
pub fn encode_segment(ids: &[u64]) -> pb::U64Segment {
    let (Some(&min), Some(&max)) = (ids.iter().min(), ids.iter().max()) else { return range_segment(0, 0) };
    let sorted = ids.windows(2).all(|w| w[0] < w[1]);
    if !sorted {
        return pb::U64Segment { segment: Some(S::Array(encoded_array(ids))) };
    }
    let slots = max - min + 1;
    let holes = slots - ids.len() as u64;
    if holes == 0 {
        return range_segment(min, max + 1);
    }
    let with_holes = 24 + 4 * holes;
    let with_bitmap = 24 + slots.div_ceil(8);
    let sorted_array = 24 + 2 * ids.len() as u64;
    let smallest = with_holes.min(with_bitmap).min(sorted_array);
    let segment = if smallest == with_holes {
        let mut missing = Vec::with_capacity(holes as usize);
        let mut next = min;
        for &id in ids {
            missing.extend(next..id);
            next = id + 1;
        }
        S::RangeWithHoles(pb::u64_segment::RangeWithHoles { start: min, end: max + 1, holes: Some(encoded_array(&missing)) })
    } else if smallest == with_bitmap {
        let mut bitmap = vec![0u8; slots.div_ceil(8) as usize];
        for &id in ids {
            let i = (id - min) as usize;
            bitmap[i / 8] |= 1 << (i % 8);
        }
        S::RangeWithBitmap(pb::u64_segment::RangeWithBitmap { start: min, end: max + 1, bitmap })
    } else {
        S::SortedArray(encoded_array(ids))
    };
    pb::U64Segment { segment: Some(segment) }
}

/// A serialized `RowIdSequence` of `ids` (one segment, chosen by
/// [`encode_segment`]).
pub fn encode_row_ids(ids: &[u64]) -> Vec<u8> {
    pb::RowIdSequence { segments: vec![encode_segment(ids)] }.encode_to_vec()
}

/// The ids of a serialized `RowIdSequence`.
fn decode_ids(bytes: &[u8]) -> Result<Vec<u64>> {
    Ok(RowIdSequence::decode(bytes)?.to_vec())
}

/// The row ids of fragment `f` (`None` when it has none); external
/// sequences are read from `root`.
pub fn fragment_row_ids(root: Option<&Storage>, f: &pb::DataFragment) -> Result<Option<Vec<u64>>> {
    use pb::data_fragment::RowIdSequence as R;
    match &f.row_id_sequence {
        None => Ok(None),
        Some(R::InlineRowIds(b)) => decode_ids(b).map(Some),
        Some(R::ExternalRowIds(ext)) => {
            let root = root.ok_or_else(|| Error::unsupported(format!("fragment {} keeps its row ids in a file", f.id)))?;
            let bytes = root.child(&ext.path)?.read_range(ext.offset..ext.offset + ext.size)?;
            decode_ids(&bytes).map(Some)
        }
    }
    .map_err(|e| e.context(format!("row ids of fragment {}", f.id)))
}

/// Version runs `(rows, version)` of a version sequence, in row order.
pub type VersionRuns = Vec<(u64, u64)>;

/// A serialized version sequence from runs `(rows, version)` (adjacent runs
/// of one version are joined).
pub fn encode_versions(runs: &[(u64, u64)]) -> Vec<u8> {
    let mut joined: Vec<(u64, u64)> = Vec::with_capacity(runs.len());
    for &(n, v) in runs {
        if n == 0 {
            continue;
        }
        match joined.last_mut() {
            Some(last) if last.1 == v => last.0 += n,
            _ => joined.push((n, v)),
        }
    }
    let mut pos = 0u64;
    let runs = joined
        .into_iter()
        .map(|(n, version)| {
            let span = range_segment(pos, pos + n);
            pos += n;
            pb::RowDatasetVersionRun { span: Some(span), version }
        })
        .collect();
    pb::RowDatasetVersionSequence { runs }.encode_to_vec()
}

/// Decode a serialized version sequence into runs `(rows, version)`.
pub fn decode_versions(bytes: &[u8]) -> Result<VersionRuns> {
    let msg = pb::RowDatasetVersionSequence::decode(bytes).map_err(|e| Error::corrupt(format!("version sequence: {e}")).with_source(e))?;
    let mut out = Vec::with_capacity(msg.runs.len());
    for run in msg.runs {
        let span = run.span.ok_or_else(|| Error::corrupt("version run without a span"))?;
        // A span is a set of positions; only its size matters for runs
        // that follow one another.
        let seq = RowIdSequence::decode(&pb::RowIdSequence { segments: vec![span] }.encode_to_vec())?;
        out.push((seq.len(), run.version));
    }
    Ok(out)
}

/// The created-at versions of fragment `f` (one run at version 1 when it
/// has none). External sequences are read from `root`.
pub fn created_at(root: Option<&Storage>, f: &pb::DataFragment) -> Result<VersionRuns> {
    use pb::data_fragment::CreatedAtVersionSequence as C;
    let bytes = match &f.created_at_version_sequence {
        None => return Ok(vec![(f.physical_rows, 1)]),
        Some(C::InlineCreatedAtVersions(b)) => bytes::Bytes::from(b.clone()),
        Some(C::ExternalCreatedAtVersions(ext)) => {
            let root = root.ok_or_else(|| Error::unsupported(format!("fragment {} keeps its versions in a file", f.id)))?;
            root.child(&ext.path)?.read_range(ext.offset..ext.offset + ext.size)?
        }
    };
    decode_versions(&bytes).map_err(|e| e.context(format!("created-at versions of fragment {}", f.id)))
}

/// Stable row ids and version sequences of the new fragments of an Update
/// committed as `version`, as pylance 14 gives them: rows listed in a new
/// fragment's row id sequence were moved there and keep their ids and
/// created-at versions (looked up in `sources`, the fragments they came
/// from); the fragment's remaining rows (a merge_insert's inserts) get the
/// ids `next_row_id..` and are created at `version`; every row was last
/// updated at `version`.
pub fn place_moved_rows(
    new: &mut [pb::DataFragment],
    sources: &[&pb::DataFragment],
    root: Option<&Storage>,
    next_row_id: &mut u64,
    version: u64,
) -> Result<()> {
    use pb::data_fragment::{CreatedAtVersionSequence as C, LastUpdatedAtVersionSequence as L, RowIdSequence as R};
    let mut moved: Vec<Vec<u64>> = Vec::with_capacity(new.len());
    for f in new.iter() {
        moved.push(fragment_row_ids(root, f)?.unwrap_or_default());
    }
    let created = created_versions(&moved, sources, root)?;
    for ((f, ids), versions) in new.iter_mut().zip(moved).zip(created) {
        let kept = ids.len() as u64;
        if kept > f.physical_rows {
            return Err(Error::invalid_input(format!("a new fragment of {} rows lists {kept} row ids", f.physical_rows)));
        }
        let fresh = f.physical_rows - kept;
        let mut all = ids;
        all.extend(*next_row_id..*next_row_id + fresh);
        *next_row_id += fresh;
        f.row_id_sequence = Some(R::InlineRowIds(encode_row_ids(&all)));
        let mut runs: VersionRuns = versions.into_iter().map(|v| (1, v)).collect();
        runs.push((fresh, version));
        f.created_at_version_sequence = Some(C::InlineCreatedAtVersions(encode_versions(&runs)));
        f.last_updated_at_version_sequence = Some(L::InlineLastUpdatedAtVersions(encode_versions(&[(f.physical_rows, version)])));
    }
    Ok(())
}

/// The created-at version of each moved row id (per new fragment), from
/// the fragments the rows came from; rows found nowhere count as version 1.
fn created_versions(moved: &[Vec<u64>], sources: &[&pb::DataFragment], root: Option<&Storage>) -> Result<Vec<Vec<u64>>> {
    if moved.iter().all(|m| m.is_empty()) {
        return Ok(moved.iter().map(|_| Vec::new()).collect());
    }
    let mut runs = Vec::with_capacity(sources.len());
    for f in sources {
        runs.push(created_at(root, f)?);
    }
    // Usually every source was written at one version: no lookups.
    let versions: std::collections::BTreeSet<u64> = runs.iter().flatten().map(|r| r.1).collect();
    if versions.len() <= 1 {
        let v = versions.into_iter().next().unwrap_or(1);
        return Ok(moved.iter().map(|m| vec![v; m.len()]).collect());
    }
    let mut of_id: std::collections::HashMap<u64, u64> = moved.iter().flatten().map(|&id| (id, 1)).collect();
    for (f, r) in sources.iter().zip(&runs) {
        let Some(ids) = fragment_row_ids(root, f)? else { continue };
        let mut pos = 0usize;
        for &(n, v) in r {
            for id in ids.iter().skip(pos).take(n as usize) {
                if let Some(slot) = of_id.get_mut(id) {
                    *slot = v;
                }
            }
            pos += n as usize;
        }
    }
    Ok(moved.iter().map(|m| m.iter().map(|id| of_id[id]).collect()).collect())
}

/// The version of the run holding row `offset` (`None` past the end).
pub fn version_at(runs: &[(u64, u64)], offset: u64) -> Option<u64> {
    let mut start = 0u64;
    for &(n, v) in runs {
        if offset < start + n {
            return Some(v);
        }
        start += n;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn roundtrip(ids: &[u64]) -> Vec<u64> {
        RowIdSequence::decode(&encode_row_ids(ids)).unwrap().to_vec()
    }

    #[test]
    fn segment_choice_as_pylance() {
        // Bytes pylance 14 wrote for ids 1, 5, 9, 13, 17: RangeWithBitmap{1, 18, [0x11, 0x11, 0x01]}.
        let seg = encode_segment(&[1, 5, 9, 13, 17]);
        assert_eq!(
            seg,
            pb::U64Segment {
                segment: Some(S::RangeWithBitmap(pb::u64_segment::RangeWithBitmap { start: 1, end: 18, bitmap: vec![0x11, 0x11, 0x01] }))
            }
        );
        assert_eq!(encode_segment(&[3, 4, 5]), range_segment(3, 6));
        // one hole in 13 slots: a 2-byte bitmap (26) beats a hole list (28); in 100 slots the hole list wins
        assert!(matches!(encode_segment(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12]).segment, Some(S::RangeWithBitmap(_))));
        let one_hole: Vec<u64> = (0..100).filter(|&i| i != 50).collect();
        assert!(matches!(encode_segment(&one_hole).segment, Some(S::RangeWithHoles(_))));
        assert!(matches!(encode_segment(&[0, 100_000, 200_000]).segment, Some(S::SortedArray(_))));
        assert!(matches!(encode_segment(&[5, 1]).segment, Some(S::Array(_))));
        assert_eq!(roundtrip(&[]), Vec::<u64>::new());
    }

    #[test]
    fn versions() {
        let b = encode_versions(&[(2, 1), (3, 1), (0, 7), (1, 4)]);
        assert_eq!(decode_versions(&b).unwrap(), vec![(5, 1), (1, 4)]);
        assert_eq!(version_at(&[(5, 1), (1, 4)], 5), Some(4));
        assert_eq!(version_at(&[(5, 1), (1, 4)], 6), None);
    }

    proptest! {
        #[test]
        fn row_ids_roundtrip(mut ids in proptest::collection::btree_set(0u64..5_000_000_000, 0..300), shuffle in any::<bool>(), dense in any::<bool>()) {
            let mut v: Vec<u64> = if dense { ids.iter().map(|x| x % 2000).collect::<std::collections::BTreeSet<_>>().into_iter().collect() } else { std::mem::take(&mut ids).into_iter().collect() };
            if shuffle { v.reverse(); }
            prop_assert_eq!(roundtrip(&v), v);
        }
    }
}
