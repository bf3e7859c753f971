//! Lance 2.0 pages (`lance.encodings.ArrayEncoding`, digest §12).
//!
//! Every field owns a column, parents included, in pre-order: a struct
//! column holds `struct{}` pages without buffers (2.0 cannot store struct
//! validity), a list column holds the offsets and the item column follows
//! with one entry per item. Leaf encodings, with buffers numbered in the
//! page:
//!
//! * primitives: `nullable{no_nulls{flat}}` (buffer 0 = values),
//!   `nullable{some_nulls{validity: flat 1-bit, values: flat}}` (0 =
//!   validity LSB-first, 1 = values, null slots zero) or
//!   `nullable{all_nulls{}}` (no buffers);
//! * strings/binary: `binary{indices: nullable{no_nulls{flat 64}}, bytes:
//!   flat 8, null_adjustment}` with u64 *end* offsets (no leading 0); a null
//!   is `previous end + null_adjustment`, `null_adjustment = bytes + 1`;
//! * lists: `list{offsets: nullable{no_nulls{flat 64}},
//!   null_offset_adjustment = items + 1, num_items}`, the same end-offset
//!   trick, relative to the page's first item;
//! * fixed-size lists: `nullable{…values: fixed_size_list{dimension,
//!   items: nullable{…}}}` (row validity, item validity, items);
//! * packed structs (`packed` = `true`, else `lance-encoding:packed`
//!   present): one column, `packed_struct{inner, buffer}` of row-major
//!   fixed-width children without nulls;
//! * dictionaries of strings: `dictionary{indices: nullable{…flat 32},
//!   items: binary{…}, num_dictionary_items}`.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, FixedSizeListArray, GenericListArray, OffsetSizeTrait, StructArray, UInt32Array};
use arrow_schema::{DataType, Field};
use prost::Message;

use crate::error::{Error, Result};
use crate::file::write::choose::pack_bools;
use crate::file::write::EncodedPage;
use crate::proto::encodings as pb;
use crate::proto::encodings::array_encoding::ArrayEncoding as AE;

/// What a 2.0 column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A struct parent.
    Struct,
    /// A list parent (offsets).
    List,
    /// A leaf.
    Leaf,
}

/// The columns of a top-level field, in pre-order.
pub fn columns_of(field: &Field) -> Vec<(Field, Kind)> {
    let mut out = Vec::new();
    fn walk(f: &Field, out: &mut Vec<(Field, Kind)>) {
        match f.data_type() {
            DataType::Struct(_) if crate::file::v2_0::is_packed(f) => out.push((f.clone(), Kind::Leaf)),
            DataType::Struct(fs) => {
                out.push((f.clone(), Kind::Struct));
                fs.iter().for_each(|c| walk(c, out));
            }
            DataType::List(c) | DataType::LargeList(c) => {
                out.push((f.clone(), Kind::List));
                walk(c, out);
            }
            _ => out.push((f.clone(), Kind::Leaf)),
        }
    }
    walk(field, &mut out);
    out
}

/// Split a top-level array into one array per column (pre-order). List
/// children are reduced to the items of valid lists.
pub fn split(field: &Field, array: &ArrayRef) -> Result<Vec<ArrayRef>> {
    let mut out = Vec::new();
    fn walk(f: &Field, a: &ArrayRef, out: &mut Vec<ArrayRef>) -> Result<()> {
        match f.data_type() {
            DataType::Struct(_) if crate::file::v2_0::is_packed(f) => {
                if a.null_count() > 0 {
                    return Err(Error::invalid_input(format!(
                        "field {:?}: Lance file version 2.0 does not encode struct validity (the struct has null rows); use 2.1 or later",
                        f.name()
                    )));
                }
                out.push(a.clone());
            }
            DataType::Struct(fs) => {
                if a.null_count() > 0 {
                    return Err(Error::invalid_input(format!(
                        "field {:?}: Lance file version 2.0 does not encode struct validity (the struct has null rows); use 2.1 or later",
                        f.name()
                    )));
                }
                out.push(a.clone());
                let s = a.as_any().downcast_ref::<StructArray>().expect("struct");
                for (i, c) in fs.iter().enumerate() {
                    walk(c, s.column(i), out)?;
                }
            }
            DataType::List(c) => {
                out.push(a.clone());
                walk(c, &list_items::<i32>(a)?, out)?;
            }
            DataType::LargeList(c) => {
                out.push(a.clone());
                walk(c, &list_items::<i64>(a)?, out)?;
            }
            _ => out.push(a.clone()),
        }
        Ok(())
    }
    walk(field, array, &mut out)?;
    Ok(out)
}

