//! The `tiledb_array` fuzz target: TileDB arrays with one file replaced.
//!
//! Input: byte 0 picks a template array (tiledb-py's arrays under
//! `tests/fixtures/tiledb` and `tests/fixtures/tiledb_fuzz`: dense and
//! sparse, every compressor, byte and bit shuffle, RLE and dictionary
//! strings, delete commits, a `.con`, a consolidated fragment with `t`, `dt`
//! and `dci`, Hilbert order), byte 1 which of its files (schema, fragment
//! metadata, data tiles, commits, conditions) is replaced by the rest of the
//! input. The array is copied into a memory store and opened at a few time
//! ranges, then read whole, by subarray, with a filter, streamed, explained
//! and aggregated. Templates are read from the repository once per process.

use std::sync::OnceLock;

use bytes::Bytes;

use super::{ok, store_lock};
use crate::io::{Storage, StorageOptions};
use crate::tiledb::aggregate::AggOp;
use crate::tiledb::stream::BatchStream;
use crate::tiledb::{Bound, Order, ReadOptions, TileDbArray};

/// A template: name and its files (path inside the array, bytes).
type Template = (String, Vec<(String, Vec<u8>)>);

const NAMES: [&str; 7] = [
    "tiledb/dense_zstd",
    "tiledb/sparse_gzip",
    "tiledb/dense_shuffle_zstd",
    "tiledb/sparse_lz4",
    "tiledb/sparse_none",
    "tiledb_fuzz/sparse_deletes",
    "tiledb_fuzz/hilbert",
];

fn walk(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<(String, Vec<u8>)>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(root, &p, out);
        } else if let (Ok(rel), Ok(b)) = (p.strip_prefix(root), std::fs::read(&p)) {
            out.push((rel.to_string_lossy().replace('\\', "/"), b));
        }
    }
}

/// The template arrays (empty if the repository's fixtures are missing).
pub fn templates() -> &'static [Template] {
    static T: OnceLock<Vec<Template>> = OnceLock::new();
    T.get_or_init(|| {
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        NAMES
            .iter()
            .filter_map(|n| {
                let root = base.join(n);
                let mut files = Vec::new();
                walk(&root, &root, &mut files);
                (!files.is_empty()).then(|| (n.to_string(), files))
            })
            .collect()
    })
}

/// Seeds: every file of every template, unchanged.
pub fn seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (t, (_, files)) in templates().iter().enumerate() {
        for (f, (_, bytes)) in files.iter().enumerate() {
            let mut s = vec![t as u8, f as u8];
            s.extend_from_slice(bytes);
            out.push(s);
        }
    }
    out
}

/// Run the reading paths over `array`.
fn exercise(array: TileDbArray) {
    let array = std::sync::Arc::new(array);
    let nd = array.schema.dims.len();
    let _ = ok(array.read(&ReadOptions::default()));
    let _ = ok(array.read(&ReadOptions { order: Order::RowMajor, ..Default::default() }));
    // the first half of the first dimension's domain, if it has one
    if let Some((lo, hi)) = array.schema.dims[0].int_domain() {
        let mut sub = vec![None; nd];
        sub[0] = Some(vec![(Bound::Int(lo), Bound::Int(lo + (hi - lo) / 2))]);
        let _ = ok(array.read(&ReadOptions { subarray: sub.clone(), attrs: Some(Vec::new()), ..Default::default() }));
        let _ = ok(array.explain(&sub, None));
    }
    let first_attr = array.schema.attrs.first().map(|a| a.name.clone());
    if let Some(a) = &first_attr {
        let sql = format!("`{a}` IS NOT NULL OR `{}` > 3", array.schema.dims[0].name);
        let _ = ok(array.read(&ReadOptions { filter: Some(sql.clone()), ..Default::default() }));
        let _ = ok(array.explain(&[], Some(&sql)));
        let reqs = vec![(a.clone(), vec![AggOp::Count, AggOp::Min, AggOp::Max])];
        let _ = ok(array.aggregate(&[], &reqs));
    }
    if let Some(stream) = ok(BatchStream::new(array.clone(), ReadOptions { order: Order::RowMajor, ..Default::default() }, 3)) {
        for b in stream.take(64) {
            if ok(b).is_none() {
                break;
            }
        }
    }
}

/// The target.
pub fn tiledb_array(data: &[u8]) {
    let ts = templates();
    if data.len() < 2 || ts.is_empty() {
        return;
    }
    let (_, files) = &ts[data[0] as usize % ts.len()];
    let which = data[1] as usize % files.len();
    let _g = store_lock();
    let root = "memory://lancelet-fuzz-tiledb/a";
    let Ok(store) = Storage::open(root) else { return };
    if let Ok(tree) = store.list_recursive() {
        for o in tree {
            if let Ok(s) = store.child(&o.path) {
                let _ = s.delete();
            }
        }
    }
    for (i, (path, bytes)) in files.iter().enumerate() {
        let content = if i == which { Bytes::copy_from_slice(&data[2..]) } else { Bytes::from(bytes.clone()) };
        if let Ok(s) = store.child(path) {
            let _ = s.write_all(content);
        }
    }
    for range in [(0, u64::MAX), (0, 1), (2, 3)] {
        if let Some(array) = ok(TileDbArray::open(root, &StorageOptions::default(), range)) {
            exercise(array);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_load_and_unchanged_seeds_read() {
        assert_eq!(templates().len(), NAMES.len(), "fixture arrays missing under tests/fixtures");
        let t0 = std::time::Instant::now();
        let seeds = seeds();
        assert!(seeds.len() > 100);
        // an unchanged file: the array opens and reads
        for s in seeds.iter().step_by(17) {
            tiledb_array(s);
        }
        let (_, files) = &templates()[5];
        let _g = store_lock();
        let root = "memory://lancelet-fuzz-tiledb-check/a";
        let store = Storage::open(root).unwrap();
        for (path, bytes) in files {
            store.child(path).unwrap().write_all(Bytes::from(bytes.clone())).unwrap();
        }
        let a = TileDbArray::open(root, &StorageOptions::default(), (0, u64::MAX)).unwrap();
        assert_eq!(a.read(&ReadOptions::default()).unwrap().num_rows(), 8);
        eprintln!("tiledb_array: {} seeds, {} run in {:?}", seeds.len(), seeds.len().div_ceil(17), t0.elapsed());
    }
}
