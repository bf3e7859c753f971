//! INVERTED (full-text search) indices as pylance 14 writes them
//! (docs/research/text-and-skip-indices.md §1).
//!
//! ```text
//! _indices/{uuid}/
//!   metadata.lance        deleted_fragments: binary (a portable roaring bitmap), 1 row
//!                         schema metadata: partitions = "[0,1]", params = tokenizer JSON,
//!                         format_version = "2", token_set_format = "fst",
//!                         posting_block_size = "128", posting_tail_codec = "varint_delta_v1"
//!   part_N_docs.lance     _rowid: u64 (row address, or stable row id), _num_tokens: u32;
//!                         one row per document with >= 1 token; doc id = row number;
//!                         schema metadata total_tokens = sum of _num_tokens
//!   part_N_invert.lance   row t = token id t: _posting: list<large_binary> (one per block,
//!                         see [`posting`]), _max_score: f32, _length: u32 (doc frequency),
//!                         _impacts: list<large_binary>; with positions also
//!                         _compressed_position: large_binary, _position_block_offset: list<u32>
//!   part_N_tokens.lance   _token_fst_bytes: large_binary (an `fst` Map token -> id),
//!                         _token_next_id: u32, _token_total_length: u64; 1 row
//! ```
//!
//! Partitions hold contiguous runs of documents with partition-local doc
//! ids and their own token sets; BM25 statistics (N, n, total tokens) are
//! summed over all partitions ([`InvertedIndex::stats`]). Reading opens the
//! docs and token files whole and reads a token's posting row only when a
//! query asks for it.

pub mod build;
pub mod posting;
pub mod posting_encode;
pub mod tokenizer;
pub mod write;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow_array::cast::AsArray;
use arrow_array::types::{UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use roaring::RoaringBitmap;

use self::posting::{Postings, TailCodec};
use self::tokenizer::{Tokenizer, TokenizerParams};
use crate::error::{Error, Result};
use crate::file::FileReader;
use crate::io::Storage;

/// The `index_details` type URL of INVERTED indices.
pub const DETAILS_TYPE_URL: &str = "/lance.table.InvertedIndexDetails";
/// The metadata file.
pub const METADATA_FILE: &str = "metadata.lance";

/// A partition's docs file.
pub fn docs_file(p: u32) -> String {
    format!("part_{p}_docs.lance")
}
/// A partition's posting file.
pub fn invert_file(p: u32) -> String {
    format!("part_{p}_invert.lance")
}
/// A partition's token set file.
pub fn tokens_file(p: u32) -> String {
    format!("part_{p}_tokens.lance")
}

fn meta<'a>(r: &'a FileReader, key: &str) -> Option<&'a String> {
    r.schema().metadata().get(key)
}

fn column(r: &FileReader, name: &str, ok: impl Fn(&DataType) -> bool) -> Result<usize> {
    let s = r.schema();
    match s.fields().iter().position(|f| f.name() == name) {
        Some(i) if ok(s.field(i).data_type()) => Ok(i),
        Some(i) => Err(Error::corrupt_in(r.path().to_string(), format!("column {name} has type {}", s.field(i).data_type()))),
        None => Err(Error::corrupt_in(r.path().to_string(), format!("no column {name}"))),
    }
}

fn is_list_of_binary(d: &DataType) -> bool {
    matches!(d, DataType::List(f) | DataType::LargeList(f) if matches!(f.data_type(), DataType::LargeBinary | DataType::Binary))
}

/// Load a token set: the `fst` map bytes of `part_N_tokens.lance`.
pub fn load_token_map(bytes: Vec<u8>) -> Result<fst::Map<Vec<u8>>> {
    let map = fst::Map::new(bytes).map_err(|e| Error::corrupt(format!("FTS token set is not a valid fst map: {e}")))?;
    // `fst` checks only the header and trusts the node bytes (a damaged
    // node panics on traversal), so walk every node once here, catching a
    // panic as corruption; lookups and searches afterwards only visit nodes
    // this walk has read.
    let walk = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        use fst::Streamer;
        let mut s = map.stream();
        let mut n = 0usize;
        while s.next().is_some() {
            n += 1;
        }
        n
    }));
    match walk {
        Ok(n) if n == map.len() => Ok(map),
        Ok(n) => Err(Error::corrupt(format!("FTS token set holds {n} tokens, its header says {}", map.len()))),
        Err(_) => Err(Error::corrupt("FTS token set has damaged nodes")),
    }
}

/// Column positions in a partition's invert file.
#[derive(Debug, Clone, Copy)]
struct InvertCols {
    posting: usize,
    positions: Option<(usize, usize)>,
}