fn list_items<O: OffsetSizeTrait>(a: &ArrayRef) -> Result<ArrayRef> {
    let l = a.as_any().downcast_ref::<GenericListArray<O>>().expect("list");
    let offs = l.value_offsets();
    let (first, last) = (offs[0].as_usize(), offs[offs.len() - 1].as_usize());
    let garbage = (0..l.len()).any(|i| l.is_null(i) && offs[i] != offs[i + 1]);
    if !garbage {
        return Ok(l.values().slice(first, last - first));
    }
    let idx: UInt32Array = (0..l.len()).filter(|&i| l.is_valid(i)).flat_map(|i| offs[i].as_usize() as u32..offs[i + 1].as_usize() as u32).collect();
    arrow_select::take::take(l.values().as_ref(), &idx, None).map_err(Error::internal_arrow)
}

fn buf(i: u32) -> Option<pb::Buffer> {
    Some(pb::Buffer { buffer_index: i, buffer_type: pb::buffer::BufferType::Page as i32 })
}
fn ae(e: AE) -> pb::ArrayEncoding {
    pb::ArrayEncoding { array_encoding: Some(e) }
}
fn flat(bits: u64, i: u32) -> pb::ArrayEncoding {
    ae(AE::Flat(pb::Flat { bits_per_value: bits, buffer: buf(i), compression: None }))
}
fn no_nulls(values: pb::ArrayEncoding) -> pb::ArrayEncoding {
    ae(AE::Nullable(Box::new(pb::Nullable {
        nullability: Some(pb::nullable::Nullability::NoNulls(Box::new(pb::nullable::NoNull { values: Some(Box::new(values)) }))),
    })))
}
fn some_nulls(validity: pb::ArrayEncoding, values: pb::ArrayEncoding) -> pb::ArrayEncoding {
    ae(AE::Nullable(Box::new(pb::Nullable {
        nullability: Some(pb::nullable::Nullability::SomeNulls(Box::new(pb::nullable::SomeNull {
            validity: Some(Box::new(validity)),
            values: Some(Box::new(values)),
        }))),
    })))
}
fn all_nulls() -> pb::ArrayEncoding {
    ae(AE::Nullable(Box::new(pb::Nullable { nullability: Some(pb::nullable::Nullability::AllNulls(pb::nullable::AllNull {})) })))
}

fn validity_bits(a: &dyn Array) -> Option<Vec<bool>> {
    let n = a.logical_nulls()?;
    (n.null_count() > 0).then(|| n.iter().collect())
}

/// Fixed-width bytes of a leaf (None for bool).
fn fixed_values(a: &dyn Array, w: usize) -> Vec<u8> {
    let d = a.to_data();
    let b = &d.buffers()[0].as_slice()[d.offset() * w..(d.offset() + a.len()) * w];
    let mut v = b.to_vec();
    if let Some(nb) = a.logical_nulls() {
        for i in 0..a.len() {
            if nb.is_null(i) {
                v[i * w..(i + 1) * w].fill(0);
            }
        }
    }
    v
}

