//! Decoded value buffers, before they become Arrow arrays.
//!
//! A [`DataBlock`] holds the *visible items* of a page (or of several pages
//! concatenated): every leaf slot that exists in the Arrow output, including
//! null items (whose bytes are zero / empty), but not the invisible entries
//! of null or empty lists.

use arrow_buffer::{bit_util, BooleanBufferBuilder};

use crate::error::{Error, Result};

/// Offsets of variable-width values, 0-based, `len + 1` entries.
#[derive(Debug, Clone, PartialEq)]
pub enum Offsets {
    /// 32-bit offsets (string, binary).
    I32(Vec<i32>),
    /// 64-bit offsets (large_string, large_binary).
    I64(Vec<i64>),
}

impl Offsets {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Offsets::I32(o) => o.len().saturating_sub(1),
            Offsets::I64(o) => o.len().saturating_sub(1),
        }
    }
    /// True if there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Start and end of value `i`.
    pub fn range(&self, i: usize) -> (usize, usize) {
        match self {
            Offsets::I32(o) => (o[i] as usize, o[i + 1] as usize),
            Offsets::I64(o) => (o[i] as usize, o[i + 1] as usize),
        }
    }
    /// Empty offsets of the given width.
    pub fn new(wide: bool) -> Self {
        if wide {
            Offsets::I64(vec![0])
        } else {
            Offsets::I32(vec![0])
        }
    }
    /// Append one value end (absolute position in the data buffer).
    pub fn push_end(&mut self, end: usize) -> Result<()> {
        match self {
            Offsets::I32(o) => {
                let e = i32::try_from(end)
                    .map_err(|_| Error::invalid_input("more than 2 GiB of string/binary data in one array; use large_string/large_binary"))?;
                o.push(e)
            }
            Offsets::I64(o) => o.push(end as i64),
        }
        Ok(())
    }
}

/// Whether variable-width bytes are known to be ASCII. Decoders that learn
/// it for free set it (FSST with an ASCII symbol table and ASCII escaped
/// bytes), so that the Arrow conversion need not walk the bytes again to
/// skip UTF-8 validation; `false` means "not known" (the bytes are checked).
/// A hint about the bytes, not part of the value: any two compare equal.
#[derive(Debug, Clone, Copy, Default)]
pub struct AsciiHint(pub bool);

impl PartialEq for AsciiHint {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// Decoded values.
#[derive(Debug, Clone, PartialEq)]
pub enum DataBlock {
    /// Fixed-width values; `bits` is 1 for booleans (a bitmap, LSB first),
    /// else a multiple of 8 (little-endian values).
    Fixed { bits: u64, data: Vec<u8>, len: usize },
    /// Variable-width values (`ascii`: see [`AsciiHint`]).
    Variable { offsets: Offsets, data: Vec<u8>, ascii: AsciiHint },
    /// Fixed-size lists: `dim` items per value, optional item validity.
    FixedSizeList { dim: usize, items: Box<DataBlock>, item_validity: Option<Vec<u8>> },
    /// Values that are all null (no bytes): only a count.
    Nulls { len: usize },
}

impl DataBlock {
    /// Variable-width values not known to be ASCII.
    pub fn variable(offsets: Offsets, data: Vec<u8>) -> DataBlock {
        DataBlock::Variable { offsets, data, ascii: AsciiHint(false) }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            DataBlock::Fixed { len, .. } => *len,
            DataBlock::Variable { offsets, .. } => offsets.len(),
            DataBlock::FixedSizeList { dim, items, .. } => {
                if *dim == 0 {
                    0
                } else {
                    items.len() / dim
                }
            }
            DataBlock::Nulls { len } => *len,
        }
    }

    /// True if there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// An empty block shaped like `self`.
    pub fn empty_like(&self) -> DataBlock {
        match self {
            DataBlock::Fixed { bits, .. } => DataBlock::Fixed { bits: *bits, data: Vec::new(), len: 0 },
            DataBlock::Variable { offsets, .. } => DataBlock::variable(Offsets::new(matches!(offsets, Offsets::I64(_))), Vec::new()),
            DataBlock::FixedSizeList { dim, items, item_validity } => {
                DataBlock::FixedSizeList { dim: *dim, items: Box::new(items.empty_like()), item_validity: item_validity.as_ref().map(|_| Vec::new()) }
            }
            DataBlock::Nulls { .. } => DataBlock::Nulls { len: 0 },
        }
    }

