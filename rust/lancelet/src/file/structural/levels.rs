//! Repetition and definition levels of 2.1+ structural pages.
//!
//! Each leaf column stores, per *level entry*, a repetition level (which
//! list starts anew: innermost list = 1, outermost = `max_rep`, `max_rep`
//! starts a new row, 0 continues the innermost list) and a definition level
//! (0 = valid down to the leaf; otherwise the number of the layer that is
//! null or empty). `layers[0]` is the leaf, later entries walk outward.
//! Definition numbers are handed out innermost first: a nullable item
//! takes one, a nullable list one, an emptyable list one, a list that can be
//! both null and empty two (null first).
//!
//! Entries that are null/empty lists (or lie under one) are *invisible*:
//! they own no slot in the value buffers.

use crate::error::{Error, Result};
use crate::file::structural::datablock::DataBlock;
use crate::proto::encodings21::RepDefLayer;

/// One layer of the structure above a leaf's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layer {
    /// True for list layers, false for item (leaf / struct) layers.
    pub is_list: bool,
    /// The definition level meaning "this layer is null".
    pub null_def: Option<u16>,
    /// The definition level meaning "this list is empty".
    pub empty_def: Option<u16>,
}

/// The layers of a column, innermost first, with definition numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layers {
    /// Innermost (leaf) first.
    pub layers: Vec<Layer>,
    /// Number of list layers.
    pub max_rep: u16,
    /// Highest definition level in use.
    pub max_def: u16,
    /// Lowest definition level that makes an entry invisible.
    pub first_invisible_def: u16,
}

impl Layers {
    /// Interpret the protobuf layer list.
    pub fn from_proto(raw: &[i32]) -> Result<Self> {
        let mut next = 1u16;
        let mut layers = Vec::with_capacity(raw.len());
        for &l in raw {
            let kind = RepDefLayer::try_from(l).map_err(|_| Error::unsupported(format!("unknown rep/def layer {l}")))?;
            let mut take = || {
                let d = next;
                next += 1;
                Some(d)
            };
            let layer = match kind {
                RepDefLayer::RepdefAllValidItem => Layer { is_list: false, null_def: None, empty_def: None },
                RepDefLayer::RepdefNullableItem => Layer { is_list: false, null_def: take(), empty_def: None },
                RepDefLayer::RepdefAllValidList => Layer { is_list: true, null_def: None, empty_def: None },
                RepDefLayer::RepdefNullableList => Layer { is_list: true, null_def: take(), empty_def: None },
                RepDefLayer::RepdefEmptyableList => Layer { is_list: true, null_def: None, empty_def: take() },
                RepDefLayer::RepdefNullAndEmptyList => {
                    let n = take();
                    Layer { is_list: true, null_def: n, empty_def: take() }
                }
                RepDefLayer::RepdefUnspecified => return Err(Error::corrupt("rep/def layer UNSPECIFIED")),
            };
            layers.push(layer);
        }
        if layers.is_empty() {
            return Err(Error::corrupt("page has no rep/def layers"));
        }
        if layers[0].is_list {
            return Err(Error::corrupt("innermost rep/def layer is a list"));
        }
        let max_rep = layers.iter().filter(|l| l.is_list).count() as u16;
        // Definition numbers are handed out innermost first, so every number
        // at or outside the innermost list (which hides the values below it)
        // is above every number of the item layers inside that list.
        let first_invisible = match layers.iter().position(|l| l.is_list) {
            Some(pos) => layers[..pos].iter().filter_map(|l| l.null_def).max().unwrap_or(0) + 1,
            None => u16::MAX,
        };
        Ok(Layers { layers, max_rep, max_def: next - 1, first_invisible_def: first_invisible })
    }