/// A (possibly nested) fixed-size list of fixed-width items, as pylance
/// writes it: every level nullable-wrapped, validity buffers outermost first.
fn fsl(a: &ArrayRef, bufs: &mut Vec<Vec<u8>>) -> Result<pb::ArrayEncoding> {
    let (item, dim) = match a.data_type() {
        DataType::FixedSizeList(item, dim) => (item.clone(), *dim),
        dt => return Err(Error::invalid_input(format!("expected a fixed-size list, got {dt}"))),
    };
    let l = a.as_any().downcast_ref::<FixedSizeListArray>().ok_or_else(|| Error::invalid_input("expected a fixed-size list array"))?;
    let d = usize::try_from(dim).ok().filter(|d| *d > 0).ok_or_else(|| Error::invalid_input(format!("fixed-size list of size {dim}")))?;
    if l.values().len() < l.len() * d {
        return Err(Error::invalid_input("fixed-size list values are shorter than the list"));
    }
    let child = l.values().slice(l.offset() * d, l.len() * d);
    let nested = matches!(item.data_type(), DataType::FixedSizeList(_, _));
    let w = if nested {
        0
    } else {
        crate::file::write::shred::fixed_bytes(item.data_type())
            .ok_or_else(|| Error::invalid_input(format!("2.0 fixed-size list of {}", item.data_type())))?
    };
    let mut err = None;
    let enc = nullable_wrap(a.as_ref(), bufs, |bufs| {
        let items = if nested {
            match fsl(&child, bufs) {
                Ok(e) => e,
                Err(e) => {
                    err = Some(e);
                    all_nulls()
                }
            }
        } else {
            nullable_wrap(child.as_ref(), bufs, |bufs| {
                let i = bufs.len() as u32;
                bufs.push(fixed_values(child.as_ref(), w));
                flat(8 * w as u64, i)
            })
        };
        ae(AE::FixedSizeList(Box::new(pb::FixedSizeList { dimension: dim as u32, items: Some(Box::new(items)), has_validity: false })))
    });
    match err {
        Some(e) => Err(e),
        None => Ok(enc),
    }
}

/// Encode a leaf array as a nullable-wrapped value; buffers appended to `bufs`.
fn leaf(a: &ArrayRef, bufs: &mut Vec<Vec<u8>>) -> Result<pb::ArrayEncoding> {
    let n = a.len();
    if n == 0 {
        return Ok(empty_leaf(a, bufs));
    }
    if matches!(a.data_type(), DataType::Null) || (n > 0 && a.logical_null_count() == n && !matches!(a.data_type(), DataType::FixedSizeList(_, _))) {
        return Ok(all_nulls());
    }
    match a.data_type() {
        DataType::Utf8 => Ok(small_dictionary(a, bufs).unwrap_or_else(|| binary::<i32>(a, bufs))),
        DataType::Binary => Ok(binary::<i32>(a, bufs)),
        DataType::LargeUtf8 | DataType::LargeBinary => Ok(binary::<i64>(a, bufs)),
        DataType::Dictionary(kt, _) => {
            // pylance: indices flat at the key width without a validity
            // wrapper; null keys point at an extra null item appended to the
            // dictionary (only when some key is null).
            let d = a.as_any_dictionary();
            let kw = kt.primitive_width().ok_or_else(|| Error::invalid_input(format!("dictionary key type {kt}")))?;
            let keys = arrow_cast_u32(d.keys())?;
            let keys = keys.as_primitive::<arrow_array::types::UInt32Type>();
            let n_items = d.values().len();
            if keys.iter().flatten().any(|k| k as usize >= n_items) {
                return Err(Error::invalid_input("dictionary key out of range of the dictionary values"));
            }
            let has_null = keys.null_count() > 0;
            let null_key = n_items as u64;
            if has_null && kw < 8 && null_key >= 1u64 << (8 * kw - 1) && kt.is_signed_integer() {
                return Err(Error::invalid_input(format!("2.0 dictionary with {n_items} values and null keys does not fit key type {kt}")));
            }
            let mut idx = Vec::with_capacity(n * kw);
            for k in keys.iter() {
                let k = k.map_or(null_key, u64::from);
                idx.extend_from_slice(&k.to_le_bytes()[..kw]);
            }
            let i = bufs.len() as u32;
            bufs.push(idx);
            let idx_enc = no_nulls(flat(8 * kw as u64, i));
            let values = d.values().clone();
            let items_arr = if has_null {
                let nulls = arrow_array::new_null_array(values.data_type(), 1);
                arrow_select::concat::concat(&[values.as_ref(), nulls.as_ref()]).map_err(Error::internal_arrow)?
            } else {
                values
            };
            let items = match items_arr.data_type() {
                DataType::Utf8 | DataType::Binary => binary::<i32>(&items_arr, bufs),
                DataType::LargeUtf8 | DataType::LargeBinary => binary::<i64>(&items_arr, bufs),
                _ => leaf(&items_arr, bufs)?,
            };
            Ok(ae(AE::Dictionary(Box::new(pb::Dictionary {
                indices: Some(Box::new(idx_enc)),
                items: Some(Box::new(items)),
                num_dictionary_items: items_arr.len() as u32,
            }))))
        }
        DataType::FixedSizeList(_, _) => fsl(a, bufs),
        DataType::Struct(_) => packed_struct(a, bufs),
        DataType::Boolean => Ok(nullable_wrap(a.as_ref(), bufs, |bufs| {
            let b = a.as_boolean();
            let i = bufs.len() as u32;
            bufs.push(pack_bools(&(0..n).map(|j| b.is_valid(j) && b.value(j)).collect::<Vec<_>>()));
            flat(1, i)
        })),
        dt => {
            let w = crate::file::write::shred::fixed_bytes(dt).ok_or_else(|| Error::invalid_input(format!("type {dt} in a 2.0 file")))?;
            Ok(nullable_wrap(a.as_ref(), bufs, |bufs| {
                let i = bufs.len() as u32;
                bufs.push(fixed_values(a.as_ref(), w));
                flat(8 * w as u64, i)
            }))
        }
    }
}

