//! NGRAM indices: for each trigram of a string column, the rows holding it,
//! as pylance 14 writes them. They narrow `contains(col, 'sub')` and some
//! `LIKE` patterns to the rows holding every trigram of the literal text;
//! the filter is then evaluated on those rows (the answer is a superset).
//!
//! ```text
//! _indices/{uuid}/ngram_postings.lance
//!     tokens:       uint32 (nullable, never null)   one row per distinct
//!                                                   token, ascending
//!     posting_list: binary not null                 the rows holding it, a
//!                   field metadata lance-encoding:compression = none
//!     no schema metadata
//! ```
//!
//! A posting list is a serialized `RoaringTreemap`: `u64` LE number of
//! bitmaps, then per bitmap (ascending high keys) a `u32` LE high key (the
//! fragment id of a row address, or the high half of a stable row id) and a
//! portable 32-bit Roaring bitmap of the low halves (cookie 12346; its
//! length is implied by its own header). Rows are row addresses, or stable
//! row ids on datasets that have them.
//!
//! Tokens: the value is lower-cased (Rust's `to_lowercase`), each character
//! is folded as pylance folds it ([`super::ngram_fold`], e.g. `é` → `e`,
//! `ß` → `ss`), and every window of 3 consecutive characters that are all
//! ASCII letters or digits is a token `(p(c0)·37 + p(c1))·37 + p(c2)` with
//! `p('0'..='9') = 1..=10` and, for letters, `p(c) = (c − 'a' + 11) mod 256`
//! (`a..z` → 11..36; folding can leave upper-case letters, which wrap).
//! Token 0 holds the rows whose value is null (it exists only when some
//! value is null). The manifest entry's details are an empty
//! `/lance.table.NGramIndexDetails`; `index_version` 0.
//!
//! Searches use only the windows of the needle that are ASCII letters or
//! digits as written: those are trigrams of every matching row whatever
//! the folding does around them, so the answer stays a superset even if a
//! folding rule here differs from the writer's.

use std::collections::{BTreeMap, HashMap};
use std::io::Cursor;
use std::sync::{Arc, Mutex};

use arrow_array::cast::AsArray;
use arrow_array::types::UInt32Type;
use arrow_array::{Array, ArrayRef, BinaryArray, RecordBatch, UInt32Array};
use arrow_schema::{DataType, Field, Schema};
use roaring::RoaringBitmap;

use super::ngram_fold::FOLD;
use super::rowset::RowSet;
use super::{IndexKind, IndexQuery, ScalarIndex, TrainingData};
use crate::error::{Error, Result};
use crate::file::schema::LanceSchema;
use crate::file::{FileReader, FileVersion, FileWriter};
use crate::io::Storage;

/// The one file of an NGRAM index.
pub const FILE: &str = "ngram_postings.lance";
/// The token of null rows.
pub const NULL_TOKEN: u32 = 0;
/// Characters in an n-gram.
pub const N: usize = 3;
/// Posting bytes per written batch (a binary array must stay under 2 GiB).
const BATCH_BYTES: usize = 128 << 20;

/// Whether a column of type `dt` can take an NGRAM index.
pub fn supports(dt: &DataType) -> bool {
    matches!(dt, DataType::Utf8 | DataType::LargeUtf8)
}

fn pos(c: u8) -> u32 {
    if c.is_ascii_digit() {
        (c - b'0') as u32 + 1
    } else {
        c.wrapping_sub(b'a').wrapping_add(11) as u32
    }
}

fn token(w: [u8; 3]) -> u32 {
    (pos(w[0]) * 37 + pos(w[1])) * 37 + pos(w[2])
}

/// The folded text of one lower-case character (`None`: kept as it is).
fn fold(c: char) -> Option<&'static str> {
    let cp = c as u32;
    FOLD.binary_search_by_key(&cp, |(k, _)| *k).ok().map(|i| FOLD[i].1)
}

/// Every token of `text` as the writer cuts them (repeats included).
pub fn tokens_of(text: &str, out: &mut Vec<u32>) {
    // Window over the folded characters; a 0 byte stands for a character
    // that is no ASCII letter or digit (it breaks windows).
    let mut win = [0u8; 3];
    let mut filled = 0usize;
    let mut push = |b: u8, out: &mut Vec<u32>| {
        if b.is_ascii_alphanumeric() {
            win = [win[1], win[2], b];
            filled = (filled + 1).min(N);
            if filled == N {
                out.push(token(win));
            }
        } else {
            filled = 0;
        }
    };
    let lower = if text.is_ascii() { text.to_ascii_lowercase() } else { text.to_lowercase() };
    for c in lower.chars() {
        if c.is_ascii() {
            push(c as u8, out);
        } else {
            match fold(c) {
                Some(f) => f.bytes().for_each(|b| push(b, out)),
                None => push(0, out),
            }
        }
    }
}

