//! Decoded values and unraveled structure to Arrow arrays.

use std::sync::Arc;

use arrow_array::builder::{GenericByteDictionaryBuilder, PrimitiveDictionaryBuilder};
use arrow_array::types::*;
use arrow_array::{make_array, new_null_array, Array, ArrayRef, ArrowPrimitiveType};
use arrow_buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_data::ArrayDataBuilder;
use arrow_schema::{DataType, Field};

use crate::error::{Error, Result};
use crate::file::structural::datablock::{DataBlock, Offsets};
use crate::file::structural::unravel::{LayerOut, Unraveled};

/// Width in bits of one value of a fixed-width Arrow type (1 for bool).
pub fn fixed_width_bits(dt: &DataType) -> Option<u64> {
    Some(match dt {
        DataType::Boolean => 1,
        DataType::FixedSizeBinary(n) => 8 * *n as u64,
        dt => 8 * dt.primitive_width()? as u64,
    })
}

/// Build a leaf array of type `dt` from values and validity.
pub fn leaf_array(values: DataBlock, validity: Option<NullBuffer>, dt: &DataType) -> Result<ArrayRef> {
    let len = values.len();
    if let Some(v) = &validity {
        if v.len() != len {
            return Err(Error::corrupt(format!("{} validity bits for {len} values", v.len())));
        }
    }
    if matches!(dt, DataType::Null) {
        return Ok(new_null_array(dt, len));
    }
    if let DataType::Dictionary(key, value) = dt {
        let plain = leaf_array(values, validity, value)?;
        return dictionary_encode(&plain, key, value);
    }
    let validity = validity.filter(|v| v.null_count() > 0);
    if let (DataType::Struct(children), DataBlock::Fixed { bits, data, len }) = (dt, &values) {
        return packed_struct(children, *bits, data, *len, validity);
    }
    if let (DataType::Struct(children), DataBlock::Variable { offsets, data, .. }) = (dt, &values) {
        return variable_packed_struct(children, offsets, data, validity);
    }
    match values {
        DataBlock::Nulls { len } => Ok(new_null_array(dt, len)),
        DataBlock::Fixed { bits, data, len } => {
            let want = fixed_width_bits(dt).ok_or_else(|| Error::corrupt(format!("fixed-width values for non-fixed type {dt}")))?;
            if want != bits {
                return Err(Error::corrupt(format!("{bits}-bit values for type {dt} ({want} bits)")));
            }
            let need = (len as u64 * bits).div_ceil(8) as usize;
            if data.len() < need {
                return Err(Error::corrupt(format!("{} bytes for {len} values of {bits} bits", data.len())));
            }
            let data = ArrayDataBuilder::new(dt.clone())
                .align_buffers(true)
                .align_buffers(true)
                .len(len)
                .add_buffer(Buffer::from_vec(data))
                .nulls(validity)
                .build()
                .map_err(Error::corrupt_arrow)?;
            Ok(make_array(data))
        }
        DataBlock::Variable { offsets, data, ascii } => {
            let wide = matches!(dt, DataType::LargeUtf8 | DataType::LargeBinary);
            if !matches!(dt, DataType::Utf8 | DataType::Binary | DataType::LargeUtf8 | DataType::LargeBinary) {
                return Err(Error::corrupt(format!("variable-width values for type {dt}")));
            }
            let offsets_buf = match (offsets, wide) {
                (Offsets::I32(o), false) => Buffer::from_vec(o),
                (Offsets::I64(o), true) => Buffer::from_vec(o),
                (Offsets::I32(o), true) => Buffer::from_vec(o.into_iter().map(i64::from).collect::<Vec<_>>()),
                (Offsets::I64(o), false) => Buffer::from_vec(
                    o.into_iter()
                        .map(|x| i32::try_from(x).map_err(|_| Error::corrupt("offset too large for 32-bit type")))
                        .collect::<Result<Vec<_>>>()?,
                ),
            };
            let ascii = matches!(dt, DataType::Utf8 | DataType::LargeUtf8)
                && (ascii.0 || data.is_ascii())
                && offsets_in_order(&offsets_buf, wide, len, data.len());
            let builder = ArrayDataBuilder::new(dt.clone())
                .align_buffers(true)
                .len(len)
                .add_buffer(offsets_buf)
                .add_buffer(Buffer::from_vec(data))
                .nulls(validity);
            if ascii {
                // Arrow's checks of a string array walk every value to see
                // that it starts on a character boundary and is valid
                // UTF-8 (a tenth of a string scan's time); ASCII bytes are
                // valid UTF-8 cut anywhere, and the offsets were checked.
                // SAFETY: offsets are len + 1 non-decreasing positions
                // within the data, which is ASCII (so UTF-8 at every cut),
                // and the validity has `len` bits (checked above).
                return Ok(make_array(unsafe { builder.build_unchecked() }));
            }
            Ok(make_array(builder.build().map_err(Error::corrupt_arrow)?))
        }
        DataBlock::FixedSizeList { dim, items, item_validity } => {
            let DataType::FixedSizeList(item_field, n) = dt else {
                return Err(Error::corrupt(format!("fixed-size-list values for type {dt}")));
            };
            if *n as usize != dim {
                return Err(Error::corrupt(format!("list size {dim} for type {dt}")));
            }
            let item_validity = item_validity.map(|bits| NullBuffer::new(arrow_buffer::BooleanBuffer::new(Buffer::from_vec(bits), 0, items.len())));
            let child = leaf_array(*items, item_validity, item_field.data_type())?;
            let data = ArrayDataBuilder::new(dt.clone())
                .align_buffers(true)
                .align_buffers(true)
                .len(len)
                .add_child_data(child.to_data())
                .nulls(validity)
                .build()
                .map_err(Error::corrupt_arrow)?;
            Ok(make_array(data))
        }
    }
}

