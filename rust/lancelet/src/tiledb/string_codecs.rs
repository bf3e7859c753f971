//! RLE and dictionary encoding of var-sized strings (`STRING_ASCII`,
//! `STRING_UTF8`), both ways.
//!
//! When a var-sized string column's pipeline holds an RLE (4) or dictionary
//! (14) filter, TileDB filters the strings and their offsets together: the
//! tile is one chunk, the offsets tile in `aN.tdb` is stored empty (a tile
//! of zero chunks), and the filter rebuilds the offsets on read.
//!
//! Metadata of both: `u32 0` (metadata parts), `u32 1` (data parts), `u32
//! string bytes, u32 encoded bytes, u32 offsets bytes (8 per cell)`, then
//! - RLE: `u8 run length width, u8 string length width`; data: per run
//!   `run length, string length, string` (big-endian integers of those
//!   widths: 1, 2, 4 or 8 bytes, the smallest that holds the longest run
//!   and the longest string);
//! - dictionary: `u8 id width, u8 string length width, u32 dictionary
//!   bytes`, the dictionary (per distinct string in order of first use:
//!   `length, string`); data: one big-endian id per cell. The id width holds
//!   the cell count, the length width the longest string.

use super::cursor::Cursor;
use crate::error::{Error, Result};

/// Smallest of 1, 2, 4, 8 bytes that holds `v`.
pub fn width_for(v: u64) -> u8 {
    if v <= u8::MAX as u64 {
        1
    } else if v <= u16::MAX as u64 {
        2
    } else if v <= u32::MAX as u64 {
        4
    } else {
        8
    }
}

fn put_be(out: &mut Vec<u8>, v: u64, width: u8) {
    out.extend_from_slice(&v.to_be_bytes()[8 - width as usize..]);
}

fn get_be(c: &mut Cursor, width: u8, what: &str) -> Result<u64> {
    if !matches!(width, 1 | 2 | 4 | 8) {
        return Err(Error::corrupt(format!("{what}: integer width {width}")));
    }
    let b = c.take(width as usize, what)?;
    Ok(b.iter().fold(0u64, |acc, &x| (acc << 8) | x as u64))
}

/// Decoded strings of one chunk: concatenated bytes and one start offset
/// per cell.
#[derive(Debug, Default, PartialEq)]
pub struct Strings {
    pub data: Vec<u8>,
    pub offsets: Vec<u64>,
}

fn header(md: &mut Cursor) -> Result<(usize, usize, usize)> {
    let n_md = md.u32("string codec metadata parts")?;
    let n_data = md.u32("string codec data parts")?;
    if n_md != 0 || n_data != 1 {
        return Err(Error::corrupt(format!("string codec with {n_md} metadata and {n_data} data parts (want 0 and 1)")));
    }
    let raw = md.u32("string bytes")? as usize;
    let enc = md.u32("encoded string bytes")? as usize;
    let offs = md.u32("string offsets bytes")? as usize;
    if offs % 8 != 0 {
        return Err(Error::corrupt(format!("string offsets of {offs} bytes")));
    }
    Ok((raw, enc, offs / 8))
}

fn check_total(s: &Strings, raw: usize, cells: usize) -> Result<()> {
    if s.data.len() != raw || s.offsets.len() != cells {
        return Err(Error::corrupt(format!(
            "strings decode to {} bytes in {} cells, metadata says {raw} bytes in {cells}",
            s.data.len(),
            s.offsets.len()
        )));
    }
    Ok(())
}

/// Reverse RLE of strings; returns the rest of the metadata and the strings.
pub fn rle_reverse(md: &[u8], data: &[u8]) -> Result<(Vec<u8>, Strings)> {
    let mut m = Cursor::new(md);
    let (raw, enc, cells) = header(&mut m)?;
    let run_w = m.u8("RLE run length width")?;
    let len_w = m.u8("RLE string length width")?;
    let mut c = Cursor::new(data.get(..enc).ok_or_else(|| Error::corrupt("RLE strings shorter than their header says"))?);
    let mut s = Strings { data: Vec::with_capacity(raw.min(1 << 20)), offsets: Vec::with_capacity(cells.min(1 << 17)) };
    while c.remaining() > 0 {
        let run = get_be(&mut c, run_w, "RLE run length")?;
        let len = get_be(&mut c, len_w, "RLE string length")? as usize;
        let text = c.take(len, "RLE string")?;
        if run > (cells - s.offsets.len()) as u64 || (run as u128) * (len as u128) > (raw - s.data.len()) as u128 {
            return Err(Error::corrupt("RLE runs decode to more cells or bytes than the metadata says"));
        }
        for _ in 0..run {
            s.offsets.push(s.data.len() as u64);
            s.data.extend_from_slice(text);
        }
    }
    check_total(&s, raw, cells)?;
    Ok((m.rest().to_vec(), s))
}