/// The tokens a search for rows containing `needle` intersects: the
/// windows of ASCII letters and digits as written (lower-cased), sorted,
/// unique.
pub fn query_tokens(needle: &str) -> Vec<u32> {
    let b = needle.as_bytes();
    let mut out: Vec<u32> = b
        .windows(N)
        .filter(|w| w.iter().all(u8::is_ascii_alphanumeric))
        .map(|w| token([w[0].to_ascii_lowercase(), w[1].to_ascii_lowercase(), w[2].to_ascii_lowercase()]))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether pylance answers `contains(col, needle)` with the index (a
/// needle of at least 3 characters).
pub fn usable_needle(needle: &str) -> bool {
    needle.chars().nth(N - 1).is_some()
}

/// Whether literal text yields a token (pylance uses an index for a LIKE
/// pattern when one of its literal runs does).
pub fn has_tokens(text: &str) -> bool {
    let mut v = Vec::new();
    tokens_of(text, &mut v);
    !v.is_empty()
}

/// Serialize a set of row ids as a `RoaringTreemap`.
pub fn treemap_bytes(set: &BTreeMap<u32, RoaringBitmap>, out: &mut Vec<u8>) {
    out.extend_from_slice(&(set.len() as u64).to_le_bytes());
    for (hi, b) in set {
        out.extend_from_slice(&hi.to_le_bytes());
        b.serialize_into(&mut *out).expect("writing to a Vec");
    }
}

/// Parse a `RoaringTreemap` serialization (the whole of `bytes`).
pub fn parse_treemap(bytes: &[u8]) -> Result<RowSet> {
    let bad = |what: String| Error::corrupt(format!("NGRAM posting list: {what}"));
    if bytes.len() < 8 {
        return Err(bad(format!("{} bytes, need at least 8", bytes.len())));
    }
    let n = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
    // Each entry takes at least 4 + 8 bytes.
    if n > (bytes.len() as u64 - 8) / 12 {
        return Err(bad(format!("{n} bitmaps in {} bytes", bytes.len())));
    }
    let mut cur = Cursor::new(&bytes[8..]);
    let mut set = RowSet::new();
    let mut last: Option<u32> = None;
    for i in 0..n {
        let p = cur.position() as usize;
        let rest = &cur.get_ref()[p..];
        if rest.len() < 4 {
            return Err(bad(format!("entry {i} is cut short")));
        }
        let hi = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes"));
        if last.is_some_and(|l| l >= hi) {
            return Err(bad(format!("entry {i}: high key {hi} not above {}", last.unwrap_or(0))));
        }
        last = Some(hi);
        cur.set_position((p + 4) as u64);
        let b = RoaringBitmap::deserialize_from(&mut cur).map_err(|e| bad(format!("entry {i}: bad roaring bitmap: {e}")).with_source(e))?;
        set.insert_bitmap(hi, b);
    }
    if cur.position() as usize != bytes.len() - 8 {
        return Err(bad(format!("{} bytes after the last bitmap", bytes.len() - 8 - cur.position() as usize)));
    }
    Ok(set)
}

/// Rows per token, from `(value, id)` pairs.
fn postings(data: &TrainingData) -> Result<BTreeMap<u32, BTreeMap<u32, RoaringBitmap>>> {
    let ids = data.ids.values();
    let mut map: HashMap<u32, Vec<u64>> = HashMap::new();
    let mut toks = Vec::new();
    let mut add = |i: usize, s: Option<&str>, toks: &mut Vec<u32>| {
        toks.clear();
        match s {
            None => toks.push(NULL_TOKEN),
            Some(s) => tokens_of(s, toks),
        }
        toks.sort_unstable();
        toks.dedup();
        for t in toks.iter() {
            map.entry(*t).or_default().push(ids[i]);
        }
    };
    match data.values.data_type() {
        DataType::Utf8 => data.values.as_string::<i32>().iter().enumerate().for_each(|(i, s)| add(i, s, &mut toks)),
        DataType::LargeUtf8 => data.values.as_string::<i64>().iter().enumerate().for_each(|(i, s)| add(i, s, &mut toks)),
        t => return Err(Error::invalid_input(format!("an NGRAM index needs a string column, not {t}"))),
    }
    let mut out = BTreeMap::new();
    for (t, mut rows) in map {
        rows.sort_unstable();
        rows.dedup();
        out.insert(t, group_rows(&rows));
    }
    Ok(out)
}

/// Sorted unique ids split by their high 32 bits.
fn group_rows(rows: &[u64]) -> BTreeMap<u32, RoaringBitmap> {
    let mut g: BTreeMap<u32, RoaringBitmap> = BTreeMap::new();
    let mut i = 0;
    while i < rows.len() {
        let hi = (rows[i] >> 32) as u32;
        let n = rows[i..].partition_point(|&v| (v >> 32) as u32 == hi);
        g.insert(hi, RoaringBitmap::from_sorted_iter(rows[i..i + n].iter().map(|&v| v as u32)).expect("sorted, unique"));
        i += n;
    }
    g
}

fn schema() -> Arc<Schema> {
    let meta: HashMap<String, String> = [("lance-encoding:compression".to_string(), "none".to_string())].into();
    Arc::new(Schema::new(vec![Field::new("tokens", DataType::UInt32, true), Field::new("posting_list", DataType::Binary, false).with_metadata(meta)]))
}

/// Write the postings file.
fn write_postings(dir: &Storage, version: FileVersion, postings: &BTreeMap<u32, BTreeMap<u32, RoaringBitmap>>) -> Result<Vec<(String, u64)>> {
    let schema = schema();
    let mut w = FileWriter::create_with_lance_schema(dir.child(FILE)?, LanceSchema::from_arrow(&schema)?, version)?;
    let entries: Vec<(&u32, &BTreeMap<u32, RoaringBitmap>)> = postings.iter().collect();
    let mut first = 0;
    while first < entries.len() {
        let mut bytes: Vec<u8> = Vec::new();
        let mut offsets: Vec<i32> = vec![0];
        let mut last = first;
        while last < entries.len() && (bytes.len() < BATCH_BYTES || last == first) {
            treemap_bytes(entries[last].1, &mut bytes);
            offsets.push(i32::try_from(bytes.len()).map_err(|_| Error::invalid_input("an NGRAM index batch exceeds 2 GiB"))?);
            last += 1;
        }
        let tokens = UInt32Array::from(entries[first..last].iter().map(|(t, _)| **t).collect::<Vec<_>>());
        let lists =
            BinaryArray::new(arrow_buffer::OffsetBuffer::new(arrow_buffer::ScalarBuffer::from(offsets)), arrow_buffer::Buffer::from_vec(bytes), None);
        w.write(&RecordBatch::try_new(schema.clone(), vec![Arc::new(tokens), Arc::new(lists)]).map_err(Error::internal_arrow)?)?;
        first = last;
    }
    let size = w.finish()?;
    Ok(vec![(FILE.to_string(), size)])
}

/// Write an NGRAM index of `data` (a string column with its row ids).
pub fn write(dir: &Storage, version: FileVersion, data: &TrainingData) -> Result<Vec<(String, u64)>> {
    write_postings(dir, version, &postings(data)?)
}

/// Rewrite the index in `src` into `dst` with every row mapped by `f`
/// (`None`: the row is gone); tokens left without rows are dropped.
pub fn remap(src: &Storage, dst: &Storage, version: FileVersion, f: &dyn Fn(u64) -> Option<u64>) -> Result<Vec<(String, u64)>> {
    let idx = NGramIndex::open(src)?;
    let mut out = BTreeMap::new();
    for (k, &t) in idx.tokens.iter().enumerate() {
        let set = idx.posting(k)?;
        let mut rows: Vec<u64> = set.values()?.into_iter().filter_map(f).collect();
        rows.sort_unstable();
        rows.dedup();
        if !rows.is_empty() {
            out.insert(t, group_rows(&rows));
        }
    }
    write_postings(dst, version, &out)
}

/// An opened NGRAM index: its tokens, with posting lists read when a
/// search first needs them.
#[derive(Debug)]
pub struct NGramIndex {
    /// Tokens in ascending order.
    tokens: Vec<u32>,
    reader: FileReader,
    loaded: Mutex<HashMap<usize, Arc<RowSet>>>,
}

impl NGramIndex {
    /// Open the index in `dir`.
    pub fn open(dir: &Storage) -> Result<Self> {
        let reader = FileReader::open_storage(dir.child(FILE)?)?;
        let s = reader.schema().clone();
        if s.fields().len() != 2
            || s.field(0).name() != "tokens"
            || s.field(0).data_type() != &DataType::UInt32
            || s.field(1).name() != "posting_list"
            || !matches!(s.field(1).data_type(), DataType::Binary | DataType::LargeBinary)
        {
            return Err(Error::corrupt_in(reader.path().to_string(), format!("expected columns tokens: uint32, posting_list: binary; found {s}")));
        }
        let col = reader.read_range(&[0], 0..reader.num_rows())?.column(0).clone();
        let a = col.as_primitive::<UInt32Type>();
        if a.null_count() > 0 {
            return Err(Error::corrupt_in(reader.path().to_string(), "null tokens"));
        }
        let tokens = a.values().to_vec();
        if !tokens.windows(2).all(|w| w[0] < w[1]) {
            return Err(Error::corrupt_in(reader.path().to_string(), "tokens are not strictly ascending"));
        }
        Ok(NGramIndex { tokens, reader, loaded: Mutex::new(HashMap::new()) })
    }

    /// Distinct tokens (pylance's `num_ngrams`, the null token included).
    pub fn num_ngrams(&self) -> usize {
        self.tokens.len()
    }

    /// The rows of the token at position `k`.
    fn posting(&self, k: usize) -> Result<Arc<RowSet>> {
        if let Some(s) = self.loaded.lock().unwrap_or_else(|e| e.into_inner()).get(&k) {
            return Ok(s.clone());
        }
        let b = self.reader.read_range(&[1], k as u64..k as u64 + 1)?;
        let col: &ArrayRef = b.column(0);
        let bytes = match col.data_type() {
            DataType::LargeBinary => col.as_binary::<i64>().value(0),
            _ => col.as_binary::<i32>().value(0),
        };
        if col.is_null(0) {
            return Err(Error::corrupt_in(self.reader.path().to_string(), format!("token {} has a null posting list", self.tokens[k])));
        }
        let set = Arc::new(parse_treemap(bytes).map_err(|e| e.in_file(self.reader.path()))?);
        self.loaded.lock().unwrap_or_else(|e| e.into_inner()).insert(k, set.clone());
        Ok(set)
    }

    /// Rows holding every token of `tokens` (sorted, non-empty).
    fn all_of(&self, tokens: &[u32]) -> Result<RowSet> {
        let mut acc: Option<RowSet> = None;
        for t in tokens {
            let Ok(k) = self.tokens.binary_search(t) else { return Ok(RowSet::new()) };
            let p = self.posting(k)?;
            match acc.as_mut() {
                None => acc = Some((*p).clone()),
                Some(a) => a.intersect_with(&p),
            }
            if acc.as_ref().is_some_and(RowSet::is_empty) {
                return Ok(RowSet::new());
            }
        }
        Ok(acc.unwrap_or_default())
    }
}

impl ScalarIndex for NGramIndex {
    fn kind(&self) -> IndexKind {
        IndexKind::NGram
    }

    fn value_type(&self) -> &DataType {
        &DataType::Utf8
    }

    fn search(&self, query: &IndexQuery) -> Result<RowSet> {
        match query {
            IndexQuery::Substrings { parts, .. } => {
                let mut toks: Vec<u32> = parts.iter().flat_map(|p| query_tokens(p)).collect();
                toks.sort_unstable();
                toks.dedup();
                if toks.is_empty() {
                    return Err(Error::Internal { what: "an NGRAM search without trigrams (the planner treats it as unknown)".into() });
                }
                self.all_of(&toks)
            }
            IndexQuery::IsNull => match self.tokens.binary_search(&NULL_TOKEN) {
                Ok(k) => Ok((*self.posting(k)?).clone()),
                Err(_) => Ok(RowSet::new()),
            },
            _ => Err(Error::Internal { what: format!("{query:?} asked of an NGRAM index") }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<u32> {
        let mut v = Vec::new();
        tokens_of(s, &mut v);
        v
    }

    #[test]
    fn tokens_as_pylance_cuts_them() {
        // "hel" = 18·1369 + 15·37 + 22 (research notes §2).
        assert_eq!(toks("hel"), vec![25219]);
        assert_eq!(toks("Hello"), toks("hello"));
        assert_eq!(toks("ab"), Vec::<u32>::new());
        assert_eq!(toks("a b c"), Vec::<u32>::new());
        assert_eq!(toks("wörld"), toks("world"));
        assert_eq!(toks("straße"), toks("strasse"));
        assert_eq!(query_tokens("wör"), Vec::<u32>::new());
        assert_eq!(query_tokens("xELLx"), {
            let mut v = toks("xellx");
            v.sort_unstable();
            v
        });
        assert!(usable_needle("é a") && !usable_needle("éa"));
    }

    #[test]
    fn treemap_round_trip_and_corruption() {
        let rows: Vec<u64> = vec![1, 5, (3 << 32) | 7, (3 << 32) | 9];
        let mut b = Vec::new();
        treemap_bytes(&group_rows(&rows), &mut b);
        assert_eq!(parse_treemap(&b).unwrap().values().unwrap(), rows);
        // pylance's bytes for {5}.
        let mut one = Vec::new();
        treemap_bytes(&group_rows(&[5]), &mut one);
        assert_eq!(one, [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x3a, 0x30, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 5, 0]);
        for cut in 0..b.len() {
            assert!(parse_treemap(&b[..cut]).is_err(), "cut at {cut}");
        }
        let mut extra = b.clone();
        extra.push(0);
        assert!(parse_treemap(&extra).is_err());
    }
}