/// Whether `offsets` (`i64` when `wide`, else `i32`) are `len + 1`
/// non-negative, non-decreasing positions ending within `data_len` bytes.
fn offsets_in_order(offsets: &Buffer, wide: bool, len: usize, data_len: usize) -> bool {
    fn check<T: Copy + Into<i64>>(o: &[T], len: usize, data_len: usize) -> bool {
        o.len() == len + 1
            && o.first().is_some_and(|&f| f.into() >= 0)
            && o.last().is_some_and(|&l| l.into() as u64 <= data_len as u64)
            && o.windows(2).fold(true, |ok, w| ok & (w[0].into() <= w[1].into()))
    }
    if wide {
        check(offsets.typed_data::<i64>(), len, data_len)
    } else {
        check(offsets.typed_data::<i32>(), len, data_len)
    }
}

/// Split row-major packed struct rows into one array per child.
fn packed_struct(children: &arrow_schema::Fields, bits: u64, data: &[u8], len: usize, validity: Option<NullBuffer>) -> Result<ArrayRef> {
    let widths = children
        .iter()
        .map(|c| match fixed_width_bits(c.data_type()) {
            Some(b) if b % 8 == 0 => Ok((b / 8) as usize),
            _ => Err(Error::unsupported(format!("packed struct child {:?} of type {}", c.name(), c.data_type()))),
        })
        .collect::<Result<Vec<_>>>()?;
    let row: usize = widths.iter().sum();
    if row as u64 * 8 != bits || data.len() < row * len {
        return Err(Error::corrupt(format!("packed struct rows of {bits} bits do not match its children")));
    }
    let mut arrays = Vec::with_capacity(children.len());
    let mut at = 0;
    for (c, w) in children.iter().zip(&widths) {
        let mut col = Vec::with_capacity(w * len);
        for r in 0..len {
            col.extend_from_slice(&data[r * row + at..r * row + at + w]);
        }
        at += w;
        let block = DataBlock::Fixed { bits: 8 * *w as u64, data: col, len };
        arrays.push(leaf_array(block, None, c.data_type())?.to_data());
    }
    let data = ArrayDataBuilder::new(DataType::Struct(children.clone()))
        .align_buffers(true)
        .len(len)
        .child_data(arrays)
        .nulls(validity)
        .build()
        .map_err(Error::corrupt_arrow)?;
    Ok(make_array(data))
}

