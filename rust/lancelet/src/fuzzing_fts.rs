//! The `fts_postings` fuzz target: bytes of an INVERTED index's posting
//! blocks, position streams and token sets (`index::inverted`). The first
//! byte picks the decoder: posting blocks (the next 2 bytes give the list
//! length, the rest is split into blocks of the codec's framing), positions
//! of a decoded list, or an `fst` token set (loaded, looked up, streamed
//! and searched with a Levenshtein automaton). Besides never panicking, a
//! decoded list must ascend and name docs below the bound given.

use fst::{IntoStreamer, Streamer};

use super::ok;
use crate::index::inverted::load_token_map;
use crate::index::inverted::posting::{self, Postings, TailCodec, BLOCK};

/// The `fts_postings` target.
pub fn fts_postings(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    match mode % 3 {
        0 | 1 => {
            if rest.len() < 2 {
                return;
            }
            let length = u32::from(u16::from_le_bytes([rest[0], rest[1]])) % 600;
            let body = &rest[2..];
            let nblocks = (length as usize).div_ceil(BLOCK);
            // Cut the body into nblocks pieces of roughly equal size.
            let step = body.len().checked_div(nblocks.max(1)).unwrap_or(0);
            let blocks: Vec<&[u8]> =
                (0..nblocks).map(|i| if i + 1 == nblocks { &body[i * step..] } else { &body[i * step..(i + 1) * step] }).collect();
            let codec = if mode % 3 == 0 { TailCodec::VarintDelta } else { TailCodec::Fixed32 };
            if let Some(p) = ok(posting::decode(&blocks, length, codec, 5000)) {
                assert_eq!(p.docs.len(), length as usize);
                assert!(p.docs.windows(2).all(|w| w[0] < w[1]));
                let mut with = Postings { positions: None, ..p };
                let _ = ok(posting::decode_positions(&mut with, body, &[0]));
            }
        }
        _ => {
            // Positions of a small list whose freqs come from the input.
            let n = rest.first().map_or(0, |&b| b as usize % 40);
            let freqs: Vec<u32> = rest.iter().skip(1).take(n).map(|&b| u32::from(b % 9) + 1).collect();
            let docs: Vec<u32> = (0..freqs.len() as u32).collect();
            let stream = rest.get(1 + freqs.len()..).unwrap_or_default();
            let mut p = Postings { docs, freqs, positions: None };
            if let Some(()) = ok(posting::decode_positions(&mut p, stream, &[0])) {
                let pos = p.positions.as_ref().expect("positions set");
                assert!(pos.iter().zip(&p.freqs).all(|(v, &f)| v.len() == f as usize));
            }
            if let Some(m) = ok(load_token_map(rest.to_vec())) {
                let _ = m.get("quick");
                let mut s = m.stream();
                let mut n = 0;
                while let Some((_, _)) = s.next() {
                    n += 1;
                    if n > 10_000 {
                        break;
                    }
                }
                if let Ok(lev) = fst::automaton::Levenshtein::new("quik", 1) {
                    let mut s = m.search(lev).into_stream();
                    while s.next().is_some() {}
                }
            }
        }
    }
}

/// Seeds: a tail block of the research example, a positions stream and a
/// small token set.
pub fn seeds() -> Vec<Vec<u8>> {
    let mut tail = vec![0u8, 3, 0];
    tail.extend_from_slice(&[0x0b, 0xd3, 0x8f, 0x3f, 0x00, 0x01, 0x03, 0x01, 0x01, 0x03]);
    let positions = vec![2u8, 4, 1, 1, 3, 1, 8, 3, 0, 1, 1, 1];
    let mut b = fst::MapBuilder::memory();
    for (i, t) in ["brown", "dog", "fox", "quick"].iter().enumerate() {
        b.insert(t, i as u64).expect("sorted keys");
    }
    let mut map = vec![2u8];
    map.extend(b.into_inner().expect("fst bytes"));
    vec![tail, positions, map]
}
