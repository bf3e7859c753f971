//! Run-length encoding: encode / decode of 1M values at several mean run
//! lengths, typed and byte-level. Throughput is the decoded size in bytes.
//!
//! Run: `cargo bench -p lancelet --bench rle`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use lancelet::encoding::bitpack::Word;
use lancelet::encoding::rle::{decode, decode_typed, encode, encode_typed, plan_chunks};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const N: usize = 1 << 20;

fn config() -> Criterion {
    Criterion::default().sample_size(10).warm_up_time(Duration::from_millis(200)).measurement_time(Duration::from_millis(700))
}

/// `N` values in runs whose lengths are uniform in `1..=2·mean-1`.
fn runs<T: Word>(seed: u64, mean: usize, narrow: impl Fn(u64) -> T) -> Vec<T> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(N);
    while out.len() < N {
        let len = rng.random_range(1..2 * mean).min(N - out.len());
        let v = narrow(rng.random_range(0..1_000_000u64));
        out.extend(std::iter::repeat_n(v, len));
    }
    out
}

fn le_bytes<T: Word>(vals: &[T]) -> Vec<u8> {
    let mut out = vec![0u8; vals.len() * T::BYTES];
    for (d, v) in out.chunks_exact_mut(T::BYTES).zip(vals) {
        v.put_le(d);
    }
    out
}

fn bench_word<T: Word>(c: &mut Criterion, name: &str, narrow: impl Fn(u64) -> T + Copy) {
    let mut group = c.benchmark_group(format!("rle/{name}"));
    group.throughput(Throughput::Bytes((N * T::BYTES) as u64));
    for mean in [4usize, 32, 1000] {
        let vals = runs::<T>(0x51E + mean as u64, mean, narrow);
        let raw = le_bytes(&vals);
        let (rv, rl) = encode_typed(&vals);
        let mut check: Vec<T> = Vec::new();
        decode_typed(&rv, &rl, N, &mut check).unwrap();
        assert!(check == vals);

        group.bench_with_input(BenchmarkId::new("decode_typed", format!("run{mean}")), &(), |b, _| {
            let mut out: Vec<T> = Vec::with_capacity(N);
            b.iter(|| {
                out.clear();
                decode_typed(black_box(&rv), black_box(&rl), N, &mut out).unwrap();
                black_box(&out);
            })
        });
        group.bench_with_input(BenchmarkId::new("decode_bytes", format!("run{mean}")), &(), |b, _| {
            let mut out: Vec<u8> = Vec::with_capacity(N * T::BYTES);
            b.iter(|| {
                out.clear();
                decode(T::BITS, black_box(&rv), black_box(&rl), N, &mut out).unwrap();
                black_box(&out);
            })
        });
        group.bench_with_input(BenchmarkId::new("encode_typed", format!("run{mean}")), &vals, |b, vals| {
            b.iter(|| black_box(encode_typed(black_box(vals))))
        });
        group.bench_with_input(BenchmarkId::new("encode_bytes", format!("run{mean}")), &raw, |b, raw| {
            b.iter(|| black_box(encode(T::BITS, black_box(raw))))
        });
        group.bench_with_input(BenchmarkId::new("plan_chunks", format!("run{mean}")), &vals, |b, vals| {
            b.iter(|| black_box(plan_chunks(black_box(vals))))
        });
    }
    group.finish();
}

fn bench(c: &mut Criterion) {
    bench_word::<u32>(c, "u32", |v| v as u32);
    bench_word::<u64>(c, "u64", |v| v);
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench
}
criterion_main!(benches);
