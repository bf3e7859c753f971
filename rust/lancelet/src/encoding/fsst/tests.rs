//! Tests of [`super`]: round trips, corrupt input, sizes against the
//! reference compressor's, and (ignored) speed comparisons.

use super::compress::SPLIT_INPUT_BYTES;
use super::decode::{decode_pass, decode_stream, push_ends, LITERAL};
use super::*;
use crate::error::Error;
use proptest::prelude::*;

/// Strings back to back, with their u32 offsets.
fn joined<S: AsRef<[u8]>>(strings: &[S]) -> (Vec<u32>, Vec<u8>) {
    let mut offsets = vec![0u32];
    let mut data = Vec::new();
    for s in strings {
        data.extend_from_slice(s.as_ref());
        offsets.push(data.len() as u32);
    }
    (offsets, data)
}

/// Strings mostly from a small alphabet (so
/// symbols form), some bytes that never make a symbol (escapes), and
/// empty strings.
fn corpus() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let byte = prop_oneof![8 => prop::sample::select(b"abcde/.:".to_vec()), 1 => any::<u8>()];
    prop::collection::vec(prop::collection::vec(byte, 0..40), 0..200)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// The stream decoder, called on arbitrary runs of strings, agrees
    /// with the per-string reference decoder, offsets included.
    #[test]
    fn stream_decoder_matches_reference(strings in corpus(), cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6)) {
        let (offsets, data) = joined(&strings);
        let table = train_forced(&offsets, &data).unwrap();
        let (co, cd) = compress(&table, &offsets, &data).unwrap();
        let (want_off, want) = decompress(&table, &co, &cd).unwrap();
        let mut bounds: Vec<usize> = cuts.iter().map(|c| c.index(strings.len() + 1)).collect();
        bounds.extend([0, strings.len()]);
        bounds.sort();
        let (mut out, mut got_off) = (vec![9u8], vec![1i32]);
        for w in bounds.windows(2) {
            let (a, b) = (co[w[0]] as usize, co[w[1]] as usize);
            let ends: Vec<usize> = co[w[0] + 1..=w[1]].iter().map(|&e| e as usize - a).collect();
            decompress_strings_into(&table, &cd[a..b], &ends, &mut out, &mut got_off).unwrap();
        }
        prop_assert_eq!(&out[1..], &want[..]);
        let got: Vec<u32> = got_off[1..].iter().map(|o| (o - 1) as u32).collect();
        prop_assert_eq!(&got[..], &want_off[1..]);
    }
}

