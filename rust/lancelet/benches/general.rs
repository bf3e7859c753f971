//! General-purpose compression (zstd, LZ4) as Lance frames it, on realistic
//! data: i64 timestamps, English-ish text, random-walk f64. Two shapes: a
//! whole 2 MiB buffer (dictionary / block buffers) and 8 KiB pieces (the size
//! of a mini-block chunk, each compressed on its own). Throughput is the
//! uncompressed size.
//!
//! Run: `cargo bench -p lancelet --bench general`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use lancelet::encoding::general::{compress_into, decompress_into, CompressionScheme};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const BYTES: usize = 2 << 20;
const CHUNK: usize = 8 << 10;

fn config() -> Criterion {
    Criterion::default().sample_size(10).warm_up_time(Duration::from_millis(200)).measurement_time(Duration::from_secs(1))
}

fn timestamps() -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(0x6E_0001);
    let mut t: i64 = 1_700_000_000_000_000; // µs since epoch
    let mut out = Vec::with_capacity(BYTES);
    while out.len() < BYTES {
        t += rng.random_range(0..5_000);
        out.extend_from_slice(&t.to_le_bytes());
    }
    out
}

fn text() -> Vec<u8> {
    const WORDS: &[&str] = &[
        "the",
        "of",
        "and",
        "to",
        "in",
        "a",
        "is",
        "that",
        "for",
        "it",
        "as",
        "was",
        "with",
        "be",
        "by",
        "on",
        "not",
        "this",
        "are",
        "or",
        "from",
        "at",
        "which",
        "but",
        "have",
        "an",
        "they",
        "you",
        "were",
        "their",
        "one",
        "all",
        "time",
        "people",
        "year",
        "way",
        "day",
        "world",
        "school",
        "state",
        "family",
        "group",
        "country",
        "problem",
        "company",
        "system",
        "program",
        "question",
        "government",
        "number",
        "water",
        "business",
        "service",
        "power",
        "information",
        "community",
        "president",
        "education",
        "important",
        "different",
        "development",
        "experience",
    ];
    let mut rng = StdRng::seed_from_u64(0x6E_0002);
    let mut out = Vec::with_capacity(BYTES + 64);
    while out.len() < BYTES {
        let u: f64 = rng.random();
        let i = ((WORDS.len() as f64).powf(u) - 1.0) as usize;
        out.extend_from_slice(WORDS[i.min(WORDS.len() - 1)].as_bytes());
        out.push(if rng.random_ratio(1, 12) { b'\n' } else { b' ' });
    }
    out.truncate(BYTES);
    out
}

fn floats() -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(0x6E_0003);
    let mut x = 20.0f64;
    let mut out = Vec::with_capacity(BYTES);
    while out.len() < BYTES {
        x += rng.random_range(-0.05..0.05);
        // Sensor readings: two decimals.
        out.extend_from_slice(&((x * 100.0).round() / 100.0).to_le_bytes());
    }
    out
}

fn bench(c: &mut Criterion) {
    let schemes = [(CompressionScheme::Zstd, "zstd"), (CompressionScheme::Lz4, "lz4")];
    for (data_name, data) in [("timestamps_i64", timestamps()), ("text", text()), ("sensor_f64", floats())] {
        let mut group = c.benchmark_group(format!("general/{data_name}"));
        group.throughput(Throughput::Bytes(data.len() as u64));
        for (scheme, sname) in schemes {
            for (shape, piece) in [("buffer", BYTES), ("chunk8k", CHUNK)] {
                let pieces: Vec<Vec<u8>> = data
                    .chunks(piece)
                    .map(|p| {
                        let mut out = Vec::new();
                        compress_into(scheme, None, p, &mut out);
                        out
                    })
                    .collect();
                let compressed: usize = pieces.iter().map(Vec::len).sum();
                let mut check = Vec::new();
                for p in &pieces {
                    decompress_into(scheme, p, &mut check).unwrap();
                }
                assert!(check == data, "{data_name}/{sname}/{shape}: round trip failed");
                eprintln!("general/{data_name}/{sname}/{shape}: ratio {:.2}", data.len() as f64 / compressed as f64);
                let id = format!("{sname}/{shape}");
                group.bench_function(BenchmarkId::new("compress", &id), |b| {
                    let mut out = Vec::with_capacity(data.len() + 1024);
                    b.iter(|| {
                        for p in data.chunks(piece) {
                            out.clear();
                            compress_into(scheme, None, black_box(p), &mut out);
                        }
                        black_box(&out);
                    })
                });
                group.bench_function(BenchmarkId::new("decompress", &id), |b| {
                    let mut out = Vec::with_capacity(data.len());
                    b.iter(|| {
                        out.clear();
                        for p in &pieces {
                            decompress_into(scheme, black_box(p), &mut out).unwrap();
                        }
                        black_box(&out);
                    })
                });
            }
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
