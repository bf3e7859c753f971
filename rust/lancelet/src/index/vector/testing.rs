//! Small vector indices written from scratch, and the fuzz entry point
//! that feeds bytes as their files (tests and `--features fuzzing`).
//!
//! [`write_small`] writes `index.idx` and `auxiliary.idx` as pylance lays
//! them out (docs/research/vector-index.md §4–§5) for a 4-dimensional
//! index of 2 partitions over 6 rows, FLAT, PQ (2 sub-vectors, 4 bits) or
//! SQ, with the IVF message and codebook of the caller's choosing (so
//! tests can make them disagree with the files).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, FixedSizeListArray, Float32Array, RecordBatch, UInt64Array, UInt8Array};
use arrow_schema::{DataType, Field, Schema};
use bytes::Bytes;
use prost::Message;

use super::layout;
use super::{AnnQuery, Probes};
use crate::error::{Error, Result};
use crate::file::schema::LanceSchema;
use crate::file::{FileVersion, FileWriter};
use crate::io::Storage;
use crate::proto::index::{FlatIndexParams, Ivf, PqIndexParams, SqIndexParams, Tensor, TensorDataType, VectorIndexDetails};
use crate::proto::table as pb;

/// Storage kinds [`write_small`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmallKind {
    /// `flat` vectors.
    Flat,
    /// `__pq_code`, 2 sub-vectors of 4 bits (one byte per row).
    Pq,
    /// `__sq_code`, bounds 0..12.
    Sq,
}

/// Dimension of the small indices.
pub const DIM: usize = 4;
/// Rows: partition 0 holds the first 3, partition 1 the last 3.
pub const ROWS: usize = 6;

/// The vectors of the small index (row `i` = `i` in every dimension, plus 5 from row 3 on).
pub fn vectors() -> Vec<f32> {
    (0..ROWS).flat_map(|i| [(i + if i >= 3 { 5 } else { 0 }) as f32; DIM]).collect()
}

/// The IVF message of `auxiliary.idx` pylance would write.
pub fn aux_ivf() -> Ivf {
    Ivf { offsets: vec![0, 3], lengths: vec![3, 3], ..Default::default() }
}

/// The IVF message of `index.idx` (centroids 1 and 9 in every dimension).
pub fn index_ivf() -> Ivf {
    let centroids = super::tensor::encode(TensorDataType::Float32, &[2, DIM], &[[1.0f32; DIM], [9.0; DIM]].concat());
    Ivf { offsets: vec![0, 0], lengths: vec![0, 0], centroids_tensor: Some(centroids), loss: Some(1.0) }
}

/// A PQ codebook of the right shape: `[16, DIM]`, code `c` = `c` everywhere.
pub fn codebook() -> Tensor {
    let values: Vec<f32> = (0..2).flat_map(|_| (0..16).flat_map(|c| [c as f32; DIM / 2])).collect();
    super::tensor::encode(TensorDataType::Float32, &[16, DIM], &values)
}

fn fsl(values: ArrayRef, width: usize) -> Result<FixedSizeListArray> {
    let item = Arc::new(Field::new("item", values.data_type().clone(), true));
    FixedSizeListArray::try_new(item, width as i32, values, None).map_err(Error::internal_arrow)
}

fn write_file(dir: &Storage, name: &str, schema: Schema, columns: Vec<ArrayRef>, buffers: Vec<Bytes>) -> Result<u64> {
    let schema = Arc::new(schema);
    let mut w = FileWriter::create_with_lance_schema(dir.child(name)?, LanceSchema::from_arrow(&schema)?, FileVersion::V2_2)?;
    for b in buffers {
        w.add_global_buffer(b)?;
    }
    w.write(&RecordBatch::try_new(schema, columns).map_err(Error::internal_arrow)?)?;
    w.finish()
}

