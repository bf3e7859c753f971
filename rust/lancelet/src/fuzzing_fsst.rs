//! The `fsst_decode` fuzz target: FSST decoding (`encoding::fsst`) of a
//! symbol table, string offsets and compressed bytes taken from the input.
//!
//! Input ([`input`] writes it):
//!
//! ```text
//! byte 0     flags: bit 0 = i64 offsets (else i32);
//!                   bit 1 = the table is whole (2312 bytes, parsed as stored)
//! table      whole: the 2312 serialized bytes;
//!            compact: n (1 byte), switch (1 byte, bit 0), n × 8 symbol
//!            bytes, n lengths: the body of a serialized table, which is
//!            rebuilt around them (magic, zero padding) and then parsed
//! k          1 byte: the number of strings
//! offsets    k + 1 offsets, little-endian, 4 or 8 bytes each (any values:
//!            negative, decreasing or past the data are the decoder's to refuse)
//! rest       the compressed bytes the offsets point into
//! ```
//!
//! Both decoders run on the strings: string by string (`decompress`: 2.0
//! pages, full-zip values) and as one code stream
//! (`decompress_strings_into`: mini-block chunks). Besides never
//! panicking, where both decode they must agree, the stream decoder's
//! ASCII hint must be true of its output (readers skip UTF-8 validation on
//! it), and decoded strings must survive compression and decompression
//! with the same table.

use crate::encoding::fsst::{self, Offset, SymbolTable, SYMBOL_TABLE_SIZE};

use super::ok;

/// The `fsst_decode` target (see the module documentation).
pub fn fsst_decode(data: &[u8]) {
    run(data);
}

/// [`fsst_decode`]; true when the input got as far as both decoders
/// decoding its strings.
fn run(data: &[u8]) -> bool {
    let [flags, rest @ ..] = data else { return false };
    let (table, rest) = if flags & 2 != 0 {
        if rest.len() < SYMBOL_TABLE_SIZE {
            return false;
        }
        let (t, r) = rest.split_at(SYMBOL_TABLE_SIZE);
        (t.to_vec(), r)
    } else {
        let [n, switch, body @ ..] = rest else { return false };
        let n = *n as usize;
        let Some((body, r)) = body.split_at_checked(9 * n) else { return false };
        // The header as Lance writes it: magic, switch, symbol count.
        let header = (0x4653_5354u64 << 32) | (u64::from(switch & 1) << 24) | n as u64;
        let mut t = vec![0u8; SYMBOL_TABLE_SIZE];
        t[..8].copy_from_slice(&header.to_le_bytes());
        t[8..8 + body.len()].copy_from_slice(body);
        (t, r)
    };
    let Some(table) = ok(SymbolTable::parse(&table)) else { return false };
    let [k, rest @ ..] = rest else { return false };
    let (k, wide) = (*k as usize + 1, flags & 1 != 0);
    let width = if wide { 8 } else { 4 };
    let Some((offsets, code)) = rest.split_at_checked(k * width) else { return false };
    let offsets = offsets.chunks_exact(width);
    if wide {
        let offsets: Vec<i64> = offsets.map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
        decode_both(&table, &offsets, code)
    } else {
        let offsets: Vec<i32> = offsets.map(|c| i32::from_le_bytes(c.try_into().expect("4 bytes"))).collect();
        decode_both(&table, &offsets, code)
    }
}

