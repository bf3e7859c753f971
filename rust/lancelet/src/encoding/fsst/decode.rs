//! FSST decoding: codes back to strings, string by string
//! ([`decompress`]) or a run of strings as one code stream
//! ([`decompress_strings_into`], what the mini-block sink uses).

use super::{check_offsets, offset, passthrough, Offset, SymbolTable, ESCAPE, MAX_SYMBOLS, MAX_SYMBOL_LEN};
use crate::corrupt;
use crate::error::{Error, Result};

/// Decompresses FSST strings. `offsets` (n+1 entries, need not start at 0)
/// delimit the compressed strings in `data`; returns offsets starting at 0
/// and the decompressed bytes. With the switch off the strings are copied.
pub fn decompress<O: Offset>(table: &SymbolTable, offsets: &[O], data: &[u8]) -> Result<(Vec<O>, Vec<u8>)> {
    if !table.enabled {
        return passthrough(offsets, data, "fsst");
    }
    let (first, last) = check_offsets(offsets, data.len(), "fsst")?;
    if offsets.is_empty() {
        return Ok((vec![O::default()], Vec::new()));
    }
    // Every code byte yields at most 8 bytes, so this bound lets the loop
    // store whole 8-byte symbol words and advance by the real length.
    let bound =
        (last - first).checked_mul(MAX_SYMBOL_LEN).and_then(|b| b.checked_add(MAX_SYMBOL_LEN)).ok_or_else(|| corrupt!("fsst: input too large"))?;
    let mut out = Vec::new();
    out.try_reserve_exact(bound).map_err(|_| corrupt!("fsst: cannot allocate {bound} bytes"))?;
    out.resize(bound, 0);
    let mut new_offsets = Vec::with_capacity(offsets.len());
    new_offsets.push(O::default());
    let mut pos = 0usize;
    let mut start = first;
    for o in &offsets[1..] {
        let end = o.to_usize().expect("checked");
        let src = &data[start..end];
        let mut i = 0;
        while i < src.len() {
            let code = src[i];
            if code == ESCAPE {
                let Some(&b) = src.get(i + 1) else {
                    return Err(corrupt!("fsst: escape code at the end of a string"));
                };
                out[pos] = b;
                pos += 1;
                i += 2;
            } else {
                let len = table.lens[code as usize] as usize;
                if len == 0 {
                    return Err(corrupt!("fsst: code {code} but only {} symbols", table.n_symbols));
                }
                out[pos..pos + 8].copy_from_slice(&table.symbols[code as usize]);
                pos += len;
                i += 1;
            }
        }
        new_offsets.push(offset(pos)?);
        start = end;
    }
    out.truncate(pos);
    Ok((new_offsets, out))
}

/// Decompresses consecutive compressed strings in one pass, appending
/// their bytes to `out` and, for each string, the length of `out` after it
/// to `offsets`. `src` holds the strings back to back and `ends` their
/// non-decreasing end positions in `src`, the last being `src.len()`.
///
/// See [`decode_pass`] for how. On error nothing is pushed to `offsets`.
/// Returns whether every escaped byte was ASCII (found for free while
/// decoding), so that with a table whose symbols are ASCII
/// ([`SymbolTable::symbols_ascii`], asked once per table) the appended
/// bytes are; `false` for a table with the switch off (bytes copied, not
/// looked at).
pub fn decompress_strings_into<O: Offset>(table: &SymbolTable, src: &[u8], ends: &[usize], out: &mut Vec<u8>, offsets: &mut Vec<O>) -> Result<bool> {
    if ends.last().is_some_and(|&e| e != src.len()) || ends.windows(2).any(|w| w[0] > w[1]) {
        return Err(corrupt!("fsst: string ends out of order or not covering the input"));
    }
    let pushed_before = offsets.len();
    offsets.reserve(ends.len());
    let mut ascii = false;
    if !table.enabled {
        let base = out.len();
        out.extend_from_slice(src);
        offsets.extend(ends.iter().map(|&e| O::wrapping(base + e)));
    } else {
        match decode_stream(table, src, ends, out, offsets, PASS_CODE_BYTES) {
            Ok(literals_ascii) => ascii = literals_ascii,
            Err(e) => {
                offsets.truncate(pushed_before);
                return Err(e);
            }
        }
    }
    // Ends are non-decreasing, so the last one bounds them all.
    if O::from_usize(out.len()).is_none() {
        offsets.truncate(pushed_before);
        return Err(Error::invalid_input(format!(
            "{} bytes of decompressed strings do not fit {}-bit offsets; use large_string/large_binary",
            out.len(),
            8 * std::mem::size_of::<O>()
        )));
    }
    Ok(ascii)
}