/// The session-6 pass (four codes a step), kept as a second reference
/// for the current one and for the speed comparison below.
fn decode_pass_v1<O: Offset>(
    table: &SymbolTable,
    src: &[u8],
    ends: &[usize],
    ends_base: usize,
    out: &mut Vec<u8>,
    offsets: &mut Vec<O>,
) -> Result<()> {
    // Each code byte yields at most 8 bytes; 8 more for the last word store.
    out.reserve(src.len() * MAX_SYMBOL_LEN + MAX_SYMBOL_LEN);
    let start = out.len();
    // SAFETY: `start` is within the allocation.
    let base = unsafe { out.as_mut_ptr().add(start) };
    // at[i]: output position (from `start`) before code byte i; at[len]: the end.
    let mut at: Vec<u32> = Vec::with_capacity(src.len() + 1);
    let ap = at.as_mut_ptr();
    let sp = src.as_ptr();
    // SAFETY (all stores to `base` below): every code advances pos by at
    // most 8 while consuming at least one source byte, so a store of 8
    // bytes at pos stays within the reserved 8 * (src.len() + 1) bytes.
    let put = |code: u8, pos: usize| unsafe {
        std::ptr::copy_nonoverlapping(table.symbols[code as usize].as_ptr(), base.add(pos), 8);
    };
    // An unused code has length 0: it writes nothing that stays, so the
    // loop only notes it and the error is raised afterwards.
    let mut unused = false;
    let mut pos = 0usize;
    let mut i = 0;
    while i < src.len() {
        if i + 4 <= src.len() {
            // SAFETY: i + 4 <= src.len().
            let w = u32::from_le(unsafe { std::ptr::read_unaligned(sp.add(i) as *const u32) });
            let x = !w; // a byte of x is zero where a code is ESCAPE (255)
            if x.wrapping_sub(0x0101_0101) & !x & 0x8080_8080 == 0 {
                let c = w.to_le_bytes();
                let l = c.map(|c| table.lens[c as usize] as usize);
                unused |= (l[0] == 0) | (l[1] == 0) | (l[2] == 0) | (l[3] == 0);
                let p = [pos, pos + l[0], pos + l[0] + l[1], pos + l[0] + l[1] + l[2]];
                for q in 0..4 {
                    put(c[q], p[q]);
                }
                // SAFETY: i + 4 <= src.len() < capacity.
                unsafe { (ap.add(i) as *mut [u32; 4]).write_unaligned(p.map(|x| x as u32)) };
                pos = p[3] + l[3];
                i += 4;
                continue;
            }
        }
        // An escape among the next four codes, or the last few: one code.
        // SAFETY: i < src.len() < capacity.
        unsafe { ap.add(i).write(pos as u32) };
        let code = src[i];
        if code == ESCAPE {
            let Some(&literal) = src.get(i + 1) else {
                return Err(corrupt!("fsst: escape code at the end of the input"));
            };
            // SAFETY: as for `put`; i + 1 < src.len() < capacity.
            unsafe {
                *base.add(pos) = literal;
                ap.add(i + 1).write(LITERAL);
            }
            pos += 1;
            i += 2;
        } else {
            let len = table.lens[code as usize] as usize;
            unused |= len == 0;
            put(code, pos);
            pos += len;
            i += 1;
        }
    }
    // SAFETY: i == src.len() < capacity; slots 0..i were written above.
    unsafe {
        ap.add(i).write(pos as u32);
        at.set_len(i + 1);
    }
    if unused {
        let code = src.iter().zip(&at).find(|&(&c, &a)| a != LITERAL && c != ESCAPE && table.lens[c as usize] == 0).map_or(0, |(&c, _)| c);
        return Err(corrupt!("fsst: code {code} but only {} symbols", table.n_symbols));
    }
    push_ends(&at, ends, ends_base, start, offsets)?;
    // SAFETY: bytes up to pos were written above (symbol tails beyond a
    // symbol's length are overwritten by the next store or cut off).
    unsafe { out.set_len(start + pos) };
    Ok(())
}

/// A-like strings (word phrases and URL-like paths, 10-60 bytes).
fn a_like_strings(n: usize) -> (Vec<u32>, Vec<u8>) {
    let mut x = 7u64;
    let mut next = move |m: u64| {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) % m
    };
    let words: Vec<String> = (0..3000).map(|_| (0..3 + next(8)).map(|_| (b'a' + next(26) as u8) as char).collect()).collect();
    let strings: Vec<String> = (0..n)
        .map(|_| {
            let mut s = if next(2) == 0 {
                (0..2 + next(5)).map(|_| words[next(3000) as usize].as_str()).collect::<Vec<_>>().join(" ")
            } else {
                format!(
                    "https://{}.com/{}/{}?id={}",
                    words[next(3000) as usize],
                    words[next(3000) as usize],
                    words[next(3000) as usize],
                    next(100000)
                )
            };
            s.truncate(10 + next(51) as usize);
            s
        })
        .collect();
    joined(&strings)
}