/// How a child of a 2.0 packed struct is described, and its bytes per
/// row; None when pylance 14 cannot pack (or read back) the type.
pub fn packed_child(dt: &DataType) -> Option<(pb::ArrayEncoding, usize)> {
    match dt {
        DataType::FixedSizeList(item, dim) => {
            let (inner, w) = packed_child(item.data_type())?;
            let d = usize::try_from(*dim).ok().filter(|d| *d > 0)?;
            let e = ae(AE::FixedSizeList(Box::new(pb::FixedSizeList { dimension: *dim as u32, items: Some(Box::new(inner)), has_validity: false })));
            Some((no_nulls(e), w * d))
        }
        DataType::Boolean => None,
        dt => crate::file::write::shred::fixed_bytes(dt).map(|w| (no_nulls(flat(8 * w as u64, 0)), w)),
    }
}

/// Whether any level of an array (fixed-size list items included) has nulls.
fn any_nulls(a: &dyn Array) -> bool {
    if a.logical_null_count() > 0 {
        return true;
    }
    match a.as_any().downcast_ref::<FixedSizeListArray>() {
        Some(l) => {
            let d = l.value_length() as usize;
            any_nulls(l.values().slice(l.offset() * d, l.len() * d).as_ref())
        }
        None => false,
    }
}

/// Fixed-width bytes of a null-free leaf or fixed-size list of them.
fn packed_bytes(a: &ArrayRef, w: usize) -> Vec<u8> {
    match a.as_any().downcast_ref::<FixedSizeListArray>() {
        Some(l) => {
            let d = l.value_length() as usize;
            packed_bytes(&l.values().slice(l.offset() * d, l.len() * d), w / d)
        }
        None => fixed_values(a.as_ref(), w),
    }
}

/// A 2.0 packed struct (`packed_struct{inner: [per child nullable{no_nulls
/// {…}}], buffer 0}`): one buffer of rows, each the children's fixed-width
/// bytes in order. As in pylance 14, children must be fixed-width and have
/// no nulls.
fn packed_struct(a: &ArrayRef, bufs: &mut Vec<Vec<u8>>) -> Result<pb::ArrayEncoding> {
    let s = a.as_any().downcast_ref::<StructArray>().ok_or_else(|| Error::invalid_input("expected a struct array"))?;
    let mut inner = Vec::with_capacity(s.num_columns());
    let mut cols = Vec::with_capacity(s.num_columns());
    for (f, c) in s.fields().iter().zip(s.columns()) {
        let (e, w) = packed_child(f.data_type()).ok_or_else(|| {
            Error::unsupported(format!(
                "packed struct child {:?} of type {} in a 2.0 file (pylance packs fixed-width types only)",
                f.name(),
                f.data_type()
            ))
        })?;
        if any_nulls(c.as_ref()) {
            return Err(Error::invalid_input(format!(
                "packed struct child {:?} has nulls; the 2.0 packed struct encoding only stores fixed-width values without nulls",
                f.name()
            )));
        }
        inner.push(e);
        cols.push((packed_bytes(c, w), w));
    }
    let row: usize = cols.iter().map(|c| c.1).sum();
    let mut data = Vec::with_capacity(row * s.len());
    for i in 0..s.len() {
        for (b, w) in &cols {
            data.extend_from_slice(&b[i * w..(i + 1) * w]);
        }
    }
    let i = bufs.len() as u32;
    bufs.push(data);
    Ok(ae(AE::PackedStruct(pb::PackedStruct { inner, buffer: buf(i) })))
}

