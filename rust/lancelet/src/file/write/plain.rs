//! Top-level leaf columns of plain types (fixed-width primitives, strings,
//! binaries), buffered as the Arrow arrays they arrived in and shredded
//! at most once.
//!
//! Shredding every batch on arrival and concatenating the pieces when a
//! page is cut copied each value twice, and the concatenation ran on the
//! writing thread while the pool waited. A plain column needs no levels
//! beyond one definition code per row, so its page is built straight from
//! the Arrow arrays: an array that fills a page alone is queued as it is
//! and copied once when the page is encoded (on the pool); smaller ones
//! are appended to the page being filled, a buffer sized for the whole
//! page, one copy each (columns in parallel). No Arrow array is held
//! after the write call that brought it (a batch imported from Python
//! may keep all its columns' memory alive through any one of them). The
//! piece is exactly what [`super::shred::shred`] followed by
//! [`super::shred::Piece::concat`] would give (null slots zero-filled,
//! null strings empty), so files are unchanged.

use arrow_array::{Array, ArrayRef, OffsetSizeTrait};
use arrow_schema::{DataType, Field};

use crate::error::{Error, Result};
use crate::file::structural::to_arrow::is_packed_struct;
use crate::file::write::blob::is_blob;
use crate::file::write::shred::{fixed_bytes, LeafPath, Piece, Values};

/// How a plain column's values are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlainKind {
    /// Fixed-width values of this many bytes.
    Fixed(usize),
    /// Strings or binaries with i32 offsets.
    Var32,
    /// Large strings or binaries (i64 offsets).
    Var64,
}

/// The kind of a top-level `field` whose arrays this module shreds, or None
/// (booleans, nested types, dictionaries, packed structs, blobs and `null`
/// columns go through [`super::shred::shred`]).
pub fn plain_kind(field: &Field) -> Option<PlainKind> {
    if is_packed_struct(field) || is_blob(field) {
        return None;
    }
    match field.data_type() {
        DataType::Utf8 | DataType::Binary => Some(PlainKind::Var32),
        DataType::LargeUtf8 | DataType::LargeBinary => Some(PlainKind::Var64),
        DataType::Boolean
        | DataType::Null
        | DataType::Dictionary(_, _)
        | DataType::FixedSizeList(_, _)
        | DataType::Struct(_)
        | DataType::List(_)
        | DataType::LargeList(_)
        | DataType::Map(_, _) => None,
        dt => fixed_bytes(dt).filter(|w| *w > 0).map(PlainKind::Fixed),
    }
}

fn short() -> Error {
    Error::invalid_input("values shorter than the array")
}

/// Value bytes and the value range `a..b` (of the values buffer) of a
/// string array's rows, checked against its buffers.
fn var_range<O: OffsetSizeTrait>(data: &arrow_data::ArrayData) -> Result<(&[O], usize, usize)> {
    let n = data.len();
    let offs: &[O] = data.buffers().first().ok_or_else(short)?.typed_data::<O>().get(data.offset()..data.offset() + n + 1).ok_or_else(short)?;
    let (a, b) = (offs[0].as_usize(), offs[n].as_usize());
    let values = data.buffers().get(1).map_or(0, |v| v.len());
    if a > b || b > values || offs.windows(2).any(|w| w[0] > w[1]) {
        return Err(Error::invalid_input("string offsets out of order or past the values"));
    }
    Ok((offs, a, b))
}

/// Check `array` against `kind` and return how much it adds to a page's
/// size, measured as [`super::LeafEncoder::push`] measures a shredded
/// piece (value bytes, 4 bytes per string offset, a bit per row).
pub fn measure(kind: PlainKind, array: &ArrayRef) -> Result<usize> {
    let data = array.to_data();
    let n = data.len();
    let values = match kind {
        PlainKind::Fixed(w) => {
            let have = data.buffers().first().map_or(0, |b| b.len());
            if (data.offset() + n) * w > have {
                return Err(short());
            }
            n * w
        }
        PlainKind::Var32 => {
            let (_, a, b) = var_range::<i32>(&data)?;
            b - a + 4 * (n + 1)
        }
        PlainKind::Var64 => {
            let (_, a, b) = var_range::<i64>(&data)?;
            b - a + 4 * (n + 1)
        }
    };
    Ok(values + n.div_ceil(8))
}

