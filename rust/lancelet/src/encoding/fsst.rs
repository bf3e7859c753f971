//! FSST string compression (`Fsst` compressive encoding) as Lance stores it.
//!
//! FSST replaces substrings of up to 8 bytes by one-byte codes. Code `c <
//! n_symbols` stands for symbol `c`; code 255 is an escape and the next byte
//! is copied literally. Each string is compressed on its own, so offsets stay
//! per value, and the compressed strings then go through the inner `values`
//! encoding (mini-block: `Variable` chunks).
//!
//! # Serialized symbol table (always 2312 bytes)
//! ```text
//! bytes 0..8       u64 LE header:
//!                    bits  0..8   n_symbols (≤ 255)
//!                    bits  8..16  terminator (compressor detail)
//!                    bits 16..24  suffix_lim (compressor detail)
//!                    bit  24      switch: 1 = data is FSST-compressed,
//!                                 0 = data is stored uncompressed
//!                    bits 32..64  0x46535354 ("FSST"; bytes read `54 53 53 46`)
//! 8 + 8·i          symbol i as a u64 LE word (bytes beyond its length 0),
//!                  for i < n_symbols — packed, not at fixed slots
//! 8 + 8·n + i      length of symbol i (1..=8), for i < n_symbols
//! rest             zero up to 2312 bytes
//! ```
//! Lance's decoder reads only the magic, the switch, `n_symbols`, the
//! symbols and their lengths; `terminator` and `suffix_lim` only matter to
//! the C-style compressor that produced the table, so any values are
//! accepted. Our trainer writes the least frequent sample byte as
//! terminator (as FSST does) and 0 as `suffix_lim`.
//!
//! # When Lance turns the switch on
//! Lance picks FSST automatically for a string page only when its string
//! data is ≥ 32 KiB ([`MIN_INPUT_BYTES`]) and the longest value is ≥ 5 bytes
//! ([`MIN_MAX_LENGTH`]); then the switch is on. If FSST is forced through
//! field metadata (`lance-encoding:compression=fsst`) on a page with less than
//! 32 KiB of string data, Lance writes a table with the switch off (header =
//! just the magic, everything else zero) and stores the strings verbatim.
//! The decision uses the whole page's data, not a chunk's.

use crate::corrupt;
use crate::error::{Error, Result};

/// Size of a serialized symbol table.
pub const SYMBOL_TABLE_SIZE: usize = 8 + 256 * 8 + 256;
/// Lance compresses only when a page has at least this much string data.
pub const MIN_INPUT_BYTES: usize = 32 * 1024;
/// Lance picks FSST only when the longest value has at least this many bytes.
pub const MIN_MAX_LENGTH: usize = 5;

const MAGIC: u64 = 0x4653_5354;
const ESCAPE: u8 = 255;
const MAX_SYMBOLS: usize = 255;
const MAX_SYMBOL_LEN: usize = 8;

/// An offset type of a variable-width array (i32/i64 Arrow offsets, or the
/// u32/u64 offsets of Lance buffers).
pub trait Offset: Copy + Default + Eq + std::fmt::Debug {
    /// The offset as a position, if it is one.
    fn to_usize(self) -> Option<usize>;
    /// A position as an offset, if representable.
    fn from_usize(v: usize) -> Option<Self>;
    /// A position as an offset, truncated when it is not representable
    /// (for callers that check the largest position once).
    fn wrapping(v: usize) -> Self;
}

macro_rules! impl_offset {
    ($($t:ty),*) => {$(
        impl Offset for $t {
            #[inline(always)]
            fn to_usize(self) -> Option<usize> { usize::try_from(self).ok() }
            #[inline(always)]
            fn from_usize(v: usize) -> Option<Self> { <$t>::try_from(v).ok() }
            #[inline(always)]
            fn wrapping(v: usize) -> Self { v as $t }
        }
    )*};
}
impl_offset!(i32, i64, u32, u64);

/// A parsed or trained FSST symbol table.
#[derive(Clone, PartialEq, Eq)]
pub struct SymbolTable {
    /// Symbol bytes, zero padded to 8; only the first `n_symbols` are used.
    symbols: [[u8; 8]; 256],
    /// Symbol lengths; 0 marks an unused code (which makes decoding fail).
    lens: [u8; 256],
    n_symbols: usize,
    terminator: u8,
    suffix_lim: u8,
    enabled: bool,
}

