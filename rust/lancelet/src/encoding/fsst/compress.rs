//! FSST compression: a symbol table turned into greedy longest-match
//! lookup tables ([`Encoder`], which the trainer also scores tables
//! with), and a compressor that runs four strings' streams in one loop.

use super::{check_offsets, passthrough, Offset, SymbolTable, ESCAPE, MAX_SYMBOLS};
use crate::corrupt;
use crate::error::Result;

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
pub(super) struct Encoder {
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
pub(super) const ESCAPED: u16 = 1 << 15;

pub(super) const fn len_mask(len: usize) -> u64 {
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
pub(super) struct BucketFill(Vec<u8>);

impl BucketFill {
    pub(super) fn new() -> Self {
        BucketFill(vec![0; 1 << BUCKET_BITS])
    }

    /// Whether a symbol (`word`, `len`) fits; if so it is counted.
    pub(super) fn take(&mut self, word: u64, len: usize) -> bool {
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
pub(super) fn load(data: &[u8], pos: usize) -> u64 {
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
    pub(super) fn new(table: &SymbolTable) -> Self {
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
                bucket[at] = LongSlot { word, shift: 64 - 8 * len as u32, len: len as u8, entry: (len as u16) << 8 | i as u16 };
            }
        }
        enc.short = short;
        enc
    }

    /// The entry for the input whose next bytes are `word` (LE), with `rem
    /// ≥ 1` bytes left in the string (bytes of `word` past them are
    /// ignored).
    #[inline(always)]
    pub(super) fn find(&self, word: u64, rem: usize) -> u16 {
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
    pub(super) fn compressed_len(&self, s: &[u8]) -> usize {
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
pub(super) const SPLIT_INPUT_BYTES: usize = 1 << 20;

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
