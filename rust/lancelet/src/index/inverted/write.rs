//! Writing the files of an INVERTED index (pylance 14's format v2), all in
//! `_indices/<uuid>/`, Lance files of the dataset's data storage version
//! with one global buffer (the schema):
//!
//! | file | columns | rows | schema metadata |
//! |---|---|---|---|
//! | `part_N_invert.lance` | `_posting: list<large_binary>`, `_max_score: float`, `_length: uint32`, `_impacts: list<large_binary>` (+ `_compressed_position: large_binary`, `_position_block_offset: list<uint32>` with positions) | one per token, row = token id | `format_version` 2, `posting_block_size` 128, `posting_tail_codec` varint_delta_v1 (+ `positions_codec` packed_delta_v1, `positions_layout` shared_stream_v2) |
//! | `part_N_tokens.lance` | `_token_fst_bytes: large_binary`, `_token_next_id: uint32`, `_token_total_length: uint64` | one | — |
//! | `part_N_docs.lance` | `_rowid: uint64`, `_num_tokens: uint32` | one per indexed document, doc id = row | `total_tokens` |
//! | `metadata.lance` | `deleted_fragments: binary` (an empty portable roaring bitmap) | one | `partitions` (JSON list), `params` (tokenizer JSON), `format_version`, `token_set_format` fst, `posting_block_size`, `posting_tail_codec` (+ the two positions keys) |
//!
//! Every column is non-nullable (list items are nullable, as Arrow's
//! default). Posting bytes: [`super::posting_encode`]. The token set is an
//! `fst` map from token bytes to token id.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::{LargeBinaryBuilder, ListBuilder, UInt32Builder};
use arrow_array::{ArrayRef, BinaryArray, Float32Array, LargeBinaryArray, RecordBatch, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema};

use super::posting_encode::{encode_posting, idf};
use super::tokenizer::TokenizerParams;
use crate::error::{Error, Result};
use crate::file::schema::LanceSchema;
use crate::file::{FileVersion, FileWriter};
use crate::io::Storage;

/// `format_version` of what lancelet writes.
pub const FORMAT_VERSION: u32 = 2;
/// Tokens per record batch of `part_N_invert.lance`.
const TOKENS_PER_BATCH: usize = 4096;

/// The postings of one token while a partition is built.
#[derive(Debug, Default, Clone)]
pub struct TokenPosting {
    /// Doc ids, ascending.
    pub docs: Vec<u32>,
    /// Frequency of the token in each doc.
    pub freqs: Vec<u32>,
    /// Positions, `freqs[i]` per doc (only with positions).
    pub positions: Vec<u32>,
}

/// One partition in memory.
#[derive(Debug)]
pub struct PartitionData {
    /// Whether positions are kept.
    pub with_position: bool,
    /// Token → id.
    pub token_ids: HashMap<String, u32>,
    /// Id → token.
    pub tokens: Vec<String>,
    /// Id → postings.
    pub postings: Vec<TokenPosting>,
    /// Doc id → row id/address.
    pub row_ids: Vec<u64>,
    /// Doc id → token count.
    pub num_tokens: Vec<u32>,
}

fn string_map(pairs: &[(&str, String)]) -> HashMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

fn write_file(
    dir: &Storage,
    version: FileVersion,
    name: &str,
    schema: Arc<Schema>,
    batches: impl IntoIterator<Item = Result<Vec<ArrayRef>>>,
) -> Result<(String, u64)> {
    let mut w = FileWriter::create_with_lance_schema(dir.child(name)?, LanceSchema::from_arrow(&schema)?, version)?;
    for cols in batches {
        let batch = RecordBatch::try_new(schema.clone(), cols?).map_err(Error::internal_arrow)?;
        if batch.num_rows() > 0 {
            w.write(&batch)?;
        }
    }
    Ok((name.to_string(), w.finish()?))
}

fn posting_metadata(with_position: bool) -> Vec<(&'static str, String)> {
    let mut m = vec![
        ("format_version", FORMAT_VERSION.to_string()),
        ("posting_block_size", "128".to_string()),
        ("posting_tail_codec", "varint_delta_v1".to_string()),
    ];
    if with_position {
        m.push(("positions_codec", "packed_delta_v1".to_string()));
        m.push(("positions_layout", "shared_stream_v2".to_string()));
    }
    m
}

