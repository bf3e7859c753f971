//! Arrow arrays → repetition/definition levels and visible leaf values
//! (the write side of the 2.1+ structural encoding, digest §10.2).
//!
//! Every leaf column (a primitive, a fixed-size list, a `null` column or a
//! packed struct) sees the chain of Arrow nodes above it. Each node is one
//! *layer*: structs and the leaf itself are *item* layers, lists and maps are
//! *list* layers (a map's `entries` struct is a further item layer).
//!
//! While shredding we do not yet know which layers of a page will actually
//! hold nulls or empty lists, so levels are first produced in a *full*
//! numbering where every item layer owns one definition code ("null") and
//! every list layer two ("null", then "empty"), handed out innermost first
//! from 1. When a page is encoded, [`PageLevels::finish`] looks at which codes
//! occur, picks the smallest layer kinds that can express them (as pylance
//! does: a nullable column without nulls in a page is `ALL_VALID_ITEM`) and
//! renumbers.
//!
//! Repetition levels count lists from the inside: the innermost list is 1,
//! the outermost `max_rep`; an entry with `rep == max_rep` starts a row.
//! Null and empty lists are one entry each and own no value slot
//! ("invisible"); null items (leaf or struct) keep a zero-filled slot.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, FixedSizeListArray, GenericListArray, MapArray, OffsetSizeTrait, StructArray};
use arrow_schema::{DataType, Field};

use crate::error::{Error, Result};
use crate::file::structural::to_arrow::{is_packed_struct, owns_column};
use crate::proto::encodings21::RepDefLayer;

/// Whether a layer is an item (leaf/struct) or a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerKind {
    /// A leaf or struct: may be null.
    Item,
    /// A list or map: may be null or empty.
    List,
}

/// The layers above one leaf column, innermost first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafPath {
    /// Innermost (the leaf) first.
    pub kinds: Vec<LayerKind>,
    /// Number of list layers.
    pub max_rep: u16,
}

impl LeafPath {
    /// Full-numbering code for "layer `k` (innermost first) is null".
    pub fn null_code(&self, k: usize) -> u16 {
        let mut code = 1;
        for kind in &self.kinds[..k] {
            code += if *kind == LayerKind::List { 2 } else { 1 };
        }
        code
    }
    /// Full-numbering code for "list layer `k` is empty".
    pub fn empty_code(&self, k: usize) -> u16 {
        self.null_code(k) + 1
    }
    /// Number of codes in the full numbering (highest code).
    pub fn max_code(&self) -> u16 {
        self.null_code(self.kinds.len()) - 1
    }
}

/// Visible leaf values, null slots zero-filled.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// Little-endian fixed-width values of `bytes` bytes each.
    Fixed { bytes: usize, data: Vec<u8> },
    /// Booleans, one per value.
    Bool(Vec<bool>),
    /// Variable-width values; `offsets` has `len + 1` entries from 0.
    Variable { offsets: Vec<u64>, data: Vec<u8> },
    /// (Nested) fixed-size lists of fixed-width items: `dims` outermost
    /// first, `items` row-major, `valid[k]` the validity of layer `k`'s
    /// children (`rows × dims[0..=k]` entries; None when all are valid).
    Fsl { dims: Vec<usize>, item_bytes: usize, items: Vec<u8>, valid: Vec<Option<Vec<bool>>> },
    /// A `null`-typed column: only a count.
    Null(usize),
}

impl Values {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Values::Fixed { bytes, data } => data.len().checked_div(*bytes).unwrap_or(0),
            Values::Bool(b) => b.len(),
            Values::Variable { offsets, .. } => offsets.len() - 1,
            Values::Fsl { dims, item_bytes, items, .. } => items.len().checked_div(dims.iter().product::<usize>() * item_bytes).unwrap_or(0),
            Values::Null(n) => *n,
        }
    }
    /// True if there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Bytes of value data (what page size limits count).
    pub fn data_bytes(&self) -> usize {
        match self {
            Values::Fixed { data, .. } => data.len(),
            Values::Bool(b) => b.len() / 8,
            Values::Variable { offsets, data } => data.len() + 4 * offsets.len(),
            Values::Fsl { items, .. } => items.len(),
            Values::Null(_) => 0,
        }
    }
    /// Append `other` (same variant) to `self`.
    pub fn append(&mut self, other: Values) {
        match (self, other) {
            (Values::Fixed { data, .. }, Values::Fixed { data: d, .. }) => data.extend_from_slice(&d),
            (Values::Bool(b), Values::Bool(o)) => b.extend(o),
            (Values::Variable { offsets, data }, Values::Variable { offsets: o, data: d }) => {
                let base = *offsets.last().unwrap();
                offsets.extend(o[1..].iter().map(|x| x + base));
                data.extend_from_slice(&d);
            }
            (Values::Fsl { dims, item_bytes, items, valid }, Values::Fsl { items: it, valid: ov, .. }) => {
                let row = dims.iter().product::<usize>() * *item_bytes;
                let (have, add) = (items.len().checked_div(row).unwrap_or(0), it.len().checked_div(row).unwrap_or(0));
                let mut cum = 1;
                for (k, (v, o)) in valid.iter_mut().zip(ov).enumerate() {
                    cum *= dims[k];
                    match (v.as_mut(), o) {
                        (Some(v), Some(o)) => v.extend(o),
                        (Some(v), None) => v.extend(std::iter::repeat_n(true, add * cum)),
                        (None, Some(o)) => {
                            let mut nv = vec![true; have * cum];
                            nv.extend(o);
                            *v = Some(nv);
                        }
                        (None, None) => {}
                    }
                }
                items.extend_from_slice(&it);
            }
            (Values::Null(n), Values::Null(m)) => *n += m,
            _ => unreachable!("pieces of one column have one value kind"),
        }
    }
}