impl std::fmt::Debug for SymbolTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SymbolTable")
            .field("n_symbols", &self.n_symbols)
            .field("enabled", &self.enabled)
            .finish_non_exhaustive()
    }
}

impl SymbolTable {
    /// The table Lance writes when the switch is off: no symbols, strings
    /// stored verbatim.
    pub fn uncompressed() -> Self {
        SymbolTable {
            symbols: [[0; 8]; 256],
            lens: [0; 256],
            n_symbols: 0,
            terminator: 0,
            suffix_lim: 0,
            enabled: false,
        }
    }

    /// Whether strings are compressed (the switch bit).
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.n_symbols
    }

    /// True when there are no symbols.
    pub fn is_empty(&self) -> bool {
        self.n_symbols == 0
    }

    /// Whether every symbol is ASCII (decoded strings then are, but for
    /// their escaped bytes).
    pub fn symbols_ascii(&self) -> bool {
        self.symbols[..self.n_symbols].iter().zip(&self.lens).all(|(s, &l)| s[..l as usize].is_ascii())
    }

    /// Symbol `code` as bytes, if defined.
    pub fn symbol(&self, code: u8) -> Option<&[u8]> {
        let i = code as usize;
        (i < self.n_symbols).then(|| &self.symbols[i][..self.lens[i] as usize])
    }

    /// Parses the 2312-byte serialized table.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        if bytes.len() != SYMBOL_TABLE_SIZE {
            return Err(corrupt!("fsst: symbol table is {} bytes, expected {SYMBOL_TABLE_SIZE}", bytes.len()));
        }
        let header = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
        if header >> 32 != MAGIC {
            return Err(corrupt!("fsst: bad symbol table magic {:#x}", header >> 32));
        }
        let n = (header & 0xff) as usize;
        if n > MAX_SYMBOLS {
            return Err(corrupt!("fsst: {n} symbols (max {MAX_SYMBOLS})"));
        }
        let mut table = SymbolTable {
            n_symbols: n,
            terminator: (header >> 8) as u8,
            suffix_lim: (header >> 16) as u8,
            enabled: header & (1 << 24) != 0,
            ..Self::uncompressed()
        };
        let lens_at = 8 + 8 * n;
        for i in 0..n {
            table.symbols[i].copy_from_slice(&bytes[8 + 8 * i..16 + 8 * i]);
            let len = bytes[lens_at + i];
            if !(1..=MAX_SYMBOL_LEN as u8).contains(&len) {
                return Err(corrupt!("fsst: symbol {i} has length {len}"));
            }
            table.lens[i] = len;
        }
        Ok(table)
    }

    /// Serializes the table exactly as Lance does (2312 bytes).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = vec![0u8; SYMBOL_TABLE_SIZE];
        let header = (MAGIC << 32)
            | ((self.enabled as u64) << 24)
            | ((self.suffix_lim as u64) << 16)
            | ((self.terminator as u64) << 8)
            | self.n_symbols as u64;
        out[..8].copy_from_slice(&header.to_le_bytes());
        let n = self.n_symbols;
        for i in 0..n {
            out[8 + 8 * i..16 + 8 * i].copy_from_slice(&self.symbols[i]);
            out[8 + 8 * n + i] = self.lens[i];
        }
        out
    }

    /// Builds a table from symbols (each 1..=8 bytes, at most 255), with the
    /// switch on.
    pub fn from_symbols<S: AsRef<[u8]>>(symbols: &[S]) -> Result<Self> {
        if symbols.len() > MAX_SYMBOLS {
            return Err(Error::invalid_input(format!("fsst: {} symbols (max {MAX_SYMBOLS})", symbols.len())));
        }
        let mut t = SymbolTable { enabled: true, n_symbols: symbols.len(), ..Self::uncompressed() };
        for (i, s) in symbols.iter().enumerate() {
            let s = s.as_ref();
            if s.is_empty() || s.len() > MAX_SYMBOL_LEN {
                return Err(Error::invalid_input(format!("fsst: symbol of {} bytes", s.len())));
            }
            t.symbols[i][..s.len()].copy_from_slice(s);
            t.lens[i] = s.len() as u8;
        }
        Ok(t)
    }
}