/// Write a small index of `kind` into `dir` with these IVF messages and
/// PQ codebook; returns its manifest entry.
pub fn write_small(dir: &Storage, kind: SmallKind, aux: &Ivf, index: &Ivf, codebook: &Tensor) -> Result<pb::IndexMetadata> {
    let type_name = match kind {
        SmallKind::Flat => "IVF_FLAT",
        SmallKind::Pq => "IVF_PQ",
        SmallKind::Sq => "IVF_SQ",
    };
    let md: HashMap<String, String> = [
        (layout::INDEX_METADATA_KEY, format!("{{\"type\":\"{type_name}\",\"distance_type\":\"l2\"}}")),
        (layout::IVF_METADATA_KEY, "1".to_string()),
        (layout::FLAT_METADATA_KEY, "[\"\",\"\"]".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let marker = Schema::new(vec![Field::new(layout::FLAT_MARKER_COLUMN, DataType::UInt64, false)]).with_metadata(md);
    let index_size =
        write_file(dir, layout::INDEX_FILE, marker, vec![Arc::new(UInt64Array::from(Vec::<u64>::new()))], vec![Bytes::from(index.encode_to_vec())])?;

    let v = vectors();
    let (column, width, storage_md, mut buffers): (ArrayRef, usize, String, Vec<Bytes>) = match kind {
        SmallKind::Flat => (Arc::new(Float32Array::from(v.clone())), DIM, format!("{{\"dim\":{DIM}}}"), vec![]),
        SmallKind::Pq => {
            // Row i: both sub-vectors code min(i, 15); partitions of 3 rows, one byte column, so
            // the transposed layout is the row order.
            let codes: Vec<u8> = (0..ROWS).map(|i| (i as u8) | ((i as u8) << 4)).collect();
            let md = format!(
                "{{\"codebook_position\":2,\"nbits\":4,\"num_sub_vectors\":2,\"dimension\":{DIM},\"codebook_tensor\":[],\"transposed\":true}}"
            );
            (Arc::new(UInt8Array::from(codes)), 1, md, vec![Bytes::new()])
        }
        SmallKind::Sq => {
            let codes: Vec<u8> = v.iter().map(|x| (x * 255.0 / 12.0).floor().clamp(0.0, 255.0) as u8).collect();
            (Arc::new(UInt8Array::from(codes)), DIM, format!("{{\"dim\":{DIM},\"num_bits\":8,\"bounds\":{{\"start\":0.0,\"end\":12.0}}}}"), vec![])
        }
    };
    buffers.insert(0, Bytes::from(aux.encode_to_vec()));
    if kind == SmallKind::Pq {
        buffers[1] = Bytes::from(codebook.encode_to_vec());
    }
    let col_name = match kind {
        SmallKind::Flat => layout::FLAT_COLUMN,
        SmallKind::Pq => layout::PQ_CODE_COLUMN,
        SmallKind::Sq => layout::SQ_CODE_COLUMN,
    };
    let list = fsl(column, width)?;
    let md: HashMap<String, String> = [
        (layout::DISTANCE_TYPE_KEY.to_string(), "l2".to_string()),
        (layout::IVF_METADATA_KEY.to_string(), "1".to_string()),
        (layout::STORAGE_METADATA_KEY.to_string(), serde_json::to_string(&vec![storage_md]).expect("json")),
    ]
    .into_iter()
    .collect();
    let schema = Schema::new(vec![Field::new(layout::ROW_ID_COLUMN, DataType::UInt64, true), Field::new(col_name, list.data_type().clone(), true)])
        .with_metadata(md);
    let ids = Arc::new(UInt64Array::from((0..ROWS as u64).collect::<Vec<_>>()));
    let aux_size = write_file(dir, layout::AUXILIARY_FILE, schema, vec![ids, Arc::new(list)], buffers)?;

    let mut details = VectorIndexDetails::default();
    match kind {
        SmallKind::Flat => details.flat = Some(FlatIndexParams {}),
        SmallKind::Pq => details.pq = Some(PqIndexParams { num_bits: 4, num_sub_vectors: 2 }),
        SmallKind::Sq => details.sq = Some(SqIndexParams { num_bits: 8 }),
    }
    Ok(pb::IndexMetadata {
        name: "vec_idx".into(),
        fields: vec![0],
        fragment_bitmap: crate::index::rowset::fragment_bitmap_bytes([0]),
        index_details: Some(prost_types::Any { type_url: crate::proto::type_url::VECTOR_INDEX_DETAILS.into(), value: details.encode_to_vec() }),
        index_version: Some(layout::INDEX_VERSION),
        files: vec![
            pb::IndexFile { path: layout::AUXILIARY_FILE.into(), size_bytes: aux_size },
            pb::IndexFile { path: layout::INDEX_FILE.into(), size_bytes: index_size },
        ],
        ..Default::default()
    })
}

/// Open the index in `dir` and run a few searches over it; errors are
/// fine, `Internal` errors and panics are bugs.
pub fn open_and_search(dir: &Storage, meta: &pb::IndexMetadata) -> Result<()> {
    let index = super::open::open(dir, meta)?;
    let dim = index.dimension();
    for (k, probes, allowed) in [
        (3, Probes { minimum: Some(2), maximum: Some(2), search_effort: None }, None),
        (10, Probes::default(), Some((0..4u64).collect())),
        (1, Probes { search_effort: Some(1.0), ..Default::default() }, None),
    ] {
        let q = AnnQuery { vector: vec![2.0; dim], k, probes, ef: None, distance_range: (None, Some(1e6)) };
        let r = index.search(&q, allowed.as_ref())?;
        assert!(r.rows.len() <= k, "more rows than asked for");
        assert!(r.rows.windows(2).all(|w| w[0].1 <= w[1].1), "rows not ascending by distance");
    }
    Ok(())
}

/// Seeds of the `vector_index` target: for each kind and file, the
/// selector byte and the file as [`write_small`] writes it.
pub fn seeds() -> Vec<Vec<u8>> {
    let dir = Storage::open("memory://lancelet-fuzz-vector/seeds").expect("memory store");
    let mut out = Vec::new();
    for sel in 0u8..6 {
        let kind = [SmallKind::Flat, SmallKind::Pq, SmallKind::Sq][(sel as usize / 2) % 3];
        write_small(&dir, kind, &aux_ivf(), &index_ivf(), &codebook()).expect("writing the small index");
        let name = if sel % 2 == 0 { layout::INDEX_FILE } else { layout::AUXILIARY_FILE };
        let mut input = vec![sel];
        input.extend_from_slice(&dir.child(name).and_then(|f| f.read_all()).expect("memory read"));
        out.push(input);
    }
    out
}

/// Fuzz entry point: the first byte chooses the kind (FLAT, PQ, SQ) and
/// which file of a small index the rest replaces (`index.idx` or
/// `auxiliary.idx`); the index is then opened and searched.
pub fn vector_index(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else { return };
    let kind = [SmallKind::Flat, SmallKind::Pq, SmallKind::Sq][(sel as usize / 2) % 3];
    let dir = Storage::open("memory://lancelet-fuzz-vector/idx").expect("memory store");
    let mut meta = write_small(&dir, kind, &aux_ivf(), &index_ivf(), &codebook()).expect("writing the small index");
    let name = if sel % 2 == 0 { layout::INDEX_FILE } else { layout::AUXILIARY_FILE };
    dir.child(name).and_then(|s| s.write_all(Bytes::copy_from_slice(rest))).expect("memory write");
    for f in &mut meta.files {
        if f.path == name {
            f.size_bytes = rest.len() as u64;
        }
    }
    if let Err(Error::Internal { what }) = open_and_search(&dir, &meta) {
        panic!("InternalError (a lancelet bug) on fuzzed input: {what}");
    }
    // The maintenance reader (compaction remap, optimize merges) on the
    // same files: every other row dropped, the rest moved.
    let dst = Storage::open("memory://lancelet-fuzz-vector/remapped").expect("memory store");
    let moved = |a: u64| (a % 2 == 0).then_some(a + (7 << 32));
    if let Err(Error::Internal { what }) = super::segment::remap(&dir, &dst, crate::file::FileVersion::V2_1, &moved) {
        panic!("InternalError (a lancelet bug) remapping a fuzzed index: {what}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> Storage {
        Storage::open(&format!("memory://lancelet-vector-tests/{name}")).unwrap()
    }

    fn corrupt(r: Result<()>) -> String {
        match r {
            Err(Error::Corrupt { what, .. }) => what,
            other => panic!("expected Corrupt, got {other:?}"),
        }
    }

    #[test]
    fn small_indices_open_and_search() {
        for (i, kind) in [SmallKind::Flat, SmallKind::Pq, SmallKind::Sq].into_iter().enumerate() {
            let d = dir(&format!("ok{i}"));
            let meta = write_small(&d, kind, &aux_ivf(), &index_ivf(), &codebook()).unwrap();
            open_and_search(&d, &meta).unwrap();
            let index = super::super::open::open(&d, &meta).unwrap();
            let q = AnnQuery { vector: vec![0.0; DIM], k: 2, probes: Probes::default(), ef: None, distance_range: (None, None) };
            let r = index.search(&q, None).unwrap();
            assert_eq!(r.rows.iter().map(|r| r.0).collect::<Vec<_>>(), vec![0, 1], "{kind:?}");
            assert_eq!(r.partitions_searched, 2);
            let bad = AnnQuery { vector: vec![0.0; 3], ..q };
            assert!(matches!(index.search(&bad, None), Err(Error::InvalidInput { .. })));
        }
    }

    #[test]
    fn corrupt_models_are_refused() {
        let d = dir("c1");
        // IVF lengths not summing to the file's rows.
        let aux = Ivf { offsets: vec![0, 3], lengths: vec![3, 2], ..Default::default() };
        let meta = write_small(&d, SmallKind::Flat, &aux, &index_ivf(), &codebook()).unwrap();
        assert!(corrupt(open_and_search(&d, &meta)).contains("sum to 5"));
        // A partition beyond the file.
        let aux = Ivf { offsets: vec![0, 3], lengths: vec![3, 300], ..Default::default() };
        let meta = write_small(&d, SmallKind::Sq, &aux, &index_ivf(), &codebook()).unwrap();
        assert!(corrupt(open_and_search(&d, &meta)).contains("ends at row 303"));
        // Offsets that are not the running sums.
        let aux = Ivf { offsets: vec![0, 2], lengths: vec![3, 3], ..Default::default() };
        let meta = write_small(&d, SmallKind::Pq, &aux, &index_ivf(), &codebook()).unwrap();
        corrupt(open_and_search(&d, &meta));
        // Three partitions in the storage, two centroids.
        let aux = Ivf { offsets: vec![0, 3, 6], lengths: vec![3, 3, 0], ..Default::default() };
        let meta = write_small(&d, SmallKind::Flat, &aux, &index_ivf(), &codebook()).unwrap();
        corrupt(open_and_search(&d, &meta));
        // A codebook of the wrong size.
        let short = super::super::tensor::encode(TensorDataType::Float32, &[8, DIM], &[0.0; 8 * DIM]);
        let meta = write_small(&d, SmallKind::Pq, &aux_ivf(), &index_ivf(), &short).unwrap();
        assert!(corrupt(open_and_search(&d, &meta)).contains("codebook"));
        let mut lying = codebook();
        lying.data.truncate(10);
        let meta = write_small(&d, SmallKind::Pq, &aux_ivf(), &index_ivf(), &lying).unwrap();
        corrupt(open_and_search(&d, &meta));
        // No centroids; centroids of another dimension.
        let meta = write_small(&d, SmallKind::Flat, &aux_ivf(), &Ivf { centroids_tensor: None, ..index_ivf() }, &codebook()).unwrap();
        corrupt(open_and_search(&d, &meta));
        let c3 = super::super::tensor::encode(TensorDataType::Float32, &[2, 3], &[0.0; 6]);
        let meta = write_small(&d, SmallKind::Flat, &aux_ivf(), &Ivf { centroids_tensor: Some(c3), ..index_ivf() }, &codebook()).unwrap();
        corrupt(open_and_search(&d, &meta));
    }

    #[test]
    fn truncated_and_garbled_files_are_refused() {
        let d = dir("c2");
        let meta = write_small(&d, SmallKind::Pq, &aux_ivf(), &index_ivf(), &codebook()).unwrap();
        for name in [layout::INDEX_FILE, layout::AUXILIARY_FILE] {
            let f = d.child(name).unwrap();
            let good = f.read_all().unwrap();
            // A truncated IVF message: index.idx starts with it (global buffer 1 at offset 0).
            for cut in [good.len() / 2, good.len() - 1, 10] {
                f.write_all(good.slice(..cut)).unwrap();
                let r = open_and_search(&d, &meta);
                assert!(matches!(r, Err(Error::Corrupt { .. }) | Err(Error::NotFound { .. })), "{name} cut at {cut}: {r:?}");
            }
            let mut garbled = good.to_vec();
            for b in garbled.iter_mut().take(24) {
                *b ^= 0x5a;
            }
            f.write_all(Bytes::from(garbled)).unwrap();
            assert!(open_and_search(&d, &meta).is_err(), "{name} garbled");
            f.write_all(good).unwrap();
        }
        open_and_search(&d, &meta).unwrap();
    }

    /// A few thousand mutations through the fuzz entry point (the fuzz
    /// target `vector_index` runs it on arbitrary bytes).
    #[test]
    fn fuzz_entry_survives_mutations() {
        for input in seeds() {
            vector_index(&input);
            let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ u64::from(input[0]);
            for _ in 0..150 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let mut m = input.clone();
                let at = 1 + (state as usize) % (input.len() - 1);
                m[at] ^= (state >> 32) as u8 | 1;
                if state % 7 == 0 {
                    m.truncate(at);
                }
                vector_index(&m);
            }
        }
    }
}