/// Levels and values of one leaf over some rows, in the full numbering.
#[derive(Debug, Clone, PartialEq)]
pub struct Piece {
    /// Repetition level per entry (lists only).
    pub rep: Option<Vec<u16>>,
    /// Full-numbering definition level per entry.
    pub def: Vec<u16>,
    /// Visible values.
    pub values: Values,
    /// Rows covered.
    pub num_rows: usize,
}

impl Piece {
    /// Concatenate consecutive pieces.
    pub fn concat(mut pieces: Vec<Piece>) -> Piece {
        let mut first = pieces.remove(0);
        for p in pieces {
            if let (Some(r), Some(pr)) = (first.rep.as_mut(), p.rep) {
                r.extend(pr);
            }
            first.def.extend(p.def);
            first.values.append(p.values);
            first.num_rows += p.num_rows;
        }
        first
    }
}

/// The leaf columns of a top-level field, with their paths, in column order.
pub fn leaf_paths(field: &Field) -> Vec<(Field, LeafPath)> {
    fn walk(f: &Field, outer: &mut Vec<LayerKind>, out: &mut Vec<(Field, LeafPath)>) {
        if is_leaf(f) {
            outer.push(LayerKind::Item);
            let kinds: Vec<LayerKind> = outer.iter().rev().copied().collect();
            let max_rep = kinds.iter().filter(|k| **k == LayerKind::List).count() as u16;
            out.push((f.clone(), LeafPath { kinds, max_rep }));
            outer.pop();
            return;
        }
        match f.data_type() {
            DataType::Struct(fs) => {
                outer.push(LayerKind::Item);
                for c in fs {
                    walk(c, outer, out);
                }
                outer.pop();
            }
            DataType::List(c) | DataType::LargeList(c) | DataType::Map(c, _) => {
                outer.push(LayerKind::List);
                walk(c, outer, out);
                outer.pop();
            }
            DataType::FixedSizeList(c, _) => {
                outer.push(LayerKind::Item);
                walk(c, outer, out);
                outer.pop();
            }
            // is_leaf covers everything else; a leaf path keeps this total.
            _ => {
                outer.push(LayerKind::Item);
                let kinds: Vec<LayerKind> = outer.iter().rev().copied().collect();
                let max_rep = kinds.iter().filter(|k| **k == LayerKind::List).count() as u16;
                out.push((f.clone(), LeafPath { kinds, max_rep }));
                outer.pop();
            }
        }
    }
    let mut out = Vec::new();
    walk(field, &mut Vec::new(), &mut out);
    out
}

/// One level entry on its way down to the leaves. Everything in it is
/// independent of which leaf it ends up in (structs hand the same slots to
/// children whose paths differ), so codes are only worked out in
/// [`emit_leaf`].
/// Columns the writer shreds as one leaf. A fixed-size list of fixed-width
/// items is one; one of anything else (structs) is an item layer whose slot
/// spans `dim` level entries (pylance 14's 2.2 layout).
fn is_leaf(f: &Field) -> bool {
    owns_column(f)
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    /// Number of list layers, counted from the top, that this entry
    /// continues (0 = it starts a row). The leaf's repetition level is
    /// `max_rep - cont`.
    cont: u16,
    /// `None` = not decided yet; else the depth (from the top) of the layer
    /// that is null/empty, and whether it is an empty list.
    decided: Option<(u16, bool)>,
    visible: bool,
    idx: usize,
}

/// Shred one top-level column into one [`Piece`] per leaf column.
pub fn shred(field: &Field, array: &ArrayRef) -> Result<Vec<Piece>> {
    let paths = leaf_paths(field);
    let n = array.len();
    if is_leaf(field) {
        // A top-level leaf (most columns): every slot is its own row, so
        // the levels follow from the null buffer alone, without the
        // per-entry slots nested columns need (building and walking them
        // cost more than copying the values).
        let path = &paths.first().ok_or_else(|| internal("a leaf without a leaf path"))?.1;
        return Ok(vec![emit_top_leaf(field, array, path)?]);
    }
    let mut out = Vec::with_capacity(paths.len());
    let mut leaf_no = 0;
    let slots: Vec<Slot> = (0..n).map(|i| Slot { cont: 0, decided: None, visible: true, idx: i }).collect();
    descend(field, array, 0, 0, &paths, &mut leaf_no, &slots, n, &mut out)?;
    if out.len() != paths.len() {
        return Err(internal(format!("shredding produced {} leaf columns, the schema has {}", out.len(), paths.len())));
    }
    Ok(out)
}

