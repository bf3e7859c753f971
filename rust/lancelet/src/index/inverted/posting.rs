//! Decoding a token's posting list, its positions and block impacts
//! (format v1/v2, block size 128) as pylance 14 writes them.
//!
//! ```text
//! full block (128 docs):
//!     f32 LE  block max score
//!     u32 LE  first doc id
//!     u8      num_bits of the doc deltas, then 16*num_bits bytes:
//!             BitPacker4x sorted-compressed docs (initial = first doc id)
//!     u8      num_bits of the frequencies, then 16*num_bits bytes:
//!             BitPacker4x compressed frequencies
//! tail block (< 128 docs, the last one; n = _length - 128 * full blocks):
//!     f32 LE  block max score
//!     varint_delta_v1: LEB128 first doc id, n-1 LEB128 deltas, n LEB128 freqs
//!     fixed32_v1 (format v1): n u32 LE doc ids, n u32 LE freqs
//! positions (packed_delta_v1, one stream per token, block b starting at
//! _position_block_offset[b]): the block's docs' positions in posting order,
//!     within a doc the first absolute and the rest as deltas, cut into
//!     groups of 128 values: full groups as u8 num_bits + BitPacker4x
//!     (16*num_bits bytes), the last partial group as LEB128 varints.
//! ```
//!
//! Every read is bounds-checked: short or inconsistent bytes are
//! [`Error::Corrupt`], never a panic.

use bitpacking::{BitPacker, BitPacker4x};

use crate::error::{Error, Result};

/// Docs per posting block.
pub const BLOCK: usize = 128;

/// How tail blocks store their doc ids and frequencies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TailCodec {
    /// LEB128: first doc, deltas, frequencies (format v2).
    VarintDelta,
    /// Raw u32 LE doc ids then frequencies (format v1).
    Fixed32,
}

impl TailCodec {
    /// The codec a `posting_tail_codec` metadata value names.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "varint_delta_v1" => Ok(TailCodec::VarintDelta),
            "fixed32_v1" => Ok(TailCodec::Fixed32),
            o => Err(Error::unsupported(format!("FTS posting tail codec {o:?}"))),
        }
    }
}

/// A decoded posting list: ascending doc ids with their frequencies, and
/// each doc's positions when the index has them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Postings {
    /// Doc ids (rows of the partition's docs file), ascending.
    pub docs: Vec<u32>,
    /// Term frequency of each doc.
    pub freqs: Vec<u32>,
    /// Positions of the token in each doc (ascending), when indexed.
    pub positions: Option<Vec<Vec<u32>>>,
}

/// A cursor over bytes that fails with `Corrupt` instead of panicking.
pub struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    /// Read `b` from the start.
    pub fn new(b: &'a [u8]) -> Self {
        Cursor { b, at: 0 }
    }

    fn short(&self, what: &str) -> Error {
        Error::corrupt(format!("FTS {what} ends early (at byte {} of {})", self.at, self.b.len()))
    }

    /// `n` bytes.
    pub fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.b.len()).ok_or_else(|| self.short(what))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }

    /// One byte.
    pub fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }

    /// A u32 LE.
    pub fn u32(&mut self, what: &str) -> Result<u32> {
        let s = self.take(4, what)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }

    /// An f32 LE.
    pub fn f32(&mut self, what: &str) -> Result<f32> {
        Ok(f32::from_bits(self.u32(what)?))
    }

    /// An unsigned LEB128 value that must fit a u32.
    pub fn varint(&mut self, what: &str) -> Result<u32> {
        let mut v: u64 = 0;
        for shift in (0..35).step_by(7) {
            let byte = self.u8(what)?;
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return u32::try_from(v).map_err(|_| Error::corrupt(format!("FTS {what}: varint {v} exceeds u32")));
            }
        }
        Err(Error::corrupt(format!("FTS {what}: varint longer than 5 bytes")))
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.b.len() - self.at
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.at
    }
}