/// Code bytes decoded per pass of [`decode_pass`]: output positions within
/// a pass (at most 8 bytes per code byte) then fit in a `u32`.
const PASS_CODE_BYTES: usize = 256 << 20;

/// Marks a literal byte (the one after an escape) in a pass's position
/// map: no string may end before it.
pub(super) const LITERAL: u32 = u32::MAX;

/// [`decompress_strings_into`] for an enabled table: the strings in passes
/// of at most `pass` code bytes (at most [`PASS_CODE_BYTES`]). Returns
/// whether every escaped byte was ASCII.
pub(super) fn decode_stream<O: Offset>(
    table: &SymbolTable,
    src: &[u8],
    ends: &[usize],
    out: &mut Vec<u8>,
    offsets: &mut Vec<O>,
    pass: usize,
) -> Result<bool> {
    let pass = pass.min(PASS_CODE_BYTES);
    if ends.is_empty() {
        return if src.is_empty() { Ok(true) } else { Err(corrupt!("fsst: {} code bytes but no strings", src.len())) };
    }
    let (mut from, mut j) = (0, 0);
    let mut ascii = true;
    while j < ends.len() {
        let mut k = j + 1;
        while k < ends.len() && ends[k] - from <= pass {
            k += 1;
        }
        let to = ends[k - 1];
        if to - from > pass {
            return Err(Error::invalid_input(format!("fsst: one string of {} compressed bytes is too large to decode", to - from)));
        }
        ascii &= decode_pass(table, &src[from..to], &ends[j..k], from, out, offsets)?;
        (from, j) = (to, k);
    }
    Ok(ascii)
}

/// Decodes `src` (the strings ending at `ends`, positions counted from
/// `ends_base`) onto `out`, pushing each string's end position in `out`.
///
/// The codes are decoded as one stream and string ends do not interrupt
/// it: the loop records the output position before every code byte, and
/// each string's end is then looked up. (Decoding string by string left
/// most strings, of about ten codes, to a one-code tail loop; tracking the
/// next end inside the loop made every step wait on the previous one.)
/// Eight codes are loaded as one word; when none is the escape they are
/// decoded in a straight line, otherwise the codes before the first
/// escape are, then the escape and its literal. Each symbol is stored as a
/// whole 8-byte word into reserved capacity and the position advances by
/// its real length, so nothing is zero-filled and no store is checked.
/// Unused codes (length 0) are not looked for in the loop: a code byte at
/// or above the table's size is rare enough that one scan of `src`
/// afterwards finds whether any may be present. Returns whether every
/// escaped byte was ASCII.
pub(super) fn decode_pass<O: Offset>(
    table: &SymbolTable,
    src: &[u8],
    ends: &[usize],
    ends_base: usize,
    out: &mut Vec<u8>,
    offsets: &mut Vec<O>,
) -> Result<bool> {
    // Each code byte yields at most 8 bytes; 8 more for the last word store.
    out.reserve(src.len() * MAX_SYMBOL_LEN + MAX_SYMBOL_LEN);
    let start = out.len();
    // at[i]: output position (from `start`) before code byte i; at[len]: the end.
    let mut at: Vec<u32> = Vec::with_capacity(src.len() + 1);
    let n = src.len();
    // SAFETY: `start` is within the allocation; every code below advances
    // `pos` by at most 8 while consuming at least one source byte, so an
    // 8-byte store at `pos` stays within the reserved 8 * (n + 1) bytes;
    // `at` has room for n + 1 entries and slot i is written only for i <= n;
    // source reads are at i..i + 8 <= n (words) or i < n (bytes).
    let pos = unsafe { decode_codes(table, src.as_ptr(), n, out.as_mut_ptr().add(start), at.as_mut_ptr()) };
    let Some((pos, literals)) = pos else {
        return Err(corrupt!("fsst: escape code at the end of the input"));
    };
    // SAFETY: decode_codes wrote slots 0..=n.
    unsafe { at.set_len(n + 1) };
    if table.n_symbols < MAX_SYMBOLS && src.iter().any(|&c| c != ESCAPE && c as usize >= table.n_symbols) {
        // A code byte past the table, unless it is an escaped literal.
        let mut i = 0;
        while i < n {
            match src[i] {
                ESCAPE => i += 2,
                c if table.lens[c as usize] == 0 => return Err(corrupt!("fsst: code {c} but only {} symbols", table.n_symbols)),
                _ => i += 1,
            }
        }
    }
    push_ends(&at, ends, ends_base, start, offsets)?;
    // SAFETY: bytes up to pos were written by decode_codes (symbol tails
    // beyond a symbol's length are overwritten by the next store or cut off).
    unsafe { out.set_len(start + pos) };
    Ok(literals.is_ascii())
}