/// The current pass and the session-6 one agree on A-like data with
/// every chunk cut, and (run with `--ignored --nocapture` in a release
/// build) their speed side by side.
#[test]
fn pass_matches_previous_pass() {
    let (offsets, data) = a_like_strings(if cfg!(debug_assertions) { 20_000 } else { 400_000 });
    let table = train(&offsets, &data).unwrap();
    let (co, cd) = compress(&table, &offsets, &data).unwrap();
    let chunks: Vec<(usize, usize)> = (0..co.len() - 1).step_by(1024).map(|i| (i, (i + 1024).min(co.len() - 1))).collect();
    let run = |v1: bool| {
        let (mut out, mut offs) = (Vec::with_capacity(data.len() + 64), vec![0i32]);
        for &(a, b) in &chunks {
            let (s, e) = (co[a] as usize, co[b] as usize);
            let ends: Vec<usize> = co[a + 1..=b].iter().map(|&x| x as usize - s).collect();
            if v1 {
                decode_pass_v1(&table, &cd[s..e], &ends, 0, &mut out, &mut offs).unwrap();
            } else {
                decode_pass(&table, &cd[s..e], &ends, 0, &mut out, &mut offs).unwrap();
            }
        }
        (out, offs)
    };
    let (new, old) = (run(false), run(true));
    assert_eq!(new.0, data);
    assert_eq!(new, old);
    if std::env::var_os("FSST_SPEED").is_some() {
        for round in 0..3 {
            for v1 in [true, false] {
                let t = std::time::Instant::now();
                for _ in 0..5 {
                    std::hint::black_box(run(v1));
                }
                let ns = t.elapsed().as_nanos() as f64 / 5.0 / data.len() as f64;
                eprintln!("round {round} {}: {ns:.3} ns per output byte", if v1 { "v1 (four codes)" } else { "v2 (eight codes)" });
            }
        }
    }
}

/// The ASCII answer: true only when every escaped byte is ASCII; a
/// table with a non-ASCII symbol says so; a switched-off table never
/// claims ASCII.
#[test]
fn ascii_is_reported_only_when_true() {
    let table = SymbolTable::from_symbols(&[b"ab".as_slice(), b"c"]).unwrap();
    assert!(table.symbols_ascii());
    assert!(!SymbolTable::from_symbols(&[b"a".as_slice(), "\u{e9}".as_bytes()]).unwrap().symbols_ascii());
    for (src, want) in [
        (&[0u8, 1, ESCAPE, b'z', 0, 0, 0, 0, 0, 1][..], true),
        (&[0, ESCAPE, 0xC3, 1][..], false),
        (&[0, 0, 0, 0, 0, 0, 0, 0, ESCAPE, 0x80][..], false),
    ] {
        let (mut out, mut offs) = (Vec::new(), Vec::<i32>::new());
        assert_eq!(decompress_strings_into(&table, src, &[src.len()], &mut out, &mut offs).unwrap(), want, "{src:?}");
        assert_eq!(out.is_ascii(), want);
    }
    let off = SymbolTable::uncompressed();
    assert!(!decompress_strings_into::<i32>(&off, b"abc", &[3], &mut Vec::new(), &mut Vec::new()).unwrap());
}

/// Random code streams (not compressor output, so escapes land at every
/// place of an 8-code word, with any literal, and every code is used)
/// decoded by the stream decoder, in runs of strings cut anywhere,
/// equal the per-string reference decoder. Tables of 1, 37 and 255
/// symbols; strings empty (as null slots are), short, and thousands of
/// codes long; streams all escapes, no escapes, and mixed.
#[test]
fn stream_decoder_matches_reference_on_random_codes() {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    for case in 0..300 {
        let n_symbols = [1usize, 37, 255][case % 3];
        let symbols: Vec<Vec<u8>> = (0..n_symbols).map(|i| (0..1 + (i * 7 + case) % 8).map(|k| (i * 31 + k * 7 + case) as u8).collect()).collect();
        let table = SymbolTable::from_symbols(&symbols).unwrap();
        let escape_per_mille = [0u64, 20, 300, 1000][case % 4];
        let n_strings = 1 + next(60) as usize;
        let mut codes = Vec::new();
        let mut offsets = vec![0u32];
        for _ in 0..n_strings {
            let len = match next(10) {
                0..=2 => 0,
                3..=7 => next(20),
                8 => next(300),
                _ => 1000 + next(3000),
            };
            for _ in 0..len {
                if next(1000) < escape_per_mille {
                    codes.extend([ESCAPE, next(256) as u8]);
                } else {
                    codes.push(next(n_symbols as u64) as u8);
                }
            }
            offsets.push(codes.len() as u32);
        }
        let (want_off, want) = decompress(&table, &offsets, &codes).unwrap();
        // Runs of strings cut at random places, appended after some bytes.
        let mut cuts: Vec<usize> = (0..next(5)).map(|_| next(n_strings as u64 + 1) as usize).collect();
        cuts.extend([0, n_strings]);
        cuts.sort();
        let (mut out, mut got_off) = (vec![1u8, 2, 3], Vec::<i64>::new());
        for w in cuts.windows(2) {
            let (a, b) = (offsets[w[0]] as usize, offsets[w[1]] as usize);
            let ends: Vec<usize> = offsets[w[0] + 1..=w[1]].iter().map(|&e| e as usize - a).collect();
            decompress_strings_into(&table, &codes[a..b], &ends, &mut out, &mut got_off).unwrap();
        }
        assert_eq!(&out[3..], &want[..], "case {case}");
        let got: Vec<u32> = got_off.iter().map(|&o| o as u32 - 3).collect();
        assert_eq!(&got[..], &want_off[1..], "case {case}");
    }
}