/// Both decoders on the strings `offsets` delimit in `code`, and the checks
/// between them; true when both decoded.
fn decode_both<O: Offset + Into<i64>>(table: &SymbolTable, offsets: &[O], code: &[u8]) -> bool {
    let whole = ok(fsst::decompress(table, offsets, code));
    // The stream decoder takes the strings back to back and their ends;
    // out-of-range offsets are clamped here (they are `decompress`'s to
    // refuse), decreasing ones are passed on for it to refuse.
    let pos = |o: O| usize::try_from(o.into()).unwrap_or(0);
    let base = pos(offsets[0]).min(code.len());
    let src = &code[base..];
    let ends: Vec<usize> = offsets[1..].iter().map(|&o| pos(o).saturating_sub(base).min(src.len())).collect();
    let src = &src[..ends.last().copied().unwrap_or(0)];
    let (mut out, mut ends_out) = (Vec::new(), Vec::<O>::new());
    let ascii = ok(fsst::decompress_strings_into(table, src, &ends, &mut out, &mut ends_out));
    match ascii {
        Some(ascii) => {
            assert_eq!(ends_out.len(), ends.len(), "one end per string");
            assert!(!ascii || !table.symbols_ascii() || out.is_ascii(), "ASCII hint on non-ASCII output");
        }
        None => assert!(ends_out.is_empty(), "ends pushed by a failed decode"),
    }
    let Some((want_offsets, want)) = whole else { return false };
    // The stream saw exactly these strings (the offsets were valid).
    assert!(ascii.is_some(), "the per-string decoder decodes what the stream decoder refuses");
    assert_eq!(out, want, "stream and per-string decoders disagree on the bytes");
    assert_eq!(&ends_out[..], &want_offsets[1..], "stream and per-string decoders disagree on the ends");
    // Whatever a table decodes, compressing with it decodes back the same.
    if let Some((co, cd)) = ok(fsst::compress(table, &want_offsets, &want)) {
        let back = ok(fsst::decompress(table, &co, &cd)).expect("own compression decodes");
        assert_eq!(back, (want_offsets, want), "compress/decompress round trip");
    }
    true
}

/// An `fsst_decode` input: `table` (compact, or `whole`), the offsets as
/// i64 (`wide`) or i32, and the compressed bytes.
pub fn input(table: &SymbolTable, offsets: &[i64], code: &[u8], wide: bool, whole: bool) -> Vec<u8> {
    let t = table.to_bytes();
    let mut out = vec![u8::from(wide) | u8::from(whole) << 1];
    if whole {
        out.extend_from_slice(&t);
    } else {
        let n = table.len();
        out.extend_from_slice(&[n as u8, t[3] & 1]);
        out.extend_from_slice(&t[8..8 + 9 * n]);
    }
    out.push(u8::try_from(offsets.len() - 1).expect("at most 256 strings"));
    for &o in offsets {
        if wide {
            out.extend_from_slice(&o.to_le_bytes());
        } else {
            out.extend_from_slice(&i32::try_from(o).expect("i32 offset").to_le_bytes());
        }
    }
    out.extend_from_slice(code);
    out
}

/// Seeds: strings compressed with a trained table (compact and whole
/// tables, both offset widths, offsets not starting at 0), a table with
/// the switch off, and a small hand-made table whose strings escape bytes
/// and end near escapes.
pub fn seeds() -> Vec<Vec<u8>> {
    let strings: Vec<String> = (0..60)
        .map(|i| match i % 4 {
            0 => format!("https://example.com/items/{i}/view"),
            1 => format!("user-{}@example.org", i * 7),
            2 => String::new(),
            _ => format!("naïve café {i} ☕"),
        })
        .collect();
    let mut offsets = vec![0i64];
    let mut data = Vec::new();
    for s in &strings {
        data.extend_from_slice(s.as_bytes());
        offsets.push(data.len() as i64);
    }
    let trained = fsst::train_forced(&offsets, &data).expect("train");
    let (co, cd) = fsst::compress(&trained, &offsets, &data).expect("compress");
    let mut seeds = vec![input(&trained, &co, &cd, false, false), input(&trained, &co, &cd, true, true)];
    // The middle strings only, offsets into the whole buffer.
    seeds.push(input(&trained, &co[10..30], &cd, false, false));
    let plain = SymbolTable::uncompressed();
    seeds.push(input(&plain, &offsets[..20], &data, false, false));
    let small = SymbolTable::from_symbols(&[&b"ab"[..], b"c", b"long-sym"]).expect("table");
    // "ab" "c" escape-x "long-sym" | escape-0xff | (empty) | "c" escape-é...
    let code = [0u8, 1, 255, b'x', 2, 255, 255, 1, 255, 0xc3, 255, 0xa9];
    seeds.push(input(&small, &[0, 5, 7, 7, 12], &code, false, false));
    seeds.push(input(&small, &[0, 5, 7, 7, 12], &code, true, true));
    seeds
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seeds reach both decoders (a seed the input layout cut short
    /// would only exercise the length checks).
    #[test]
    fn seeds_decode() {
        for (i, s) in seeds().iter().enumerate() {
            assert!(run(s), "seed {i}");
        }
        // Cut anywhere, they are refused or decoded, never a panic.
        for s in seeds() {
            for n in 0..s.len() {
                fsst_decode(&s[..n]);
            }
        }
    }
}
