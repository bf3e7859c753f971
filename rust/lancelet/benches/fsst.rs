//! FSST string compression: train, compress, decompress on three ~4 MB
//! seeded corpora (URL-like, English-ish words, random ASCII). Throughput is
//! the uncompressed string bytes.
//!
//! Run: `cargo bench -p lancelet --bench fsst`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use lancelet::encoding::fsst::{compress, decompress, decompress_strings_into, train};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const TARGET_BYTES: usize = 4 << 20;

fn config() -> Criterion {
    Criterion::default().sample_size(10).warm_up_time(Duration::from_millis(200)).measurement_time(Duration::from_secs(1))
}

/// Strings as Arrow-style `(i32 offsets, data)`.
struct Corpus {
    offsets: Vec<i32>,
    data: Vec<u8>,
}

fn build(mut next: impl FnMut(&mut Vec<u8>)) -> Corpus {
    let mut offsets = vec![0i32];
    let mut data = Vec::with_capacity(TARGET_BYTES + 256);
    while data.len() < TARGET_BYTES {
        next(&mut data);
        offsets.push(data.len() as i32);
    }
    Corpus { offsets, data }
}

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
    "he",
    "this",
    "are",
    "or",
    "his",
    "from",
    "at",
    "which",
    "but",
    "have",
    "an",
    "had",
    "they",
    "you",
    "were",
    "their",
    "one",
    "all",
    "we",
    "can",
    "her",
    "has",
    "there",
    "been",
    "if",
    "more",
    "when",
    "will",
    "would",
    "who",
    "so",
    "no",
    "time",
    "people",
    "year",
    "way",
    "day",
    "man",
    "thing",
    "woman",
    "life",
    "child",
    "world",
    "school",
    "state",
    "family",
    "student",
    "group",
    "country",
    "problem",
    "hand",
    "part",
    "place",
    "case",
    "week",
    "company",
    "system",
    "program",
    "question",
    "work",
    "government",
    "number",
    "night",
    "point",
    "home",
    "water",
    "room",
    "mother",
    "area",
    "money",
    "story",
    "fact",
    "month",
    "lot",
    "right",
    "study",
    "book",
    "eye",
    "job",
    "word",
    "business",
    "issue",
    "side",
    "kind",
    "head",
    "house",
    "service",
    "friend",
    "father",
    "power",
    "hour",
    "game",
    "line",
    "end",
    "member",
    "law",
    "car",
    "city",
    "community",
    "name",
    "president",
    "team",
    "minute",
    "idea",
    "kid",
    "body",
    "information",
    "back",
    "parent",
    "face",
    "others",
    "level",
    "office",
    "door",
    "health",
    "person",
    "art",
    "war",
    "history",
    "party",
    "result",
    "change",
    "morning",
    "reason",
    "research",
    "girl",
    "guy",
    "moment",
    "air",
    "teacher",
    "force",
    "education",
    "important",
    "different",
    "following",
    "without",
    "between",
    "through",
    "because",
    "another",
    "however",
    "something",
    "development",
    "experience",
    "understand",
    "remember",
];

/// Picks a word with a Zipf-like skew (low indices far more often).
fn zipf_word(rng: &mut StdRng) -> &'static str {
    let u: f64 = rng.random();
    let i = ((WORDS.len() as f64).powf(u) - 1.0) as usize;
    WORDS[i.min(WORDS.len() - 1)]
}

