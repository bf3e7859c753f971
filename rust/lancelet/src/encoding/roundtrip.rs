//! Shared round-trip harness for every codec: seeded data generators,
//! encode→decode checks, property tests, and garbage-input tests whose only
//! requirement is "an `Err` or a value, never a panic".

use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::general::CompressionScheme;
use super::{bitpack, bss, fsst, general, rle};

// ---------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------

/// Lengths that hit block boundaries of 1024-value codecs.
const LENGTHS: &[usize] = &[0, 1, 2, 7, 255, 256, 1023, 1024, 1025, 2047, 2048, 2500, 4097];

fn mask(bits: u32) -> u64 {
    if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Named integer data sets for a word width, each value < 2^bits.
pub(crate) fn int_cases(bits: u32, seed: u64) -> Vec<(String, Vec<u64>)> {
    let mut rng = StdRng::seed_from_u64(seed ^ bits as u64);
    let mut cases = Vec::new();
    for &n in LENGTHS {
        let uniform: Vec<u64> = (0..n).map(|_| rng.random::<u64>() & mask(bits)).collect();
        cases.push((format!("uniform/{n}"), uniform));
        let small_max = rng.random_range(1..=(mask(bits).min(1000)));
        cases.push((format!("small/{n}"), (0..n).map(|_| rng.random_range(0..=small_max)).collect()));
        let mut runs = Vec::with_capacity(n);
        while runs.len() < n {
            let v = rng.random::<u64>() & mask(bits) & 0xff;
            let len = rng.random_range(1..600usize).min(n - runs.len());
            runs.extend(std::iter::repeat_n(v, len));
        }
        cases.push((format!("runs/{n}"), runs));
        cases.push((format!("const/{n}"), vec![mask(bits) & 7; n]));
        // Edge widths: W = 0 and W = T (a "negative" value).
        cases.push((format!("zeros/{n}"), vec![0; n]));
        let mut top = vec![1u64; n];
        if let Some(x) = top.last_mut() {
            *x = 1u64 << (bits - 1);
        }
        cases.push((format!("topbit/{n}"), top));
    }
    cases
}

/// Little-endian bytes of `values` at `bits` width.
pub(crate) fn to_le(bits: u32, values: &[u64]) -> Vec<u8> {
    let b = (bits / 8) as usize;
    values.iter().flat_map(|v| v.to_le_bytes()[..b].to_vec()).collect()
}

/// Named string data sets.
pub(crate) fn string_cases(seed: u64) -> Vec<(String, Vec<Vec<u8>>)> {
    let mut rng = StdRng::seed_from_u64(seed);
    let words = ["hello", "world", "lance", "columnar", " ", "the ", "and ", "ünïcødé", "日本語", "🦀"];
    let mut cases: Vec<(String, Vec<Vec<u8>>)> =
        vec![("empty".into(), vec![]), ("one-empty-string".into(), vec![vec![]]), ("empty-strings".into(), vec![vec![]; 100])];
    for &n in &[1usize, 10, 1000, 5000] {
        let repeats: Vec<Vec<u8>> = (0..n)
            .map(|i| {
                let mut s = Vec::new();
                for _ in 0..rng.random_range(0..12) {
                    s.extend_from_slice(words[rng.random_range(0..words.len())].as_bytes());
                }
                s.extend_from_slice(format!("{i}").as_bytes());
                s
            })
            .collect();
        cases.push((format!("repeats/{n}"), repeats));
        let binary: Vec<Vec<u8>> = (0..n).map(|_| (0..rng.random_range(0..40)).map(|_| rng.random::<u8>()).collect()).collect();
        cases.push((format!("binary/{n}"), binary));
        let mixed: Vec<Vec<u8>> = (0..n).map(|i| if i % 3 == 0 { Vec::new() } else { "ß∂ƒ©˙∆˚¬…æ".repeat(i % 5).into_bytes() }).collect();
        cases.push((format!("unicode-and-empty/{n}"), mixed));
    }
    cases.push(("escape-bytes".into(), vec![vec![0xff; 50], vec![0, 0xff, 0], vec![0xfe, 0xff]]));
    cases.push(("long".into(), vec![b"abcdefghij".repeat(2000)]));
    cases
}

/// Arrow-style offsets (starting at `base`) plus concatenated bytes.
pub(crate) fn to_offsets(strings: &[Vec<u8>], base: usize) -> (Vec<i64>, Vec<u8>) {
    let mut data = vec![0xAA; base];
    let mut offsets = vec![base as i64];
    for s in strings {
        data.extend_from_slice(s);
        offsets.push(data.len() as i64);
    }
    (offsets, data)
}

/// Garbage inputs derived from a valid encoding: truncations, bit flips,
/// random bytes of assorted lengths.
pub(crate) fn garbage_from(valid: &[u8], seed: u64) -> Vec<Vec<u8>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = vec![Vec::new()];
    for cut in [1usize, 2, 3, 7, 8, 9, valid.len() / 2, valid.len().saturating_sub(1)] {
        out.push(valid[..cut.min(valid.len())].to_vec());
    }
    for _ in 0..40 {
        let mut v = valid.to_vec();
        if !v.is_empty() {
            for _ in 0..rng.random_range(1..4) {
                let i = rng.random_range(0..v.len());
                v[i] ^= 1 << rng.random_range(0..8);
            }
        }
        out.push(v);
    }
    for len in [1usize, 4, 8, 9, 16, 100, 2312, 5000] {
        out.push((0..len).map(|_| rng.random::<u8>()).collect());
    }
    out
}