/// Checks offsets (non-decreasing, within `data`) and returns `(first, last)`.
fn check_offsets<O: Offset>(offsets: &[O], data_len: usize, what: &str) -> Result<(usize, usize)> {
    let mut prev = match offsets.first() {
        None => return Ok((0, 0)),
        Some(o) => o.to_usize().ok_or_else(|| corrupt!("{what}: negative offset {o:?}"))?,
    };
    let first = prev;
    for o in &offsets[1..] {
        let cur = o.to_usize().ok_or_else(|| corrupt!("{what}: negative offset {o:?}"))?;
        if cur < prev {
            return Err(corrupt!("{what}: offsets decrease ({prev} then {cur})"));
        }
        prev = cur;
    }
    if prev > data_len {
        return Err(corrupt!("{what}: offset {prev} beyond {data_len} data bytes"));
    }
    Ok((first, prev))
}

fn offset<O: Offset>(v: usize) -> Result<O> {
    O::from_usize(v).ok_or_else(|| corrupt!("fsst: {v} bytes do not fit the offset type"))
}

/// Copies the strings between `offsets[0]` and the last offset, rebasing the
/// offsets to start at 0 (what both directions do when the switch is off).
fn passthrough<O: Offset>(offsets: &[O], data: &[u8], what: &str) -> Result<(Vec<O>, Vec<u8>)> {
    let (first, last) = check_offsets(offsets, data.len(), what)?;
    if offsets.is_empty() {
        return Ok((vec![O::default()], Vec::new()));
    }
    let new_offsets = offsets
        .iter()
        .map(|o| offset(o.to_usize().expect("checked") - first))
        .collect::<Result<Vec<O>>>()?;
    Ok((new_offsets, data[first..last].to_vec()))
}

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
    let bound = (last - first)
        .checked_mul(MAX_SYMBOL_LEN)
        .and_then(|b| b.checked_add(MAX_SYMBOL_LEN))
        .ok_or_else(|| corrupt!("fsst: input too large"))?;
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
pub fn decompress_strings_into<O: Offset>(
    table: &SymbolTable,
    src: &[u8],
    ends: &[usize],
    out: &mut Vec<u8>,
    offsets: &mut Vec<O>,
) -> Result<bool> {
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
const LITERAL: u32 = u32::MAX;

/// [`decompress_strings_into`] for an enabled table: the strings in passes
/// of at most `pass` code bytes (at most [`PASS_CODE_BYTES`]). Returns
/// whether every escaped byte was ASCII.
fn decode_stream<O: Offset>(table: &SymbolTable, src: &[u8], ends: &[usize], out: &mut Vec<u8>, offsets: &mut Vec<O>, pass: usize) -> Result<bool> {
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
fn decode_pass<O: Offset>(table: &SymbolTable, src: &[u8], ends: &[usize], ends_base: usize, out: &mut Vec<u8>, offsets: &mut Vec<O>) -> Result<bool> {
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
fn push_ends<O: Offset>(at: &[u32], ends: &[usize], ends_base: usize, start: usize, offsets: &mut Vec<O>) -> Result<()> {
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

/// Greedy longest-match lookup tables built from a symbol table.
///
/// A lookup answers "which code, and how many input bytes" for the next
/// input position as a packed entry: code in bits 0..8, bytes consumed in
/// bits 8..12, [`ESCAPED`] when the code is the escape (two output bytes).
///
/// Symbols of 3..=8 bytes sit in buckets of [`BUCKET`] slots, chosen by a
/// hash of their first three bytes and sorted longest first, so all symbols
/// that can match at a position are in one bucket, checked without
/// branches. Shorter matches come from a 64 Ki-entry table indexed by the
/// next two bytes that holds the best of: the 2-byte symbol, the 1-byte
/// symbol of the first byte, or the escape; at the last byte of a string a
/// 256-entry table keyed by that byte is used instead. A long symbol that
/// finds its bucket full is not used by this encoder (the trainer never
/// produces such tables; for others the output is merely larger).
///
/// [`BUCKET`] is 1, as in the original FSST: measured on URL, English and
/// random corpora, one slot per prefix (2 Ki buckets) compressed faster
/// (0.6 → 0.8–1.0 GB/s) *and* smaller (the trainer spends the codes that
/// same-prefix variants took on more distinct symbols) than four slots.
struct Encoder {
    /// Indexed by the next two bytes (little-endian u16).
    short: Box<[u16; 1 << 16]>,
    /// Indexed by the next byte.
    byte: [u16; 256],
    /// Indexed by [`bucket_of`] (fixed sizes: lookups need no bounds
    /// checks).
    buckets: Box<[Bucket; 1 << BUCKET_BITS]>,
}

const BUCKET: usize = 1;
const BUCKET_BITS: u32 = 11;

#[derive(Clone, Copy)]
#[repr(C)]
struct Bucket([LongSlot; BUCKET]);

#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct LongSlot {
    /// The symbol, zero beyond its length.
    word: u64,
    /// `64 - 8 × len`: shifting an XOR left by this keeps only the
    /// symbol's bytes.
    shift: u32,
    /// Symbol length; 255 for a free slot (never fits).
    len: u8,
    /// The lookup entry.
    entry: u16,
}

const FREE_SLOT: LongSlot = LongSlot { word: 0, shift: 0, len: 255, entry: 0 };

/// Entry flag: the code is the escape and the input byte follows it.
const ESCAPED: u16 = 1 << 15;

const fn len_mask(len: usize) -> u64 {
    if len >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * len)) - 1
    }
}