fn check_len(what: &str, slots: &[Slot], len: usize) -> Result<()> {
    // Every visible, undecided slot must index into the array.
    if slots.iter().any(|s| s.decided.is_none() && s.idx >= len) {
        return Err(Error::invalid_input(format!("{what} array is shorter than its parent says")));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn descend(
    field: &Field,
    array: &ArrayRef,
    depth: u16,
    lists_above: u16,
    paths: &[(Field, LeafPath)],
    leaf_no: &mut usize,
    slots: &[Slot],
    num_rows: usize,
    out: &mut Vec<Piece>,
) -> Result<()> {
    if is_leaf(field) {
        let path = &paths.get(*leaf_no).ok_or_else(|| internal("more leaves than leaf paths"))?.1;
        check_len("leaf", slots, array.len())?;
        let piece = emit_leaf(field, array, path, slots, num_rows)?;
        out.push(piece);
        *leaf_no += 1;
        return Ok(());
    }
    match field.data_type() {
        DataType::Struct(children) => {
            let s = array.as_any().downcast_ref::<StructArray>().ok_or_else(|| Error::invalid_input("expected a struct array"))?;
            check_len("struct", slots, s.len())?;
            if s.num_columns() != children.len() {
                return Err(Error::invalid_input("struct array and field disagree on the children"));
            }
            let nulls = s.logical_nulls();
            let decided: Vec<Slot> = slots
                .iter()
                .map(|sl| {
                    let mut sl = *sl;
                    if sl.decided.is_none() && nulls.as_ref().is_some_and(|nb| nb.is_null(sl.idx)) {
                        sl.decided = Some((depth, false));
                    }
                    sl
                })
                .collect();
            for (i, c) in children.iter().enumerate() {
                descend(c, s.column(i), depth + 1, lists_above, paths, leaf_no, &decided, num_rows, out)?;
            }
            Ok(())
        }
        DataType::List(c) => {
            let l = array.as_any().downcast_ref::<GenericListArray<i32>>().ok_or_else(|| Error::invalid_input("expected a list array"))?;
            check_len("list", slots, l.len())?;
            let next = expand_list(l.offsets(), l.logical_nulls(), slots, depth, lists_above, l.values().len())?;
            descend(c, l.values(), depth + 1, lists_above + 1, paths, leaf_no, &next, num_rows, out)
        }
        DataType::LargeList(c) => {
            let l = array.as_any().downcast_ref::<GenericListArray<i64>>().ok_or_else(|| Error::invalid_input("expected a large list array"))?;
            check_len("list", slots, l.len())?;
            let next = expand_list(l.offsets(), l.logical_nulls(), slots, depth, lists_above, l.values().len())?;
            descend(c, l.values(), depth + 1, lists_above + 1, paths, leaf_no, &next, num_rows, out)
        }
        DataType::Map(c, _) => {
            let m = array.as_any().downcast_ref::<MapArray>().ok_or_else(|| Error::invalid_input("expected a map array"))?;
            check_len("map", slots, m.len())?;
            let entries: ArrayRef = Arc::new(m.entries().clone());
            let next = expand_list(m.offsets(), m.logical_nulls(), slots, depth, lists_above, entries.len())?;
            descend(c, &entries, depth + 1, lists_above + 1, paths, leaf_no, &next, num_rows, out)
        }
        DataType::FixedSizeList(c, dim) => {
            let l = array.as_any().downcast_ref::<FixedSizeListArray>().ok_or_else(|| Error::invalid_input("expected a fixed-size list array"))?;
            check_len("fixed-size list", slots, l.len())?;
            if lists_above > 0 {
                return Err(Error::unsupported(format!(
                    "fixed-size list {:?} of {} inside a list or map (pylance 14 cannot write it)",
                    field.name(),
                    c.data_type()
                )));
            }
            let dim = usize::try_from(*dim)
                .ok()
                .filter(|d| *d > 0)
                .ok_or_else(|| Error::invalid_input(format!("fixed-size list {:?}: size {dim} is not supported", field.name())))?;
            let nulls = l.logical_nulls();
            let child_len = l.values().len();
            // Every slot becomes `dim` level entries (a null list or row
            // above too): pages count the items.
            let mut next = Vec::with_capacity(slots.len() * dim);
            for sl in slots {
                if sl.decided.is_some() {
                    next.extend(std::iter::repeat_n(Slot { idx: 0, ..*sl }, dim));
                } else if nulls.as_ref().is_some_and(|nb| nb.is_null(sl.idx)) {
                    next.extend(std::iter::repeat_n(Slot { decided: Some((depth, false)), idx: 0, ..*sl }, dim));
                } else {
                    let start = l.value_offset_at(sl.idx);
                    if start + dim > child_len {
                        return Err(Error::invalid_input("fixed-size list values are shorter than the list"));
                    }
                    next.extend((start..start + dim).map(|j| Slot { idx: j, ..*sl }));
                }
            }
            descend(c, l.values(), depth + 1, lists_above, paths, leaf_no, &next, num_rows * dim, out)
        }
        other => Err(Error::invalid_input(format!("cannot shred type {other}"))),
    }
}

fn expand_list<O: OffsetSizeTrait>(
    offsets: &arrow_buffer::OffsetBuffer<O>,
    nulls: Option<arrow_buffer::NullBuffer>,
    slots: &[Slot],
    depth: u16,
    lists_above: u16,
    child_len: usize,
) -> Result<Vec<Slot>> {
    // Items after the first continue this list (and every list above it).
    let cont_here = lists_above + 1;
    let mut next = Vec::with_capacity(slots.len());
    for sl in slots {
        if sl.decided.is_some() {
            next.push(Slot { visible: false, ..*sl });
            continue;
        }
        if nulls.as_ref().is_some_and(|nb| nb.is_null(sl.idx)) {
            next.push(Slot { cont: sl.cont, decided: Some((depth, false)), visible: false, idx: 0 });
            continue;
        }
        let (s, e) = match (offsets.get(sl.idx), offsets.get(sl.idx + 1)) {
            (Some(s), Some(e)) => (s.as_usize(), e.as_usize()),
            _ => return Err(Error::invalid_input("list offsets are shorter than the list")),
        };
        if e < s || e > child_len {
            return Err(Error::invalid_input("list offsets are out of range"));
        }
        if s == e {
            next.push(Slot { cont: sl.cont, decided: Some((depth, true)), visible: false, idx: 0 });
            continue;
        }
        for j in s..e {
            next.push(Slot { cont: if j == s { sl.cont } else { cont_here }, decided: None, visible: true, idx: j });
        }
    }
    Ok(next)
}

fn emit_leaf(field: &Field, array: &ArrayRef, path: &LeafPath, slots: &[Slot], num_rows: usize) -> Result<Piece> {
    let array = plain_leaf(array)?;
    let is_null_type = matches!(array.data_type(), DataType::Null);
    let nulls = if is_null_type { None } else { array.logical_nulls() };
    let top = path.kinds.len() - 1;
    let code_of = |depth: u16, empty: bool| -> Result<u16> {
        let layer = top.checked_sub(depth as usize).ok_or_else(|| internal("layer deeper than the leaf path"))?;
        Ok(if empty { path.empty_code(layer) } else { path.null_code(layer) })
    };
    let leaf_code = path.null_code(0);
    let mut rep = (path.max_rep > 0).then(|| Vec::with_capacity(slots.len()));
    let mut def = Vec::with_capacity(slots.len());
    let mut picks: Vec<Option<usize>> = Vec::with_capacity(slots.len());
    for sl in slots {
        if let Some(r) = rep.as_mut() {
            r.push(path.max_rep.checked_sub(sl.cont).ok_or_else(|| internal("repetition above the leaf's lists"))?);
        }
        let d = match sl.decided {
            Some((depth, empty)) => code_of(depth, empty)?,
            None if is_null_type || nulls.as_ref().is_some_and(|nb| nb.is_null(sl.idx)) => leaf_code,
            None => 0,
        };
        def.push(d);
        if sl.visible {
            picks.push((d == 0).then_some(sl.idx));
        }
    }
    let values = gather(field, &array, &picks)?;
    Ok(Piece { rep, def, values, num_rows })
}

/// [`emit_leaf`] of a top-level leaf: entry `i` is row `i`, visible, its
/// definition level the leaf's null code or 0.
fn emit_top_leaf(field: &Field, array: &ArrayRef, path: &LeafPath) -> Result<Piece> {
    let array = plain_leaf(array)?;
    let n = array.len();
    let leaf_code = path.null_code(0);
    if matches!(array.data_type(), DataType::Null) {
        return Ok(Piece { rep: None, def: vec![leaf_code; n], values: Values::Null(n), num_rows: n });
    }
    let nulls = array.logical_nulls().filter(|nb| nb.null_count() > 0);
    let Some(nb) = nulls else {
        let values = match gather_all(field, &array)? {
            Some(v) => v,
            None => gather(field, &array, &(0..n).map(Some).collect::<Vec<_>>())?,
        };
        return Ok(Piece { rep: None, def: vec![0; n], values, num_rows: n });
    };
    let def: Vec<u16> = nb.iter().map(|valid| if valid { 0 } else { leaf_code }).collect();
    let picks: Vec<Option<usize>> = nb.iter().enumerate().map(|(i, valid)| valid.then_some(i)).collect();
    let values = gather(field, &array, &picks)?;
    Ok(Piece { rep: None, def, values, num_rows: n })
}

/// [`gather`] of every value of an array without nulls, as one copy per
/// buffer; None for the types [`gather`] must handle value by value.
fn gather_all(field: &Field, array: &ArrayRef) -> Result<Option<Values>> {
    if is_packed_struct(field) {
        return Ok(None);
    }
    let short = || Error::invalid_input("values shorter than the array");
    let n = array.len();
    let data = array.to_data();
    let off = data.offset();
    Ok(match array.data_type() {
        DataType::Utf8 | DataType::Binary => Some(var_all::<i32>(&data).ok_or_else(short)?),
        DataType::LargeUtf8 | DataType::LargeBinary => Some(var_all::<i64>(&data).ok_or_else(short)?),
        DataType::Boolean | DataType::Null | DataType::FixedSizeList(_, _) | DataType::Struct(_) => None,
        dt => match fixed_bytes(dt) {
            Some(w) => {
                let buf = data.buffers().first().map(|b| b.as_slice()).unwrap_or(&[]);
                Some(Values::Fixed { bytes: w, data: buf.get(off * w..(off + n) * w).ok_or_else(short)?.to_vec() })
            }
            None => None,
        },
    })
}

/// Offsets (rebased to 0) and bytes of all values of a string/binary array.
fn var_all<O: OffsetSizeTrait>(data: &arrow_data::ArrayData) -> Option<Values> {
    let n = data.len();
    let offs: &[O] = data.buffers().first()?.typed_data::<O>().get(data.offset()..data.offset() + n + 1)?;
    let (a, b) = (offs[0].as_usize(), offs[n].as_usize());
    let bytes = data.buffers().get(1)?.as_slice().get(a..b)?;
    let offsets = offs.iter().map(|o| (o.as_usize() - a) as u64).collect();
    Some(Values::Variable { offsets, data: bytes.to_vec() })
}

/// Dictionary arrays are stored as their values.
fn plain_leaf(array: &ArrayRef) -> Result<ArrayRef> {
    if let DataType::Dictionary(_, _) = array.data_type() {
        let dict = arrow_array::cast::AsArray::as_any_dictionary(array.as_ref());
        let keys = arrow_array::cast::AsArray::as_primitive_opt::<arrow_array::types::UInt32Type>(&arrow_cast_keys(dict.keys())?)
            .cloned()
            .ok_or_else(|| Error::invalid_input("dictionary keys"))?;
        let n_values = dict.values().len();
        if keys.iter().flatten().any(|k| k as usize >= n_values) {
            return Err(Error::invalid_input("dictionary key out of range of the dictionary values"));
        }
        return arrow_select::take::take(dict.values().as_ref(), &keys, None).map_err(Error::internal_arrow);
    }
    Ok(array.clone())
}

fn arrow_cast_keys(keys: &dyn Array) -> Result<ArrayRef> {
    use arrow_array::UInt32Array;
    let n = keys.len();
    let mut out = Vec::with_capacity(n);
    let nulls = keys.logical_nulls();
    for i in 0..n {
        let valid = nulls.as_ref().is_none_or(|nb| nb.is_valid(i));
        out.push(if valid { Some(key_at(keys, i)?) } else { None });
    }
    Ok(Arc::new(UInt32Array::from(out)))
}

fn key_at(keys: &dyn Array, i: usize) -> Result<u32> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    let v: i128 = match keys.data_type() {
        DataType::Int8 => keys.as_primitive::<Int8Type>().value(i) as i128,
        DataType::Int16 => keys.as_primitive::<Int16Type>().value(i) as i128,
        DataType::Int32 => keys.as_primitive::<Int32Type>().value(i) as i128,
        DataType::Int64 => keys.as_primitive::<Int64Type>().value(i) as i128,
        DataType::UInt8 => keys.as_primitive::<UInt8Type>().value(i) as i128,
        DataType::UInt16 => keys.as_primitive::<UInt16Type>().value(i) as i128,
        DataType::UInt32 => keys.as_primitive::<UInt32Type>().value(i) as i128,
        DataType::UInt64 => keys.as_primitive::<UInt64Type>().value(i) as i128,
        other => return Err(Error::invalid_input(format!("dictionary key type {other}"))),
    };
    u32::try_from(v).map_err(|_| Error::invalid_input("negative or huge dictionary key"))
}

/// Width in bytes of a fixed-width non-bool leaf type.
pub fn fixed_bytes(dt: &DataType) -> Option<usize> {
    match dt {
        DataType::FixedSizeBinary(n) => Some(*n as usize),
        DataType::Boolean => None,
        dt => dt.primitive_width(),
    }
}

/// Gather the visible values (`None` = zero-filled null slot).
fn gather(field: &Field, array: &ArrayRef, picks: &[Option<usize>]) -> Result<Values> {
    let dt = array.data_type();
    if matches!(dt, DataType::Null) {
        return Ok(Values::Null(picks.len()));
    }
    if is_packed_struct(field) {
        let s = array.as_any().downcast_ref::<StructArray>().ok_or_else(|| Error::invalid_input("packed struct"))?;
        if let Some(kinds) = variable_packed_fields(field) {
            return gather_variable_packed(field, s, &kinds, picks);
        }
        let widths: Vec<usize> = s
            .columns()
            .iter()
            .map(|c| fixed_bytes(c.data_type()))
            .collect::<Option<_>>()
            .ok_or_else(|| Error::invalid_input(format!("packed struct {:?} needs fixed-width children", field.name())))?;
        let row: usize = widths.iter().sum();
        let mut data = vec![0u8; row * picks.len()];
        let datas: Vec<arrow_data::ArrayData> = s.columns().iter().map(|c| c.to_data()).collect();
        for (k, p) in picks.iter().enumerate() {
            if let Some(i) = p {
                let mut at = k * row;
                for (d, w) in datas.iter().zip(&widths) {
                    let b = d.buffers()[0].as_slice();
                    let j = d.offset() + i;
                    data[at..at + w].copy_from_slice(&b[j * w..(j + 1) * w]);
                    at += w;
                }
            }
        }
        return Ok(Values::Fixed { bytes: row, data });
    }
    match dt {
        DataType::Boolean => {
            let b = array.as_any().downcast_ref::<arrow_array::BooleanArray>().expect("bool");
            Ok(Values::Bool(picks.iter().map(|p| p.is_some_and(|i| b.value(i))).collect()))
        }
        DataType::Utf8 | DataType::Binary => Ok(gather_var::<i32>(array, picks)),
        DataType::LargeUtf8 | DataType::LargeBinary => Ok(gather_var::<i64>(array, picks)),
        DataType::FixedSizeList(_, _) => gather_fsl(field, array, picks),
        dt => {
            let w = fixed_bytes(dt).ok_or_else(|| Error::invalid_input(format!("unsupported leaf type {dt}")))?;
            let data = array.to_data();
            let buf = data.buffers()[0].as_slice();
            let off = data.offset();
            let out = copy_rows(buf, w, |i| (off + i) * w, picks).ok_or_else(|| Error::invalid_input("values shorter than the array"))?;
            Ok(Values::Fixed { bytes: w, data: out })
        }
    }
}

/// How a child of a packed struct with variable-width children is stored
/// in each row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackedField {
    /// Fixed-width: this many bytes.
    Fixed(usize),
    /// Variable-width: a length prefix of this many bytes, then the bytes.
    Variable(usize),
}

