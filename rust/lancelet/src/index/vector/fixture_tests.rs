//! Opening pylance 14's vector indices (tests/fixtures/vector, written by
//! make_fixtures.py there) and answering as pylance answered.

use std::path::PathBuf;

use serde_json::Value;

use std::sync::Arc;

use super::open::{open, open_all};
use super::{AllowedRows, AnnQuery, Probes, VectorIndex, VectorIndexType};
use crate::error::Error;
use crate::proto::table as pb;
use crate::table::Dataset;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/vector")
}

fn expected() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixtures().join("expected.json")).unwrap()).unwrap()
}

/// The dataset and the entries of its `vec_idx` segments.
fn segments(name: &str) -> (Dataset, Vec<pb::IndexMetadata>) {
    let ds = Dataset::open(fixtures().join(name).to_str().unwrap(), None).unwrap();
    let metas = ds.manifest_file().indices().unwrap().into_iter().filter(|i| i.name() == "vec_idx").map(|i| i.pb).collect();
    (ds, metas)
}

fn open_fixture(name: &str) -> Arc<dyn VectorIndex> {
    let (ds, metas) = segments(name);
    open_all(ds.root(), &[], &metas).unwrap()
}

fn usize_of(q: &Value, key: &str) -> Option<usize> {
    q.get(key).and_then(|v| v.as_u64()).map(|v| v as usize)
}

fn query_of(q: &Value) -> (AnnQuery, Option<AllowedRows>) {
    let vector: Vec<f32> = q["q"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
    let nprobes = usize_of(q, "nprobes");
    let probes =
        Probes { minimum: nprobes.or(usize_of(q, "minimum_nprobes")), maximum: nprobes.or(usize_of(q, "maximum_nprobes")), search_effort: None };
    let bound = |i: usize| q.get("distance_range").and_then(|r| r[i].as_f64()).map(|x| x as f32);
    let query = AnnQuery { vector, k: usize_of(q, "k").unwrap(), probes, ef: None, distance_range: (bound(0), bound(1)) };
    // Fragments of 500 rows: ids below 500 are row addresses 0..id.
    let allowed = usize_of(q, "prefilter_id_below").map(|b| (0..b as u64).collect());
    (query, allowed)
}

fn ids(v: &Value) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect()
}

fn close(a: f32, b: f64) -> bool {
    (f64::from(a) - b).abs() <= 1e-4 * b.abs().max(1e-2)
}