/// The bucket of symbols (or inputs) whose first three bytes are those of
/// `word`.
#[inline(always)]
fn bucket_of(word: u64) -> usize {
    ((word & 0xFF_FFFF).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - BUCKET_BITS)) as usize
}

/// Counts long symbols per bucket while a table is assembled, to keep only
/// symbols the encoder can use.
struct BucketFill(Vec<u8>);

impl BucketFill {
    fn new() -> Self {
        BucketFill(vec![0; 1 << BUCKET_BITS])
    }

    /// Whether a symbol (`word`, `len`) fits; if so it is counted.
    fn take(&mut self, word: u64, len: usize) -> bool {
        if len < 3 {
            return true;
        }
        let n = &mut self.0[bucket_of(word)];
        if *n as usize >= BUCKET {
            return false;
        }
        *n += 1;
        true
    }
}

/// The 8 bytes at `pos` (zero past the end of `data`) as a LE word.
#[inline(always)]
fn load(data: &[u8], pos: usize) -> u64 {
    match data.get(pos..pos + 8) {
        Some(b) => u64::from_le_bytes(b.try_into().expect("8 bytes")),
        None => {
            let mut buf = [0u8; 8];
            let tail = &data[pos.min(data.len())..];
            buf[..tail.len()].copy_from_slice(tail);
            u64::from_le_bytes(buf)
        }
    }
}

impl Encoder {
    fn new(table: &SymbolTable) -> Self {
        let mut enc = Encoder {
            short: vec![0u16; 1 << 16].into_boxed_slice().try_into().expect("65536 entries"),
            byte: [ESCAPED | 1 << 8 | ESCAPE as u16; 256],
            buckets: vec![Bucket([FREE_SLOT; BUCKET]); 1 << BUCKET_BITS]
                .into_boxed_slice()
                .try_into()
                .unwrap_or_else(|_| unreachable!("bucket count")),
        };
        // On duplicate symbols the first code wins (any choice decodes the
        // same).
        let n = table.n_symbols.min(MAX_SYMBOLS);
        for i in 0..n {
            if table.lens[i] == 1 && enc.byte[table.symbols[i][0] as usize] & ESCAPED != 0 {
                enc.byte[table.symbols[i][0] as usize] = 1 << 8 | i as u16;
            }
        }
        let mut short = std::mem::replace(&mut enc.short, Box::new([0; 1 << 16]));
        for second in 0..256 {
            short[second * 256..(second + 1) * 256].copy_from_slice(&enc.byte);
        }
        let mut have2 = vec![false; 1 << 16];
        for i in 0..n {
            let len = table.lens[i] as usize;
            let word = u64::from_le_bytes(table.symbols[i]) & len_mask(len);
            if len == 2 {
                if !std::mem::replace(&mut have2[word as usize], true) {
                    short[word as usize] = 2 << 8 | i as u16;
                }
            } else if len >= 3 {
                let bucket = &mut enc.buckets[bucket_of(word)].0;
                if bucket.iter().any(|s| s.len as usize == len && s.word == word) {
                    continue;
                }
                // Insert keeping the bucket sorted longest first (free
                // slots, at the end, sort as shortest).
                let Some(mut at) = bucket.iter().position(|s| s.len == FREE_SLOT.len) else {
                    continue;
                };
                while at > 0 && (bucket[at - 1].len as usize) < len {
                    bucket[at] = bucket[at - 1];
                    at -= 1;
                }
                bucket[at] =
                    LongSlot { word, shift: 64 - 8 * len as u32, len: len as u8, entry: (len as u16) << 8 | i as u16 };
            }
        }
        enc.short = short;
        enc
    }