/// The children of a packed struct (`lance-encoding:packed`) that has at
/// least one variable-width child, or None (not packed, or all children
/// fixed-width, or a child that cannot be packed).
pub fn variable_packed_fields(field: &Field) -> Option<Vec<PackedField>> {
    let DataType::Struct(fs) = field.data_type() else { return None };
    if !is_packed_struct(field) {
        return None;
    }
    let kinds: Vec<PackedField> = fs
        .iter()
        .map(|c| match c.data_type() {
            DataType::Utf8 | DataType::Binary => Some(PackedField::Variable(4)),
            DataType::LargeUtf8 | DataType::LargeBinary => Some(PackedField::Variable(8)),
            dt => fixed_bytes(dt).map(PackedField::Fixed),
        })
        .collect::<Option<_>>()?;
    kinds.iter().any(|k| matches!(k, PackedField::Variable(_))).then_some(kinds)
}

/// Rows of a packed struct with variable-width children, each one value:
/// per child its fixed-width bytes, or a little-endian length then bytes
/// (pylance 14's `VariablePackedStruct`). Null rows are empty.
fn gather_variable_packed(field: &Field, s: &StructArray, kinds: &[PackedField], picks: &[Option<usize>]) -> Result<Values> {
    let datas: Vec<arrow_data::ArrayData> = s.columns().iter().map(|c| c.to_data()).collect();
    for (c, d) in s.fields().iter().zip(&datas) {
        let nulls = arrow_array::make_array(d.clone()).logical_nulls();
        if let Some(nb) = nulls {
            if picks.iter().flatten().any(|&i| nb.is_null(i)) {
                return Err(Error::unsupported(format!(
                    "packed struct {:?}: child {:?} has null values; a packed struct with variable-width children \
                     cannot store child nulls (pylance 14: per-value compression not supported for nullable blocks)",
                    field.name(),
                    c.name()
                )));
            }
        }
    }
    let mut offsets = Vec::with_capacity(picks.len() + 1);
    offsets.push(0u64);
    let mut out = Vec::new();
    for p in picks {
        if let Some(i) = p {
            for (d, k) in datas.iter().zip(kinds) {
                let j = d.offset() + i;
                match k {
                    PackedField::Fixed(w) => out.extend_from_slice(&d.buffers()[0].as_slice()[j * w..(j + 1) * w]),
                    PackedField::Variable(ow) => {
                        let (a, b) = if *ow == 4 {
                            let o: &[i32] = d.buffer::<i32>(0);
                            (o[*i] as usize, o[*i + 1] as usize)
                        } else {
                            let o: &[i64] = d.buffer::<i64>(0);
                            (o[*i] as usize, o[*i + 1] as usize)
                        };
                        out.extend_from_slice(&((b - a) as u64).to_le_bytes()[..*ow]);
                        out.extend_from_slice(&d.buffers()[1].as_slice()[a..b]);
                    }
                }
            }
        }
        offsets.push(out.len() as u64);
    }
    Ok(Values::Variable { offsets, data: out })
}