/// An empty piece of `kind` with room for about `rows` rows and `bytes`
/// value bytes.
pub fn empty(kind: PlainKind, rows: usize, bytes: usize) -> Piece {
    let values = match kind {
        PlainKind::Fixed(w) => Values::Fixed { bytes: w, data: Vec::with_capacity(bytes.max(rows * w)) },
        PlainKind::Var32 | PlainKind::Var64 => {
            let mut offsets = Vec::with_capacity(rows + 1);
            offsets.push(0);
            Values::Variable { offsets, data: Vec::with_capacity(bytes) }
        }
    };
    Piece { rep: None, def: Vec::with_capacity(rows), values, num_rows: 0 }
}

/// Append the rows of `array` (checked by [`measure`]) to `piece` (made by
/// [`empty`] for the same kind): each buffer copied once.
pub fn append(kind: PlainKind, path: &LeafPath, piece: &mut Piece, array: &ArrayRef) -> Result<()> {
    let leaf_code = path.null_code(0);
    let def = &mut piece.def;
    match (kind, &mut piece.values) {
        (PlainKind::Fixed(w), Values::Fixed { data: out, .. }) => {
            let data = array.to_data();
            let (m, off) = (data.len(), data.offset());
            let buf = data.buffers().first().and_then(|b| b.as_slice().get(off * w..(off + m) * w)).ok_or_else(short)?;
            let start = out.len();
            out.extend_from_slice(buf);
            match array.logical_nulls().filter(|nb| nb.null_count() > 0) {
                None => def.resize(def.len() + m, 0),
                Some(nb) => {
                    for (i, valid) in nb.iter().enumerate() {
                        if valid {
                            def.push(0);
                        } else {
                            def.push(leaf_code);
                            out[start + i * w..start + (i + 1) * w].fill(0);
                        }
                    }
                }
            }
        }
        (PlainKind::Var32, Values::Variable { offsets, data }) => append_var::<i32>(array, leaf_code, def, offsets, data)?,
        (PlainKind::Var64, Values::Variable { offsets, data }) => append_var::<i64>(array, leaf_code, def, offsets, data)?,
        _ => return Err(Error::Internal { what: "plain piece of another kind".into() }),
    }
    piece.num_rows += array.len();
    Ok(())
}

/// One page's piece of a plain top-level leaf from `arrays` (each checked
/// by [`measure`]): every buffer copied once.
pub fn shred_many(kind: PlainKind, path: &LeafPath, arrays: &[ArrayRef]) -> Result<Piece> {
    let rows: usize = arrays.iter().map(|a| a.len()).sum();
    let mut bytes = 0;
    for a in arrays {
        bytes += match kind {
            PlainKind::Fixed(w) => a.len() * w,
            PlainKind::Var32 => var_range::<i32>(&a.to_data()).map(|(_, x, y)| y - x)?,
            PlainKind::Var64 => var_range::<i64>(&a.to_data()).map(|(_, x, y)| y - x)?,
        };
    }
    let mut piece = empty(kind, rows, bytes);
    for a in arrays {
        append(kind, path, &mut piece, a)?;
    }
    Ok(piece)
}