    /// The entry for the input whose next bytes are `word` (LE), with `rem
    /// ≥ 1` bytes left in the string (bytes of `word` past them are
    /// ignored).
    #[inline(always)]
    fn find(&self, word: u64, rem: usize) -> u16 {
        let rem = rem.min(8) as u8;
        let short = self.short[(word & 0xFFFF) as usize];
        let single = self.byte[(word & 0xFF) as usize];
        let mut e = if rem >= 2 { short } else { single };
        let b = &self.buckets[bucket_of(word) & ((1 << BUCKET_BITS) - 1)].0;
        // Every slot is tested without a branch (`&`, not `&&`: the length
        // test is unpredictable at string ends); the longest hit wins, and
        // slots are sorted longest first, so test from the last slot on.
        let hit = |s: &LongSlot| (s.len <= rem) & ((word ^ s.word) << s.shift == 0);
        for s in b.iter().rev() {
            e = if hit(s) { s.entry } else { e };
        }
        e
    }

    /// Compressed size of `s` (for scoring tables).
    fn compressed_len(&self, s: &[u8]) -> usize {
        let mut i = 0;
        let mut size = 0;
        while i < s.len() {
            let e = self.find(load(s, i), s.len() - i);
            size += 1 + (e >> 15) as usize;
            i += ((e >> 8) & 0xF) as usize;
        }
        size
    }
}

/// Input bytes from which [`compress_split`] compresses in two halves.
const SPLIT_INPUT_BYTES: usize = 1 << 20;

/// [`compress`], the two halves of a large input compressed side by side
/// on the rayon pool (each string's code depends on that string alone, so
/// the output is the same byte for byte). A page of text otherwise keeps
/// one core busy while the other has nothing left to encode.
pub fn compress_split<O: Offset + Send + Sync>(table: &SymbolTable, offsets: &[O], data: &[u8]) -> Result<(Vec<O>, Vec<u8>)> {
    let n = offsets.len().saturating_sub(1);
    if !table.enabled || data.len() < SPLIT_INPUT_BYTES || n < 2 {
        return compress(table, offsets, data);
    }
    // Each half checks its own offsets; together they cover all of them.
    let mid = n / 2;
    let (left, right) = rayon::join(|| compress(table, &offsets[..=mid], data), || compress(table, &offsets[mid..], data));
    let ((mut lo, mut ld), (ro, rd)) = (left?, right?);
    let base = ld.len();
    ld.extend_from_slice(&rd);
    O::from_usize(ld.len()).ok_or_else(|| corrupt!("fsst: {} bytes do not fit the offset type", ld.len()))?;
    lo.extend(ro[1..].iter().map(|o| O::wrapping(o.to_usize().unwrap_or(0) + base)));
    Ok((lo, ld))
}