/// One partition: its documents, token set and posting file.
pub struct Partition {
    /// Partition id (`part_{id}_*`).
    pub id: u32,
    /// `_rowid` of each doc id.
    pub row_ids: Vec<u64>,
    /// `_num_tokens` of each doc id.
    pub num_tokens: Vec<u32>,
    /// Sum of `num_tokens`.
    pub total_tokens: u64,
    /// `_length` (document frequency) of each token id.
    pub lengths: Vec<u32>,
    /// Token -> token id.
    pub tokens: fst::Map<Vec<u8>>,
    invert: FileReader,
    cols: InvertCols,
    tail: TailCodec,
    cache: Mutex<HashMap<u64, Arc<Postings>>>,
}

impl std::fmt::Debug for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partition").field("id", &self.id).field("docs", &self.row_ids.len()).field("tokens", &self.lengths.len()).finish()
    }
}

impl Partition {
    fn open(dir: &Storage, id: u32, tail: TailCodec) -> Result<Self> {
        let d = FileReader::open_storage(dir.child(&docs_file(id))?)?;
        let rid = column(&d, "_rowid", |t| t == &DataType::UInt64)?;
        let nt = column(&d, "_num_tokens", |t| t == &DataType::UInt32)?;
        let b = d.read_range(&[rid, nt], 0..d.num_rows())?;
        let dpath = d.path().to_string();
        if b.column(0).null_count() + b.column(1).null_count() > 0 {
            return Err(Error::corrupt_in(dpath, "null _rowid or _num_tokens"));
        }
        let row_ids = b.column(0).as_primitive::<UInt64Type>().values().to_vec();
        let num_tokens = b.column(1).as_primitive::<UInt32Type>().values().to_vec();
        let total_tokens: u64 = num_tokens.iter().map(|&n| u64::from(n)).sum();

        let t = FileReader::open_storage(dir.child(&tokens_file(id))?)?;
        let fc = column(&t, "_token_fst_bytes", |t| matches!(t, DataType::LargeBinary | DataType::Binary))?;
        if t.num_rows() != 1 {
            return Err(Error::corrupt_in(t.path().to_string(), format!("{} rows, expected 1", t.num_rows())));
        }
        let tb = t.read_range(&[fc], 0..1)?;
        let bytes = binary_value(&tb, 0, 0).ok_or_else(|| Error::corrupt_in(t.path().to_string(), "null token set"))?;
        let tokens = load_token_map(bytes.to_vec()).map_err(|e| e.in_file(t.path()))?;

        let invert = FileReader::open_storage(dir.child(&invert_file(id))?)?;
        let posting = column(&invert, "_posting", is_list_of_binary)?;
        let len = column(&invert, "_length", |t| t == &DataType::UInt32)?;
        let positions = match invert.schema().fields().iter().position(|f| f.name() == "_compressed_position") {
            Some(_) => Some((
                column(&invert, "_compressed_position", |t| matches!(t, DataType::LargeBinary | DataType::Binary))?,
                column(
                    &invert,
                    "_position_block_offset",
                    |t| matches!(t, DataType::List(f) | DataType::LargeList(f) if f.data_type() == &DataType::UInt32),
                )?,
            )),
            None => None,
        };
        let lb = invert.read_range(&[len], 0..invert.num_rows())?;
        if lb.column(0).null_count() > 0 {
            return Err(Error::corrupt_in(invert.path().to_string(), "null _length"));
        }
        let lengths = lb.column(0).as_primitive::<UInt32Type>().values().to_vec();
        if tokens.len() > lengths.len() {
            return Err(Error::corrupt_in(
                invert.path().to_string(),
                format!("{} tokens in the token set, {} posting rows", tokens.len(), lengths.len()),
            ));
        }
        Ok(Partition {
            id,
            row_ids,
            num_tokens,
            total_tokens,
            lengths,
            tokens,
            invert,
            cols: InvertCols { posting, positions },
            tail,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// Whether the posting file keeps positions.
    pub fn has_positions(&self) -> bool {
        self.cols.positions.is_some()
    }

    /// The token id of `token`.
    pub fn token_id(&self, token: &str) -> Option<u64> {
        self.tokens.get(token.as_bytes())
    }

    /// Document frequency of `token` in this partition (0 when absent).
    pub fn doc_freq(&self, token: &str) -> u32 {
        self.token_id(token).and_then(|t| self.lengths.get(t as usize).copied()).unwrap_or(0)
    }

    /// The posting list of token id `t` (with positions when asked and kept).
    pub fn postings(&self, t: u64, with_positions: bool) -> Result<Arc<Postings>> {
        let key = t * 2 + u64::from(with_positions);
        if let Some(p) = self.cache.lock().map_err(|_| Error::internal("FTS posting cache poisoned"))?.get(&key) {
            return Ok(p.clone());
        }
        let length = *self
            .lengths
            .get(t as usize)
            .ok_or_else(|| Error::corrupt_in(self.invert.path().to_string(), format!("token id {t} has no posting row")))?;
        let mut proj = vec![self.cols.posting];
        let pos = if with_positions { self.cols.positions } else { None };
        if let Some((s, o)) = pos {
            proj.extend([s, o]);
        }
        let b = self.invert.take(&proj, &[t])?;
        let path = self.invert.path().to_string();
        let list = b.column(0);
        let blocks = list_of_binary(list.as_ref()).ok_or_else(|| Error::corrupt_in(path.clone(), "null _posting"))?;
        let refs: Vec<&[u8]> = blocks.to_vec();
        let mut p = posting::decode(&refs, length, self.tail, self.row_ids.len()).map_err(|e| e.in_file(&path))?;
        if pos.is_some() {
            let stream = binary_value(&b, 1, 0).ok_or_else(|| Error::corrupt_in(path.clone(), "null _compressed_position"))?;
            let offs = b.column(2);
            let offsets: Vec<u32> = match offs.data_type() {
                DataType::List(_) => {
                    let l = offs.as_list::<i32>();
                    l.value(0).as_primitive::<UInt32Type>().values().to_vec()
                }
                _ => {
                    let l = offs.as_list::<i64>();
                    l.value(0).as_primitive::<UInt32Type>().values().to_vec()
                }
            };
            posting::decode_positions(&mut p, stream, &offsets).map_err(|e| e.in_file(&path))?;
        }
        let p = Arc::new(p);
        self.cache.lock().map_err(|_| Error::internal("FTS posting cache poisoned"))?.insert(key, p.clone());
        Ok(p)
    }
}

/// Value `row` of binary column `col` of `b`.
fn binary_value(b: &RecordBatch, col: usize, row: usize) -> Option<&[u8]> {
    let c = b.column(col);
    if c.is_null(row) {
        return None;
    }
    match c.data_type() {
        DataType::LargeBinary => Some(c.as_binary::<i64>().value(row)),
        DataType::Binary => Some(c.as_binary::<i32>().value(row)),
        _ => None,
    }
}

/// The binary elements of row 0 of a list<binary> column.
fn list_of_binary(c: &dyn Array) -> Option<Vec<&[u8]>> {
    if c.is_null(0) {
        return None;
    }
    let (values, range) = match c.data_type() {
        DataType::List(_) => {
            let l = c.as_list::<i32>();
            let o = l.value_offsets();
            (l.values(), o[0] as usize..o[1] as usize)
        }
        DataType::LargeList(_) => {
            let l = c.as_list::<i64>();
            let o = l.value_offsets();
            (l.values(), o[0] as usize..o[1] as usize)
        }
        _ => return None,
    };
    let out = match values.data_type() {
        DataType::LargeBinary => {
            let v = values.as_binary::<i64>();
            range.map(|i| v.value(i)).collect()
        }
        DataType::Binary => {
            let v = values.as_binary::<i32>();
            range.map(|i| v.value(i)).collect()
        }
        _ => return None,
    };
    Some(out)
}

/// Corpus statistics BM25 uses.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stats {
    /// Documents (rows with at least one token; deleted ones included).
    pub num_docs: u64,
    /// Tokens over all documents.
    pub total_tokens: u64,
}

impl Stats {
    /// Average document length, as pylance computes it (f32 division).
    pub fn avgdl(&self) -> f32 {
        self.total_tokens as f32 / self.num_docs as f32
    }
}

/// An opened INVERTED index (all partitions of one index entry).
#[derive(Debug)]
pub struct InvertedIndex {
    /// The `params` JSON of `metadata.lance`.
    pub params_json: String,
    /// The tokenizer parameters.
    pub params: TokenizerParams,
    /// The analyzer queries go through.
    pub tokenizer: Tokenizer,
    /// `format_version` (1, 2).
    pub format_version: u32,
    /// Fragments recorded as deleted in `metadata.lance`.
    pub deleted_fragments: RoaringBitmap,
    /// The partitions, in `partitions` order.
    pub partitions: Vec<Partition>,
}

impl InvertedIndex {
    /// Open the index in `dir`.
    pub fn open(dir: &Storage) -> Result<Self> {
        let m = FileReader::open_storage(dir.child(METADATA_FILE)?)?;
        let path = m.path().to_string();
        let get = |k: &str| meta(&m, k).cloned().ok_or_else(|| Error::corrupt_in(path.clone(), format!("no {k} in the schema metadata")));
        let format_version: u32 = match meta(&m, "format_version") {
            Some(v) => v.trim().parse().map_err(|_| Error::corrupt_in(path.clone(), format!("format_version {v:?}")))?,
            None => 1,
        };
        if format_version > 2 {
            return Err(Error::unsupported_in(path.clone(), format!("FTS index format version {format_version}")));
        }
        if let Some(f) = meta(&m, "token_set_format") {
            if f != "fst" {
                return Err(Error::unsupported_in(path.clone(), format!("FTS token set format {f:?}")));
            }
        }
        if let Some(bs) = meta(&m, "posting_block_size") {
            if bs != "128" {
                return Err(Error::unsupported_in(path.clone(), format!("FTS posting block size {bs}")));
            }
        }
        let tail = match meta(&m, "posting_tail_codec") {
            Some(c) => TailCodec::parse(c).map_err(|e| e.in_file(&path))?,
            None if format_version >= 2 => TailCodec::VarintDelta,
            None => TailCodec::Fixed32,
        };
        let parts: Vec<u32> = serde_json::from_str(&get("partitions")?)
            .map_err(|e| Error::corrupt_in(path.clone(), format!("partitions is not a JSON list of ids: {e}")))?;
        let params_json = get("params")?;
        let params = TokenizerParams::from_json(&params_json).map_err(|e| e.in_file(&path))?;
        let tokenizer = Tokenizer::new(&params)?;
        let mut deleted_fragments = RoaringBitmap::new();
        if m.num_rows() > 0 {
            if let Ok(c) = column(&m, "deleted_fragments", |t| matches!(t, DataType::Binary | DataType::LargeBinary)) {
                let b = m.read_range(&[c], 0..1)?;
                if let Some(bytes) = binary_value(&b, 0, 0) {
                    deleted_fragments =
                        RoaringBitmap::deserialize_from(bytes).map_err(|e| Error::corrupt_in(path.clone(), format!("deleted_fragments: {e}")))?;
                }
            }
        }
        let partitions = parts.into_iter().map(|p| Partition::open(dir, p, tail)).collect::<Result<Vec<_>>>()?;
        Ok(InvertedIndex { params_json, params, tokenizer, format_version, deleted_fragments, partitions })
    }

    /// N and total tokens summed over partitions.
    pub fn stats(&self) -> Stats {
        Stats {
            num_docs: self.partitions.iter().map(|p| p.row_ids.len() as u64).sum(),
            total_tokens: self.partitions.iter().map(|p| p.total_tokens).sum(),
        }
    }

    /// Document frequency of `token` summed over partitions.
    pub fn doc_freq(&self, token: &str) -> u64 {
        self.partitions.iter().map(|p| u64::from(p.doc_freq(token))).sum()
    }

    /// Whether the index keeps positions.
    pub fn has_positions(&self) -> bool {
        self.partitions.first().is_some_and(Partition::has_positions)
    }

    /// Distinct tokens summed over partitions (`index_statistics`'s
    /// `num_tokens`).
    pub fn num_tokens(&self) -> u64 {
        self.partitions.iter().map(|p| p.lengths.len() as u64).sum()
    }

    /// Tokens of the token sets within Levenshtein `distance` of `token`
    /// sharing its first `prefix_length` bytes, in byte order, appended to
    /// `out` until it holds `max_expansions` (pylance's rule: the check
    /// comes after each push, so a later term still adds one).
    pub fn expand_fuzzy(&self, token: &str, distance: u32, prefix_length: u32, max_expansions: usize, out: &mut Vec<String>) -> Result<()> {
        use fst::automaton::{Automaton, Levenshtein, Str};
        use fst::{IntoStreamer, Streamer};
        let lev = Levenshtein::new(token, distance).map_err(|e| Error::invalid_input(format!("failed to construct the fuzzy query: {e}")))?;
        let mut found: std::collections::BTreeSet<Vec<u8>> = std::collections::BTreeSet::new();
        let plen = (prefix_length as usize).min(token.len());
        let prefix = token.get(..plen).unwrap_or(token);
        for p in &self.partitions {
            if plen == 0 {
                let mut s = p.tokens.search(&lev).into_stream();
                while let Some((k, _)) = s.next() {
                    found.insert(k.to_vec());
                }
            } else {
                let a = (&lev).intersection(Str::new(prefix).starts_with());
                let mut s = p.tokens.search(a).into_stream();
                while let Some((k, _)) = s.next() {
                    found.insert(k.to_vec());
                }
            }
        }
        for k in found {
            out.push(String::from_utf8_lossy(&k).into_owned());
            if out.len() >= max_expansions {
                break;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