fn append_var<O: OffsetSizeTrait>(array: &ArrayRef, leaf_code: u16, def: &mut Vec<u16>, offsets: &mut Vec<u64>, out: &mut Vec<u8>) -> Result<()> {
    let d = array.to_data();
    let (offs, a, b) = var_range::<O>(&d)?;
    let bytes = d.buffers()[1].as_slice();
    match array.logical_nulls().filter(|nb| nb.null_count() > 0) {
        None => {
            let base = out.len() as u64;
            out.extend_from_slice(&bytes[a..b]);
            offsets.extend(offs[1..].iter().map(|o| base + (o.as_usize() - a) as u64));
            def.resize(def.len() + d.len(), 0);
        }
        Some(nb) => {
            // Null rows hold no bytes, whatever their Arrow slots span.
            for (i, valid) in nb.iter().enumerate() {
                if valid {
                    out.extend_from_slice(&bytes[offs[i].as_usize()..offs[i + 1].as_usize()]);
                    def.push(0);
                } else {
                    def.push(leaf_code);
                }
                offsets.push(out.len() as u64);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{BinaryArray, Float64Array, Int32Array, LargeStringArray, StringArray, TimestampMicrosecondArray};

    use super::*;
    use crate::file::write::shred::{leaf_paths, shred};

    /// The piece built from several arrays equals the shredded pieces
    /// concatenated (the path it replaces), for every plain kind, with and
    /// without nulls, sliced arrays and empty strings.
    #[test]
    fn same_piece_as_shred_and_concat() {
        let mut rng = crate::testdata::Lcg(99);
        let mut next = || rng.next() >> 33;
        for round in 0..40 {
            let nulls = round % 2 == 1;
            let sizes: Vec<usize> = (0..1 + round % 4).map(|_| (next() % 300) as usize).collect();
            let mut cols: Vec<(Field, Vec<ArrayRef>)> = vec![
                (Field::new("i", DataType::Int32, true), vec![]),
                (Field::new("f", DataType::Float64, true), vec![]),
                (Field::new("t", DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, None), true), vec![]),
                (Field::new("s", DataType::Utf8, true), vec![]),
                (Field::new("l", DataType::LargeUtf8, true), vec![]),
                (Field::new("b", DataType::Binary, true), vec![]),
            ];
            for &m in &sizes {
                let valid: Vec<bool> = (0..m + 3).map(|_| !nulls || next() % 5 != 0).collect();
                let strs: Vec<Option<String>> = (0..m + 3)
                    .map(|k| {
                        valid[k].then(|| {
                            let len = match next() % 10 {
                                0 => 0,
                                1 => 200 + next() % 300,
                                _ => next() % 20,
                            };
                            (0..len).map(|j| (b'a' + ((j + next()) % 26) as u8) as char).collect()
                        })
                    })
                    .collect();
                let ints: Vec<Option<i32>> = (0..m + 3).map(|k| valid[k].then(|| next() as i32)).collect();
                let arrays: Vec<ArrayRef> = vec![
                    Arc::new(Int32Array::from(ints.clone())),
                    Arc::new(Float64Array::from(ints.iter().map(|v| v.map(|x| x as f64 / 3.0)).collect::<Vec<_>>())),
                    Arc::new(TimestampMicrosecondArray::from(ints.iter().map(|v| v.map(i64::from)).collect::<Vec<_>>())),
                    Arc::new(StringArray::from(strs.clone())),
                    Arc::new(LargeStringArray::from(strs.clone())),
                    Arc::new(BinaryArray::from(strs.iter().map(|s| s.as_deref().map(str::as_bytes)).collect::<Vec<_>>())),
                ];
                // Sliced, so offsets into the buffers are exercised.
                for ((_, v), a) in cols.iter_mut().zip(arrays) {
                    v.push(a.slice(2, m));
                }
            }
            for (field, arrays) in &cols {
                let kind = plain_kind(field).expect("plain");
                let path = leaf_paths(field).remove(0).1;
                let mut measured = 0;
                let mut pieces = Vec::new();
                for a in arrays {
                    measured += measure(kind, a).unwrap();
                    let p = shred(field, a).unwrap().remove(0);
                    pieces.push(p);
                }
                let want = Piece::concat(pieces);
                let mut want_bytes = 0;
                for a in arrays {
                    let p = shred(field, a).unwrap().remove(0);
                    want_bytes += p.values.data_bytes() + p.def.len().div_ceil(8);
                }
                let got = shred_many(kind, &path, arrays).unwrap();
                assert_eq!(got, want, "round {round} field {}", field.name());
                if !nulls {
                    assert_eq!(measured, want_bytes, "round {round} field {}", field.name());
                }
            }
        }
    }

    #[test]
    fn kinds() {
        assert_eq!(plain_kind(&Field::new("x", DataType::Int64, false)), Some(PlainKind::Fixed(8)));
        assert_eq!(plain_kind(&Field::new("x", DataType::Utf8, false)), Some(PlainKind::Var32));
        assert_eq!(plain_kind(&Field::new("x", DataType::LargeBinary, false)), Some(PlainKind::Var64));
        assert_eq!(plain_kind(&Field::new("x", DataType::Boolean, false)), None);
        let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        assert_eq!(plain_kind(&Field::new("x", dict, false)), None);
        let blob = Field::new("x", DataType::LargeBinary, true).with_metadata([("lance-encoding:blob".to_string(), "true".to_string())]);
        assert_eq!(plain_kind(&blob), None);
    }

    /// Offsets that run backwards or past the values are refused, not
    /// read out of bounds.
    #[test]
    fn bad_offsets_are_refused() {
        let bad = arrow_data::ArrayData::builder(DataType::Binary)
            .len(2)
            .add_buffer(arrow_buffer::Buffer::from_slice_ref([0i32, 5, 3]))
            .add_buffer(arrow_buffer::Buffer::from_slice_ref(b"abcde"));
        // SAFETY: the array is invalid on purpose; only its raw buffers are
        // looked at (as an FFI import that skipped validation would be).
        let a: ArrayRef = arrow_array::make_array(unsafe { bad.build_unchecked() });
        assert!(measure(PlainKind::Var32, &a).is_err());
    }
}
