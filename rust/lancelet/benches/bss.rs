//! Byte-stream split: encode / decode of f32 and f64 values, per mini-block
//! chunk the way Lance applies it (1024 f32 / 512 f64 values per chunk) and
//! over one whole 4 MiB buffer. Throughput is the decoded size in bytes.
//!
//! Run: `cargo bench -p lancelet --bench bss`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use lancelet::encoding::bss::{chunk_values, decode, encode};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const BYTES: usize = 4 << 20;

fn config() -> Criterion {
    Criterion::default().sample_size(10).warm_up_time(Duration::from_millis(200)).measurement_time(Duration::from_millis(700))
}

/// Random-walk floats of `width` bytes (4 = f32, 8 = f64), little-endian.
fn floats(width: usize) -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(0xB55 + width as u64);
    let mut x = 100.0f64;
    let mut out = Vec::with_capacity(BYTES);
    while out.len() < BYTES {
        x += rng.random_range(-1.0..1.0);
        match width {
            4 => out.extend_from_slice(&(x as f32).to_le_bytes()),
            _ => out.extend_from_slice(&x.to_le_bytes()),
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    for (name, width) in [("f32", 4usize), ("f64", 8)] {
        let data = floats(width);
        let mut group = c.benchmark_group(format!("bss/{name}"));
        group.throughput(Throughput::Bytes(data.len() as u64));
        for (shape, piece) in [("chunk", chunk_values(width) * width), ("buffer", BYTES)] {
            let encoded: Vec<Vec<u8>> = data.chunks(piece).map(|p| encode(width, p)).collect();
            let mut check = Vec::new();
            for e in &encoded {
                decode(width, e, e.len() / width, &mut check).unwrap();
            }
            assert!(check == data);

            group.bench_function(BenchmarkId::new("encode", shape), |b| {
                b.iter(|| {
                    for p in data.chunks(piece) {
                        black_box(encode(width, black_box(p)));
                    }
                })
            });
            group.bench_function(BenchmarkId::new("decode", shape), |b| {
                let mut out = Vec::with_capacity(data.len());
                b.iter(|| {
                    out.clear();
                    for e in &encoded {
                        decode(width, black_box(e), e.len() / width, &mut out).unwrap();
                    }
                    black_box(&out);
                })
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench
}
criterion_main!(benches);