/// Reverse dictionary encoding of strings.
pub fn dict_reverse(md: &[u8], data: &[u8]) -> Result<(Vec<u8>, Strings)> {
    let mut m = Cursor::new(md);
    let (raw, enc, cells) = header(&mut m)?;
    let id_w = m.u8("dictionary id width")?;
    let len_w = m.u8("dictionary string length width")?;
    let dict_bytes = m.take_len_u32("dictionary")?;
    let mut dict: Vec<&[u8]> = Vec::new();
    let mut d = Cursor::new(dict_bytes);
    while d.remaining() > 0 {
        let len = get_be(&mut d, len_w, "dictionary string length")? as usize;
        dict.push(d.take(len, "dictionary string")?);
    }
    let mut c = Cursor::new(data.get(..enc).ok_or_else(|| Error::corrupt("dictionary ids shorter than their header says"))?);
    let mut s = Strings { data: Vec::with_capacity(raw.min(1 << 20)), offsets: Vec::with_capacity(cells.min(1 << 17)) };
    while c.remaining() > 0 {
        let id = get_be(&mut c, id_w, "dictionary id")?;
        let word = dict.get(id as usize).ok_or_else(|| Error::corrupt(format!("dictionary id {id} of {} words", dict.len())))?;
        if s.offsets.len() >= cells || s.data.len() + word.len() > raw {
            return Err(Error::corrupt("dictionary ids decode to more cells or bytes than the metadata says"));
        }
        s.offsets.push(s.data.len() as u64);
        s.data.extend_from_slice(word);
    }
    check_total(&s, raw, cells)?;
    Ok((m.rest().to_vec(), s))
}

fn cells_of<'a>(data: &'a [u8], offsets: &[u64]) -> Result<Vec<&'a [u8]>> {
    let mut out = Vec::with_capacity(offsets.len());
    for (i, &o) in offsets.iter().enumerate() {
        let end = offsets.get(i + 1).copied().unwrap_or(data.len() as u64);
        if o > end || end > data.len() as u64 {
            return Err(Error::invalid_input(format!("string offset {o}..{end} outside {} bytes", data.len())));
        }
        out.push(&data[o as usize..end as usize]);
    }
    Ok(out)
}

fn head(data: &[u8], enc: usize, cells: usize) -> Vec<u8> {
    let mut md = Vec::new();
    md.extend_from_slice(&0u32.to_le_bytes());
    md.extend_from_slice(&1u32.to_le_bytes());
    md.extend_from_slice(&(data.len() as u32).to_le_bytes());
    md.extend_from_slice(&(enc as u32).to_le_bytes());
    md.extend_from_slice(&((cells * 8) as u32).to_le_bytes());
    md
}

/// RLE-encode the strings of one tile (`offsets`: one start per cell);
/// returns `(metadata, data)` with `md_in` (earlier filters' metadata)
/// appended to the metadata.
pub fn rle_forward(data: &[u8], offsets: &[u64], md_in: &[u8]) -> Result<(Vec<u8>, Vec<u8>)> {
    let cells = cells_of(data, offsets)?;
    let mut runs: Vec<(u64, &[u8])> = Vec::new();
    for c in &cells {
        match runs.last_mut() {
            Some((n, s)) if s == c => *n += 1,
            _ => runs.push((1, c)),
        }
    }
    let run_w = width_for(runs.iter().map(|r| r.0).max().unwrap_or(0));
    let len_w = width_for(runs.iter().map(|r| r.1.len() as u64).max().unwrap_or(0));
    let mut out = Vec::new();
    for (n, s) in &runs {
        put_be(&mut out, *n, run_w);
        put_be(&mut out, s.len() as u64, len_w);
        out.extend_from_slice(s);
    }
    let mut md = head(data, out.len(), cells.len());
    md.push(run_w);
    md.push(len_w);
    md.extend_from_slice(md_in);
    Ok((md, out))
}