/// Split canonical variable packed rows (see `pages::variable_packed_rows`).
fn variable_packed_struct(children: &arrow_schema::Fields, offsets: &Offsets, data: &[u8], validity: Option<NullBuffer>) -> Result<ArrayRef> {
    use crate::file::structural::datablock::Appender;
    let len = offsets.len();
    let mut parts: Vec<Appender> = children
        .iter()
        .map(|c| match fixed_width_bits(c.data_type()) {
            Some(bits) => Appender::new(&DataBlock::Fixed { bits, data: vec![], len: 0 }),
            None => Appender::new(&DataBlock::variable(Offsets::new(matches!(c.data_type(), DataType::LargeUtf8 | DataType::LargeBinary)), vec![])),
        })
        .collect();
    for i in 0..len {
        let (s, e) = offsets.range(i);
        let row = &data[s..e];
        if row.is_empty() {
            for p in parts.iter_mut() {
                p.append_zeroes(1)?;
            }
            continue;
        }
        let mut at = 0usize;
        for (c, p) in children.iter().zip(parts.iter_mut()) {
            let one = match fixed_width_bits(c.data_type()) {
                Some(bits) => {
                    let w = (bits as usize).div_ceil(8);
                    let b = row.get(at..at + w).ok_or_else(|| Error::corrupt("packed struct row truncated"))?;
                    at += w;
                    DataBlock::Fixed { bits, data: b.to_vec(), len: 1 }
                }
                None => {
                    let l = row
                        .get(at..at + 8)
                        .map(|b| u64::from_le_bytes(b.try_into().unwrap()) as usize)
                        .ok_or_else(|| Error::corrupt("packed struct row truncated"))?;
                    at += 8;
                    let b = row.get(at..at.saturating_add(l)).ok_or_else(|| Error::corrupt("packed struct row truncated"))?;
                    at += l;
                    let mut o = Offsets::new(false);
                    o.push_end(l)?;
                    DataBlock::variable(o, b.to_vec())
                }
            };
            p.append_all(&one)?;
        }
    }
    let arrays =
        children.iter().zip(parts).map(|(c, p)| leaf_array(p.finish(), None, c.data_type()).map(|a| a.to_data())).collect::<Result<Vec<_>>>()?;
    let data = ArrayDataBuilder::new(DataType::Struct(children.clone()))
        .align_buffers(true)
        .len(len)
        .child_data(arrays)
        .nulls(validity)
        .build()
        .map_err(Error::corrupt_arrow)?;
    Ok(make_array(data))
}

fn dict_prim<K: ArrowDictionaryKeyType, V: ArrowPrimitiveType>(plain: &ArrayRef) -> Result<ArrayRef> {
    let values = plain.as_any().downcast_ref::<arrow_array::PrimitiveArray<V>>().expect("type checked");
    let mut b = PrimitiveDictionaryBuilder::<K, V>::new();
    for v in values.iter() {
        match v {
            Some(v) => {
                b.append(v).map_err(|e| Error::corrupt(format!("dictionary too large for key type: {e}")).with_source(e))?;
            }
            None => b.append_null(),
        }
    }
    Ok(Arc::new(b.finish()))
}

fn dict_bytes<K: ArrowDictionaryKeyType, T: ByteArrayType>(plain: &ArrayRef) -> Result<ArrayRef> {
    let values = plain.as_any().downcast_ref::<arrow_array::GenericByteArray<T>>().expect("type checked");
    let mut b = GenericByteDictionaryBuilder::<K, T>::new();
    for v in values.iter() {
        match v {
            Some(v) => {
                b.append(v).map_err(|e| Error::corrupt(format!("dictionary too large for key type: {e}")).with_source(e))?;
            }
            None => b.append_null(),
        }
    }
    Ok(Arc::new(b.finish()))
}

fn dict_for_key<K: ArrowDictionaryKeyType>(plain: &ArrayRef, value: &DataType) -> Result<ArrayRef> {
    match value {
        DataType::Utf8 => dict_bytes::<K, Utf8Type>(plain),
        DataType::LargeUtf8 => dict_bytes::<K, LargeUtf8Type>(plain),
        DataType::Binary => dict_bytes::<K, BinaryType>(plain),
        DataType::LargeBinary => dict_bytes::<K, LargeBinaryType>(plain),
        DataType::Int8 => dict_prim::<K, Int8Type>(plain),
        DataType::Int16 => dict_prim::<K, Int16Type>(plain),
        DataType::Int32 => dict_prim::<K, Int32Type>(plain),
        DataType::Int64 => dict_prim::<K, Int64Type>(plain),
        DataType::UInt8 => dict_prim::<K, UInt8Type>(plain),
        DataType::UInt16 => dict_prim::<K, UInt16Type>(plain),
        DataType::UInt32 => dict_prim::<K, UInt32Type>(plain),
        DataType::UInt64 => dict_prim::<K, UInt64Type>(plain),
        DataType::Float32 => dict_prim::<K, Float32Type>(plain),
        DataType::Float64 => dict_prim::<K, Float64Type>(plain),
        other => Err(Error::unsupported(format!("dictionary of {other}"))),
    }
}