/// The schema of `part_N_invert.lance`.
pub fn invert_schema(with_position: bool) -> Arc<Schema> {
    let list = |t: DataType| DataType::List(Arc::new(Field::new("item", t, true)));
    let mut fields = vec![
        Field::new("_posting", list(DataType::LargeBinary), false),
        Field::new("_max_score", DataType::Float32, false),
        Field::new("_length", DataType::UInt32, false),
        Field::new("_impacts", list(DataType::LargeBinary), false),
    ];
    if with_position {
        fields.push(Field::new("_compressed_position", DataType::LargeBinary, false));
        fields.push(Field::new("_position_block_offset", list(DataType::UInt32), false));
    }
    Arc::new(Schema::new(fields).with_metadata(string_map(&posting_metadata(with_position))))
}

/// Write partition `id`'s three files; returns them (invert, tokens, docs).
pub fn write_partition(dir: &Storage, version: FileVersion, id: u64, part: PartitionData) -> Result<Vec<(String, u64)>> {
    let num_docs = part.row_ids.len() as u64;
    let total_tokens: u64 = part.num_tokens.iter().map(|&n| u64::from(n)).sum();
    let avgdl = total_tokens as f32 / num_docs as f32;
    let with_position = part.with_position;
    let schema = invert_schema(with_position);
    let num_tokens = &part.num_tokens;
    let postings = &part.postings;
    let batches = postings.chunks(TOKENS_PER_BATCH).map(|chunk| -> Result<Vec<ArrayRef>> {
        let mut posting = ListBuilder::new(LargeBinaryBuilder::new());
        let mut impacts = ListBuilder::new(LargeBinaryBuilder::new());
        let mut max_score = Vec::with_capacity(chunk.len());
        let mut length = Vec::with_capacity(chunk.len());
        let mut pos_bytes = LargeBinaryBuilder::new();
        let mut pos_offsets = ListBuilder::new(UInt32Builder::new());
        for p in chunk {
            let positions = with_position.then_some(p.positions.as_slice());
            let e = encode_posting(&p.docs, &p.freqs, positions, |d| num_tokens[d as usize], idf(p.docs.len() as u64, num_docs), avgdl);
            for b in &e.blocks {
                posting.values().append_value(b);
            }
            posting.append(true);
            for b in &e.impacts {
                impacts.values().append_value(b);
            }
            impacts.append(true);
            max_score.push(e.max_score);
            length.push(e.length);
            if let Some((stream, offsets)) = e.positions {
                pos_bytes.append_value(stream);
                pos_offsets.values().append_slice(&offsets);
                pos_offsets.append(true);
            }
        }
        let mut cols: Vec<ArrayRef> = vec![
            Arc::new(posting.finish()),
            Arc::new(Float32Array::from(max_score)),
            Arc::new(UInt32Array::from(length)),
            Arc::new(impacts.finish()),
        ];
        if with_position {
            cols.push(Arc::new(pos_bytes.finish()));
            cols.push(Arc::new(pos_offsets.finish()));
        }
        Ok(cols)
    });
    let invert = write_file(dir, version, &format!("part_{id}_invert.lance"), schema, batches)?;

    let fst_bytes = token_set_fst(&part.tokens)?;
    let total_len: u64 = part.tokens.iter().map(|t| t.len() as u64).sum();
    let tokens_schema = Arc::new(Schema::new(vec![
        Field::new("_token_fst_bytes", DataType::LargeBinary, false),
        Field::new("_token_next_id", DataType::UInt32, false),
        Field::new("_token_total_length", DataType::UInt64, false),
    ]));
    let tokens_cols: Vec<ArrayRef> = vec![
        Arc::new(LargeBinaryArray::from_vec(vec![fst_bytes.as_slice()])),
        Arc::new(UInt32Array::from(vec![part.tokens.len() as u32])),
        Arc::new(UInt64Array::from(vec![total_len])),
    ];
    let tokens = write_file(dir, version, &format!("part_{id}_tokens.lance"), tokens_schema, [Ok(tokens_cols)])?;
    drop(fst_bytes);

    let docs_schema = Arc::new(
        Schema::new(vec![Field::new("_rowid", DataType::UInt64, false), Field::new("_num_tokens", DataType::UInt32, false)])
            .with_metadata(string_map(&[("total_tokens", total_tokens.to_string())])),
    );
    let docs_cols: Vec<ArrayRef> = vec![Arc::new(UInt64Array::from(part.row_ids)), Arc::new(UInt32Array::from(part.num_tokens.clone()))];
    let docs = write_file(dir, version, &format!("part_{id}_docs.lance"), docs_schema, [Ok(docs_cols)])?;
    Ok(vec![invert, tokens, docs])
}