/// Dictionary-encode the strings of one tile; as [`rle_forward`].
pub fn dict_forward(data: &[u8], offsets: &[u64], md_in: &[u8]) -> Result<(Vec<u8>, Vec<u8>)> {
    let cells = cells_of(data, offsets)?;
    let id_w = width_for(cells.len() as u64);
    let len_w = width_for(cells.iter().map(|c| c.len() as u64).max().unwrap_or(0));
    let mut ids: std::collections::HashMap<&[u8], u64> = std::collections::HashMap::new();
    let mut dict = Vec::new();
    let mut out = Vec::with_capacity(cells.len() * id_w as usize);
    for c in &cells {
        let next = ids.len() as u64;
        let id = *ids.entry(c).or_insert_with(|| {
            put_be(&mut dict, c.len() as u64, len_w);
            dict.extend_from_slice(c);
            next
        });
        put_be(&mut out, id, id_w);
    }
    let mut md = head(data, out.len(), cells.len());
    md.push(id_w);
    md.push(len_w);
    md.extend_from_slice(&(dict.len() as u32).to_le_bytes());
    md.extend_from_slice(&dict);
    md.extend_from_slice(md_in);
    Ok((md, out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const WORDS: [&str; 8] = ["aa", "aa", "b", "", "ccc", "ccc", "ccc", "aa"];

    fn flat(words: &[&str]) -> (Vec<u8>, Vec<u64>) {
        let mut data = Vec::new();
        let mut offs = Vec::new();
        for w in words {
            offs.push(data.len() as u64);
            data.extend_from_slice(w.as_bytes());
        }
        (data, offs)
    }

    #[test]
    fn rle_matches_tiledb_py_bytes() {
        // tiledb-py 0.36.1, RleFilter on a var string attribute.
        let (data, offs) = flat(&WORDS);
        let (md, enc) = rle_forward(&data, &offs, &[]).unwrap();
        assert_eq!(md, [0, 0, 0, 0, 1, 0, 0, 0, 16, 0, 0, 0, 18, 0, 0, 0, 64, 0, 0, 0, 1, 1]);
        assert_eq!(enc, b"\x02\x02aa\x01\x01b\x01\x00\x03\x03ccc\x01\x02aa");
        let (_, s) = rle_reverse(&md, &enc).unwrap();
        assert_eq!((s.data, s.offsets), (data, offs));
    }

    #[test]
    fn dictionary_matches_tiledb_py_bytes() {
        let (data, offs) = flat(&WORDS);
        let (md, enc) = dict_forward(&data, &offs, &[]).unwrap();
        let mut want = vec![0, 0, 0, 0, 1, 0, 0, 0, 16, 0, 0, 0, 8, 0, 0, 0, 64, 0, 0, 0, 1, 1, 10, 0, 0, 0];
        want.extend_from_slice(b"\x02aa\x01b\x00\x03ccc");
        assert_eq!(md, want);
        assert_eq!(enc, [0, 0, 1, 2, 3, 3, 3, 0]);
        let (_, s) = dict_reverse(&md, &enc).unwrap();
        assert_eq!((s.data, s.offsets), (data, offs));
    }

    proptest! {
        #[test]
        fn both_round_trip(words in proptest::collection::vec(prop::sample::select(vec!["", "x", "yy", "a longer string", "zz"]), 1..400), rest in proptest::collection::vec(any::<u8>(), 0..4)) {
            let (data, offs) = flat(&words);
            for dict in [false, true] {
                let (md, enc) = if dict { dict_forward(&data, &offs, &rest) } else { rle_forward(&data, &offs, &rest) }.unwrap();
                let (left, s) = if dict { dict_reverse(&md, &enc) } else { rle_reverse(&md, &enc) }.unwrap();
                prop_assert_eq!(&left, &rest);
                prop_assert_eq!(&s.data, &data);
                prop_assert_eq!(&s.offsets, &offs);
            }
        }

        #[test]
        fn damaged_input_is_an_error_not_a_panic(words in proptest::collection::vec(prop::sample::select(vec!["", "x", "yy", "zzz"]), 1..50), at in any::<usize>(), v in any::<u8>()) {
            let (data, offs) = flat(&words);
            for dict in [false, true] {
                let (mut md, mut enc) = if dict { dict_forward(&data, &offs, &[]) } else { rle_forward(&data, &offs, &[]) }.unwrap();
                let total = md.len() + enc.len();
                let i = at % total;
                if i < md.len() { md[i] = v } else { enc[i - md.len()] = v }
                let _ = if dict { dict_reverse(&md, &enc) } else { rle_reverse(&md, &enc) };
            }
        }
    }
}