/// Dictionary-encode a plain array (Lance stores dictionary columns as
/// their values; Arrow readers expect the dictionary type back).
pub fn dictionary_encode(plain: &ArrayRef, key: &DataType, value: &DataType) -> Result<ArrayRef> {
    match key {
        DataType::Int8 => dict_for_key::<Int8Type>(plain, value),
        DataType::Int16 => dict_for_key::<Int16Type>(plain, value),
        DataType::Int32 => dict_for_key::<Int32Type>(plain, value),
        DataType::Int64 => dict_for_key::<Int64Type>(plain, value),
        DataType::UInt8 => dict_for_key::<UInt8Type>(plain, value),
        DataType::UInt16 => dict_for_key::<UInt16Type>(plain, value),
        DataType::UInt32 => dict_for_key::<UInt32Type>(plain, value),
        DataType::UInt64 => dict_for_key::<UInt64Type>(plain, value),
        other => Err(Error::unsupported(format!("dictionary key type {other}"))),
    }
}

/// Build a nested array for `field` from the leaf columns under it (in
/// pre-order). `depth` is how many ancestor layers lie above `field`.
pub fn assemble(field: &Field, leaves: &mut std::slice::IterMut<'_, Option<Unraveled>>, depth: usize) -> Result<ArrayRef> {
    assemble_inner(field, leaves, depth, true)
}

fn take_next(leaves: &mut std::slice::IterMut<'_, Option<Unraveled>>) -> Result<Unraveled> {
    leaves.next().and_then(Option::take).ok_or_else(|| Error::corrupt("fewer leaf columns than the schema needs"))
}

/// Whether a field is stored in a column of its own (rather than through
/// its children).
pub fn owns_column(field: &Field) -> bool {
    match field.data_type() {
        DataType::Struct(_) => is_packed_struct(field),
        DataType::List(_) | DataType::LargeList(_) | DataType::Map(_, _) => false,
        DataType::FixedSizeList(item, _) => crate::file::schema::fsl_is_leaf(item.data_type()),
        _ => true,
    }
}

/// `lance-encoding:packed` on a struct stores it row-major in one column.
pub fn is_packed_struct(field: &Field) -> bool {
    matches!(field.data_type(), DataType::Struct(_))
        && field.metadata().get("lance-encoding:packed").is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "1" | "yes" | "on"))
}

/// Number of leaf columns under a field.
pub fn leaf_count(field: &Field) -> usize {
    if owns_column(field) {
        return 1;
    }
    match field.data_type() {
        DataType::Struct(fs) => fs.iter().map(|f| leaf_count(f)).sum(),
        DataType::List(f) | DataType::LargeList(f) | DataType::Map(f, _) | DataType::FixedSizeList(f, _) => leaf_count(f),
        _ => 1,
    }
}

fn first_layer_of(leaves: &std::slice::IterMut<'_, Option<Unraveled>>, depth: usize) -> Result<LayerOut> {
    let first = leaves.as_slice().first().and_then(|u| u.as_ref()).ok_or_else(|| Error::corrupt("fewer leaf columns than the schema needs"))?;
    first
        .outer
        .get(depth)
        .cloned()
        .ok_or_else(|| Error::corrupt(format!("leaf column has {} structural layers, needs more than {depth}", first.outer.len())))
}