/// One BitPacker4x group of 128 values (`u8 num_bits` + packed bytes);
/// `sorted_from` decodes sorted deltas from that initial value.
fn packed_group(c: &mut Cursor<'_>, out: &mut [u32; BLOCK], sorted_from: Option<u32>, what: &str) -> Result<()> {
    let bits = c.u8(what)?;
    if bits > 32 {
        return Err(Error::corrupt(format!("FTS {what}: {bits} bits per value")));
    }
    let bytes = c.take(16 * bits as usize, what)?;
    let p = BitPacker4x::new();
    match sorted_from {
        Some(init) => {
            p.decompress_sorted(init, bytes, out, bits);
        }
        None => {
            p.decompress(bytes, out, bits);
        }
    }
    Ok(())
}

/// Decode one posting block holding `n` docs (`n == 128` for full blocks);
/// docs and frequencies are appended. Returns the block's max score.
pub fn decode_block(bytes: &[u8], n: usize, tail: TailCodec, docs: &mut Vec<u32>, freqs: &mut Vec<u32>) -> Result<f32> {
    let mut c = Cursor::new(bytes);
    let max = c.f32("posting block")?;
    if n == BLOCK {
        let first = c.u32("posting block")?;
        let mut buf = [0u32; BLOCK];
        packed_group(&mut c, &mut buf, Some(first), "posting block doc ids")?;
        docs.extend_from_slice(&buf);
        packed_group(&mut c, &mut buf, None, "posting block frequencies")?;
        freqs.extend_from_slice(&buf);
    } else {
        match tail {
            TailCodec::VarintDelta => {
                let mut doc = 0u32;
                for i in 0..n {
                    let v = c.varint("posting tail doc ids")?;
                    doc = if i == 0 { v } else { doc.checked_add(v).ok_or_else(|| Error::corrupt("FTS posting tail: doc id overflows u32"))? };
                    docs.push(doc);
                }
                for _ in 0..n {
                    freqs.push(c.varint("posting tail frequencies")?);
                }
            }
            TailCodec::Fixed32 => {
                for _ in 0..n {
                    docs.push(c.u32("posting tail doc ids")?);
                }
                for _ in 0..n {
                    freqs.push(c.u32("posting tail frequencies")?);
                }
            }
        }
    }
    if c.remaining() != 0 {
        return Err(Error::corrupt(format!("FTS posting block has {} bytes after its {n} docs", c.remaining())));
    }
    Ok(max)
}

/// Decode a posting list of `length` docs from its blocks, checking that
/// doc ids ascend and stay below `num_docs`.
pub fn decode(blocks: &[&[u8]], length: u32, tail: TailCodec, num_docs: usize) -> Result<Postings> {
    let length = length as usize;
    let want_blocks = length.div_ceil(BLOCK);
    if blocks.len() != want_blocks {
        return Err(Error::corrupt(format!("FTS posting list of {length} docs has {} blocks, not {want_blocks}", blocks.len())));
    }
    let mut docs = Vec::with_capacity(length);
    let mut freqs = Vec::with_capacity(length);
    for (i, b) in blocks.iter().enumerate() {
        let n = (length - i * BLOCK).min(BLOCK);
        decode_block(b, n, tail, &mut docs, &mut freqs)?;
    }
    for w in docs.windows(2) {
        if w[0] >= w[1] {
            return Err(Error::corrupt(format!("FTS posting list doc ids do not ascend ({} then {})", w[0], w[1])));
        }
    }
    if docs.last().is_some_and(|&d| d as usize >= num_docs) {
        return Err(Error::corrupt(format!("FTS posting list names doc {} of {num_docs}", docs.last().copied().unwrap_or(0))));
    }
    if freqs.contains(&0) {
        return Err(Error::corrupt("FTS posting list has a zero frequency"));
    }
    Ok(Postings { docs, freqs, positions: None })
}

/// Decode `count` position values of one block's stream.
fn position_values(bytes: &[u8], count: usize) -> Result<Vec<u32>> {
    let mut c = Cursor::new(bytes);
    let mut out = Vec::with_capacity(count);
    let mut buf = [0u32; BLOCK];
    while count - out.len() >= BLOCK {
        packed_group(&mut c, &mut buf, None, "positions")?;
        out.extend_from_slice(&buf);
    }
    while out.len() < count {
        out.push(c.varint("positions")?);
    }
    Ok(out)
}