/// The common case of [`gather_fsl`] (vectors): one list layer of
/// fixed-width items without nulls. Whole rows are copied, runs of
/// consecutive rows at once; the general path tracks every item.
fn gather_flat_fsl(array: &ArrayRef, picks: &[Option<usize>]) -> Result<Option<Values>> {
    let DataType::FixedSizeList(item, dim) = array.data_type() else { return Ok(None) };
    let Some(item_bytes) = fixed_bytes(item.data_type()) else { return Ok(None) };
    let (Some(l), Ok(dim)) = (array.as_any().downcast_ref::<FixedSizeListArray>(), usize::try_from(*dim)) else { return Ok(None) };
    let child = l.values();
    if dim == 0 || child.logical_null_count() > 0 || matches!(item.data_type(), DataType::Boolean) {
        return Ok(None);
    }
    let cdata = child.to_data();
    let buf = cdata.buffers().first().map(|b| b.as_slice()).unwrap_or(&[]);
    let row = dim * item_bytes;
    let base = cdata.offset() * item_bytes;
    let items = copy_rows(buf, row, |i| base + l.value_offset_at(i) * item_bytes, picks)
        .ok_or_else(|| Error::invalid_input("fixed-size list values are shorter than the list"))?;
    Ok(Some(Values::Fsl { dims: vec![dim], item_bytes, items, valid: vec![None] }))
}