    /// The layers that can express every page's nulls and empties: pages
    /// of one column may each use only the layers their data needs.
    pub fn union(all: &[Layers]) -> Result<Layers> {
        let first = all.first().ok_or_else(|| Error::corrupt("no pages"))?;
        if all.iter().all(|l| l == first) {
            return Ok(first.clone());
        }
        let n = first.layers.len();
        let mut raw = Vec::with_capacity(n);
        for k in 0..n {
            let mut any_null = false;
            let mut any_empty = false;
            for l in all {
                let layer = l
                    .layers
                    .get(k)
                    .filter(|x| x.is_list == first.layers[k].is_list)
                    .ok_or_else(|| Error::corrupt("pages of one column have differently shaped rep/def layers"))?;
                if l.layers.len() != n {
                    return Err(Error::corrupt("pages of one column have different numbers of rep/def layers"));
                }
                any_null |= layer.null_def.is_some();
                any_empty |= layer.empty_def.is_some();
            }
            let kind = match (first.layers[k].is_list, any_null, any_empty) {
                (false, false, _) => RepDefLayer::RepdefAllValidItem,
                (false, true, _) => RepDefLayer::RepdefNullableItem,
                (true, false, false) => RepDefLayer::RepdefAllValidList,
                (true, true, false) => RepDefLayer::RepdefNullableList,
                (true, false, true) => RepDefLayer::RepdefEmptyableList,
                (true, true, true) => RepDefLayer::RepdefNullAndEmptyList,
            };
            raw.push(kind as i32);
        }
        Layers::from_proto(&raw)
    }

    /// A table translating this page's definition levels into `target`'s.
    pub fn def_map_to(&self, target: &Layers) -> Vec<u16> {
        let mut map = vec![0u16; self.max_def as usize + 1];
        for (mine, theirs) in self.layers.iter().zip(&target.layers) {
            if let (Some(a), Some(b)) = (mine.null_def, theirs.null_def) {
                map[a as usize] = b;
            }
            if let (Some(a), Some(b)) = (mine.empty_def, theirs.empty_def) {
                map[a as usize] = b;
            }
        }
        map
    }

    /// True if an entry with this definition level owns a value slot.
    #[inline]
    pub fn is_visible(&self, def: u16) -> bool {
        def < self.first_invisible_def
    }
}

/// The levels and values of a leaf column over some rows.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelStream {
    /// Repetition levels, one per entry (absent without lists).
    pub rep: Option<Vec<u16>>,
    /// Definition levels, one per entry (absent when nothing can be null).
    pub def: Option<Vec<u16>>,
    /// The visible values.
    pub values: DataBlock,
    /// Rows covered.
    pub num_rows: usize,
}

impl LevelStream {
    /// Number of level entries.
    pub fn num_entries(&self) -> usize {
        match (&self.rep, &self.def) {
            (Some(r), _) => r.len(),
            (None, Some(d)) => d.len(),
            (None, None) => self.values.len(),
        }
    }

    /// Check that levels and values agree with each other and the layers.
    pub fn validate(&self, layers: &Layers) -> Result<()> {
        let n = self.num_entries();
        if let (Some(r), Some(d)) = (&self.rep, &self.def) {
            if r.len() != d.len() {
                return Err(Error::corrupt(format!("{} repetition levels but {} definition levels", r.len(), d.len())));
            }
        }
        // Maxima by folds, not `any`: a loop that may stop early is not
        // vectorised, and these run over every level of a scan.
        let max = |l: &[u16]| l.iter().fold(0u16, |m, &x| m.max(x));
        if let Some(r) = &self.rep {
            if max(r) > layers.max_rep {
                return Err(Error::corrupt(format!("repetition level above maximum {}", layers.max_rep)));
            }
            if r.first().is_some_and(|&x| x != layers.max_rep) {
                return Err(Error::corrupt("first level entry does not start a row"));
            }
        } else if layers.max_rep > 0 && n > 0 {
            return Err(Error::corrupt("list column without repetition levels"));
        }
        let visible = match &self.def {
            Some(d) => {
                if max(d) > layers.max_def {
                    return Err(Error::corrupt(format!("definition level above maximum {}", layers.max_def)));
                }
                d.iter().filter(|&&x| layers.is_visible(x)).count()
            }
            None => n,
        };
        if visible != self.values.len() {
            return Err(Error::corrupt(format!("levels describe {visible} visible values but {} were decoded", self.values.len())));
        }
        let rows = match &self.rep {
            Some(r) => r.iter().filter(|&&x| x == layers.max_rep).count(),
            None => n,
        };
        if rows != self.num_rows {
            return Err(Error::corrupt(format!("levels describe {rows} rows but the page has {}", self.num_rows)));
        }
        Ok(())
    }