/// Corrupt streams are refused wherever the bad code sits in an 8-code
/// word: an unused code, an escape as the last byte.
#[test]
fn stream_decoder_rejects_bad_codes_at_every_place() {
    let table = SymbolTable::from_symbols(&[b"ab".as_slice(), b"c"]).unwrap();
    for n in 1..20 {
        for at in 0..n {
            let mut src = vec![0u8; n];
            src[at] = 7;
            let err = decompress_strings_into::<i32>(&table, &src, &[n], &mut Vec::new(), &mut Vec::new());
            assert!(matches!(err, Err(Error::Corrupt { .. })), "unused code at {at} of {n}: {err:?}");
        }
        let mut src = vec![1u8; n];
        src[n - 1] = ESCAPE;
        let err = decompress_strings_into::<i32>(&table, &src, &[n], &mut Vec::new(), &mut Vec::new());
        assert!(matches!(err, Err(Error::Corrupt { .. })), "escape at the end of {n}: {err:?}");
        // An escaped byte that would be an unused code is a literal.
        let mut src = vec![1u8; n + 1];
        src[n - 1] = ESCAPE;
        src[n] = 7;
        let (mut out, mut offs) = (Vec::new(), Vec::<i32>::new());
        decompress_strings_into(&table, &src, &[n + 1], &mut out, &mut offs).unwrap();
        assert_eq!(out.len(), n, "{n}");
        assert_eq!((out[n - 1], offs), (7, vec![n as i32]));
    }
}

/// Strings split over several passes decode as in one; a string
/// longer than a pass is refused.
#[test]
fn passes_join_up() {
    let strings: Vec<String> = (0..300).map(|i| format!("https://host{}/path/{}", i % 7, "ab".repeat(i % 11))).collect();
    let (offsets, data) = joined(&strings);
    let table = train_forced(&offsets, &data).unwrap();
    let (co, cd) = compress(&table, &offsets, &data).unwrap();
    let ends: Vec<usize> = co[1..].iter().map(|&e| e as usize).collect();
    let longest = co.windows(2).map(|w| w[1] - w[0]).max().unwrap() as usize;
    for pass in [longest, longest + 3, 100, cd.len()] {
        let (mut out, mut offs) = (Vec::new(), vec![0i64]);
        decode_stream(&table, &cd, &ends, &mut out, &mut offs, pass).unwrap();
        assert_eq!(out, data, "pass {pass}");
        assert_eq!(offs, offsets.iter().map(|&o| o as i64).collect::<Vec<_>>(), "pass {pass}");
    }
    let err = decode_stream(&table, &cd, &ends, &mut Vec::new(), &mut Vec::<i64>::new(), longest - 1);
    assert!(matches!(err, Err(Error::InvalidInput { .. })), "{err:?}");
}