/// Push the output offset of each string end: `ends` are positions in the
/// code stream (from `ends_base`), `at` the output position (from `start`)
/// before each code byte. An end right after an escape byte splits an
/// escape from its literal, which no writer does. (On error the caller takes
/// back what was pushed.)
pub(super) fn push_ends<O: Offset>(at: &[u32], ends: &[usize], ends_base: usize, start: usize, offsets: &mut Vec<O>) -> Result<()> {
    for &e in ends {
        let p = at[e - ends_base];
        if p == LITERAL {
            return Err(corrupt!("fsst: escape code at the end of a string"));
        }
        offsets.push(O::wrapping(start + p as usize));
    }
    Ok(())
}

/// The loop of [`decode_pass`]: decodes the `n` code bytes at `src` to
/// `dst`, writing the output position before code byte i to `at[i]`
/// ([`LITERAL`] for a byte after an escape) and the end to `at[n]`.
/// Returns the end position and the OR of the escaped bytes, or `None` if
/// the input ends in an escape.
///
/// # Safety
/// `src` is readable for `n` bytes, `dst` writable for `8 * (n + 1)`
/// bytes and `at` for `n + 1` entries.
#[inline(always)]
unsafe fn decode_codes(table: &SymbolTable, src: *const u8, n: usize, dst: *mut u8, at: *mut u32) -> Option<(usize, u8)> {
    // SAFETY: see the function's contract; every access below is
    // within the bounds it grants (see `decode_pass`).
    unsafe {
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGHS: u64 = 0x8080_8080_8080_8080;
        let words = &table.symbols;
        let lens = &table.lens;
        let mut pos = 0usize;
        let mut i = 0usize;
        let mut literals = 0u8;
        // One code that is not the escape.
        let one = |c: u8, i: usize, pos: &mut usize| {
            at.add(i).write(*pos as u32);
            std::ptr::write_unaligned(dst.add(*pos) as *mut [u8; 8], words[c as usize]);
            *pos += lens[c as usize] as usize;
        };
        while i + 8 <= n {
            let w = u64::from_le(std::ptr::read_unaligned(src.add(i) as *const u64));
            let x = !w; // a byte of x is zero where a code is ESCAPE (255)
            let esc = x.wrapping_sub(ONES) & !x & HIGHS;
            if esc == 0 {
                let c = w.to_le_bytes();
                one(c[0], i, &mut pos);
                one(c[1], i + 1, &mut pos);
                one(c[2], i + 2, &mut pos);
                one(c[3], i + 3, &mut pos);
                one(c[4], i + 4, &mut pos);
                one(c[5], i + 5, &mut pos);
                one(c[6], i + 6, &mut pos);
                one(c[7], i + 7, &mut pos);
                i += 8;
                continue;
            }
            // The lowest flagged byte is the first escape (a borrow only
            // flags bytes above a real zero byte).
            let k = (esc.trailing_zeros() / 8) as usize;
            for q in 0..k {
                one((w >> (8 * q)) as u8, i + q, &mut pos);
            }
            i += k;
            // Escape at i: its literal is at i + 1 (which may be past the word).
            if i + 1 >= n {
                return None;
            }
            at.add(i).write(pos as u32);
            at.add(i + 1).write(LITERAL);
            literals |= *src.add(i + 1);
            *dst.add(pos) = *src.add(i + 1);
            pos += 1;
            i += 2;
        }
        while i < n {
            let c = *src.add(i);
            if c == ESCAPE {
                if i + 1 >= n {
                    return None;
                }
                at.add(i).write(pos as u32);
                at.add(i + 1).write(LITERAL);
                literals |= *src.add(i + 1);
                *dst.add(pos) = *src.add(i + 1);
                pos += 1;
                i += 2;
            } else {
                one(c, i, &mut pos);
                i += 1;
            }
        }
        at.add(n).write(pos as u32);
        Some((pos, literals))
    }
}