/// Gather (possibly nested) fixed-size lists of fixed-width items: the
/// items row-major, plus per FSL layer (outermost first) the validity of
/// that layer's children. Slots under a null row are zero-filled and valid.
fn gather_fsl(field: &Field, array: &ArrayRef, picks: &[Option<usize>]) -> Result<Values> {
    if let Some(v) = gather_flat_fsl(array, picks)? {
        return Ok(v);
    }
    let mut dims = Vec::new();
    let mut valid = Vec::new();
    let mut cur = array.clone();
    let mut picks: Vec<Option<usize>> = picks.to_vec();
    while let DataType::FixedSizeList(item, dim) = cur.data_type().clone() {
        let l = cur.as_any().downcast_ref::<FixedSizeListArray>().ok_or_else(|| Error::invalid_input("expected a fixed-size list array"))?;
        let dim = usize::try_from(dim)
            .ok()
            .filter(|d| *d > 0)
            .ok_or_else(|| Error::invalid_input(format!("fixed-size list {:?}: size {dim} is not supported", field.name())))?;
        let child = l.values().clone();
        let is_fsl = matches!(item.data_type(), DataType::FixedSizeList(_, _));
        if !is_fsl && fixed_bytes(item.data_type()).is_none() {
            return Err(Error::invalid_input(format!("fixed-size list {:?}: items of type {} are not supported", field.name(), item.data_type())));
        }
        let cnulls = child.logical_nulls();
        let mut next = Vec::with_capacity(picks.len() * dim);
        let mut v = Vec::with_capacity(picks.len() * dim);
        for p in &picks {
            match p {
                Some(i) => {
                    let start = l.value_offset_at(*i);
                    if start + dim > child.len() {
                        return Err(Error::invalid_input("fixed-size list values are shorter than the list"));
                    }
                    for j in start..start + dim {
                        let ok = cnulls.as_ref().is_none_or(|nb| nb.is_valid(j));
                        v.push(ok);
                        next.push(ok.then_some(j));
                    }
                }
                None => {
                    v.extend(std::iter::repeat_n(true, dim));
                    next.extend(std::iter::repeat_n(None, dim));
                }
            }
        }
        dims.push(dim);
        valid.push(v.iter().any(|x| !x).then_some(v));
        picks = next;
        cur = child;
    }
    let item_bytes = fixed_bytes(cur.data_type()).ok_or_else(|| internal("fixed-size list leaf"))?;
    let cdata = cur.to_data();
    let buf = cdata.buffers().first().map(|b| b.as_slice()).unwrap_or(&[]);
    let coff = cdata.offset();
    let mut items = vec![0u8; picks.len() * item_bytes];
    for (k, p) in picks.iter().enumerate() {
        if let Some(j) = p {
            let src =
                buf.get((coff + j) * item_bytes..(coff + j + 1) * item_bytes).ok_or_else(|| internal("fixed-size list item out of its buffer"))?;
            items[k * item_bytes..(k + 1) * item_bytes].copy_from_slice(src);
        }
    }
    Ok(Values::Fsl { dims, item_bytes, items, valid })
}

