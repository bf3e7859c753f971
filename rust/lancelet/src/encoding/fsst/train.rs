//! FSST training: a symbol table chosen for a column's strings from a
//! sample of them, in rounds of compressing and counting (see
//! [`build_table`]).

use super::compress::{len_mask, load, BucketFill, Encoder, ESCAPED};
use super::{check_offsets, Offset, SymbolTable, MAX_SYMBOLS, MAX_SYMBOL_LEN, MIN_INPUT_BYTES};
use crate::error::Result;

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
        let ranked = super::rank::rank(gains.into_iter().collect(), MAX_SYMBOLS);
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