/// Corrupt input to the stream decoder is an error, not a wrong answer:
/// an escape whose literal would belong to the next string, an unused
/// code, code bytes without strings, ends that do not cover the input.
#[test]
fn stream_decoder_rejects_corrupt_input() {
    let offsets = [0u32, 6, 12];
    let data = b"abcabcabcabc";
    let table = train_forced(&offsets, data).unwrap();
    let (mut out, mut offs) = (Vec::new(), Vec::<i32>::new());
    let unused = (0..=254u8).find(|&c| table.lens[c as usize] == 0).expect("a free code");
    let cases: [(&[u8], &[usize]); 5] =
        [(&[ESCAPE, b'x', ESCAPE, b'y'], &[1, 4]), (&[0, 0, 0, 0, 0, 0, 0, unused], &[8]), (&[unused], &[1]), (&[0, 0], &[]), (&[0, 0], &[1])];
    for (src, ends) in cases {
        let err = decompress_strings_into(&table, src, ends, &mut out, &mut offs);
        assert!(matches!(err, Err(Error::Corrupt { .. })), "{src:?} {ends:?}: {err:?}");
        assert!(offs.is_empty(), "no offsets pushed on error");
    }
}

/// Many strings (so the four-lane compressor runs), with empty strings
/// at the lane cuts and at both ends, strings shorter than a word, and
/// the input ending right after a string: every lane's output lands in
/// order and decompresses to the input, and matches one-lane output.
#[test]
fn lanes_agree_with_one_stream() {
    for n in [64usize, 65, 67, 100, 1001] {
        let strings: Vec<Vec<u8>> = (0..n)
            .map(|i| match i % 9 {
                _ if i == 0 || i == n - 1 || i % (n / 4) == 0 => vec![],
                0 => b"a".to_vec(),
                1 => vec![0xFF; 3],
                k => format!("https://example.com/{k}/{i}?q=word{}", i * 7919 % 97).into_bytes(),
            })
            .collect();
        let (offsets, data) = joined(&strings);
        let table = train_forced(&offsets, &data).unwrap();
        let (co, cd) = compress(&table, &offsets, &data).unwrap();
        let (o, d) = decompress(&table, &co, &cd).unwrap();
        assert_eq!((o, d), (offsets.clone(), data.clone()), "n = {n}");
        // Each string compressed alone gives the same codes.
        for (i, s) in strings.iter().enumerate() {
            let (_, alone) = compress(&table, &[0u32, s.len() as u32], s).unwrap();
            assert_eq!(&cd[co[i] as usize..co[i + 1] as usize], &alone[..], "string {i} of {n}");
        }
    }
}

/// The stream decoder called once per string, appending, agrees with
/// the whole-buffer one, escapes included.
#[test]
fn one_string_per_call_matches_decompress() {
    let mut offsets = vec![0u32];
    let mut data = Vec::new();
    let mut x = 99u64;
    for i in 0..3000u32 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let s = match i % 4 {
            0 => format!("https://example.com/a/{}", x >> 40),
            1 => format!("word{} other{}", x % 97, x % 13),
            2 => (0..(x % 23) as u8).map(|k| 128 + (k.wrapping_mul(37) ^ (x as u8)) % 120).map(char::from).collect(),
            _ => String::new(),
        };
        data.extend_from_slice(s.as_bytes());
        offsets.push(data.len() as u32);
    }
    let table = train_forced(&offsets, &data).unwrap();
    let (co, cd) = compress(&table, &offsets, &data).unwrap();
    let (_, whole) = decompress(&table, &co, &cd).unwrap();
    let mut appended = vec![7u8];
    for w in co.windows(2) {
        let src = &cd[w[0] as usize..w[1] as usize];
        decompress_strings_into::<u64>(&table, src, &[src.len()], &mut appended, &mut Vec::new()).unwrap();
    }
    assert_eq!(&appended[1..], &whole[..]);
    assert_eq!(whole, data);
}

#[test]
fn switch_off_table_is_the_bare_magic() {
    let b = SymbolTable::uncompressed().to_bytes();
    assert_eq!(b.len(), SYMBOL_TABLE_SIZE);
    assert_eq!(&b[..8], &[0, 0, 0, 0, 0x54, 0x53, 0x53, 0x46]);
    assert!(b[8..].iter().all(|&x| x == 0));
    assert_eq!(SymbolTable::parse(&b).unwrap(), SymbolTable::uncompressed());
}