/// Compresses strings with `table`; returns offsets starting at 0 and the
/// compressed bytes. With the switch off the strings are copied.
pub fn compress<O: Offset>(table: &SymbolTable, offsets: &[O], data: &[u8]) -> Result<(Vec<O>, Vec<u8>)> {
    if !table.enabled {
        return passthrough(offsets, data, "fsst compress");
    }
    let (first, last) = check_offsets(offsets, data.len(), "fsst compress")?;
    if offsets.is_empty() {
        return Ok((vec![O::default()], Vec::new()));
    }
    let enc = Encoder::new(table);
    let n = offsets.len() - 1;
    let lanes = if n >= 16 * LANES { LANES } else { 1 };
    // Lane k writes from 2 × (its first input byte - first) + k: room for
    // two output bytes per input byte plus one, so lanes never overlap.
    let bound = (last - first).checked_mul(2).and_then(|b| b.checked_add(lanes)).ok_or_else(|| corrupt!("fsst compress: input too large"))?;
    O::from_usize(bound).ok_or_else(|| corrupt!("fsst: {bound} bytes do not fit the offset type"))?;
    // Not zero-filled: only the bytes written are kept (a zeroed worst-case
    // buffer cost more page faults than the compression itself).
    let mut out: Vec<u8> = Vec::with_capacity(bound);
    let mut new_offsets = vec![O::default(); n + 1];
    let pos = |k: usize| offsets[k].to_usize().unwrap_or(0);
    let cut = |k: usize| k * n / lanes;
    let mut state: [Lane; LANES] = std::array::from_fn(|k| {
        let s = cut(k.min(lanes));
        Lane { i: pos(s), end: pos((s + 1).min(n)), s, last: cut((k + 1).min(lanes)), o: 2 * (pos(s) - first) + k }
    });
    let dst = out.as_mut_ptr();
    let run = Stepper { enc: &enc, offsets, data, fast_end: data.len().saturating_sub(7), out: dst };
    // SAFETY (all `step` calls): each lane writes inside its own room, see
    // `bound` above.
    unsafe {
        if lanes == LANES {
            let [l0, l1, l2, l3] = &mut state;
            while run.step(l0, &mut new_offsets) & run.step(l1, &mut new_offsets) & run.step(l2, &mut new_offsets) & run.step(l3, &mut new_offsets) {}
        }
        for l in state.iter_mut().take(lanes) {
            while run.step(l, &mut new_offsets) {}
        }
    }
    // Close the gaps between the lanes' outputs and rebase their offsets.
    let mut written = 0;
    for (k, l) in state.iter().enumerate().take(lanes) {
        let start = 2 * (pos(cut(k)) - first) + k;
        let len = l.o - start;
        // SAFETY: both ranges lie within `bound`; written <= start.
        unsafe { std::ptr::copy(dst.add(start), dst.add(written), len) };
        if start != written {
            for o in &mut new_offsets[cut(k) + 1..=cut(k + 1)] {
                *o = O::from_usize(o.to_usize().unwrap_or(0) - (start - written)).expect("fits: below bound");
            }
        }
        written += len;
    }
    // SAFETY: bytes 0..written were written above.
    unsafe { out.set_len(written) };
    Ok((new_offsets, out))
}

/// Independent compression streams interleaved in one loop. A stream's next
/// lookup depends on the previous one (a chain of table loads, mostly L2
/// latency); with several streams in flight the core overlaps them.
const LANES: usize = 4;

/// One stream: the strings `s..last`, the current one being at `i..end`,
/// output at `o`.
#[derive(Clone, Copy)]
struct Lane {
    i: usize,
    end: usize,
    s: usize,
    last: usize,
    o: usize,
}

struct Stepper<'a, O> {
    enc: &'a Encoder,
    offsets: &'a [O],
    data: &'a [u8],
    /// Words starting before this can be loaded without a bounds test.
    fast_end: usize,
    out: *mut u8,
}

impl<O: Offset> Stepper<'_, O> {
    /// Emits one code of lane `l` (after recording the offsets of the
    /// strings it finished); false once the lane has no string left.
    ///
    /// # Safety
    /// The lane's output room must hold two bytes per input byte left.
    #[inline(always)]
    unsafe fn step(&self, l: &mut Lane, new_offsets: &mut [O]) -> bool {
        while l.i == l.end {
            if l.s == l.last {
                return false;
            }
            new_offsets[l.s + 1] = O::from_usize(l.o).expect("fits: checked against the bound");
            l.s += 1;
            if l.s == l.last {
                return false;
            }
            l.i = self.offsets[l.s].to_usize().unwrap_or(0);
            l.end = self.offsets[l.s + 1].to_usize().unwrap_or(0);
        }
        let word = if l.i < self.fast_end {
            // SAFETY: i + 8 <= data.len().
            unsafe { std::ptr::read_unaligned(self.data.as_ptr().add(l.i) as *const u64) }.to_le()
        } else {
            load(self.data, l.i)
        };
        let e = self.enc.find(word, l.end - l.i);
        // The input byte goes after the code speculatively; it is kept only
        // after an escape. SAFETY: within the lane's room (caller).
        unsafe {
            *self.out.add(l.o) = e as u8;
            *self.out.add(l.o + 1) = word as u8;
        }
        l.o += 1 + (e >> 15) as usize;
        l.i += ((e >> 8) & 0xF) as usize;
        true
    }
}

/// Trains a table following Lance's rule: switch off (verbatim strings) when
/// the strings total less than [`MIN_INPUT_BYTES`], otherwise a trained table.
pub fn train<O: Offset>(offsets: &[O], data: &[u8]) -> Result<SymbolTable> {
    let (first, last) = check_offsets(offsets, data.len(), "fsst train")?;
    if last - first < MIN_INPUT_BYTES {
        return Ok(SymbolTable::uncompressed());
    }
    train_forced(offsets, data)
}