fn gather_var<O: OffsetSizeTrait>(array: &ArrayRef, picks: &[Option<usize>]) -> Values {
    let data = array.to_data();
    let offs: &[O] = &data.buffer::<O>(0)[data.offset()..];
    let bytes = data.buffers()[1].as_slice();
    let mut offsets = Vec::with_capacity(picks.len() + 1);
    offsets.push(0u64);
    let mut out = Vec::new();
    let mut k = 0;
    while k < picks.len() {
        match picks[k] {
            None => {
                offsets.push(out.len() as u64);
                k += 1;
            }
            Some(first) => {
                // A run of consecutive values: one copy, offsets rebased.
                let n = run_len(picks, k, first);
                let (a, b) = (offs[first].as_usize(), offs[first + n].as_usize());
                let base = out.len() as u64;
                out.extend_from_slice(&bytes[a..b]);
                offsets.extend(offs[first + 1..=first + n].iter().map(|o| base + (o.as_usize() - a) as u64));
                k += n;
            }
        }
    }
    Values::Variable { offsets, data: out }
}

/// Rows of `row` bytes picked from `buf` (row `i` starting at `start(i)`),
/// `None` picks zero-filled; a run of consecutive rows is one copy. None
/// when a row lies outside `buf`.
fn copy_rows(buf: &[u8], row: usize, start: impl Fn(usize) -> usize, picks: &[Option<usize>]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(picks.len() * row);
    let mut k = 0;
    while k < picks.len() {
        match picks[k] {
            None => {
                out.resize(out.len() + row, 0);
                k += 1;
            }
            Some(first) => {
                let n = run_len(picks, k, first);
                let s = start(first);
                out.extend_from_slice(buf.get(s..s + n * row)?);
                k += n;
            }
        }
    }
    Some(out)
}

/// How many picks from `k` on are `Some(first)`, `Some(first + 1)`, …
fn run_len(picks: &[Option<usize>], k: usize, first: usize) -> usize {
    picks[k..].iter().enumerate().take_while(|(j, p)| **p == Some(first + j)).count()
}

/// Levels of a page after renumbering to the layers that occur.
#[derive(Debug, Clone, PartialEq)]
pub struct PageLevels {
    /// Protobuf layer kinds, innermost first.
    pub layers: Vec<RepDefLayer>,
    /// Repetition levels (None without lists).
    pub rep: Option<Vec<u16>>,
    /// Definition levels (None when no entry is null or empty).
    pub def: Option<Vec<u16>>,
    /// Highest repetition level.
    pub max_rep: u16,
    /// Highest definition level.
    pub max_def: u16,
    /// Lowest definition level that hides the value slot.
    pub first_invisible: u16,
    /// Null code of the leaf layer, if the leaf has nulls.
    pub leaf_null: Option<u16>,
}

impl PageLevels {
    /// Choose layer kinds from the codes that occur and renumber `def`.
    pub fn finish(path: &LeafPath, rep: Option<Vec<u16>>, def: Vec<u16>) -> PageLevels {
        let max_code = path.max_code() as usize;
        let mut seen = vec![false; max_code + 1];
        for &d in &def {
            if let Some(x) = seen.get_mut(d as usize) {
                *x = true;
            }
        }
        let mut map = vec![0u16; max_code + 1];
        let mut next = 1u16;
        let mut layers = Vec::with_capacity(path.kinds.len());
        let mut first_invisible = u16::MAX;
        let mut leaf_null = None;
        let mut item_max = 0u16;
        let mut found_list = false;
        for (k, kind) in path.kinds.iter().enumerate() {
            let nc = path.null_code(k) as usize;
            match kind {
                LayerKind::Item => {
                    if seen[nc] {
                        map[nc] = next;
                        if k == 0 {
                            leaf_null = Some(next);
                        }
                        if !found_list {
                            item_max = next;
                        }
                        next += 1;
                        layers.push(RepDefLayer::RepdefNullableItem);
                    } else {
                        layers.push(RepDefLayer::RepdefAllValidItem);
                    }
                }
                LayerKind::List => {
                    if !found_list {
                        found_list = true;
                        first_invisible = item_max + 1;
                    }
                    let (n, e) = (seen[nc], seen[nc + 1]);
                    if n {
                        map[nc] = next;
                        next += 1;
                    }
                    if e {
                        map[nc + 1] = next;
                        next += 1;
                    }
                    layers.push(match (n, e) {
                        (true, true) => RepDefLayer::RepdefNullAndEmptyList,
                        (true, false) => RepDefLayer::RepdefNullableList,
                        (false, true) => RepDefLayer::RepdefEmptyableList,
                        (false, false) => RepDefLayer::RepdefAllValidList,
                    });
                }
            }
        }
        let max_def = next - 1;
        let def = (max_def > 0).then(|| def.iter().map(|&d| map.get(d as usize).copied().unwrap_or(0)).collect());
        PageLevels { layers, rep, def, max_rep: path.max_rep, max_def, first_invisible, leaf_null }
    }