/// Attach positions to `p`: `stream` is the token's position bytes,
/// `offsets` where each posting block's part starts.
pub fn decode_positions(p: &mut Postings, stream: &[u8], offsets: &[u32]) -> Result<()> {
    let nblocks = p.docs.len().div_ceil(BLOCK);
    if offsets.len() != nblocks {
        return Err(Error::corrupt(format!("FTS positions: {} block offsets for {nblocks} blocks", offsets.len())));
    }
    let mut all = Vec::with_capacity(p.docs.len());
    for b in 0..nblocks {
        let start = offsets[b] as usize;
        let end = offsets.get(b + 1).map_or(stream.len(), |&e| e as usize);
        if start > end || end > stream.len() {
            return Err(Error::corrupt(format!("FTS positions: block {b} spans bytes {start}..{end} of {}", stream.len())));
        }
        let freqs = &p.freqs[b * BLOCK..((b + 1) * BLOCK).min(p.freqs.len())];
        let count =
            freqs.iter().try_fold(0usize, |a, &f| a.checked_add(f as usize)).ok_or_else(|| Error::corrupt("FTS positions: count overflows"))?;
        let vals = position_values(&stream[start..end], count)?;
        let mut it = vals.into_iter();
        for &f in freqs {
            let mut doc = Vec::with_capacity(f as usize);
            let mut pos = 0u32;
            for k in 0..f {
                let v = it.next().ok_or_else(|| Error::corrupt("FTS positions end early"))?;
                pos = if k == 0 { v } else { pos.checked_add(v).ok_or_else(|| Error::corrupt("FTS position overflows u32"))? };
                doc.push(pos);
            }
            all.push(doc);
        }
    }
    p.positions = Some(all);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_block_of_research_example() {
        // inv1 token `dog`: docs 0,1,4 with tf 1,1,3 (research doc §1.3).
        let b = [0x0b, 0xd3, 0x8f, 0x3f, 0x00, 0x01, 0x03, 0x01, 0x01, 0x03];
        let p = decode(&[&b], 3, TailCodec::VarintDelta, 6).unwrap();
        assert_eq!(p.docs, vec![0, 1, 4]);
        assert_eq!(p.freqs, vec![1, 1, 3]);
        assert!(decode(&[&b[..9]], 3, TailCodec::VarintDelta, 6).is_err());
        assert!(decode(&[&b], 3, TailCodec::VarintDelta, 4).is_err());
        assert!(decode(&[&b], 2, TailCodec::VarintDelta, 6).is_err());
    }

    #[test]
    fn full_block_round_trip() {
        let docs: Vec<u32> = (0..128u32).map(|i| i * 3 + 5).collect();
        let freqs: Vec<u32> = (0..128u32).map(|i| i % 7 + 1).collect();
        let p = BitPacker4x::new();
        let mut b = 1.5f32.to_le_bytes().to_vec();
        b.extend_from_slice(&docs[0].to_le_bytes());
        let bits = p.num_bits_sorted(docs[0], &docs);
        let mut buf = vec![0u8; 16 * 32];
        let n = p.compress_sorted(docs[0], &docs, &mut buf, bits);
        b.push(bits);
        b.extend_from_slice(&buf[..n]);
        let bits = p.num_bits(&freqs);
        let n = p.compress(&freqs, &mut buf, bits);
        b.push(bits);
        b.extend_from_slice(&buf[..n]);
        let got = decode(&[&b], 128, TailCodec::VarintDelta, 1000).unwrap();
        assert_eq!(got.docs, docs);
        assert_eq!(got.freqs, freqs);
        for cut in [0, 3, 8, 9, b.len() - 1] {
            assert!(decode(&[&b[..cut]], 128, TailCodec::VarintDelta, 1000).is_err());
        }
    }

    #[test]
    fn positions_of_research_example() {
        // q3 `dog`: docs 0,1,4,6 with positions [8],[3],[0,1,2],[1].
        let mut p = Postings { docs: vec![0, 1, 4, 6], freqs: vec![1, 1, 3, 1], positions: None };
        decode_positions(&mut p, &[8, 3, 0, 1, 1, 1], &[0]).unwrap();
        assert_eq!(p.positions.unwrap(), vec![vec![8], vec![3], vec![0, 1, 2], vec![1]]);
        let mut p = Postings { docs: vec![0], freqs: vec![2], positions: None };
        assert!(decode_positions(&mut p, &[8], &[0]).is_err());
        assert!(decode_positions(&mut p, &[8, 1], &[5]).is_err());
    }
}
