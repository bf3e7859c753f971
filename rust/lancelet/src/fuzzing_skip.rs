//! The `zonemap_index`, `bloomfilter_index` and `ngram_index` fuzz
//! targets: the input is
//! the bytes of an index's one Lance file (`zonemap.lance`,
//! `bloomfilter.lance`, `ngram_postings.lance`), opened as an index
//! (`index::zonemap`, `index::bloomfilter`: columns, zones, counts, null
//! bitmap in global buffer 1, filter sizes; `index::ngram`: tokens and
//! posting lists) and asked every query it answers. Besides never
//! panicking, a zone index's answer must lie inside the zones the file
//! lists (or be the null bitmap, for `IS NULL`); an NGRAM answer for
//! several needles must lie inside the answer for one of them. The raw
//! posting-list parser is also fed the input itself.

use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array, StringArray, UInt64Array};
use bytes::Bytes;

use super::{memory_only, ok, store_lock};
use crate::file::FileVersion;
use crate::index::bloomfilter::{self, BloomFilterIndex};
use crate::index::ngram::{self, NGramIndex};
use crate::index::zonemap::{self, ZoneMapIndex};
use crate::index::{IndexQuery, RangeEnd, ScalarIndex, TrainingData};
use crate::io::Storage;

/// The `zonemap_index` target.
pub fn zonemap_index(data: &[u8]) {
    memory_only();
    let _g = store_lock();
    let dir = put("zonemap", zonemap::FILE, data);
    let Some(idx) = ok(ZoneMapIndex::open(&dir)) else { return };
    let value: ArrayRef = match idx.value_type() {
        arrow_schema::DataType::Int64 => Arc::new(Int64Array::from(vec![3])),
        arrow_schema::DataType::Float64 => Arc::new(Float64Array::from(vec![0.0])),
        arrow_schema::DataType::Utf8 => Arc::new(StringArray::from(vec!["s003"])),
        _ => {
            let _ = ok(idx.search(&IndexQuery::IsNull));
            return;
        }
    };
    let end = |inclusive| Some(RangeEnd { value: value.clone(), inclusive });
    for q in [
        IndexQuery::Equals(value.clone()),
        IndexQuery::In(value.clone()),
        IndexQuery::Range { lower: end(false), upper: None },
        IndexQuery::Range { lower: None, upper: end(true) },
        IndexQuery::Range { lower: end(true), upper: end(false) },
        IndexQuery::IsNull,
    ] {
        let Some(rows) = ok(idx.search(&q)) else { continue };
        if !matches!(q, IndexQuery::IsNull) {
            inside_zones(&rows, idx.zones());
        }
    }
}

/// The `bloomfilter_index` target.
pub fn bloomfilter_index(data: &[u8]) {
    memory_only();
    let _g = store_lock();
    let dir = put("bloomfilter", bloomfilter::FILE, data);
    let Some(idx) = ok(BloomFilterIndex::open(&dir)) else { return };
    let values: [ArrayRef; 2] = [Arc::new(Int64Array::from(vec![3, 17])), Arc::new(StringArray::from(vec!["s3", "x"]))];
    for v in values {
        for q in [IndexQuery::Equals(v.slice(0, 1)), IndexQuery::In(v.clone())] {
            if let Some(rows) = ok(idx.search(&q)) {
                inside_zones(&rows, idx.zones());
            }
        }
    }
    let _ = ok(idx.search(&IndexQuery::IsNull));
}

/// The `ngram_index` target.
pub fn ngram_index(data: &[u8]) {
    memory_only();
    let _g = store_lock();
    let _ = ok(ngram::parse_treemap(data));
    let dir = put("ngram", ngram::FILE, data);
    let Some(idx) = ok(NGramIndex::open(&dir)) else { return };
    let q = |parts: &[&str]| IndexQuery::Substrings { parts: parts.iter().map(|p| p.to_string()).collect(), shown: String::new() };
    let one = ok(idx.search(&q(&["hello"])));
    let both = ok(idx.search(&q(&["hello", "wor1d"])));
    if let (Some(one), Some(both)) = (one, both) {
        // Run containers can hold billions of rows in a few bytes.
        if one.len().is_none_or(|n| n > 1 << 20) || both.len().is_none_or(|n| n > 1 << 20) {
            return;
        }
        let (Some(a), Some(b)) = (ok(one.values()), ok(both.values())) else { return };
        assert!(b.iter().all(|v| a.binary_search(v).is_ok()), "an AND of needles found rows outside one needle's rows");
    }
    let _ = ok(idx.search(&IndexQuery::IsNull));
    let _ = idx.num_ngrams();
}

fn put(tag: &str, file: &str, data: &[u8]) -> Storage {
    let dir = Storage::open(&format!("memory://lancelet-fuzz-{tag}/idx")).expect("memory store");
    dir.child(file).expect("child").write_all(Bytes::copy_from_slice(data)).expect("memory write");
    dir
}

fn inside_zones(rows: &crate::index::rowset::RowSet, zones: &[crate::index::zones::Zone]) {
    let Some(vals) = ok(rows.values()) else { return };
    for a in vals.into_iter().take(10_000) {
        let (f, o) = (a >> 32, a & 0xFFFF_FFFF);
        assert!(zones.iter().any(|z| z.fragment == f && o >= z.start && o < z.start + z.length), "row {a:#x} outside every zone");
    }
}

/// Index files lancelet writes (int64, float64 and string columns with
/// nulls and NaNs, over two fragments).
pub fn seeds(target: &str) -> Vec<Vec<u8>> {
    let _g = store_lock();
    let n = 40u64;
    let ids = UInt64Array::from((0..n).map(|i| if i < 25 { i } else { (1 << 32) | (i - 25) }).collect::<Vec<_>>());
    let ints: ArrayRef = Arc::new(Int64Array::from((0..n as i64).map(|i| (i % 7 != 3).then_some(i)).collect::<Vec<_>>()));
    let floats: ArrayRef =
        Arc::new(Float64Array::from((0..n).map(|i| (i % 9 != 1).then_some(if i == 11 { f64::NAN } else { i as f64 - 20.0 })).collect::<Vec<_>>()));
    let strings: ArrayRef = Arc::new(StringArray::from((0..n).map(|i| (i % 5 != 0).then(|| format!("s{i:03}"))).collect::<Vec<_>>()));
    let mut out = Vec::new();
    for (k, values) in [ints, floats, strings].into_iter().enumerate() {
        let dir = Storage::open(&format!("memory://lancelet-fuzz-seeds/skip{k}")).expect("memory store");
        let data = TrainingData { values: values.clone(), ids: ids.clone() };
        let file = match target {
            "ngram_index" => {
                let words = ["hello world", "Hello", "wor1d hello", "café", "", "ab", "xyz-123 HELLO!"];
                let text: ArrayRef =
                    Arc::new(StringArray::from((0..n as usize).map(|i| (i % 6 != 2).then_some(words[i % words.len()])).collect::<Vec<_>>()));
                ngram::write(&dir, FileVersion::V2_1, &TrainingData { values: text, ids: ids.clone() }).expect("write");
                ngram::FILE
            }
            "zonemap_index" => {
                zonemap::write(&dir, FileVersion::V2_1, &data, 8).expect("write");
                zonemap::FILE
            }
            _ => {
                bloomfilter::write(&dir, FileVersion::V2_1, &data, 10, 0.05).expect("write");
                bloomfilter::FILE
            }
        };
        out.push(dir.child(file).expect("child").read_all().expect("read back").to_vec());
    }
    out
}
