//! TileDB's bit shuffle filter (id 8), both ways.
//!
//! TileDB splits every input part into a piece whose length is a multiple
//! of 8 and the remainder; each becomes a part of its own. The metadata is
//! `u32 parts, parts × u32 length`; the data keeps its length. A part whose
//! length is not a multiple of 8 and of the value width is stored as is.
//! Others are shuffled block by block (blocks of 8192 bytes, the last one
//! shorter). In a block of `n` values of `w` bytes, the first `m = n - n % 8`
//! values are bit-transposed — output bit `(j * 8 + k) * m + i` (bytes
//! filled from their least significant bit) is bit `k` of byte `j` of value
//! `i` — and the last `n % 8` values follow unchanged. This is the layout of
//! the bitshuffle library TileDB links (blosc2's); checked on tiledb-py's
//! bytes in `tests/test_tiledb_codecs.py`.

use super::cursor::Cursor;
use crate::error::{Error, Result};

/// Bytes per shuffled block.
pub const BLOCK: usize = 8192;

fn transpose_block(src: &[u8], width: usize, out: &mut [u8], forward: bool) {
    let n = src.len() / width;
    let m = n - n % 8;
    let body = m * width;
    // Zero the shuffled region: bits are ORed in.
    for b in out[..body].iter_mut() {
        *b = 0;
    }
    if m > 0 {
        let row_bytes = m / 8;
        for i in 0..m {
            for j in 0..width {
                for k in 0..8 {
                    let row = j * 8 + k;
                    if forward {
                        let bit = (src[i * width + j] >> k) & 1;
                        out[row * row_bytes + i / 8] |= bit << (i % 8);
                    } else {
                        let bit = (src[row * row_bytes + i / 8] >> (i % 8)) & 1;
                        out[i * width + j] |= bit << k;
                    }
                }
            }
        }
    }
    out[body..].copy_from_slice(&src[body..]);
}

fn shuffle_part(part: &[u8], width: usize, forward: bool) -> Vec<u8> {
    let width = width.max(1);
    let mut out = vec![0u8; part.len()];
    if part.len() % width != 0 || part.len() % 8 != 0 {
        out.copy_from_slice(part);
        return out;
    }
    for (s, o) in part.chunks(BLOCK).zip(out.chunks_mut(BLOCK)) {
        transpose_block(s, width, o, forward);
    }
    out
}

/// Bit-shuffle one part (what TileDB's filter does to a part whose length
/// is a multiple of 8).
pub fn bitshuffle(part: &[u8], width: usize) -> Vec<u8> {
    shuffle_part(part, width, true)
}

/// Undo [`bitshuffle`].
pub fn bitunshuffle(part: &[u8], width: usize) -> Vec<u8> {
    shuffle_part(part, width, false)
}

/// Apply the filter to one chunk: returns `(metadata, data)` as TileDB
/// writes them (the part list of this filter in front of `md_in`, the
/// earlier filters' metadata, which it passes on unchanged).
pub fn forward(data: &[u8], width: usize, md_in: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let cut = data.len() - data.len() % 8;
    let parts: Vec<&[u8]> = [&data[..cut], &data[cut..]].into_iter().filter(|p| !p.is_empty()).collect();
    let mut md = (parts.len() as u32).to_le_bytes().to_vec();
    let mut out = Vec::with_capacity(data.len());
    for p in &parts {
        md.extend_from_slice(&(p.len() as u32).to_le_bytes());
        out.extend_from_slice(&bitshuffle(p, width));
    }
    md.extend_from_slice(md_in);
    (md, out)
}

/// Reverse the filter on one chunk: `md` starts with this filter's part
/// list; returns the rest of the metadata and the unshuffled data.
pub fn reverse(md: &[u8], data: &[u8], width: usize) -> Result<(Vec<u8>, Vec<u8>)> {
    let mut c = Cursor::new(md);
    let n = c.u32("bit shuffle part count")? as usize;
    if n > c.remaining() / 4 {
        return Err(Error::corrupt(format!("bit shuffle part count {n} does not fit the metadata")));
    }
    let mut d = Cursor::new(data);
    let mut out = Vec::with_capacity(data.len());
    for _ in 0..n {
        let len = c.u32("bit shuffle part length")? as usize;
        out.extend_from_slice(&bitunshuffle(d.take(len, "bit shuffle part")?, width));
    }
    Ok((c.rest().to_vec(), out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn matches_tiledb_py_bytes() {
        // 13 int64 values (-7 + 1000 i) as tiledb-py 0.36.1 bit-shuffles
        // them: the first 8 values transposed, the last 5 verbatim.
        let vals: Vec<u8> = (0..13i64).flat_map(|i| (i * 1000 - 7).to_le_bytes()).collect();
        let got = bitshuffle(&vals, 8);
        assert_eq!(&got[..8], &[0xff, 0x00, 0x00, 0x55, 0x99, 0x4b, 0xc7, 0x3f]);
        assert_eq!(&got[64..72], &7993i64.to_le_bytes());
        assert_eq!(bitunshuffle(&got, 8), vals);
    }

    proptest! {
        #[test]
        fn round_trips(data in proptest::collection::vec(any::<u8>(), 0..20000), w in prop::sample::select(vec![1usize, 2, 4, 8, 3, 16])) {
            let (md, enc) = forward(&data, w, &[9, 9]);
            prop_assert_eq!(enc.len(), data.len());
            let (rest, dec) = reverse(&md, &enc, w).unwrap();
            prop_assert_eq!(rest, vec![9u8, 9]);
            prop_assert_eq!(dec, data);
        }
    }

    #[test]
    fn bad_part_lengths_are_corrupt() {
        let (md, enc) = forward(&[1u8; 24], 4, &[]);
        let mut bad = md.clone();
        bad[4] = 200;
        assert!(matches!(reverse(&bad, &enc, 4), Err(Error::Corrupt { .. })));
        assert!(matches!(reverse(&md[..6], &enc, 4), Err(Error::Corrupt { .. })));
    }
}
