//! FastLanes bit packing: inline (mini-block) chunks and out-of-line
//! (rep/def level) buffers. Throughput is the *decoded* size in bytes
//! (values × word size) for both directions.
//!
//! Run: `cargo bench -p lancelet --bench bitpack`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use lancelet::encoding::bitpack::{
    inline_chunk_bytes, pack_inline_chunk, pack_inline_chunk_typed, pack_out_of_line, pack_out_of_line_typed, unpack_inline_chunk,
    unpack_inline_chunk_typed, unpack_out_of_line, unpack_out_of_line_typed, Word, VALUES_PER_BLOCK,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Full chunks per inline benchmark (256 × 1024 values).
const CHUNKS: usize = 256;
/// Values in an out-of-line level buffer (not a multiple of 1024: exercises
/// the tail).
const LEVELS: usize = 1_000_000;

fn config() -> Criterion {
    Criterion::default().sample_size(10).warm_up_time(Duration::from_millis(200)).measurement_time(Duration::from_millis(700))
}

/// `n` random values below `2^w`, with the top bit of `w` set in every
/// 1024-value block so each chunk really packs at width `w`.
fn values<T: Word>(rng: &mut StdRng, n: usize, w: u32, narrow: impl Fn(u64) -> T) -> Vec<T> {
    let mask = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
    (0..n)
        .map(|i| {
            let v = rng.random::<u64>() & mask;
            let v = if i % VALUES_PER_BLOCK == 0 && w > 0 { v | (1 << (w - 1)) } else { v };
            narrow(v)
        })
        .collect()
}

fn le_bytes<T: Word>(vals: &[T]) -> Vec<u8> {
    let mut out = vec![0u8; vals.len() * T::BYTES];
    for (d, v) in out.chunks_exact_mut(T::BYTES).zip(vals) {
        v.put_le(d);
    }
    out
}

fn bench_inline_word<T: Word>(c: &mut Criterion, name: &str, widths: &[u32], narrow: impl Fn(u64) -> T + Copy) {
    let mut group = c.benchmark_group(format!("bitpack/inline/{name}"));
    let n = CHUNKS * VALUES_PER_BLOCK;
    group.throughput(Throughput::Bytes((n * T::BYTES) as u64));
    for &w in widths {
        let mut rng = StdRng::seed_from_u64(0xB17 + w as u64);
        let vals = values::<T>(&mut rng, n, w, narrow);
        let raw = le_bytes(&vals);
        let mut packed = Vec::new();
        for chunk in vals.chunks(VALUES_PER_BLOCK) {
            pack_inline_chunk_typed(chunk, &mut packed);
        }
        let chunk_len = inline_chunk_bytes(T::BITS, w);
        assert_eq!(packed.len(), CHUNKS * chunk_len);

        group.bench_with_input(BenchmarkId::new("unpack_typed", w), &packed, |b, packed| {
            let mut out: Vec<T> = Vec::with_capacity(n + VALUES_PER_BLOCK);
            b.iter(|| {
                out.clear();
                for chunk in packed.chunks_exact(chunk_len) {
                    unpack_inline_chunk_typed::<T>(chunk, VALUES_PER_BLOCK, &mut out).unwrap();
                }
                black_box(&out);
            })
        });
        group.bench_with_input(BenchmarkId::new("unpack_bytes", w), &packed, |b, packed| {
            let mut out: Vec<u8> = Vec::with_capacity(n * T::BYTES);
            b.iter(|| {
                out.clear();
                for chunk in packed.chunks_exact(chunk_len) {
                    unpack_inline_chunk(T::BITS, chunk, VALUES_PER_BLOCK, &mut out).unwrap();
                }
                black_box(&out);
            })
        });
        group.bench_with_input(BenchmarkId::new("pack_typed", w), &vals, |b, vals| {
            let mut out = Vec::with_capacity(packed.len());
            b.iter(|| {
                out.clear();
                for chunk in vals.chunks_exact(VALUES_PER_BLOCK) {
                    pack_inline_chunk_typed(chunk, &mut out);
                }
                black_box(&out);
            })
        });
        group.bench_with_input(BenchmarkId::new("pack_bytes", w), &raw, |b, raw| {
            let mut out = Vec::with_capacity(packed.len());
            b.iter(|| {
                out.clear();
                for chunk in raw.chunks_exact(VALUES_PER_BLOCK * T::BYTES) {
                    pack_inline_chunk(T::BITS, chunk, &mut out);
                }
                black_box(&out);
            })
        });
    }
    group.finish();
}

fn inline(c: &mut Criterion) {
    bench_inline_word::<u8>(c, "u8", &[3], |v| v as u8);
    bench_inline_word::<u16>(c, "u16", &[3, 10], |v| v as u16);
    bench_inline_word::<u32>(c, "u32", &[3, 10, 17, 31], |v| v as u32);
    bench_inline_word::<u64>(c, "u64", &[3, 10, 17, 31, 50], |v| v);
}

/// Rep/def levels: u16 words at small widths, one width for the buffer.
fn out_of_line(c: &mut Criterion) {
    let mut group = c.benchmark_group("bitpack/out_of_line/u16");
    group.throughput(Throughput::Bytes((LEVELS * 2) as u64));
    for w in [1u32, 2, 3, 5] {
        let mut rng = StdRng::seed_from_u64(0x1E7E1 + w as u64);
        let vals = values::<u16>(&mut rng, LEVELS, w, |v| v as u16);
        let raw = le_bytes(&vals);
        let (pw, packed) = pack_out_of_line_typed(&vals);
        assert_eq!(pw, w);

        group.bench_with_input(BenchmarkId::new("unpack_typed", w), &packed, |b, packed| {
            let mut out: Vec<u16> = Vec::with_capacity(LEVELS + VALUES_PER_BLOCK);
            b.iter(|| {
                out.clear();
                unpack_out_of_line_typed::<u16>(w, packed, LEVELS, &mut out).unwrap();
                black_box(&out);
            })
        });
        group.bench_with_input(BenchmarkId::new("unpack_bytes", w), &packed, |b, packed| {
            let mut out: Vec<u8> = Vec::with_capacity(LEVELS * 2);
            b.iter(|| {
                out.clear();
                unpack_out_of_line(16, w, packed, LEVELS, &mut out).unwrap();
                black_box(&out);
            })
        });
        group.bench_with_input(BenchmarkId::new("pack_typed", w), &vals, |b, vals| b.iter(|| black_box(pack_out_of_line_typed(vals))));
        group.bench_with_input(BenchmarkId::new("pack_bytes", w), &raw, |b, raw| b.iter(|| black_box(pack_out_of_line(16, raw))));
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = config();
    targets = inline, out_of_line
}
criterion_main!(benches);