    /// Concatenate blocks of the same shape.
    pub fn concat(blocks: Vec<DataBlock>) -> Result<DataBlock> {
        if blocks.len() == 1 {
            return Ok(blocks.into_iter().next().expect("one block"));
        }
        let Some(first) = blocks.first() else { return Ok(DataBlock::Nulls { len: 0 }) };
        let mut acc = Appender::new(first);
        // Reserve once: growing by doubling moved every byte again.
        for b in &blocks {
            acc.reserve_like(b, 0, b.len());
        }
        acc.reserve_planned();
        let mut it = blocks.into_iter();
        let first = it.next().expect("checked");
        acc.append_all(&first)?;
        for b in it {
            acc.append_all(&b)?;
        }
        Ok(acc.finish())
    }

    /// Keep the values in the given `[start, end)` ranges, in order.
    pub fn gather_ranges(&self, ranges: &[(usize, usize)]) -> Result<DataBlock> {
        let mut acc = Appender::new(self);
        for &(s, e) in ranges {
            if s <= e && e <= self.len() {
                acc.reserve_like(self, s, e);
            }
        }
        acc.reserve_planned();
        for &(s, e) in ranges {
            acc.append_range(self, s, e)?;
        }
        Ok(acc.finish())
    }

    /// Values at the given indices (used to expand dictionaries).
    pub fn take(&self, indices: &[u32]) -> Result<DataBlock> {
        let n = self.len();
        if let Some(i) = indices.iter().find(|&&i| i as usize >= n) {
            return Err(Error::corrupt(format!("dictionary index {i} out of range ({n} entries)")));
        }
        // Direct paths for the usual dictionaries: sizes known up front, one
        // allocation, no per-value dispatch (offsets checked once first).
        let sane = |first: i64, last: i64, increasing: bool, len: usize| first >= 0 && increasing && last as u64 <= len as u64;
        match self {
            DataBlock::Variable { offsets: Offsets::I32(o), data, .. }
                if !sane(o.first().copied().unwrap_or(0) as i64, *o.last().unwrap_or(&0) as i64, o.windows(2).all(|w| w[0] <= w[1]), data.len()) =>
            {
                return Err(Error::corrupt("dictionary offsets are not increasing or point past its data"));
            }
            DataBlock::Variable { offsets: Offsets::I64(o), data, .. }
                if !sane(o.first().copied().unwrap_or(0), *o.last().unwrap_or(&0), o.windows(2).all(|w| w[0] <= w[1]), data.len()) =>
            {
                return Err(Error::corrupt("dictionary offsets are not increasing or point past its data"));
            }
            _ => {}
        }
        match self {
            DataBlock::Fixed { bits, data, .. } if *bits % 8 == 0 && *bits > 0 => {
                let w = (*bits / 8) as usize;
                let mut out = Vec::with_capacity(indices.len() * w);
                for &i in indices {
                    out.extend_from_slice(&data[i as usize * w..(i as usize + 1) * w]);
                }
                return Ok(DataBlock::Fixed { bits: *bits, data: out, len: indices.len() });
            }
            DataBlock::Variable { offsets: Offsets::I32(o), data, .. } => {
                let (offs, out) = take_variable(o, data, indices)?;
                return Ok(DataBlock::variable(Offsets::I32(offs), out));
            }
            DataBlock::Variable { offsets: Offsets::I64(o), data, .. } => {
                let (offs, out) = take_variable(o, data, indices)?;
                return Ok(DataBlock::variable(Offsets::I64(offs), out));
            }
            _ => {}
        }
        let mut acc = Appender::new(self);
        for &i in indices {
            let i = i as usize;
            if i >= n {
                return Err(Error::corrupt(format!("dictionary index {i} out of range ({n} entries)")));
            }
            acc.append_range(self, i, i + 1)?;
        }
        Ok(acc.finish())
    }

    /// Repeat one value `n` times (constant pages).
    pub fn repeat(&self, n: usize) -> Result<DataBlock> {
        let mut acc = Appender::new(self);
        for _ in 0..n {
            acc.append_range(self, 0, 1)?;
        }
        Ok(acc.finish())
    }
}

