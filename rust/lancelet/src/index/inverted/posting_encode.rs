//! Encoding one token's posting list as pylance 14 writes it in
//! `part_N_invert.lance` (format v2, 128 documents per block).
//!
//! A posting list (ascending doc ids with term frequencies) is cut into
//! blocks of 128 docs; each block is one `large_binary` of `_posting`:
//!
//! ```text
//! full block (128 docs)                  tail block (< 128 docs, last)
//! f32 LE  block max BM25 score           f32 LE  block max BM25 score
//! u32 LE  first doc id                   varint  first doc id
//! u8      bits per doc delta             varint  doc id - previous doc id  (n-1 times)
//! 16*bits BitPacker4x::compress_sorted   varint  frequency                 (n times)
//!         (initial = first doc id)
//! u8      bits per frequency
//! 16*bits BitPacker4x::compress(freqs)
//! ```
//! (`posting_tail_codec = varint_delta_v1`; varints are unsigned LEB128.)
//!
//! `_impacts` holds one element per block, then one per group of 32 blocks
//! (one for the whole list when it has at most 32 blocks):
//! `varint last doc id, varint P, P pairs` — the Pareto frontier of
//! (frequency, quantized document length) over the block's docs, increasing
//! in both, each pair as `varint ((freq - prev_freq - 1) << 1 | flag)` then,
//! when `flag`, `u8 norm - prev_norm` (a norm step of 1 is implied).
//! The norm is the document's token count quantized to one byte
//! ([`quantize_norm`]).
//!
//! With positions, `_compressed_position` is one stream per token: for each
//! block, the positions of its docs in order (per doc the first absolute,
//! then differences), in groups of 128 values — a full group is `u8 bits` +
//! `BitPacker4x::compress`, the last partial group plain varints — and
//! `_position_block_offset[b]` is where block `b` starts
//! (`positions_codec = packed_delta_v1`).
//!
//! Scores are BM25 in f32 with the partition's statistics (`K1` 1.2, `B`
//! 0.75), computed in the same order of operations as pylance so the block
//! maxima are bit-equal to pylance's.

use bitpacking::{BitPacker, BitPacker4x};

/// Documents per posting block.
pub const BLOCK_SIZE: usize = 128;
/// Posting blocks per group `_impacts` element.
pub const IMPACT_GROUP_BLOCKS: usize = 32;
/// BM25 term-frequency saturation.
pub const K1: f32 = 1.2;
/// BM25 length normalization.
pub const B: f32 = 0.75;

/// BM25 inverse document frequency of a token in `token_docs` of `num_docs`.
pub fn idf(token_docs: u64, num_docs: u64) -> f32 {
    let n = num_docs as f32;
    let t = token_docs as f32;
    ((n - t + 0.5) / (t + 0.5) + 1.0).ln()
}

/// BM25 weight of a document holding the token `freq` times among
/// `doc_tokens` tokens, the average document length being `avgdl`.
pub fn doc_weight(freq: u32, doc_tokens: u32, avgdl: f32) -> f32 {
    let freq = freq as f32;
    let doc_norm = K1 * (1.0 - B + B * doc_tokens as f32 / avgdl);
    (K1 + 1.0) * freq / (freq + doc_norm)
}

/// A document length quantized to a byte (a float with a 3-bit mantissa;
/// exact below 16).
pub fn quantize_norm(len: u32) -> u8 {
    if len < 16 {
        return len as u8;
    }
    let e = 31 - len.leading_zeros();
    (8 * (e - 2) + ((len >> (e - 3)) & 7)) as u8
}

/// Append `v` as an unsigned LEB128 varint.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// One token's encoded posting list: the values of its `part_N_invert.lance`
/// row.
#[derive(Debug, Clone, PartialEq)]
pub struct EncodedPosting {
    /// `_posting`: one element per block.
    pub blocks: Vec<Vec<u8>>,
    /// `_max_score`.
    pub max_score: f32,
    /// `_length`: the number of documents.
    pub length: u32,
    /// `_impacts`: one element per block, then one per group of 32 blocks.
    pub impacts: Vec<Vec<u8>>,
    /// `_compressed_position` and `_position_block_offset`, with positions.
    pub positions: Option<(Vec<u8>, Vec<u32>)>,
}