    /// Number of level entries (or `None` when there are no levels).
    pub fn num_entries(&self) -> Option<usize> {
        self.rep.as_ref().map(|r| r.len()).or(self.def.as_ref().map(|d| d.len()))
    }

    /// Whether each visible value is valid (None when all are).
    pub fn visible_validity(&self) -> Option<Vec<bool>> {
        let def = self.def.as_ref()?;
        Some(def.iter().filter(|&&d| d < self.first_invisible).map(|&d| d == 0).collect())
    }
}

fn internal(what: impl Into<String>) -> Error {
    Error::Internal { what: what.into() }
}

#[cfg(test)]
mod top_leaf_tests {
    use super::*;
    use arrow_array::*;
    use arrow_schema::Fields;

    /// The general path: one slot per row, as nested columns shred.
    fn by_slots(field: &Field, array: &ArrayRef) -> Piece {
        let paths = leaf_paths(field);
        let n = array.len();
        let slots: Vec<Slot> = (0..n).map(|i| Slot { cont: 0, decided: None, visible: true, idx: i }).collect();
        emit_leaf(field, array, &paths[0].1, &slots, n).unwrap()
    }

    /// Top-level leaves skip the per-row slots; the pieces must be the
    /// ones the slot walk makes, for every leaf kind, with and without
    /// nulls, and for sliced arrays (batches are cut into page slices).
    #[test]
    fn top_level_leaves_shred_like_the_slot_walk() {
        let n = 300;
        let valid: Vec<bool> = (0..n).map(|i| i % 7 != 2).collect();
        let strs: Vec<Option<String>> = (0..n).map(|i| valid[i].then(|| "v".repeat(i % 13))).collect();
        let fsl_items = Float32Array::from((0..n * 3).map(|i| i as f32).collect::<Vec<_>>());
        let item = Arc::new(Field::new("item", DataType::Float32, true));
        let struct_fields = Fields::from(vec![Field::new("a", DataType::Int32, false), Field::new("b", DataType::Int64, false)]);
        let packed_md: std::collections::HashMap<String, String> = [("lance-encoding:packed".to_string(), "true".to_string())].into();
        let arrays: Vec<(Field, ArrayRef)> = vec![
            (Field::new("i64", DataType::Int64, false), Arc::new(Int64Array::from((0..n as i64).collect::<Vec<_>>()))),
            (Field::new("i32n", DataType::Int32, true), Arc::new(Int32Array::from((0..n).map(|i| valid[i].then_some(i as i32)).collect::<Vec<_>>()))),
            (Field::new("f64", DataType::Float64, true), Arc::new(Float64Array::from((0..n).map(|i| i as f64 * 0.5).collect::<Vec<_>>()))),
            (Field::new("s", DataType::Utf8, true), Arc::new(StringArray::from(strs.clone()))),
            (Field::new("s_all", DataType::Utf8, false), Arc::new(StringArray::from((0..n).map(|i| "w".repeat(i % 5)).collect::<Vec<_>>()))),
            (Field::new("ls", DataType::LargeUtf8, true), Arc::new(LargeStringArray::from(strs.clone()))),
            (Field::new("lb", DataType::LargeBinary, false), Arc::new(LargeBinaryArray::from_iter_values((0..n).map(|i| vec![i as u8; i % 4])))),
            (
                Field::new("b", DataType::Boolean, true),
                Arc::new(BooleanArray::from((0..n).map(|i| valid[i].then_some(i % 3 == 0)).collect::<Vec<_>>())),
            ),
            (Field::new("null", DataType::Null, true), Arc::new(NullArray::new(n))),
            (
                Field::new("fsb", DataType::FixedSizeBinary(2), true),
                Arc::new(FixedSizeBinaryArray::try_from_sparse_iter_with_size((0..n).map(|i| valid[i].then_some([i as u8, 1])), 2).unwrap()),
            ),
            (
                Field::new("vec", DataType::FixedSizeList(item.clone(), 3), true),
                Arc::new(FixedSizeListArray::new(item.clone(), 3, Arc::new(fsl_items.clone()), None)),
            ),
            (
                Field::new("vecn", DataType::FixedSizeList(item.clone(), 3), true),
                Arc::new(FixedSizeListArray::new(item.clone(), 3, Arc::new(fsl_items), Some(valid.clone().into()))),
            ),
            (
                Field::new("dict", DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8)), true),
                Arc::new((0..n).map(|i| valid[i].then(|| ["x", "yy", "zzz"][i % 3])).collect::<DictionaryArray<arrow_array::types::Int8Type>>()),
            ),
            (
                Field::new("packed", DataType::Struct(struct_fields.clone()), true).with_metadata(packed_md),
                Arc::new(StructArray::new(
                    struct_fields,
                    vec![
                        Arc::new(Int32Array::from((0..n as i32).collect::<Vec<_>>())),
                        Arc::new(Int64Array::from((0..n as i64).collect::<Vec<_>>())),
                    ],
                    Some(valid.clone().into()),
                )),
            ),
        ];
        for (field, array) in &arrays {
            assert!(is_leaf(field), "{} is not a leaf", field.name());
            for (off, len) in [(0, n), (0, 0), (17, 200), (n - 1, 1), (5, n - 5)] {
                let a = array.slice(off, len);
                let fast = shred(field, &a).unwrap();
                assert_eq!(fast.len(), 1);
                assert_eq!(fast[0], by_slots(field, &a), "{} sliced at {off}+{len}", field.name());
            }
        }
    }
}