/// Variable-width values at `indices` (in range): offsets from 0 and bytes.
fn take_variable<O: arrow_array::OffsetSizeTrait>(o: &[O], data: &[u8], indices: &[u32]) -> Result<(Vec<O>, Vec<u8>)> {
    let range = |i: u32| o[i as usize].as_usize()..o[i as usize + 1].as_usize();
    let total: usize = indices.iter().map(|&i| range(i).len()).sum();
    if O::from_usize(total).is_none() {
        return Err(Error::invalid_input("more than 2 GiB of string/binary data in one array; use large_string/large_binary"));
    }
    let mut out = Vec::with_capacity(total);
    let mut offs = Vec::with_capacity(indices.len() + 1);
    offs.push(O::usize_as(0));
    for &i in indices {
        out.extend_from_slice(&data[range(i)]);
        offs.push(O::usize_as(out.len()));
    }
    Ok((offs, out))
}

/// Builds a block by appending ranges of other blocks of the same shape.
pub struct Appender {
    inner: AppenderKind,
    /// Room asked for by [`Appender::reserve_like`]: (values, data bytes),
    /// allocated at once by [`Appender::reserve_planned`].
    plan: (usize, usize),
}

enum AppenderKind {
    Fixed { bits: u64, data: Vec<u8>, len: usize, bools: Option<BooleanBufferBuilder> },
    Variable { offsets: Offsets, data: Vec<u8> },
    Fsl { dim: usize, items: Box<Appender>, validity: Option<BooleanBufferBuilder> },
    Nulls { len: usize },
}

impl Appender {
    /// An appender for blocks shaped like `like`.
    pub fn new(like: &DataBlock) -> Self {
        let inner = match like {
            DataBlock::Fixed { bits, .. } => {
                AppenderKind::Fixed { bits: *bits, data: Vec::new(), len: 0, bools: (*bits == 1).then(|| BooleanBufferBuilder::new(0)) }
            }
            DataBlock::Variable { offsets, .. } => {
                AppenderKind::Variable { offsets: Offsets::new(matches!(offsets, Offsets::I64(_))), data: Vec::new() }
            }
            DataBlock::FixedSizeList { dim, items, item_validity } => AppenderKind::Fsl {
                dim: *dim,
                items: Box::new(Appender::new(items)),
                validity: item_validity.as_ref().map(|_| BooleanBufferBuilder::new(0)),
            },
            DataBlock::Nulls { .. } => AppenderKind::Nulls { len: 0 },
        };
        Appender { inner, plan: (0, 0) }
    }

    /// Plan room for values `start..end` of `b` (a hint; no checks), on top
    /// of earlier plans; [`Appender::reserve_planned`] then allocates every
    /// buffer once at its final size (reserving piece by piece reallocated,
    /// and the allocator copied the whole capacity each time).
    fn reserve_like(&mut self, b: &DataBlock, start: usize, end: usize) {
        match (&mut self.inner, b) {
            (AppenderKind::Fixed { bits, bools: None, .. }, DataBlock::Fixed { .. }) => self.plan.1 += (end - start) * (*bits as usize / 8),
            (AppenderKind::Variable { .. }, DataBlock::Variable { offsets: so, .. }) if end > start && end <= so.len() => {
                self.plan.0 += end - start;
                self.plan.1 += so.range(end - 1).1.saturating_sub(so.range(start).0);
            }
            (AppenderKind::Fsl { dim, items, .. }, DataBlock::FixedSizeList { items: bi, .. }) => items.reserve_like(bi, start * *dim, end * *dim),
            _ => {}
        }
    }

    /// Allocate what [`Appender::reserve_like`] planned.
    fn reserve_planned(&mut self) {
        let (values, bytes) = std::mem::take(&mut self.plan);
        match &mut self.inner {
            AppenderKind::Fixed { data, bools: None, .. } => data.reserve_exact(bytes),
            AppenderKind::Variable { offsets, data } => {
                match offsets {
                    Offsets::I32(o) => o.reserve_exact(values),
                    Offsets::I64(o) => o.reserve_exact(values),
                }
                data.reserve_exact(bytes);
            }
            AppenderKind::Fsl { items, .. } => items.reserve_planned(),
            _ => {}
        }
    }

    /// Append all of `b`.
    pub fn append_all(&mut self, b: &DataBlock) -> Result<()> {
        self.append_range(b, 0, b.len())
    }