/// Encode a posting list. `docs` ascending, `freqs[i]` the token's count in
/// `docs[i]`, `positions` (when kept) the positions of each doc in order,
/// `freqs[i]` of them per doc, ascending within a doc; `doc_len(d)` the
/// token count of doc `d`; `idf` and `avgdl` the partition's statistics.
pub fn encode_posting(docs: &[u32], freqs: &[u32], positions: Option<&[u32]>, doc_len: impl Fn(u32) -> u32, idf: f32, avgdl: f32) -> EncodedPosting {
    debug_assert_eq!(docs.len(), freqs.len());
    let packer = BitPacker4x::new();
    let mut blocks = Vec::with_capacity(docs.len().div_ceil(BLOCK_SIZE));
    let mut impacts = Vec::with_capacity(blocks.capacity() + 1);
    let mut max_score = f32::MIN;
    let mut pos_stream = Vec::new();
    let mut pos_offsets = Vec::new();
    let mut pos_cursor = 0usize;
    let mut group_pairs: Vec<(u32, u8)> = Vec::new();
    let mut groups: Vec<Vec<u8>> = Vec::new();
    for (b, (bdocs, bfreqs)) in docs.chunks(BLOCK_SIZE).zip(freqs.chunks(BLOCK_SIZE)).enumerate() {
        let mut block_max = f32::MIN;
        let mut pairs: Vec<(u32, u8)> = Vec::with_capacity(bdocs.len());
        for (&d, &f) in bdocs.iter().zip(bfreqs) {
            let len = doc_len(d);
            let s = idf * doc_weight(f, len, avgdl);
            if s > block_max {
                block_max = s;
            }
            pairs.push((f, quantize_norm(len)));
        }
        if block_max > max_score {
            max_score = block_max;
        }
        let mut out = Vec::with_capacity(16 + bdocs.len() * 2);
        out.extend_from_slice(&block_max.to_le_bytes());
        if bdocs.len() == BLOCK_SIZE {
            out.extend_from_slice(&bdocs[0].to_le_bytes());
            let bits = packer.num_bits_sorted(bdocs[0], bdocs);
            out.push(bits);
            let start = out.len();
            out.resize(start + 16 * bits as usize, 0);
            packer.compress_sorted(bdocs[0], bdocs, &mut out[start..], bits);
            let bits = packer.num_bits(bfreqs);
            out.push(bits);
            let start = out.len();
            out.resize(start + 16 * bits as usize, 0);
            packer.compress(bfreqs, &mut out[start..], bits);
        } else {
            put_varint(&mut out, u64::from(bdocs[0]));
            for w in bdocs.windows(2) {
                put_varint(&mut out, u64::from(w[1] - w[0]));
            }
            for &f in bfreqs {
                put_varint(&mut out, u64::from(f));
            }
        }
        blocks.push(out);
        impacts.push(encode_impacts(*bdocs.last().expect("non-empty block"), &mut pairs.clone()));
        group_pairs.extend_from_slice(&pairs);
        let last_block = (b + 1) * BLOCK_SIZE >= docs.len();
        if (b + 1) % IMPACT_GROUP_BLOCKS == 0 || last_block {
            groups.push(encode_impacts(*bdocs.last().expect("non-empty block"), &mut group_pairs));
            group_pairs.clear();
        }
        if let Some(pos) = positions {
            pos_offsets.push(pos_stream.len() as u32);
            let n: usize = bfreqs.iter().map(|&f| f as usize).sum();
            let mut values = Vec::with_capacity(n);
            let mut at = pos_cursor;
            for &f in bfreqs {
                let mut prev = 0u32;
                for (k, &p) in pos[at..at + f as usize].iter().enumerate() {
                    values.push(if k == 0 { p } else { p - prev });
                    prev = p;
                }
                at += f as usize;
            }
            pos_cursor = at;
            encode_position_values(&packer, &values, &mut pos_stream);
        }
    }
    impacts.extend(groups);
    EncodedPosting {
        blocks,
        max_score: if docs.is_empty() { 0.0 } else { max_score },
        length: docs.len() as u32,
        impacts,
        positions: positions.map(|_| (pos_stream, pos_offsets)),
    }
}

/// Groups of 128 values bit-packed, the rest as varints.
fn encode_position_values(packer: &BitPacker4x, values: &[u32], out: &mut Vec<u8>) {
    let mut chunks = values.chunks_exact(BitPacker4x::BLOCK_LEN);
    for group in &mut chunks {
        let bits = packer.num_bits(group);
        out.push(bits);
        let start = out.len();
        out.resize(start + 16 * bits as usize, 0);
        packer.compress(group, &mut out[start..], bits);
    }
    for &v in chunks.remainder() {
        put_varint(out, u64::from(v));
    }
}