/// An empty portable roaring bitmap (cookie 12346, no containers).
const EMPTY_ROARING: [u8; 8] = [0x3a, 0x30, 0, 0, 0, 0, 0, 0];

/// Write `metadata.lance` listing `partitions`.
pub fn write_metadata(dir: &Storage, version: FileVersion, params: &TokenizerParams, partitions: &[u64]) -> Result<(String, u64)> {
    let list = partitions.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(",");
    let mut meta = vec![("partitions", format!("[{list}]")), ("params", params.to_json()), ("token_set_format", "fst".to_string())];
    meta.extend(posting_metadata(params.with_position));
    let schema = Arc::new(Schema::new(vec![Field::new("deleted_fragments", DataType::Binary, false)]).with_metadata(string_map(&meta)));
    let cols: Vec<ArrayRef> = vec![Arc::new(BinaryArray::from_vec(vec![&EMPTY_ROARING[..]]))];
    write_file(dir, version, "metadata.lance", schema, [Ok(cols)])
}

/// The `index_details` value of the manifest entry
/// (`/lance.table.InvertedIndexDetails`): protobuf fields 1 base tokenizer,
/// 2 language (JSON-quoted), 3 with_position, 4 max_token_length, 5
/// lower_case, 6 stem, 7 remove_stop_words, 8 ascii_folding, 9/10 n-gram
/// lengths, 11 prefix_only, 12 block size, 15 format version; false bools
/// left out, as proto3 writes them.
pub fn details(params: &TokenizerParams) -> Vec<u8> {
    use super::posting_encode::put_varint;
    let mut out = Vec::new();
    let string = |out: &mut Vec<u8>, field: u64, s: &str| {
        put_varint(out, field << 3 | 2);
        put_varint(out, s.len() as u64);
        out.extend_from_slice(s.as_bytes());
    };
    let int = |out: &mut Vec<u8>, field: u64, v: u64| {
        put_varint(out, field << 3);
        put_varint(out, v);
    };
    string(&mut out, 1, &params.base_tokenizer);
    string(&mut out, 2, &serde_json::Value::String(params.language.clone()).to_string());
    if params.with_position {
        int(&mut out, 3, 1);
    }
    if let Some(n) = params.max_token_length {
        int(&mut out, 4, n);
    }
    for (field, set) in [(5, params.lower_case), (6, params.stem), (7, params.remove_stop_words), (8, params.ascii_folding)] {
        if set {
            int(&mut out, field, 1);
        }
    }
    int(&mut out, 9, u64::from(params.min_ngram_length));
    int(&mut out, 10, u64::from(params.max_ngram_length));
    if params.prefix_only {
        int(&mut out, 11, 1);
    }
    int(&mut out, 12, u64::from(params.block_size));
    int(&mut out, 15, u64::from(FORMAT_VERSION));
    out
}

/// The FST map bytes of `tokens` (token id = index in `tokens`).
pub fn token_set_fst(tokens: &[String]) -> Result<Vec<u8>> {
    let mut order: Vec<u32> = (0..tokens.len() as u32).collect();
    order.sort_unstable_by(|&a, &b| tokens[a as usize].as_bytes().cmp(tokens[b as usize].as_bytes()));
    let mut b = fst::MapBuilder::memory();
    for id in order {
        b.insert(tokens[id as usize].as_bytes(), u64::from(id)).map_err(|e| Error::internal(format!("building the token FST: {e}")))?;
    }
    b.into_inner().map_err(|e| Error::internal(format!("building the token FST: {e}")))
}

/// `(token, id)` of a stored FST token set, in key (byte) order.
pub fn token_set_entries(fst_bytes: &[u8]) -> Result<Vec<(String, u64)>> {
    use fst::Streamer;
    let map = fst::Map::new(fst_bytes.to_vec()).map_err(|e| Error::corrupt(format!("INVERTED token set FST: {e}")))?;
    let mut out = Vec::with_capacity(map.len());
    let mut s = map.stream();
    while let Some((k, v)) = s.next() {
        let k = std::str::from_utf8(k).map_err(|_| Error::corrupt("INVERTED token set FST: a token is not UTF-8"))?;
        out.push((k.to_string(), v));
    }
    Ok(out)
}
