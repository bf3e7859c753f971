//! Turning a leaf column's levels back into Arrow structure.
//!
//! Walking the level entries once, every layer (outermost first) collects
//! its slots: item layers a validity bit per slot, list layers an offset
//! and a validity bit per list. The leaf's slots are the visible values.

use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder, NullBuffer};

use crate::error::{Error, Result};
use crate::file::structural::datablock::DataBlock;
use crate::file::structural::levels::{Layers, LevelStream};

/// The structure one layer above the leaf contributes.
#[derive(Debug, Clone)]
pub enum LayerOut {
    /// A struct (or map entries) layer: one validity bit per slot.
    Item { validity: Option<NullBuffer>, len: usize },
    /// A list layer: offsets into the next layer's slots, one bit per list.
    List { offsets: Vec<i64>, validity: Option<NullBuffer> },
}

impl LayerOut {
    /// Number of slots.
    pub fn len(&self) -> usize {
        match self {
            LayerOut::Item { len, .. } => *len,
            LayerOut::List { offsets, .. } => offsets.len() - 1,
        }
    }
    /// True if there are no slots.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A leaf column with its ancestors' structure.
#[derive(Debug, Clone)]
pub struct Unraveled {
    /// Ancestor layers, outermost first (excluding the leaf).
    pub outer: Vec<LayerOut>,
    /// Validity of the visible values.
    pub leaf_validity: Option<NullBuffer>,
    /// The visible values.
    pub values: DataBlock,
    /// Rows (slots of the outermost layer).
    pub num_rows: usize,
}

struct Builder {
    is_list: bool,
    validity: BooleanBufferBuilder,
    any_null: bool,
    offsets: Vec<i64>,
    count: usize,
    fsl_dim: Option<usize>,
    fsl_seen: usize,
}

fn finish_validity(mut b: BooleanBufferBuilder, any_null: bool) -> Option<NullBuffer> {
    any_null.then(|| NullBuffer::new(b.finish()))
}

/// Rebuild the structure of one leaf column.
///
/// `ancestors` (outermost first, one per layer above the leaf) says what
/// each layer is; a fixed-size list stored as a layer gains one slot per
/// `dim` entries that reach it.
pub fn unravel(layers: &Layers, stream: LevelStream, ancestors: &[Ancestor]) -> Result<Unraveled> {
    stream.validate(layers)?;
    let n = layers.layers.len();
    let entries = stream.num_entries();
    // Fast path: a flat column (no lists, only the leaf layer).
    if n == 1 {
        let leaf_validity = match (&stream.def, layers.layers[0].null_def) {
            // (Packed 64 bits at a time; level 0 is a valid value.)
            (Some(def), Some(_)) if def.iter().any(|&d| d != 0) => Some(NullBuffer::new(BooleanBuffer::collect_bool(def.len(), |i| def[i] == 0))),
            _ => None,
        };
        return Ok(Unraveled { outer: vec![], leaf_validity, values: stream.values, num_rows: stream.num_rows });
    }
    // Outermost first.
    let outer_first: Vec<_> = layers.layers.iter().rev().copied().collect();
    // For a repetition level r < max_rep the list at level r+1 gains an item,
    // so new slots start in the layer just inside it. Lists are numbered
    // from the inside: the outermost list has level max_rep.
    let mut start_for_rep = vec![0usize; layers.max_rep as usize + 1];
    let mut level = layers.max_rep;
    for (k, l) in outer_first.iter().enumerate() {
        if l.is_list {
            if level >= 1 {
                start_for_rep[(level - 1) as usize] = k + 1;
            }
            level = level.saturating_sub(1);
        }
    }
    // Which layer (outermost index) each definition level names.
    let mut def_layer = vec![(usize::MAX, false); layers.max_def as usize + 1];
    for (k, l) in outer_first.iter().enumerate() {
        if let Some(d) = l.null_def {
            def_layer[d as usize] = (k, false);
        }
        if let Some(d) = l.empty_def {
            def_layer[d as usize] = (k, true);
        }
    }
    let mut b: Vec<Builder> = outer_first
        .iter()
        .map(|l| Builder {
            is_list: l.is_list,
            validity: BooleanBufferBuilder::new(entries),
            any_null: false,
            offsets: Vec::new(),
            count: 0,
            fsl_dim: None,
            fsl_seen: 0,
        })
        .collect();
    for (k, a) in ancestors.iter().enumerate() {
        if let (Ancestor::FixedSizeList(d), Some(layer)) = (a, b.get_mut(k)) {
            if layer.is_list || *d == 0 {
                return Err(Error::corrupt("fixed-size list layer stored as a list"));
            }
            layer.fsl_dim = Some(*d);
        }
    }
    for i in 0..entries {
        let r = stream.rep.as_ref().map_or(layers.max_rep, |r| r[i]);
        let d = stream.def.as_ref().map_or(0, |d| d[i]);
        let start = start_for_rep[r as usize];
        let (null_k, is_empty) = if d == 0 { (usize::MAX, false) } else { def_layer[d as usize] };
        if d != 0 && null_k < start {
            return Err(Error::corrupt(format!("level entry {i} continues a list (rep {r}) that its definition level {d} says is absent")));
        }
        // Inside a fixed-size list's group of `dim` entries, only the layers
        // below the list gain slots: move the start past every such list
        // that is mid-group.
        let mut eff = start;
        for (k, layer) in b.iter().enumerate().skip(start) {
            if let Some(d) = layer.fsl_dim {
                if layer.fsl_seen % d != 0 {
                    eff = k + 1;
                }
            }
        }
        for layer in b[start..eff].iter_mut() {
            if layer.fsl_dim.is_some() {
                layer.fsl_seen += 1;
            }
        }
        let mut under_null = d != 0 && null_k >= start && null_k < eff;
        for k in eff..n {
            let next_count = if k + 1 < n { b[k + 1].count } else { 0 };
            let layer = &mut b[k];
            if layer.fsl_dim.is_some() {
                // At a group boundary (see above): a new slot.
                layer.fsl_seen += 1;
                let valid = !(under_null || k == null_k);
                layer.count += 1;
                layer.validity.append(valid);
                layer.any_null |= !valid;
                under_null |= k == null_k;
                continue;
            }
            layer.count += 1;
            if layer.is_list {
                layer.offsets.push(next_count as i64);
                let valid = !(under_null || (k == null_k && !is_empty));
                layer.validity.append(valid);
                layer.any_null |= !valid;
                if under_null || k == null_k {
                    break;
                }
            } else {
                let valid = !(under_null || k == null_k);
                layer.validity.append(valid);
                layer.any_null |= !valid;
                under_null |= k == null_k;
            }
        }
    }
    let leaf_count = b[n - 1].count;
    if leaf_count != stream.values.len() {
        return Err(Error::corrupt(format!("structure has {leaf_count} leaf slots but {} values were decoded", stream.values.len())));
    }
    let mut leaf = b.pop().expect("at least two layers");
    let leaf_validity = finish_validity(std::mem::replace(&mut leaf.validity, BooleanBufferBuilder::new(0)), leaf.any_null);
    let mut outer = Vec::with_capacity(b.len());
    let counts: Vec<usize> = b.iter().map(|x| x.count).chain(std::iter::once(leaf_count)).collect();
    for (k, layer) in b.into_iter().enumerate() {
        let validity = finish_validity(layer.validity, layer.any_null);
        if layer.is_list {
            let mut offsets = layer.offsets;
            offsets.push(counts[k + 1] as i64);
            outer.push(LayerOut::List { offsets, validity });
        } else {
            outer.push(LayerOut::Item { validity, len: layer.count });
        }
    }
    let num_rows = outer.first().map_or(leaf_count, |o| o.len());
    if num_rows * row_multiplier(ancestors) != stream.num_rows {
        return Err(Error::corrupt(format!("structure has {num_rows} rows, page says {}", stream.num_rows)));
    }
    Ok(Unraveled { outer, leaf_validity, values: stream.values, num_rows })
}

/// What a layer above a leaf is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ancestor {
    /// A struct (or map entries): one slot per entry reaching it.
    Struct,
    /// A list: repetition levels delimit its items.
    List,
    /// A fixed-size list of a nested type: one slot per `dim` entries.
    FixedSizeList(usize),
}

/// Page lengths of a column under fixed-size lists stored as layers (and
/// no list above them) count the lists' items: this is how many per row.
pub fn row_multiplier(ancestors: &[Ancestor]) -> usize {
    ancestors.iter().take_while(|a| **a != Ancestor::List).map(|a| if let Ancestor::FixedSizeList(d) = a { *d } else { 1 }).product()
}