/// A leaf page of zero values, as pylance 14 writes it for a column that
/// gets no values at all (the items of lists that are all null or empty):
/// binaries keep their two (empty) buffers with `null_adjustment` 0, a
/// dictionary keeps one null item, everything else is `all_nulls`.
fn empty_leaf(a: &ArrayRef, bufs: &mut Vec<Vec<u8>>) -> pb::ArrayEncoding {
    let binary0 = |bufs: &mut Vec<Vec<u8>>| {
        let i = bufs.len() as u32;
        bufs.push(vec![]);
        bufs.push(vec![]);
        ae(AE::Binary(Box::new(pb::Binary {
            indices: Some(Box::new(no_nulls(flat(64, i)))),
            bytes: Some(Box::new(flat(8, i + 1))),
            null_adjustment: 0,
        })))
    };
    match a.data_type() {
        DataType::Utf8 | DataType::Binary | DataType::LargeUtf8 | DataType::LargeBinary => binary0(bufs),
        DataType::Dictionary(kt, vt) if matches!(vt.as_ref(), DataType::Utf8 | DataType::Binary | DataType::LargeUtf8 | DataType::LargeBinary) => {
            let kw = kt.primitive_width().unwrap_or(4);
            let i = bufs.len() as u32;
            bufs.push(vec![]);
            let nulls = arrow_array::new_null_array(vt, 1);
            let items = match vt.as_ref() {
                DataType::LargeUtf8 | DataType::LargeBinary => binary::<i64>(&nulls, bufs),
                _ => binary::<i32>(&nulls, bufs),
            };
            ae(AE::Dictionary(Box::new(pb::Dictionary {
                indices: Some(Box::new(no_nulls(flat(8 * kw as u64, i)))),
                items: Some(Box::new(items)),
                num_dictionary_items: 1,
            })))
        }
        _ => all_nulls(),
    }
}

fn nullable_wrap(a: &dyn Array, bufs: &mut Vec<Vec<u8>>, values: impl FnOnce(&mut Vec<Vec<u8>>) -> pb::ArrayEncoding) -> pb::ArrayEncoding {
    match validity_bits(a) {
        None => no_nulls(values(bufs)),
        Some(v) => {
            let i = bufs.len() as u32;
            bufs.push(pack_bools(&v));
            let validity = flat(1, i);
            some_nulls(validity, values(bufs))
        }
    }
}

fn arrow_cast_u32(keys: &dyn Array) -> Result<ArrayRef> {
    Ok(arrow_cast_keys(keys))
}

fn arrow_cast_keys(keys: &dyn Array) -> ArrayRef {
    use arrow_array::types::*;
    let n = keys.len();
    let get = |i: usize| -> u32 {
        match keys.data_type() {
            DataType::Int8 => keys.as_primitive::<Int8Type>().value(i) as u32,
            DataType::Int16 => keys.as_primitive::<Int16Type>().value(i) as u32,
            DataType::Int32 => keys.as_primitive::<Int32Type>().value(i) as u32,
            DataType::Int64 => keys.as_primitive::<Int64Type>().value(i) as u32,
            DataType::UInt8 => keys.as_primitive::<UInt8Type>().value(i) as u32,
            DataType::UInt16 => keys.as_primitive::<UInt16Type>().value(i) as u32,
            DataType::UInt32 => keys.as_primitive::<UInt32Type>().value(i),
            _ => keys.as_primitive::<UInt64Type>().value(i) as u32,
        }
    };
    let nulls = keys.logical_nulls();
    Arc::new((0..n).map(|i| nulls.as_ref().is_none_or(|nb| nb.is_valid(i)).then(|| get(i))).collect::<UInt32Array>())
}