    /// Append values `start..end` of `b`.
    pub fn append_range(&mut self, b: &DataBlock, start: usize, end: usize) -> Result<()> {
        if start > end || end > b.len() {
            return Err(Error::corrupt(format!("value range {start}..{end} outside block of {}", b.len())));
        }
        let mismatch = || Error::corrupt("pages of one column decode to different value shapes");
        match (&mut self.inner, b) {
            (AppenderKind::Fixed { bits, data, len, bools }, DataBlock::Fixed { bits: b_bits, data: src, .. }) => {
                if bits != b_bits {
                    return Err(mismatch());
                }
                if let Some(bb) = bools {
                    bb.append_packed_range(start..end, src);
                } else {
                    let w = (*bits / 8) as usize;
                    data.extend_from_slice(&src[start * w..end * w]);
                }
                *len += end - start;
            }
            (AppenderKind::Variable { offsets, data }, DataBlock::Variable { offsets: so, data: sd, .. }) => {
                if end > start {
                    let (s, _) = so.range(start);
                    let (_, e) = so.range(end - 1);
                    let base = data.len();
                    data.extend_from_slice(&sd[s..e]);
                    match (offsets, so) {
                        // Same widths (the usual case): shift the ends in one pass.
                        (Offsets::I32(d), Offsets::I32(src)) => {
                            let last = i32::try_from(base + e - s).map_err(|_| {
                                Error::invalid_input("more than 2 GiB of string/binary data in one array; use large_string/large_binary")
                            })?;
                            let shift = last - (src[end] - src[start]) - src[start];
                            d.extend(src[start + 1..=end].iter().map(|&x| x + shift));
                        }
                        (Offsets::I64(d), Offsets::I64(src)) => {
                            let shift = base as i64 - src[start];
                            d.extend(src[start + 1..=end].iter().map(|&x| x + shift));
                        }
                        (offsets, so) => {
                            for i in start..end {
                                let (_, ve) = so.range(i);
                                offsets.push_end(base + ve - s)?;
                            }
                        }
                    }
                }
            }
            (AppenderKind::Fsl { dim, items, validity }, DataBlock::FixedSizeList { dim: bd, items: bi, item_validity }) => {
                if dim != bd {
                    return Err(mismatch());
                }
                items.append_range(bi, start * *dim, end * *dim)?;
                match (validity, item_validity) {
                    (Some(v), Some(src)) => v.append_packed_range(start * *dim..end * *dim, src),
                    (Some(v), None) => v.append_n((end - start) * *dim, true),
                    (None, Some(_)) => return Err(mismatch()),
                    (None, None) => {}
                }
            }
            (AppenderKind::Nulls { len }, DataBlock::Nulls { .. }) => *len += end - start,
            // A constant all-null page next to real values: pad with zeroes.
            (_, DataBlock::Nulls { .. }) => self.append_zeroes(end - start)?,
            (AppenderKind::Nulls { len }, other) => {
                let n = *len;
                let mut fresh = Appender::new(other);
                fresh.append_zeroes(n)?;
                fresh.append_range(other, start, end)?;
                *self = fresh;
            }
            _ => return Err(mismatch()),
        }
        Ok(())
    }

    /// Append `n` zero / empty values.
    pub fn append_zeroes(&mut self, n: usize) -> Result<()> {
        match &mut self.inner {
            AppenderKind::Fixed { bits, data, len, bools } => {
                if let Some(bb) = bools {
                    bb.append_n(n, false);
                } else {
                    data.resize(data.len() + n * (*bits / 8) as usize, 0);
                }
                *len += n;
            }
            AppenderKind::Variable { offsets, data } => {
                for _ in 0..n {
                    offsets.push_end(data.len())?;
                }
            }
            AppenderKind::Fsl { dim, items, validity } => {
                items.append_zeroes(n * *dim)?;
                if let Some(v) = validity {
                    v.append_n(n * *dim, false);
                }
            }
            AppenderKind::Nulls { len } => *len += n,
        }
        Ok(())
    }

    /// The finished block.
    pub fn finish(self) -> DataBlock {
        match self.inner {
            AppenderKind::Fixed { bits, data, len, bools } => match bools {
                Some(mut bb) => DataBlock::Fixed { bits, data: bb.finish().into_inner().to_vec(), len },
                None => DataBlock::Fixed { bits, data, len },
            },
            AppenderKind::Variable { offsets, data } => DataBlock::variable(offsets, data),
            AppenderKind::Fsl { dim, items, validity } => DataBlock::FixedSizeList {
                dim,
                items: Box::new(items.finish()),
                item_validity: validity.map(|mut v| v.finish().into_inner().to_vec()),
            },
            AppenderKind::Nulls { len } => DataBlock::Nulls { len },
        }
    }
}

/// Bytes needed for a bitmap of `n` bits.
pub fn bitmap_len(n: usize) -> usize {
    bit_util::ceil(n, 8)
}