/// Trains a table with the switch on, whatever the input size.
pub fn train_forced<O: Offset>(offsets: &[O], data: &[u8]) -> Result<SymbolTable> {
    let (first, last) = check_offsets(offsets, data.len(), "fsst train")?;
    let sample = make_sample(offsets, data);
    let mut table = build_table(&sample);
    // Free codes go to the most frequent bytes of the whole input that have
    // no single-byte symbol yet: a byte without one costs an escape (two
    // bytes) wherever no longer symbol matches, and the sample never sees
    // all of the input.
    let mut histo = [0u64; 256];
    for &b in &data[first..last] {
        histo[b as usize] += 1;
    }
    let mut have = [false; 256];
    for i in 0..table.n_symbols {
        if table.lens[i] == 1 {
            have[table.symbols[i][0] as usize] = true;
        }
    }
    let mut missing: Vec<usize> = (0..256).filter(|&b| histo[b] > 0 && !have[b]).collect();
    missing.sort_by_key(|&b| (std::cmp::Reverse(histo[b]), b));
    for b in missing {
        if table.n_symbols >= MAX_SYMBOLS {
            break;
        }
        let i = table.n_symbols;
        table.symbols[i] = [0; 8];
        table.symbols[i][0] = b as u8;
        table.lens[i] = 1;
        table.n_symbols += 1;
    }
    Ok(table)
}

/// About this many sample bytes are used for training.
const SAMPLE_TARGET: usize = 32 * 1024;
/// Longest piece of one string taken into the sample (short windows from
/// many strings generalize better than a few whole long strings).
const SAMPLE_PIECE: usize = 64;

/// Takes everything when the input is small, else windows of at most
/// [`SAMPLE_PIECE`] bytes from pseudo-randomly chosen strings until about
/// [`SAMPLE_TARGET`] bytes are collected.
fn make_sample<'a, O: Offset>(offsets: &[O], data: &'a [u8]) -> Vec<&'a [u8]> {
    let n = offsets.len().saturating_sub(1);
    let total = match (offsets.first(), offsets.last()) {
        (Some(f), Some(l)) => l.to_usize().unwrap_or(0) - f.to_usize().unwrap_or(0),
        _ => 0,
    };
    let mut sample = Vec::new();
    if total <= SAMPLE_TARGET {
        for i in 0..n {
            let (s, e) = (offsets[i].to_usize().unwrap_or(0), offsets[i + 1].to_usize().unwrap_or(0));
            if s < e && e <= data.len() {
                sample.push(&data[s..e]);
            }
        }
        return sample;
    }
    // Strings picked pseudo-randomly (deterministic, so files are
    // reproducible), a window of at most SAMPLE_PIECE bytes from each: an
    // evenly strided pick can miss whole classes of values.
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ (n as u64).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut taken = 0;
    let mut tries = 0;
    while taken < SAMPLE_TARGET && tries < 8 * SAMPLE_TARGET {
        tries += 1;
        let i = (next() % n as u64) as usize;
        let (s, e) = (offsets[i].to_usize().unwrap_or(0), offsets[i + 1].to_usize().unwrap_or(0));
        if s >= e || e > data.len() {
            continue;
        }
        let start = if e - s > SAMPLE_PIECE { s + (next() % (e - s - SAMPLE_PIECE + 1) as u64) as usize } else { s };
        let piece = &data[start..e.min(start + SAMPLE_PIECE)];
        taken += piece.len();
        sample.push(piece);
    }
    sample
}

/// A candidate symbol during training, as (word, length).
pub(crate) type Candidate = (u64, u8);

/// Codes used while counting: real symbols 0..n, then 256 + byte for an
/// escaped byte (a "pseudo" single-byte symbol).
const PSEUDO: usize = 256;
const CODES: usize = 512;