fn urls() -> Corpus {
    let mut rng = StdRng::seed_from_u64(0xF5_0001);
    let schemes = ["https://", "http://"];
    let hosts = [
        "www.example.com",
        "api.github.com",
        "en.wikipedia.org",
        "docs.rs",
        "news.ycombinator.com",
        "www.google.com",
        "cdn.jsdelivr.net",
        "storage.googleapis.com",
        "s3.amazonaws.com",
        "lancedb.github.io",
    ];
    let segs = [
        "users",
        "repos",
        "wiki",
        "search",
        "static",
        "images",
        "api",
        "v1",
        "v2",
        "items",
        "blob",
        "main",
        "src",
        "assets",
        "download",
        "article",
        "index.html",
        "data",
        "files",
        "latest",
    ];
    build(|d| {
        d.extend_from_slice(schemes[rng.random_range(0..schemes.len())].as_bytes());
        d.extend_from_slice(hosts[rng.random_range(0..hosts.len())].as_bytes());
        for _ in 0..rng.random_range(1..5) {
            d.push(b'/');
            d.extend_from_slice(segs[rng.random_range(0..segs.len())].as_bytes());
        }
        if rng.random_bool(0.6) {
            d.push(b'/');
            d.extend_from_slice(rng.random_range(0..10_000_000u32).to_string().as_bytes());
        }
        if rng.random_bool(0.4) {
            d.extend_from_slice(b"?q=");
            d.extend_from_slice(zipf_word(&mut rng).as_bytes());
            d.extend_from_slice(b"&page=");
            d.extend_from_slice(rng.random_range(1..100u32).to_string().as_bytes());
        }
    })
}

fn english() -> Corpus {
    let mut rng = StdRng::seed_from_u64(0xF5_0002);
    build(|d| {
        let n = rng.random_range(3..16);
        for i in 0..n {
            let w = zipf_word(&mut rng);
            if i == 0 {
                let mut cs = w.bytes();
                d.push(cs.next().unwrap().to_ascii_uppercase());
                d.extend(cs);
            } else {
                d.push(b' ');
                d.extend_from_slice(w.as_bytes());
            }
        }
        d.push(b'.');
    })
}

fn random_ascii() -> Corpus {
    let mut rng = StdRng::seed_from_u64(0xF5_0003);
    build(|d| {
        let n = rng.random_range(5..50);
        for _ in 0..n {
            d.push(rng.random_range(0x20u8..0x7f));
        }
    })
}

fn bench(c: &mut Criterion) {
    for (name, corpus) in [("urls", urls()), ("english", english()), ("random_ascii", random_ascii())] {
        let Corpus { offsets, data } = &corpus;
        let table = train(offsets, data).unwrap();
        assert!(table.is_enabled());
        let (c_off, c_data) = compress(&table, offsets, data).unwrap();
        let (d_off, d_data) = decompress(&table, &c_off, &c_data).unwrap();
        assert!(d_off == *offsets && d_data == *data, "{name}: round trip failed");
        eprintln!(
            "fsst/{name}: {} strings, {} bytes -> {} bytes (ratio {:.2}, {} symbols)",
            offsets.len() - 1,
            data.len(),
            c_data.len(),
            data.len() as f64 / c_data.len() as f64,
            table.len()
        );

        let mut group = c.benchmark_group("fsst");
        group.throughput(Throughput::Bytes(data.len() as u64));
        group.bench_function(BenchmarkId::new("train", name), |b| b.iter(|| black_box(train(black_box(offsets), black_box(data)).unwrap())));
        group.bench_function(BenchmarkId::new("compress", name), |b| {
            b.iter(|| black_box(compress(&table, black_box(offsets), black_box(data)).unwrap()))
        });
        group.bench_function(BenchmarkId::new("decompress", name), |b| {
            b.iter(|| black_box(decompress(&table, black_box(&c_off), black_box(&c_data)).unwrap()))
        });
        // What a page scan does: one call per chunk of strings, straight
        // into the page's buffers.
        let ends: Vec<usize> = c_off[1..].iter().map(|&o| o as usize).collect();
        // The buffers are reused, as a page sink's capacity is.
        let (mut out, mut offs) = (Vec::new(), Vec::<i32>::new());
        group.bench_function(BenchmarkId::new("decompress_strings_into", name), |b| {
            b.iter(|| {
                out.clear();
                offs.clear();
                decompress_strings_into(&table, black_box(&c_data), &ends, &mut out, &mut offs).unwrap();
                black_box(out.len() + offs.len())
            })
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench
}
criterion_main!(benches);
