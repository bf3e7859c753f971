//! Constant and all-null pages (digest §10.5).
//!
//! 2.1 `AllNullLayout`: only the layers; no buffers when the levels carry no
//! information, else two buffers of raw u16 levels (rep, then def; an absent
//! kind is an empty buffer).
//!
//! 2.2 `ConstantLayout` (same protobuf tag) for all-null pages and pages whose
//! valid values are all equal. The value is `inline_value` when it is a
//! fixed-width value of ≤ 32 bytes (booleans as one byte), otherwise buffer
//! 0 holds `u32 num_buffers | u32 len × num_buffers | bytes` (the Arrow
//! buffers of a one-element array: offsets then data for strings). Then,
//! when levels are needed, a rep and a def buffer, each out-of-line
//! bit-packed (`num_rep_values` / `num_def_values` give the counts) or empty.

use crate::file::write::miniblock::{level_encoding, pack_levels};
use crate::file::write::shred::{PageLevels, Values};
use crate::proto::encodings21 as pb;

fn bit_width(x: u16) -> u32 {
    16 - x.leading_zeros()
}

/// True when the levels say nothing beyond "every value is null" (or, for
/// a constant value, "no nulls").
fn levels_trivial(levels: &PageLevels, all_null: bool) -> bool {
    if levels.rep.is_some() {
        return false;
    }
    match (&levels.def, all_null) {
        (None, _) => true,
        // pylance reads an all-null page without level buffers only when it
        // has one layer (its "simple" all-null page); with more (a null
        // child of a valid struct) it expects both buffers.
        (Some(d), true) => levels.layers.len() == 1 && levels.leaf_null.is_some_and(|ln| d.iter().all(|&x| x == ln)),
        (Some(_), false) => false,
    }
}

/// The single valid value if every valid visible value is the same one.
/// Only plain fixed-width, boolean and variable-width values qualify.
pub fn constant_value(values: &Values, valid: Option<&[bool]>) -> Option<Vec<u8>> {
    let ok = |i: usize| valid.is_none_or(|v| v[i]);
    let n = values.len();
    let first = (0..n).find(|&i| ok(i))?;
    match values {
        Values::Fixed { bytes, data } => {
            let v = &data[first * bytes..(first + 1) * bytes];
            (0..n).all(|i| !ok(i) || &data[i * bytes..(i + 1) * bytes] == v).then(|| v.to_vec())
        }
        Values::Bool(b) => (0..n).all(|i| !ok(i) || b[i] == b[first]).then(|| vec![u8::from(b[first])]),
        Values::Variable { offsets, data } => {
            let item = |i: usize| &data[offsets[i] as usize..offsets[i + 1] as usize];
            let v = item(first);
            (0..n).all(|i| !ok(i) || item(i) == v).then(|| v.to_vec())
        }
        _ => None,
    }
}

/// 2.1 all-null page.
pub fn all_null_v21(levels: &PageLevels) -> (Vec<Vec<u8>>, pb::PageLayout) {
    let layout = pb::ConstantLayout { layers: levels.layers.iter().map(|l| *l as i32).collect(), ..Default::default() };
    let buffers = if levels_trivial(levels, true) {
        vec![]
    } else {
        let raw = |l: &Option<Vec<u16>>| l.as_ref().map_or(vec![], |v| v.iter().flat_map(|x| x.to_le_bytes()).collect());
        vec![raw(&levels.rep), raw(&levels.def)]
    };
    (buffers, pb::PageLayout { layout: Some(pb::page_layout::Layout::ConstantLayout(layout)) })
}

/// 2.2 constant page; `value` is None for an all-null page. `wide` selects
/// 64-bit offsets for a variable-width value.
pub fn constant_v22(levels: &PageLevels, value: Option<(&[u8], bool /*variable*/)>, wide: bool) -> (Vec<Vec<u8>>, pb::PageLayout) {
    let mut layout = pb::ConstantLayout { layers: levels.layers.iter().map(|l| *l as i32).collect(), ..Default::default() };
    let mut buffers = Vec::new();
    match value {
        Some((v, false)) if v.len() <= 32 => layout.inline_value = Some(v.to_vec()),
        Some((v, variable)) => {
            let mut b = Vec::new();
            let parts: Vec<Vec<u8>> = if variable {
                let offs: Vec<u8> = if wide {
                    [0u64, v.len() as u64].iter().flat_map(|x| x.to_le_bytes()).collect()
                } else {
                    [0u32, v.len() as u32].iter().flat_map(|x| x.to_le_bytes()).collect()
                };
                vec![offs, v.to_vec()]
            } else {
                vec![v.to_vec()]
            };
            b.extend_from_slice(&(parts.len() as u32).to_le_bytes());
            for p in &parts {
                b.extend_from_slice(&(p.len() as u32).to_le_bytes());
            }
            for p in &parts {
                b.extend_from_slice(p);
            }
            buffers.push(b);
        }
        None => {}
    }
    if !levels_trivial(levels, value.is_none()) {
        let pack = |l: &Option<Vec<u16>>, max: u16| -> (Vec<u8>, Option<pb::CompressiveEncoding>, u64) {
            match l {
                Some(v) if !v.is_empty() => {
                    let w = bit_width(max);
                    (pack_levels(w, v), Some(level_encoding(w)), v.len() as u64)
                }
                _ => (vec![], None, 0),
            }
        };
        let (rb, re, rn) = pack(&levels.rep, levels.max_rep);
        let (db, de, dn) = pack(&levels.def, levels.max_def);
        buffers.push(rb);
        buffers.push(db);
        layout.rep_compression = re;
        layout.def_compression = de;
        layout.num_rep_values = rn;
        layout.num_def_values = dn;
    }
    (buffers, pb::PageLayout { layout: Some(pb::page_layout::Layout::ConstantLayout(layout)) })
}