// ---------------------------------------------------------------------------
// Round trips over the generated cases
// ---------------------------------------------------------------------------

#[test]
fn bitpack_inline_roundtrip() {
    for bits in [8u32, 16, 32, 64] {
        for (name, values) in int_cases(bits, 1) {
            for chunk in values.chunks(1024) {
                let le = to_le(bits, chunk);
                let mut enc = Vec::new();
                bitpack::pack_inline_chunk(bits, &le, &mut enc);
                let w = bitpack::bit_width_needed(bits, &le);
                assert_eq!(enc.len(), bitpack::inline_chunk_bytes(bits, w), "{bits} {name}");
                let mut dec = Vec::new();
                bitpack::unpack_inline_chunk(bits, &enc, chunk.len(), &mut dec).unwrap();
                assert_eq!(dec, le, "{bits} {name}");
            }
        }
    }
}

#[test]
fn bitpack_out_of_line_roundtrip() {
    for bits in [8u32, 16, 32, 64] {
        for (name, values) in int_cases(bits, 2) {
            let le = to_le(bits, &values);
            let (w, enc) = bitpack::pack_out_of_line(bits, &le);
            let mut dec = Vec::new();
            bitpack::unpack_out_of_line(bits, w, &enc, values.len(), &mut dec).unwrap();
            assert_eq!(dec, le, "{bits} {name} w={w}");
        }
    }
}

#[test]
fn rle_roundtrip() {
    for bits in [8u32, 16, 32, 64] {
        for (name, values) in int_cases(bits, 3) {
            let le = to_le(bits, &values);
            let (v, l) = rle::encode(bits, &le);
            assert_eq!(v.len(), l.len() * bits as usize / 8);
            let mut dec = Vec::new();
            rle::decode(bits, &v, &l, values.len(), &mut dec).unwrap();
            assert_eq!(dec, le, "{bits} {name}");
            let block = rle::encode_block(bits, &le);
            let mut dec = Vec::new();
            rle::decode_block(bits, &block, values.len(), &mut dec).unwrap();
            assert_eq!(dec, le, "block {bits} {name}");
        }
    }
}

#[test]
fn bss_roundtrip() {
    for bits in [8u32, 16, 32, 64] {
        for (name, values) in int_cases(bits, 4) {
            let le = to_le(bits, &values);
            let w = bits as usize / 8;
            let mut dec = Vec::new();
            bss::decode(w, &bss::encode(w, &le), values.len(), &mut dec).unwrap();
            assert_eq!(dec, le, "{bits} {name}");
        }
    }
}

#[test]
fn general_roundtrip() {
    for (name, strings) in string_cases(5) {
        let data: Vec<u8> = strings.concat();
        for scheme in [CompressionScheme::Lz4, CompressionScheme::Zstd] {
            let enc = general::compress(scheme, None, &data);
            assert_eq!(general::decompress(scheme, &enc).unwrap(), data, "{scheme:?} {name}");
        }
    }
}

