//! End-to-end decoding through the public file API: a 2^20-row Lance 2.2
//! file (int64 sequential, int32 small range, float64, 10–60 char strings,
//! nullable int64) and a 100k-row `fixed_size_list<float32, 128>` file are
//! written once into a temp dir; each benchmark opens the file and reads all
//! rows of one column (or of all columns). Throughput is the size of the
//! decoded Arrow data (sum of buffer lengths, validity included).
//!
//! Run: `cargo bench -p lancelet --bench file_read`

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{ArrayRef, FixedSizeListArray, Float32Array, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_data::ArrayData;
use arrow_schema::{DataType, Field, Schema};
use criterion::{BenchmarkId, Criterion, Throughput};
use lancelet::file::{FileReader, FileVersion, FileWriter};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const ROWS: usize = 1 << 20;
const VEC_ROWS: usize = 100_000;
const DIM: i32 = 128;
const BATCH: usize = 65_536;

fn config() -> Criterion {
    Criterion::default().sample_size(10).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(2))
}

fn scalar_batch(rng: &mut StdRng, schema: &Arc<Schema>, start: usize, n: usize) -> RecordBatch {
    let id = Int64Array::from_iter_values((start..start + n).map(|i| i as i64));
    let small = Int32Array::from_iter_values((0..n).map(|_| rng.random_range(0..100)));
    let f = Float64Array::from_iter_values((0..n).map(|_| rng.random_range(-1e6..1e6)));
    let s = StringArray::from_iter_values((0..n).map(|_| {
        let len = rng.random_range(10..=60);
        (0..len).map(|_| if rng.random_ratio(1, 6) { ' ' } else { rng.random_range(b'a'..=b'z') as char }).collect::<String>()
    }));
    let nullable = Int64Array::from_iter((0..n).map(|_| if rng.random_ratio(1, 5) { None } else { Some(rng.random_range(0..1_000_000_000i64)) }));
    let cols: Vec<ArrayRef> = vec![Arc::new(id), Arc::new(small), Arc::new(f), Arc::new(s), Arc::new(nullable)];
    RecordBatch::try_new(schema.clone(), cols).unwrap()
}

fn vector_batch(rng: &mut StdRng, schema: &Arc<Schema>, n: usize) -> RecordBatch {
    let values = Float32Array::from_iter_values((0..n * DIM as usize).map(|_| rng.random_range(-1.0f32..1.0)));
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let fsl = FixedSizeListArray::try_new(item, DIM, Arc::new(values), None).unwrap();
    RecordBatch::try_new(schema.clone(), vec![Arc::new(fsl)]).unwrap()
}

fn write(path: &str, schema: &Arc<Schema>, mut next: impl FnMut(usize, usize) -> RecordBatch, rows: usize) {
    let mut w = FileWriter::create(path, schema, FileVersion::V2_2).unwrap();
    let mut at = 0;
    while at < rows {
        let n = BATCH.min(rows - at);
        w.write(&next(at, n)).unwrap();
        at += n;
    }
    w.finish().unwrap();
}

/// Bytes of decoded Arrow data: every buffer's length, validity included.
fn data_bytes(d: &ArrayData) -> usize {
    d.buffers().iter().map(|b| b.len()).sum::<usize>()
        + d.nulls().map_or(0, |n| n.buffer().len())
        + d.child_data().iter().map(data_bytes).sum::<usize>()
}

fn batch_bytes(b: &RecordBatch) -> usize {
    b.columns().iter().map(|c| data_bytes(&c.to_data())).sum()
}

fn bench_file(c: &mut Criterion, group_name: &str, path: &str) {
    let reader = FileReader::open(path).unwrap();
    let n = reader.num_rows();
    let names: Vec<String> = reader.schema().fields().iter().map(|f| f.name().clone()).collect();
    let mut cases: Vec<(String, Vec<usize>)> = names.iter().enumerate().map(|(i, n)| (n.clone(), vec![i])).collect();
    if names.len() > 1 {
        cases.push(("all".into(), (0..names.len()).collect()));
    }
    eprintln!("{group_name}: {path}: {n} rows, {} file bytes", reader.size());
    drop(reader);

    let mut group = c.benchmark_group(group_name);
    for (name, proj) in cases {
        let bytes = batch_bytes(&FileReader::open(path).unwrap().read_range(&proj, 0..n).unwrap());
        eprintln!("{group_name}/{name}: {bytes} decoded Arrow bytes");
        group.throughput(Throughput::Bytes(bytes as u64));
        group.bench_function(BenchmarkId::new("read_range", &name), |b| {
            b.iter(|| {
                let r = FileReader::open(path).unwrap();
                black_box(r.read_range(&proj, 0..n).unwrap())
            })
        });
    }
    group.finish();
}

fn main() {
    let dir: PathBuf = std::env::temp_dir().join(format!("lancelet-bench-file_read-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scalars = dir.join("scalars.lance").display().to_string();
    let vectors = dir.join("vectors.lance").display().to_string();

    let scalar_schema = Arc::new(Schema::new(vec![
        Field::new("int64_seq", DataType::Int64, false),
        Field::new("int32_small", DataType::Int32, false),
        Field::new("float64", DataType::Float64, false),
        Field::new("string", DataType::Utf8, false),
        Field::new("int64_nullable", DataType::Int64, true),
    ]));
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let vector_schema = Arc::new(Schema::new(vec![Field::new("vector", DataType::FixedSizeList(item, DIM), false)]));

    let mut rng = StdRng::seed_from_u64(0xF11E);
    write(&scalars, &scalar_schema, |at, n| scalar_batch(&mut rng, &scalar_schema, at, n), ROWS);
    write(&vectors, &vector_schema, |_, n| vector_batch(&mut rng, &vector_schema, n), VEC_ROWS);

    let mut c = config().configure_from_args();
    bench_file(&mut c, "file_read/scalars", &scalars);
    bench_file(&mut c, "file_read/vectors", &vectors);
    c.final_summary();

    let _ = std::fs::remove_dir_all(&dir);
}