/// Compare with pylance: the same rows and distances (within 1e-4
/// relative); returns the probe counts that differ.
fn check_like_pylance(name: &str) -> Vec<String> {
    let exp = expected();
    let fx = &exp[name];
    let index = open_fixture(name);
    assert_eq!(index.index_type().name(), fx["index_type"].as_str().unwrap(), "{name}");
    assert_eq!(index.distance_type().as_str(), fx["metric"].as_str().unwrap(), "{name}");
    let mut probe_diffs = Vec::new();
    for (i, q) in fx["queries"].as_array().unwrap().iter().enumerate() {
        let (query, allowed) = query_of(q);
        let got = index.search(&query, allowed.as_ref()).unwrap();
        let want_ids = ids(&q["rowids"]);
        let want_d: Vec<f64> = q["distances"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        let got_ids: Vec<u64> = got.rows.iter().map(|r| r.0).collect();
        let want_probes = usize_of(q, "partitions_searched").unwrap();
        if got.partitions_searched != want_probes {
            // The rows then differ too, so they are not compared.
            probe_diffs.push(format!("{name} q{i} k={} {:?}: {} vs pylance {want_probes}", query.k, query.probes, got.partitions_searched));
            continue;
        }
        assert_eq!(got_ids, want_ids, "{name} query {i}: {q}");
        for (r, d) in got.rows.iter().zip(&want_d) {
            assert!(close(r.1, *d), "{name} query {i}: distance {} vs pylance {d}", r.1);
        }
        if let (Some(n), Some(ex)) = (usize_of(q, "nprobes"), q.get("exact_rowids")) {
            if n >= index.num_partitions() && index.index_type() == VectorIndexType::IvfFlat && query.distance_range == (None, None) {
                assert_eq!(got_ids, ids(ex), "{name} query {i}: IVF_FLAT over all partitions is exact");
            }
        }
    }
    probe_diffs
}

#[test]
fn ivf_flat_answers_as_pylance() {
    let mut diffs = Vec::new();
    for name in ["ivf_flat_l2", "ivf_flat_cosine", "ivf_flat_dot", "ivf_flat_delta"] {
        diffs.extend(check_like_pylance(name));
    }
    assert!(diffs.is_empty(), "{diffs:#?}");
}

#[test]
fn ivf_pq_answers_as_pylance() {
    let mut diffs = Vec::new();
    for name in ["ivf_pq_l2", "ivf_pq4_l2", "ivf_pq_f16", "ivf_pq_cosine", "ivf_pq_dot"] {
        diffs.extend(check_like_pylance(name));
    }
    assert!(diffs.is_empty(), "{diffs:#?}");
}

#[test]
fn ivf_sq_answers_as_pylance() {
    let mut diffs = check_like_pylance("ivf_sq_l2");
    diffs.extend(check_like_pylance("ivf_sq_cosine"));
    assert!(diffs.is_empty(), "{diffs:#?}");
}

#[test]
fn ivf_hnsw_finds_what_pylance_finds() {
    let exp = expected();
    for name in ["ivf_hnsw_flat_l2", "ivf_hnsw_pq_l2", "ivf_hnsw_sq_cosine"] {
        let index = open_fixture(name);
        assert_eq!(index.index_type().name(), exp[name]["index_type"].as_str().unwrap());
        let (mut shared, mut total) = (0usize, 0usize);
        for (i, q) in exp[name]["queries"].as_array().unwrap().iter().enumerate() {
            let (query, allowed) = query_of(q);
            let got = index.search(&query, allowed.as_ref()).unwrap();
            assert_eq!(got.partitions_searched, usize_of(q, "partitions_searched").unwrap(), "{name} query {i}");
            let want = ids(&q["rowids"]);
            let want_d: Vec<f64> = q["distances"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
            assert_eq!(got.rows.len(), want.len(), "{name} query {i}");
            total += want.len();
            for (id, d) in &got.rows {
                if let Some(j) = want.iter().position(|w| w == id) {
                    shared += 1;
                    // The same row: the same distance, as the storage computes it.
                    assert!(close(*d, want_d[j]), "{name} query {i} row {id}: {d} vs pylance {}", want_d[j]);
                }
            }
        }
        let recall = shared as f64 / total as f64;
        assert!(recall >= 0.95, "{name}: {shared} of pylance's {total} rows found");
    }
}

#[test]
fn empty_index_finds_nothing() {
    let index = open_fixture("empty_pq");
    assert_eq!(index.index_type(), VectorIndexType::IvfPq);
    assert_eq!(index.num_partitions(), 0);
    let q = AnnQuery { vector: vec![0.0; 16], k: 5, probes: Probes::default(), ef: None, distance_range: (None, None) };
    assert!(index.search(&q, None).unwrap().rows.is_empty());
}

#[test]
fn ivf_rq_is_refused_by_name() {
    let (ds, metas) = segments("ivf_rq");
    match open_all(ds.root(), &[], &metas) {
        Err(Error::Unsupported { what, .. }) => assert!(what.contains("IVF_RQ"), "{what}"),
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

#[test]
fn segments_are_searched_and_merged() {
    let (ds, metas) = segments("ivf_flat_delta");
    assert_eq!(metas.len(), 2);
    let one =
        open(&ds.root().child(&format!("_indices/{}", crate::index::meta::uuid_string(&metas[1].uuid.as_ref().unwrap().uuid))).unwrap(), &metas[1])
            .unwrap();
    let q = AnnQuery { vector: vec![0.0; 16], k: 1000, probes: Probes::default(), ef: None, distance_range: (None, None) };
    assert_eq!(one.search(&q, None).unwrap().rows.len(), 150, "the delta holds the 150 appended rows");
    let both = open_all(ds.root(), &[], &metas).unwrap();
    let r = both.search(&q, None).unwrap();
    assert_eq!(r.rows.len(), 1000);
    assert!(r.rows.windows(2).all(|w| (w[0].1, w[0].0) <= (w[1].1, w[1].0)));
}

/// Query latency against a larger index built by pylance (not a fixture:
/// `LANCELET_VECTOR_BENCH=dir` with `dir/ds` and `dir/expected.json` as
/// written by a bench script that also timed pylance). Prints per-query
/// time and agreement with pylance's rows.
#[test]
#[ignore]
fn bench_against_pylance() {
    let Ok(dir) = std::env::var("LANCELET_VECTOR_BENCH") else { return };
    let dir = PathBuf::from(dir);
    let exp: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    let ds = Dataset::open(dir.join("ds").to_str().unwrap(), None).unwrap();
    let metas: Vec<pb::IndexMetadata> = ds.manifest_file().indices().unwrap().into_iter().filter(|i| i.name() == "vec_idx").map(|i| i.pb).collect();
    let index = open_all(ds.root(), &[], &metas).unwrap();
    let queries: Vec<Vec<f32>> =
        exp["queries"].as_array().unwrap().iter().map(|q| q.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect()).collect();
    for run in exp["runs"].as_array().unwrap() {
        let n = usize_of(run, "nprobes").unwrap();
        let probes = Probes { minimum: Some(n), maximum: Some(n), search_effort: None };
        let mk = |v: &Vec<f32>| AnnQuery { vector: v.clone(), k: 10, probes, ef: None, distance_range: (None, None) };
        for q in &queries {
            index.search(&mk(q), None).unwrap();
        }
        let t = std::time::Instant::now();
        let mut same = 0;
        for (q, want) in queries.iter().zip(run["rowids"].as_array().unwrap()) {
            let got = index.search(&mk(q), None).unwrap();
            same += usize::from(got.rows.iter().map(|r| r.0).collect::<Vec<_>>() == ids(want));
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / queries.len() as f64;
        println!(
            "nprobes {n}: lancelet {us:.0} us/query, pylance {:.0} us/query; identical results {same}/{}",
            run["ms"].as_f64().unwrap() * 1000.0,
            queries.len()
        );
    }
}