#[test]
fn hand_table() {
    let t = SymbolTable::from_symbols(&["hello", " ", "world"]).unwrap();
    let data = b"hello worldhello!";
    let offsets = [0i32, 11, 17];
    let (co, cd) = compress(&t, &offsets, data).unwrap();
    assert_eq!(cd, vec![0, 1, 2, 0, 255, b'!']);
    assert_eq!(co, vec![0, 3, 6]);
    let (o, d) = decompress(&SymbolTable::parse(&t.to_bytes()).unwrap(), &co, &cd).unwrap();
    assert_eq!(o, offsets);
    assert_eq!(d, data);
}

#[test]
fn bad_codes_are_errors() {
    let t = SymbolTable::from_symbols(&["ab"]).unwrap();
    assert!(decompress(&t, &[0u32, 1], &[7]).is_err());
    assert!(decompress(&t, &[0u32, 1], &[255]).is_err());
    assert!(decompress(&t, &[0u32, 2], &[0]).is_err());
    assert!(decompress(&t, &[1i64, 0], &[0]).is_err());
}

#[cfg(test)]
mod size_tests {
    use super::*;

    fn build(n: usize, f: impl Fn(usize, u64) -> String) -> (Vec<u64>, Vec<u8>) {
        let mut offsets = vec![0u64];
        let mut data = Vec::new();
        let mut x = 12345u64;
        for i in 0..n {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            data.extend_from_slice(f(i, x >> 33).as_bytes());
            offsets.push(data.len() as u64);
        }
        (offsets, data)
    }

    fn ratio(offsets: &[u64], data: &[u8]) -> f64 {
        let t = train(offsets, data).unwrap();
        let (co, cd) = compress(&t, offsets, data).unwrap();
        let (o, d) = decompress(&SymbolTable::parse(&t.to_bytes()).unwrap(), &co, &cd).unwrap();
        assert_eq!((o.as_slice(), d.as_slice()), (offsets, data));
        cd.len() as f64 / data.len() as f64
    }

    /// Repetitive strings that differ from string to string used to grow
    /// ~1.8× (the table only knew the sampled strings, every other byte was
    /// escaped); pylance gets ~0.6 here.
    #[test]
    fn repetitive_strings_shrink() {
        let (o, d) = build(4000, |i, r| format!("x{i} ").repeat(60 + (r % 61) as usize));
        let r = ratio(&o, &d);
        assert!(r < 0.5, "ratio {r}");
        let (o, d) = build(4000, |_, r| format!("x{} ", r % 1000).repeat(60 + (r % 61) as usize));
        let r = ratio(&o, &d);
        assert!(r < 0.5, "ratio {r}");
    }

    #[test]
    fn urls_shrink() {
        let doms = ["example.com", "github.com", "lancedb.com", "wikipedia.org"];
        let paths = ["user", "repo", "issues", "pull", "wiki", "search", "blob", "tree"];
        let (o, d) = build(40000, |_, r| {
            format!(
                "https://www.{}/{}/{}?id={}&page={}",
                doms[(r % 4) as usize],
                paths[(r / 4 % 8) as usize],
                paths[(r / 32 % 8) as usize],
                r % 1_000_000,
                r % 50
            )
        });
        let r = ratio(&o, &d);
        assert!(r < 0.4, "ratio {r}");
    }

    /// Whatever the input, a byte never costs more than two output bytes
    /// and frequent bytes get single-byte codes.
    #[test]
    fn never_worse_than_escaping() {
        let (o, d) = build(3000, |i, r| format!("{:x}{}", r.wrapping_mul(i as u64 + 1), "é∑ß".repeat((r % 5) as usize)));
        let r = ratio(&o, &d);
        assert!(r <= 1.0, "ratio {r}");
    }
}

/// Compression of the string sets `/tmp/fsstcmp/*.bin` (written by a small
/// script that also writes them with pylance, for comparison): per set, the
/// compressed bytes (tables included, one table per ≤ 8 MiB page as the
/// writer does) and train / compress speeds.
/// `cargo test -p lancelet --release --lib fsst::tests::compare -- --ignored --nocapture`
#[cfg(test)]
mod compare {
    use super::*;
    use std::hint::black_box;