/// pylance's 2.0 rule for `string` pages of ≥ 100 rows with fewer than 100
/// distinct values: `dictionary{indices: flat u8 (0 = null, else 1 + item),
/// items: binary}`.
fn small_dictionary(a: &ArrayRef, bufs: &mut Vec<Vec<u8>>) -> Option<pb::ArrayEncoding> {
    const THRESHOLD: usize = 100;
    let s = a.as_string::<i32>();
    if s.len() < THRESHOLD {
        return None;
    }
    let mut map: std::collections::HashMap<&str, u8> = std::collections::HashMap::new();
    let mut items: Vec<&str> = Vec::new();
    let mut idx = Vec::with_capacity(s.len());
    for v in s.iter() {
        match v {
            None => idx.push(0u8),
            Some(v) => {
                let next = items.len() + 1;
                if next >= THRESHOLD && !map.contains_key(v) {
                    return None;
                }
                let i = *map.entry(v).or_insert_with(|| {
                    items.push(v);
                    next as u8
                });
                idx.push(i);
            }
        }
    }
    if items.is_empty() {
        return None;
    }
    let i = bufs.len() as u32;
    bufs.push(idx);
    let items_arr: ArrayRef = Arc::new(arrow_array::StringArray::from(items.clone()));
    let enc_items = binary::<i32>(&items_arr, bufs);
    Some(ae(AE::Dictionary(Box::new(pb::Dictionary {
        indices: Some(Box::new(no_nulls(flat(8, i)))),
        items: Some(Box::new(enc_items)),
        num_dictionary_items: items.len() as u32,
    }))))
}

fn binary<O: OffsetSizeTrait>(a: &ArrayRef, bufs: &mut Vec<Vec<u8>>) -> pb::ArrayEncoding {
    let d = a.to_data();
    let offs: &[O] = &d.buffer::<O>(0)[d.offset()..d.offset() + a.len() + 1];
    let bytes = d.buffers()[1].as_slice();
    let nulls = a.logical_nulls();
    let mut data = Vec::new();
    let mut ends = Vec::with_capacity(a.len());
    let mut is_null = Vec::with_capacity(a.len());
    for i in 0..a.len() {
        let null = nulls.as_ref().is_some_and(|nb| nb.is_null(i));
        if !null {
            data.extend_from_slice(&bytes[offs[i].as_usize()..offs[i + 1].as_usize()]);
        }
        ends.push(data.len() as u64);
        is_null.push(null);
    }
    let adj = data.len() as u64 + 1;
    let idx: Vec<u8> = ends.iter().zip(&is_null).flat_map(|(e, n)| (e + if *n { adj } else { 0 }).to_le_bytes()).collect();
    let i = bufs.len() as u32;
    bufs.push(idx);
    bufs.push(data);
    ae(AE::Binary(Box::new(pb::Binary {
        indices: Some(Box::new(no_nulls(flat(64, i)))),
        bytes: Some(Box::new(flat(8, i + 1))),
        null_adjustment: adj,
    })))
}

fn list_page<O: OffsetSizeTrait>(a: &ArrayRef) -> (Vec<Vec<u8>>, pb::ArrayEncoding) {
    let l = a.as_any().downcast_ref::<GenericListArray<O>>().expect("list");
    let offs = l.value_offsets();
    let mut total = 0u64;
    let mut ends = Vec::with_capacity(l.len());
    for i in 0..l.len() {
        let null = l.is_null(i);
        if !null {
            total += (offs[i + 1].as_usize() - offs[i].as_usize()) as u64;
        }
        ends.push((total, null));
    }
    let adj = total + 1;
    let bytes: Vec<u8> = ends.iter().flat_map(|(e, n)| (e + if *n { adj } else { 0 }).to_le_bytes()).collect();
    let enc = ae(AE::List(Box::new(pb::List { offsets: Some(Box::new(no_nulls(flat(64, 0)))), null_offset_adjustment: adj, num_items: total })));
    (vec![bytes], enc)
}