fn assemble_inner(field: &Field, leaves: &mut std::slice::IterMut<'_, Option<Unraveled>>, depth: usize, _top: bool) -> Result<ArrayRef> {
    if owns_column(field) {
        let leaf = take_next(leaves)?;
        if leaf.outer.len() != depth {
            return Err(Error::corrupt(format!(
                "column for field {:?} has {} structural layers, schema says {depth}",
                field.name(),
                leaf.outer.len()
            )));
        }
        return leaf_array(leaf.values, leaf.leaf_validity, field.data_type()).map_err(|e| e.context(format!("field {:?}", field.name())));
    }
    let layer = first_layer_of(leaves, depth)?;
    match (field.data_type(), layer) {
        (DataType::Struct(children), LayerOut::Item { validity, len }) => {
            let mut arrays = Vec::with_capacity(children.len());
            for c in children.iter() {
                let a = assemble_inner(c, leaves, depth + 1, false)?;
                if a.len() != len {
                    return Err(Error::corrupt(format!("struct {:?}: child {:?} has {} rows, struct has {len}", field.name(), c.name(), a.len())));
                }
                arrays.push(a.to_data());
            }
            let data = ArrayDataBuilder::new(field.data_type().clone())
                .align_buffers(true)
                .align_buffers(true)
                .len(len)
                .child_data(arrays)
                .nulls(validity)
                .build()
                .map_err(Error::corrupt_arrow)?;
            Ok(make_array(data))
        }
        (DataType::FixedSizeList(item, dim), LayerOut::Item { validity, len }) => {
            let child = assemble_inner(item, leaves, depth + 1, false)?;
            if child.len() != len * *dim as usize {
                return Err(Error::corrupt(format!("fixed-size list {:?} has {} items for {len} lists", field.name(), child.len())));
            }
            let data = ArrayDataBuilder::new(field.data_type().clone())
                .align_buffers(true)
                .len(len)
                .add_child_data(child.to_data())
                .nulls(validity)
                .build()
                .map_err(Error::corrupt_arrow)?;
            Ok(make_array(data))
        }
        (DataType::List(item) | DataType::LargeList(item) | DataType::Map(item, _), LayerOut::List { offsets, validity }) => {
            let child = assemble_inner(item, leaves, depth + 1, false)?;
            let len = offsets.len() - 1;
            if offsets.last().copied().unwrap_or(0) as usize != child.len() {
                return Err(Error::corrupt(format!("list {:?} offsets do not match its items", field.name())));
            }
            let offsets_buf = if matches!(field.data_type(), DataType::LargeList(_)) {
                OffsetBuffer::new(ScalarBuffer::from(offsets)).into_inner().into_inner()
            } else {
                let o32 = offsets
                    .into_iter()
                    .map(|x| i32::try_from(x).map_err(|_| Error::corrupt("list offsets overflow i32")))
                    .collect::<Result<Vec<i32>>>()?;
                Buffer::from_vec(o32)
            };
            let data = ArrayDataBuilder::new(field.data_type().clone())
                .align_buffers(true)
                .align_buffers(true)
                .len(len)
                .add_buffer(offsets_buf)
                .add_child_data(child.to_data())
                .nulls(validity)
                .build()
                .map_err(Error::corrupt_arrow)?;
            Ok(make_array(data))
        }
        (dt, _) => Err(Error::corrupt(format!("field {:?} of type {dt} does not match the structure stored in its column", field.name()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{LargeStringArray, StringArray};

    fn strings(offsets: Offsets, data: &[u8], dt: &DataType) -> Result<ArrayRef> {
        leaf_array(DataBlock::variable(offsets, data.to_vec()), None, dt)
    }

    /// ASCII string pages skip Arrow's per-value UTF-8 checks; everything
    /// else is still checked, and bad offsets are refused either way.
    #[test]
    fn string_arrays_are_checked_unless_ascii() {
        let a = strings(Offsets::I32(vec![0, 3, 3, 8]), b"abcdefgh", &DataType::Utf8).unwrap();
        let a = a.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![Some("abc"), Some(""), Some("defgh")]);
        let a = strings(Offsets::I64(vec![0, 2, 5]), "é€".as_bytes(), &DataType::LargeUtf8).unwrap();
        let a = a.as_any().downcast_ref::<LargeStringArray>().unwrap();
        assert_eq!(a.value(0), "é");
        // A cut inside a character, invalid UTF-8, offsets out of order or
        // past the data: errors, not arrays.
        assert!(strings(Offsets::I32(vec![0, 1, 5]), "é€".as_bytes(), &DataType::Utf8).is_err());
        assert!(strings(Offsets::I32(vec![0, 2]), &[0xff, 0xfe], &DataType::Utf8).is_err());
        assert!(strings(Offsets::I32(vec![0, 3, 2]), b"abc", &DataType::Utf8).is_err());
        assert!(strings(Offsets::I32(vec![0, 4]), b"abc", &DataType::Utf8).is_err());
        assert!(strings(Offsets::I32(vec![1, 2]), b"abc", &DataType::Utf8).is_ok());
        // Binary is never checked for UTF-8.
        assert!(strings(Offsets::I32(vec![0, 2]), &[0xff, 0xfe], &DataType::Binary).is_ok());
    }
}