    fn load(path: &std::path::Path) -> (Vec<u64>, Vec<u8>) {
        let b = std::fs::read(path).unwrap();
        let n = u64::from_le_bytes(b[..8].try_into().unwrap()) as usize;
        let offsets: Vec<u64> = (0..=n).map(|i| u64::from_le_bytes(b[8 + 8 * i..16 + 8 * i].try_into().unwrap())).collect();
        (offsets, b[8 + 8 * (n + 1)..].to_vec())
    }

    #[test]
    #[ignore]
    fn sizes_and_speeds() {
        let mut paths: Vec<_> = std::fs::read_dir("/tmp/fsstcmp")
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "bin"))
            .collect();
        paths.sort();
        for p in paths {
            let (offsets, data) = load(&p);
            // Pages of at most 8 MiB of string data.
            let mut pages = vec![];
            let mut s = 0;
            while s + 1 < offsets.len() {
                let mut e = s + 1;
                while e + 1 < offsets.len() && offsets[e + 1] - offsets[s] <= 8 << 20 {
                    e += 1;
                }
                pages.push(&offsets[s..=e]);
                s = e;
            }
            let (mut size, mut t_train, mut t_comp) = (0usize, 0f64, 0f64);
            for page in pages {
                let t0 = std::time::Instant::now();
                let table = train(page, &data).unwrap();
                let t1 = std::time::Instant::now();
                let (co, cd) = compress(&table, page, &data).unwrap();
                let mut best = (std::time::Instant::now() - t1).as_secs_f64();
                for _ in 0..4 {
                    let t = std::time::Instant::now();
                    black_box(compress(&table, page, &data).unwrap());
                    best = best.min(t.elapsed().as_secs_f64());
                }
                t_train += (t1 - t0).as_secs_f64();
                t_comp += best;
                size += cd.len() + SYMBOL_TABLE_SIZE;
                let (o, d) = decompress(&table, &co, &cd).unwrap();
                let base = page[0];
                assert!(o.iter().zip(page).all(|(a, b)| *a == b - base));
                assert_eq!(d, &data[base as usize..*page.last().unwrap() as usize]);
            }
            let gb = data.len() as f64 / 1e9;
            println!(
                "{:10} raw {:>11} fsst {:>11} ({:.4})  train {:.2} GB/s  compress {:.2} GB/s",
                p.file_stem().unwrap().to_string_lossy(),
                data.len(),
                size,
                size as f64 / data.len() as f64,
                gb / t_train,
                gb / t_comp
            );
        }
    }
}

/// Compressing the two halves side by side gives the bytes and offsets of
/// one pass, whatever the first offset and the offset width.
#[test]
fn split_compression_matches_one_pass() {
    let mut x = 7u64;
    let mut strings: Vec<Vec<u8>> = Vec::new();
    let words: [&[u8]; 6] = [b"river ", b"apple ", b"the ", b"quartz ", b"", b"\xff\x00"];
    let mut bytes = 0;
    while bytes < 3 * SPLIT_INPUT_BYTES {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let s: Vec<u8> = (0..(x >> 60)).flat_map(|k| words[((x >> (4 * k)) % 6) as usize].to_vec()).collect();
        bytes += s.len();
        strings.push(s);
    }
    let (offsets, data) = joined(&strings);
    let table = train(&offsets, &data).unwrap();
    for skip in [0usize, 5] {
        let o32 = &offsets[skip..];
        assert_eq!(compress_split(&table, o32, &data).unwrap(), compress(&table, o32, &data).unwrap());
        let o64: Vec<u64> = o32.iter().map(|&o| o as u64).collect();
        assert_eq!(compress_split(&table, &o64, &data).unwrap(), compress(&table, &o64, &data).unwrap());
    }
    // Offsets that overrun the data are refused before splitting.
    let bad = [0u32, 10, (data.len() + 1) as u32];
    assert!(compress_split(&table, &bad, &data).is_err());
}