/// Encode one page of a 2.0 column.
pub fn encode_page(field: &Field, kind: Kind, a: &ArrayRef) -> Result<(Vec<Vec<u8>>, pb::ArrayEncoding)> {
    Ok(match kind {
        Kind::Struct => (vec![], ae(AE::Struct(pb::SimpleStruct {}))),
        Kind::List => match field.data_type() {
            DataType::LargeList(_) => list_page::<i64>(a),
            _ => list_page::<i32>(a),
        },
        Kind::Leaf => {
            let mut bufs = Vec::new();
            let e = leaf(a, &mut bufs)?;
            (bufs, e)
        }
    })
}

/// Buffers one 2.0 column and cuts it into pages.
pub struct ColumnEncoder20 {
    field: Field,
    kind: Kind,
    pending: Vec<ArrayRef>,
    pending_bytes: usize,
    saw_input: bool,
    next_row: u64,
    /// Finished pages.
    pub pages: Vec<EncodedPage>,
    /// Page size threshold in bytes.
    pub page_bytes: usize,
}

impl ColumnEncoder20 {
    /// A new encoder.
    pub fn new(field: Field, kind: Kind) -> Self {
        ColumnEncoder20 {
            field,
            kind,
            pending: vec![],
            pending_bytes: 0,
            saw_input: false,
            next_row: 0,
            pages: vec![],
            page_bytes: super::PAGE_BYTES,
        }
    }
    /// Buffer an array; flush when enough data is buffered.
    pub fn push(&mut self, a: ArrayRef) -> Result<()> {
        self.saw_input = true;
        // A struct page holds only a row count, and pylance reads a 2.0
        // struct column only as a single page: keep just the count (a
        // null array costs nothing and never fills a page).
        let a: ArrayRef = if self.kind == Kind::Struct { std::sync::Arc::new(arrow_array::NullArray::new(a.len())) } else { a };
        self.pending_bytes += a.get_array_memory_size();
        self.pending.push(a);
        if self.pending_bytes >= self.page_bytes {
            self.flush()?;
        }
        Ok(())
    }
    /// Flush the last page. A column that received arrays but no values
    /// at all (the items of lists that are all null or empty) still gets
    /// one page of zero rows, as pylance writes (and needs to read it).
    pub fn finish(&mut self) -> Result<()> {
        self.flush()?;
        // (Pages already handed to the file writer have left `pages`;
        // `next_row` counts the rows of every page made.)
        if self.next_row == 0 && self.pages.is_empty() && self.saw_input {
            let a = arrow_array::new_empty_array(self.field.data_type());
            let (buffers, enc) = encode_page(&self.field, self.kind, &a).map_err(|e| e.context(format!("field {:?}", self.field.name())))?;
            self.pages.push(EncodedPage {
                buffers: buffers.into_iter().map(bytes::Bytes::from).collect(),
                encoding: prost_types::Any { type_url: crate::proto::type_url::ARRAY_ENCODING.to_string(), value: enc.encode_to_vec() },
                num_rows: 0,
                first_row: 0,
                blob: None,
            });
        }
        Ok(())
    }
    /// Encode the buffered arrays as a page.
    pub fn flush(&mut self) -> Result<()> {
        let parts = std::mem::take(&mut self.pending);
        self.pending_bytes = 0;
        let parts: Vec<ArrayRef> = parts.into_iter().filter(|p| !p.is_empty()).collect();
        if parts.is_empty() {
            return Ok(());
        }
        let refs: Vec<&dyn Array> = parts.iter().map(|p| p.as_ref()).collect();
        let a = if refs.len() == 1 { parts[0].clone() } else { arrow_select::concat::concat(&refs).map_err(Error::internal_arrow)? };
        let (buffers, enc) = encode_page(&self.field, self.kind, &a).map_err(|e| e.context(format!("field {:?}", self.field.name())))?;
        let n = a.len() as u64;
        self.pages.push(EncodedPage {
            buffers: buffers.into_iter().map(bytes::Bytes::from).collect(),
            encoding: prost_types::Any { type_url: crate::proto::type_url::ARRAY_ENCODING.to_string(), value: enc.encode_to_vec() },
            num_rows: n,
            first_row: self.next_row,
            blob: None,
        });
        self.next_row += n;
        Ok(())
    }
}