    /// Re-express this stream's definition levels in `target`'s numbering.
    pub fn remap_def(&mut self, from: &Layers, target: &Layers) -> Result<()> {
        if from == target {
            return Ok(());
        }
        let map = from.def_map_to(target);
        if let Some(d) = self.def.as_mut() {
            for x in d.iter_mut() {
                *x = *map.get(*x as usize).ok_or_else(|| Error::corrupt(format!("definition level {x} above maximum")))?;
            }
        }
        Ok(())
    }

    /// Concatenate streams of consecutive pages.
    pub fn concat(parts: Vec<LevelStream>) -> Result<LevelStream> {
        if parts.len() == 1 {
            return Ok(parts.into_iter().next().unwrap());
        }
        let total: usize = parts.iter().map(|p| p.num_entries()).sum();
        let any_rep = parts.iter().any(|p| p.rep.is_some());
        let any_def = parts.iter().any(|p| p.def.is_some());
        let mut rep = any_rep.then(|| Vec::with_capacity(total));
        let mut def = any_def.then(|| Vec::with_capacity(total));
        let mut num_rows = 0;
        let mut values = Vec::with_capacity(parts.len());
        for p in parts {
            let n = p.num_entries();
            if let Some(r) = rep.as_mut() {
                match &p.rep {
                    Some(pr) => r.extend_from_slice(pr),
                    None => return Err(Error::corrupt("pages of a list column disagree about repetition")),
                }
            }
            if let Some(d) = def.as_mut() {
                match &p.def {
                    Some(pd) => d.extend_from_slice(pd),
                    None => d.extend(std::iter::repeat_n(0, n)),
                }
            }
            num_rows += p.num_rows;
            values.push(p.values);
        }
        Ok(LevelStream { rep, def, values: DataBlock::concat(values)?, num_rows })
    }

    /// Keep only the rows in the sorted, non-overlapping `ranges`.
    pub fn select_rows(&self, layers: &Layers, ranges: &[(usize, usize)]) -> Result<LevelStream> {
        let n = self.num_entries();
        // Entry index where each row starts, and the visible-value index at
        // each entry, computed in one pass.
        let mut row_start = Vec::with_capacity(self.num_rows + 1);
        let mut vis_before = Vec::with_capacity(n + 1);
        let mut vis = 0usize;
        for i in 0..n {
            let starts = match &self.rep {
                Some(r) => r[i] == layers.max_rep,
                None => true,
            };
            if starts {
                row_start.push(i);
            }
            vis_before.push(vis);
            if self.def.as_ref().is_none_or(|d| layers.is_visible(d[i])) {
                vis += 1;
            }
        }
        row_start.push(n);
        vis_before.push(vis);
        let mut rep = self.rep.as_ref().map(|_| Vec::new());
        let mut def = self.def.as_ref().map(|_| Vec::new());
        let mut value_ranges = Vec::with_capacity(ranges.len());
        let mut num_rows = 0;
        for &(s, e) in ranges {
            if s > e || e > self.num_rows {
                return Err(Error::invalid_input(format!("rows {s}..{e} outside {} rows", self.num_rows)));
            }
            let (es, ee) = (row_start[s], row_start[e]);
            if let (Some(out), Some(src)) = (rep.as_mut(), &self.rep) {
                out.extend_from_slice(&src[es..ee]);
            }
            if let (Some(out), Some(src)) = (def.as_mut(), &self.def) {
                out.extend_from_slice(&src[es..ee]);
            }
            value_ranges.push((vis_before[es], vis_before[ee]));
            num_rows += e - s;
        }
        Ok(LevelStream { rep, def, values: self.values.gather_ranges(&value_ranges)?, num_rows })
    }
}