fn fsst_check(table: &fsst::SymbolTable, strings: &[Vec<u8>], name: &str) {
    for base in [0usize, 3] {
        let (offsets, data) = to_offsets(strings, base);
        let (co, cd) = fsst::compress(table, &offsets, &data).unwrap();
        let reparsed = fsst::SymbolTable::parse(&table.to_bytes()).unwrap();
        assert_eq!(&reparsed, table);
        let (o, d) = fsst::decompress(&reparsed, &co, &cd).unwrap();
        let (want_o, want_d) = to_offsets(strings, 0);
        assert_eq!(d, want_d, "{name}");
        assert_eq!(o, want_o, "{name}");
        // Narrow offsets work the same way.
        let co32: Vec<u32> = co.iter().map(|&x| x as u32).collect();
        let (o32, d32) = fsst::decompress(&reparsed, &co32, &cd).unwrap();
        assert_eq!(d32, want_d);
        assert_eq!(o32.last().copied().unwrap_or(0) as usize, want_d.len());
    }
}

#[test]
fn fsst_roundtrip() {
    for (name, strings) in string_cases(6) {
        let (offsets, data) = to_offsets(&strings, 0);
        let table = fsst::train_forced(&offsets, &data).unwrap();
        assert!(table.is_enabled());
        fsst_check(&table, &strings, &name);
        let lance_rule = fsst::train(&offsets, &data).unwrap();
        assert_eq!(lance_rule.is_enabled(), data.len() >= fsst::MIN_INPUT_BYTES, "{name}");
        fsst_check(&lance_rule, &strings, &name);
    }
}

#[test]
fn fsst_compresses_repetitive_text() {
    let strings: Vec<Vec<u8>> = (0..3000).map(|i| format!("hello world {i} with some text").into_bytes()).collect();
    let (offsets, data) = to_offsets(&strings, 0);
    let table = fsst::train(&offsets, &data).unwrap();
    assert!(table.is_enabled() && table.len() > 10);
    let (_, cd) = fsst::compress(&table, &offsets, &data).unwrap();
    assert!(cd.len() * 2 < data.len(), "{} -> {}", data.len(), cd.len());
}

// ---------------------------------------------------------------------------
// Property tests
// ---------------------------------------------------------------------------

fn width_strategy() -> impl Strategy<Value = u32> {
    prop_oneof![Just(8u32), Just(16), Just(32), Just(64)]
}

fn values_strategy(max_len: usize) -> impl Strategy<Value = (u32, Vec<u64>)> {
    (width_strategy(), 0u32..=64).prop_flat_map(move |(bits, w)| {
        let m = mask(bits) & mask(w.clamp(1, 64)) & if w == 0 { 0 } else { u64::MAX };
        (Just(bits), prop::collection::vec(any::<u64>().prop_map(move |v| v & m), 0..max_len))
    })
}

proptest! {
    #[test]
    fn prop_bitpack_inline((bits, values) in values_strategy(1025)) {
        let values = &values[..values.len().min(1024)];
        let le = to_le(bits, values);
        let mut enc = Vec::new();
        bitpack::pack_inline_chunk(bits, &le, &mut enc);
        let mut dec = Vec::new();
        bitpack::unpack_inline_chunk(bits, &enc, values.len(), &mut dec).unwrap();
        prop_assert_eq!(dec, le);
    }

    #[test]
    fn prop_bitpack_out_of_line((bits, values) in values_strategy(3000)) {
        let le = to_le(bits, &values);
        let (w, enc) = bitpack::pack_out_of_line(bits, &le);
        let mut dec = Vec::new();
        bitpack::unpack_out_of_line(bits, w, &enc, values.len(), &mut dec).unwrap();
        prop_assert_eq!(dec, le);
    }

    #[test]
    fn prop_rle((bits, values) in values_strategy(2000), run in 1usize..300) {
        // Stretch values into runs so both short and >255 runs occur.
        let values: Vec<u64> = values.iter().flat_map(|&v| std::iter::repeat_n(v, run % 7 + (v as usize % run))).take(5000).collect();
        let le = to_le(bits, &values);
        let (v, l) = rle::encode(bits, &le);
        let mut dec = Vec::new();
        rle::decode(bits, &v, &l, values.len(), &mut dec).unwrap();
        prop_assert_eq!(&dec, &le);
        let mut dec = Vec::new();
        rle::decode_block(bits, &rle::encode_block(bits, &le), values.len(), &mut dec).unwrap();
        prop_assert_eq!(dec, le);
    }

    #[test]
    fn prop_bss(w in 1usize..17, data in prop::collection::vec(any::<u8>(), 0..2000)) {
        let data = &data[..data.len() / w * w];
        let mut dec = Vec::new();
        bss::decode(w, &bss::encode(w, data), data.len() / w, &mut dec).unwrap();
        prop_assert_eq!(dec, data);
    }

    #[test]
    fn prop_general(data in prop::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), any::<u8>()], 0..5000), lz4 in any::<bool>()) {
        let scheme = if lz4 { CompressionScheme::Lz4 } else { CompressionScheme::Zstd };
        prop_assert_eq!(general::decompress(scheme, &general::compress(scheme, Some(1), &data)).unwrap(), data);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn prop_fsst(strings in prop::collection::vec(
        prop::collection::vec(prop_oneof![Just(b'x'), Just(b'y'), Just(0xffu8), any::<u8>()], 0..30), 0..200)) {
        let (offsets, data) = to_offsets(&strings, 0);
        let table = fsst::train_forced(&offsets, &data).unwrap();
        let (co, cd) = fsst::compress(&table, &offsets, &data).unwrap();
        let (o, d) = fsst::decompress(&table, &co, &cd).unwrap();
        prop_assert_eq!(o, offsets);
        prop_assert_eq!(d, data);
    }
}