/// One `_impacts` element: the frontier of `(freq, norm)` pairs (consumed).
fn encode_impacts(last_doc: u32, pairs: &mut [(u32, u8)]) -> Vec<u8> {
    // By norm ascending, the largest frequency first; keep a pair only when
    // its frequency beats every pair of a smaller norm.
    pairs.sort_unstable_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)));
    let mut frontier: Vec<(u32, u8)> = Vec::new();
    for &(f, n) in pairs.iter() {
        if frontier.last().is_none_or(|&(pf, pn)| f > pf && n > pn) {
            frontier.push((f, n));
        }
    }
    let mut out = Vec::with_capacity(4 + frontier.len() * 2);
    put_varint(&mut out, u64::from(last_doc));
    put_varint(&mut out, frontier.len() as u64);
    let (mut pf, mut pn) = (0u32, 0u8);
    for (f, n) in frontier {
        let d = n - pn;
        let flag = u64::from(d != 1);
        put_varint(&mut out, (u64::from(f - pf - 1) << 1) | flag);
        if d != 1 {
            out.push(d);
        }
        pf = f;
        pn = n;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn norms_as_probed() {
        let probed = [
            (1, 1),
            (2, 2),
            (3, 3),
            (10, 10),
            (23, 19),
            (24, 20),
            (25, 20),
            (30, 23),
            (40, 26),
            (50, 28),
            (64, 32),
            (100, 36),
            (127, 39),
            (128, 40),
            (129, 40),
            (200, 44),
            (255, 47),
            (256, 48),
            (300, 49),
            (500, 55),
            (1000, 63),
            (2000, 71),
            (5000, 81),
            (10000, 89),
            (40000, 105),
            (70000, 112),
            (100000, 116),
            (300000, 129),
        ];
        for (len, q) in probed {
            assert_eq!(quantize_norm(len), q, "{len}");
        }
    }

    #[test]
    fn inv1_dog() {
        // docs 0, 1, 4 with tf 1, 1, 3; lengths 6, 3, 3; N = 6, avgdl 3.5.
        let lens = |d: u32| if d == 0 { 6 } else { 3 };
        let p = encode_posting(&[0, 1, 4], &[1, 1, 3], None, lens, idf(3, 6), 21.0 / 6.0);
        assert_eq!(p.blocks, vec![vec![0x0b, 0xd3, 0x8f, 0x3f, 0, 1, 3, 1, 1, 3]]);
        assert_eq!(p.impacts, vec![vec![4, 1, 5, 3], vec![4, 1, 5, 3]]);
        assert!((p.max_score - 1.123628).abs() < 1e-6);
        assert_eq!(p.length, 3);
    }

    #[test]
    fn frontier_example() {
        let mut pairs = vec![(1, 2), (2, 3), (3, 5), (4, 7), (1, 5), (2, 9)];
        assert_eq!(encode_impacts(9, &mut pairs)[2..], [0x01, 0x02, 0x00, 0x01, 0x02, 0x01, 0x02]);
    }

    #[test]
    fn q3_dog_positions() {
        let p = encode_posting(&[0, 1, 4, 6], &[1, 1, 3, 1], Some(&[8, 3, 0, 1, 2, 1]), |_| 3, 1.0, 3.5);
        assert_eq!(p.positions, Some((vec![8, 3, 0, 1, 1, 1], vec![0])));
    }

    #[test]
    fn full_blocks_pack() {
        let docs: Vec<u32> = (0..300).map(|i| i * 3).collect();
        let freqs: Vec<u32> = (0..300).map(|i| 1 + i % 4).collect();
        let p = encode_posting(&docs, &freqs, None, |_| 10, 0.5, 10.0);
        assert_eq!(p.blocks.len(), 3);
        assert_eq!(p.impacts.len(), 4);
        let b = &p.blocks[1];
        assert_eq!(u32::from_le_bytes(b[4..8].try_into().unwrap()), 384);
        let bits = b[8];
        let mut out = [0u32; 128];
        BitPacker4x::new().decompress_sorted(384, &b[9..9 + 16 * bits as usize], &mut out, bits);
        assert_eq!(&out[..], &docs[128..256]);
        // One `_impacts` group element per 32 blocks, after the blocks'.
        let docs: Vec<u32> = (0..128 * 70 + 5).collect();
        let freqs = vec![1; docs.len()];
        let p = encode_posting(&docs, &freqs, None, |_| 3, 0.5, 3.0);
        assert_eq!(p.impacts.len(), 71 + 3);
        assert_eq!(p.impacts[71][..2], [0xff, 0x1f]); // last doc 4095 as a varint
        assert_eq!(p.impacts[72][..2], [0xff, 0x3f]); // 8191
    }
}