/// FSST-style training: a few rounds of compressing the sample with the
/// current table, counting how often each symbol and each adjacent pair of
/// symbols occur, and keeping the 255 candidates with the largest
/// `count × length` (concatenated pairs and one-byte extensions included,
/// cut at 8 bytes; single bytes boosted 8× and also counted where they start
/// a longer symbol, so they survive). The round whose table compresses the
/// sample best wins.
fn build_table(sample: &[&[u8]]) -> SymbolTable {
    let mut byte_histo = [0usize; 256];
    for s in sample {
        for &b in *s {
            byte_histo[b as usize] += 1;
        }
    }
    let terminator = (0..256).min_by_key(|&b| byte_histo[b]).unwrap_or(0) as u8;

    let mut table = SymbolTable { enabled: true, terminator, ..SymbolTable::uncompressed() };
    // Each round's table is scored by the size of the compressed sample; the
    // best one wins (a later round is not always better).
    let mut best: Option<(usize, SymbolTable)> = None;
    let mut consider = |t: &SymbolTable| {
        let m = Encoder::new(t);
        let size: usize = sample.iter().map(|s| m.compressed_len(s)).sum();
        if t.n_symbols > 0 && best.as_ref().is_none_or(|(b, _)| size < *b) {
            best = Some((size, t.clone()));
        }
    };
    let mut count1 = vec![0u32; CODES];
    let mut count2 = vec![0u32; CODES * CODES];
    const ROUNDS: usize = 8;
    for _round in 0..ROUNDS {
        count1.iter_mut().for_each(|c| *c = 0);
        count2.iter_mut().for_each(|c| *c = 0);
        let enc = Encoder::new(&table);
        for s in sample {
            let mut i = 0;
            let mut prev: Option<usize> = None;
            while i < s.len() {
                let word = load(s, i);
                let e = enc.find(word, s.len() - i);
                let len = ((e >> 8) & 0xF) as usize;
                let code = if e & ESCAPED != 0 { PSEUDO + s[i] as usize } else { (e & 0xFF) as usize };
                count1[code] += 1;
                if len > 1 {
                    // Keep the first byte alive as a single-byte candidate:
                    // strings outside the sample may need it.
                    count1[PSEUDO + s[i] as usize] += 1;
                }
                if let Some(p) = prev {
                    count2[p * CODES + code] += 1;
                    // Also consider extending the previous symbol by just
                    // the next byte (as FSST does), not only by the whole
                    // next symbol.
                    if len > 1 {
                        count2[p * CODES + PSEUDO + s[i] as usize] += 1;
                    }
                }
                prev = Some(code);
                i += len;
            }
        }
        let symbol_of = |code: usize| -> Candidate {
            if code >= PSEUDO {
                ((code - PSEUDO) as u64, 1)
            } else {
                (u64::from_le_bytes(table.symbols[code]) & len_mask(table.lens[code] as usize), table.lens[code])
            }
        };
        // A fast hasher (SipHash was a fifth of training); the order of the
        // map never shows: candidates are ranked by a total order below.
        let mut gains: std::collections::HashMap<Candidate, u64, crate::hashing::FastBuild> =
            std::collections::HashMap::with_capacity_and_hasher(4096, Default::default());
        for code in 0..CODES {
            if count1[code] == 0 {
                continue;
            }
            let sym = symbol_of(code);
            // Single bytes are boosted 8× (as in FSST): without them in the
            // table every byte no longer symbol matches costs an escape, two
            // output bytes, and inputs unlike the sample grow instead of
            // shrinking.
            let boost = if sym.1 == 1 { 8 } else { 1 };
            *gains.entry(sym).or_default() += boost * count1[code] as u64 * sym.1 as u64;
            for next in 0..CODES {
                let c = count2[code * CODES + next];
                if c == 0 {
                    continue;
                }
                // An 8-byte symbol cannot be extended.
                if sym.1 as usize >= MAX_SYMBOL_LEN {
                    break;
                }
                let (w2, l2) = symbol_of(next);
                let len = (sym.1 as usize + l2 as usize).min(MAX_SYMBOL_LEN);
                let word = (sym.0 | (w2 << (8 * sym.1 as u32))) & len_mask(len);
                *gains.entry((word, len as u8)).or_default() += c as u64 * len as u64;
            }
        }
        let ranked = super::fsst_rank::rank(gains.into_iter().collect(), MAX_SYMBOLS);
        let mut next = SymbolTable { enabled: true, terminator, ..SymbolTable::uncompressed() };
        let mut fill = BucketFill::new();
        for (word, len) in ranked {
            if next.n_symbols >= MAX_SYMBOLS {
                break;
            }
            if fill.take(word, len as usize) {
                next.symbols[next.n_symbols] = word.to_le_bytes();
                next.lens[next.n_symbols] = len;
                next.n_symbols += 1;
            }
        }
        table = next;
        consider(&table);
    }
    best.map_or(table, |(_, t)| t)
}

#[cfg(test)]
#[path = "fsst_tests.rs"]
mod tests;