// ---------------------------------------------------------------------------
// Garbage: decoders must return Err or a value, never panic
// ---------------------------------------------------------------------------

#[test]
fn bitpack_garbage() {
    for bits in [8u32, 16, 32, 64] {
        let values: Vec<u64> = (0..1500).map(|i| i % 300).collect();
        let le = to_le(bits, &values);
        let mut inline = Vec::new();
        bitpack::pack_inline_chunk(bits, &le[..le.len() * 1024 / 1500 / (bits as usize / 8) * (bits as usize / 8)], &mut inline);
        let (w, ool) = bitpack::pack_out_of_line(bits, &le);
        for g in garbage_from(&inline, 10).iter().chain(&garbage_from(&ool, 11)) {
            for n in [0usize, 1, 1024, 1025, 1500, 5000] {
                for ub in [bits, 12, 0] {
                    let mut out = Vec::new();
                    let _ = bitpack::unpack_inline_chunk(ub, g, n, &mut out);
                    for cw in [w, 0, bits, bits + 1, 200] {
                        let _ = bitpack::unpack_out_of_line(ub, cw, g, n, &mut out);
                    }
                }
            }
        }
    }
}

#[test]
fn rle_garbage() {
    let values: Vec<u64> = (0..3000).map(|i| i / 100).collect();
    for bits in [8u32, 16, 32, 64] {
        let block = rle::encode_block(bits, &to_le(bits, &values));
        for g in garbage_from(&block, 12) {
            for n in [0usize, 1, 3000, 3001, 1 << 40] {
                let mut out = Vec::new();
                let _ = rle::decode_block(bits, &g, n, &mut out);
                let half = g.len() / 2;
                let _ = rle::decode(bits, &g[..half], &g[half..], n, &mut out);
            }
        }
    }
}

#[test]
fn bss_garbage() {
    for g in garbage_from(&[1, 2, 3, 4, 5, 6, 7, 8], 13) {
        for w in [0usize, 1, 4, 8] {
            for n in [0usize, 1, 2, usize::MAX] {
                let _ = bss::decode(w, &g, n, &mut Vec::new());
            }
        }
    }
}

#[test]
fn general_garbage() {
    let data = b"some text some text some text 1234567890".repeat(50);
    for scheme in [CompressionScheme::Lz4, CompressionScheme::Zstd] {
        for g in garbage_from(&general::compress(scheme, None, &data), 14) {
            let _ = general::decompress(scheme, &g);
        }
    }
}

#[test]
fn fsst_garbage() {
    let strings: Vec<Vec<u8>> = (0..300).map(|i| format!("value number {i}").into_bytes()).collect();
    let (offsets, data) = to_offsets(&strings, 0);
    let table = fsst::train_forced(&offsets, &data).unwrap();
    for g in garbage_from(&table.to_bytes(), 15) {
        let _ = fsst::SymbolTable::parse(&g);
    }
    let (co, cd) = fsst::compress(&table, &offsets, &data).unwrap();
    let mut rng = StdRng::seed_from_u64(16);
    for g in garbage_from(&cd, 17) {
        let _ = fsst::decompress(&table, &co, &g);
        let mut bad = co.clone();
        for _ in 0..3 {
            let i = rng.random_range(0..bad.len());
            bad[i] = rng.random_range(-5..(g.len() as i64 + 5));
        }
        let _ = fsst::decompress(&table, &bad, &g);
        let _ = fsst::decompress(&fsst::SymbolTable::uncompressed(), &bad, &g);
    }
}
