//! Evaluating an [`FtsQuery`] to scored rows.
//!
//! BM25 in f32 exactly as pylance 14 computes it (§1.8):
//! `idf(n) = ln((N - n + 0.5) / (n + 0.5) + 1)`,
//! `docw = (K1 + 1) tf / (tf + K1 (1 - B + B dl / avgdl))`, K1 = 1.2,
//! B = 0.75, a row's score the sum over query terms of `idf * docw`, in
//! query order. N, n and the total token count are summed over the index's
//! partitions (deleted rows still count). Rows of fragments the index does
//! not cover are tokenized by a scan and scored with N, n and avgdl
//! combined over index and scan; indexed rows keep the index's own.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::Array;
use arrow_schema::DataType;
use roaring::RoaringBitmap;

use super::{FtsQuery, FtsScan, Hit, Occur, Operator};
use crate::error::{Error, Result};
use crate::index::inverted::tokenizer::{Token, Tokenizer, TokenizerParams};
use crate::index::inverted::{InvertedIndex, Stats, DETAILS_TYPE_URL};
use crate::table::dataset::Dataset;
use crate::table::scan::{ScanOptions, Scanner};

const K1: f32 = 1.2;
const B: f32 = 0.75;

/// BM25 inverse document frequency.
#[inline]
pub fn idf(n: u64, num_docs: u64) -> f32 {
    let (n, nd) = (n as f32, num_docs as f32);
    ((nd - n + 0.5) / (n + 0.5) + 1.0).ln()
}

/// BM25 document weight of a term with frequency `tf` in a doc of `dl` tokens.
#[inline]
pub fn doc_weight(tf: u32, dl: u32, avgdl: f32) -> f32 {
    let tf = tf as f32;
    let norm = K1 * (1.0 - B + B * dl as f32 / avgdl);
    (K1 + 1.0) * tf / (tf + norm)
}

/// The error pylance gives for a phrase on an index without positions.
pub const NO_POSITIONS: &str = "position is not found but required for phrase queries, try recreating the index with position";

/// An INVERTED index of one column with what a search needs of it.
#[derive(Debug)]
pub struct ColumnIndex {
    /// The column.
    pub column: String,
    /// Index name.
    pub name: String,
    /// Uuids of its entries.
    pub uuids: Vec<String>,
    /// The opened index (the partitions of every entry).
    pub index: InvertedIndex,
    /// Fragments covered.
    pub covered: RoaringBitmap,
    /// Fragment ids of the dataset not covered.
    pub unindexed: Vec<u64>,
    flat: std::sync::OnceLock<FlatDocs>,
}

/// Tokenized documents of the unindexed fragments.
#[derive(Debug, Default)]
struct FlatDocs {
    docs: Vec<FlatDoc>,
    total_tokens: u64,
}

#[derive(Debug)]
struct FlatDoc {
    row_id: u64,
    addr: u64,
    tokens: Vec<Token>,
}

fn is_text(dt: &DataType) -> bool {
    matches!(dt, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// The column's INVERTED index entries (none: `Ok(None)`); pylance's errors
/// for a column that is missing or not text.
pub fn find(ds: &Arc<Dataset>, column: &str) -> Result<Option<ColumnIndex>> {
    let field = ds
        .schema()
        .field_with_name(column)
        .map_err(|_| Error::invalid_input(format!("FTS field path '{column}' does not exist in the dataset schema")))?;
    if !is_text(field.data_type()) {
        return Err(Error::invalid_input(format!(
            "FTS field '{column}' must resolve to Utf8, LargeUtf8, Utf8View, or JSON, got {}",
            crate::table::fts::plan::type_name(field.data_type())
        )));
    }
    let Some(lf) = ds.project(Some(&[column.to_string()]))?.into_iter().next() else { return Ok(None) };
    let mut entries = Vec::new();
    for info in ds.manifest_file().indices()? {
        if info.type_url() != DETAILS_TYPE_URL || info.pb.fields.first() != Some(&lf.id) {
            continue;
        }
        if entries.first().is_some_and(|e: &crate::index::meta::IndexInfo| e.name() != info.name()) {
            continue;
        }
        entries.push(info);
    }
    if entries.is_empty() {
        return Ok(None);
    }
    let mut covered = RoaringBitmap::new();
    let mut index: Option<InvertedIndex> = None;
    for e in &entries {
        covered |= &e.fragment_bitmap;
        let dir = ds.index_dir(&e.pb)?;
        let opened = InvertedIndex::open(&dir).map_err(|err| err.context(format!("INVERTED index {:?} ({})", e.name(), e.uuid)))?;
        match &mut index {
            None => index = Some(opened),
            Some(i) => i.partitions.extend(opened.partitions),
        }
    }
    let index = index.ok_or_else(|| Error::internal("no index opened"))?;
    let unindexed = ds.fragments().iter().map(|f| f.id).filter(|&id| u32::try_from(id).map_or(true, |i| !covered.contains(i))).collect();
    Ok(Some(ColumnIndex {
        column: column.to_string(),
        name: entries[0].name().to_string(),
        uuids: entries.iter().map(|e| e.uuid.clone()).collect(),
        index,
        covered,
        unindexed,
        flat: std::sync::OnceLock::new(),
    }))
}

/// A text column without an INVERTED index: pylance searches every
/// fragment flat, tokenizing with its plain analyzer (simple base
/// tokenizer, no lower-casing, stemming, stop words or folding).
pub fn flat_only(ds: &Arc<Dataset>, column: &str) -> Result<ColumnIndex> {
    let params = TokenizerParams {
        with_position: true,
        lower_case: false,
        stem: false,
        remove_stop_words: false,
        ascii_folding: false,
        ..TokenizerParams::default()
    };
    let tokenizer = Tokenizer::new(&params)?;
    let index = InvertedIndex {
        params_json: params.to_json(),
        params,
        tokenizer,
        format_version: 2,
        deleted_fragments: RoaringBitmap::new(),
        partitions: Vec::new(),
    };
    Ok(ColumnIndex {
        column: column.to_string(),
        name: String::new(),
        uuids: Vec::new(),
        index,
        covered: RoaringBitmap::new(),
        unindexed: ds.fragments().iter().map(|f| f.id).collect(),
        flat: std::sync::OnceLock::new(),
    })
}

/// Text columns with an INVERTED index, in schema order.
pub fn indexed_columns(ds: &Arc<Dataset>) -> Result<Vec<String>> {
    let infos = ds.manifest_file().indices()?;
    let mut out = Vec::new();
    for f in ds.schema().fields() {
        if !is_text(f.data_type()) {
            continue;
        }
        let Some(lf) = ds.project(Some(&[f.name().clone()]))?.into_iter().next() else { continue };
        if infos.iter().any(|i| i.type_url() == DETAILS_TYPE_URL && i.pb.fields.first() == Some(&lf.id)) {
            out.push(f.name().clone());
        }
    }
    Ok(out)
}

/// Which rows may be returned: live ones (and, with a prefilter, those
/// passing it), by row id.
struct Rows {
    stable: Option<Arc<crate::table::rowids::RowIdIndex>>,
    /// Fragment id -> (physical rows, deleted offsets).
    frags: HashMap<u64, (u64, Option<RoaringBitmap>)>,
    allowed: Option<HashSet<u64>>,
}

impl Rows {
    fn new(ds: &Arc<Dataset>, s: &FtsScan) -> Result<Self> {
        let stable = if ds.has_stable_row_ids() { Some(ds.row_id_index()?) } else { None };
        let mut frags = HashMap::new();
        for (i, f) in ds.fragments().iter().enumerate() {
            frags.insert(f.id, (ds.physical_rows(i)?, ds.deletions(i)?));
        }
        let allowed = match (&s.filter, s.prefilter) {
            (Some(f), true) => {
                let opts = ScanOptions { columns: Some(Vec::new()), filter: Some(f.clone()), with_row_id: true, ..Default::default() };
                let mut set = HashSet::new();
                for b in Scanner::new(ds.clone(), opts)?.stream()? {
                    let b = b?;
                    let ids = b.column(0).as_primitive_opt::<UInt64Type>().ok_or_else(|| Error::internal("_rowid is not uint64"))?;
                    set.extend(ids.values().iter().copied());
                }
                Some(set)
            }
            _ => None,
        };
        Ok(Rows { stable, frags, allowed })
    }

    /// The address of row id `id` if it may be returned.
    fn admit(&self, id: u64) -> Option<u64> {
        if self.allowed.as_ref().is_some_and(|a| !a.contains(&id)) {
            return None;
        }
        let addr = match &self.stable {
            Some(ix) => ix.get(id)?,
            None => id,
        };
        let (rows, del) = self.frags.get(&(addr >> 32))?;
        let off = addr & 0xffff_ffff;
        (off < *rows && !del.as_ref().is_some_and(|d| d.contains(off as u32))).then_some(addr)
    }
}

/// Scored rows: row id -> (address, score).
type Scored = HashMap<u64, (u64, f32)>;

/// The evaluation context of one search.
pub struct Ctx<'a> {
    ds: &'a Arc<Dataset>,
    rows: Rows,
    indices: HashMap<String, Arc<ColumnIndex>>,
}

impl<'a> Ctx<'a> {
    /// Prepare a search of `s`.
    pub fn new(ds: &'a Arc<Dataset>, s: &FtsScan) -> Result<Self> {
        Ok(Ctx { ds, rows: Rows::new(ds, s)?, indices: HashMap::new() })
    }

    /// The index of `column` (pylance's error without one).
    pub fn index(&mut self, column: &str) -> Result<Arc<ColumnIndex>> {
        if let Some(i) = self.indices.get(column) {
            return Ok(i.clone());
        }
        let ci = match find(self.ds, column)? {
            Some(ci) => ci,
            None => flat_only(self.ds, column)?,
        };
        let ci = Arc::new(ci);
        self.indices.insert(column.to_string(), ci.clone());
        Ok(ci)
    }

    fn flat<'c>(&self, ci: &'c ColumnIndex) -> Result<&'c FlatDocs> {
        if let Some(f) = ci.flat.get() {
            return Ok(f);
        }
        let mut out = FlatDocs::default();
        if !ci.unindexed.is_empty() {
            let opts = ScanOptions {
                columns: Some(vec![ci.column.clone()]),
                with_row_id: true,
                with_row_address: true,
                fragments: Some(ci.unindexed.clone()),
                ..Default::default()
            };
            for b in Scanner::new(self.ds.clone(), opts)?.stream()? {
                let b = b?;
                let text = b.column(0);
                let ids = b.column(1).as_primitive::<UInt64Type>();
                let addrs = b.column(2).as_primitive::<UInt64Type>();
                for i in 0..b.num_rows() {
                    let Some(t) = string_at(text.as_ref(), i) else { continue };
                    let mut tokens = Vec::new();
                    ci.index.tokenizer.tokenize(t, &mut tokens);
                    if tokens.is_empty() {
                        continue;
                    }
                    out.total_tokens += tokens.len() as u64;
                    out.docs.push(FlatDoc { row_id: ids.value(i), addr: addrs.value(i), tokens });
                }
            }
        }
        Ok(ci.flat.get_or_init(|| out))
    }

    /// Evaluate a query tree. `column` is the column of a bare multi-match
    /// leaf already resolved.
    pub fn eval(&mut self, q: &FtsQuery) -> Result<Scored> {
        match q {
            FtsQuery::Match { query, column, boost, fuzziness, max_expansions, operator, prefix_length } => {
                let column = self.single_column(column.as_deref())?;
                let ci = self.index(&column)?;
                let tokens = analyze(&ci, query);
                let groups: Vec<Vec<String>> = match fuzziness {
                    Some(f) if *f > 0 => {
                        let mut all = Vec::new();
                        let mut groups = Vec::new();
                        for t in &tokens {
                            let start = all.len();
                            ci.index.expand_fuzzy(&t.text, *f, *prefix_length, *max_expansions, &mut all)?;
                            groups.push(all[start..].to_vec());
                        }
                        groups
                    }
                    // Repeated query terms count once each, as in pylance.
                    _ => tokens.iter().map(|t| vec![t.text.clone()]).collect(),
                };
                let mut out = self.terms(&ci, &groups, *operator == Operator::And, None)?;
                if *boost != 1.0 {
                    for v in out.values_mut() {
                        v.1 *= *boost;
                    }
                }
                Ok(out)
            }
            FtsQuery::Phrase { query, column, slop } => {
                let column = self.single_column(column.as_deref())?;
                let ci = self.index(&column)?;
                if !ci.uuids.is_empty() && !ci.index.has_positions() {
                    return Err(Error::invalid_input(NO_POSITIONS));
                }
                let tokens = analyze(&ci, query);
                let groups: Vec<Vec<String>> = tokens.iter().map(|t| vec![t.text.clone()]).collect();
                let phrase: Vec<(String, u32)> = tokens.iter().map(|t| (t.text.clone(), t.position)).collect();
                self.terms(&ci, &groups, true, Some((&phrase, *slop)))
            }
            FtsQuery::Boolean(clauses) => {
                let mut must: Vec<Scored> = Vec::new();
                let mut should: Vec<Scored> = Vec::new();
                let mut not: HashSet<u64> = HashSet::new();
                for (occ, sub) in clauses {
                    let r = self.eval(sub)?;
                    match occ {
                        Occur::Must => must.push(r),
                        Occur::Should => should.push(r),
                        Occur::MustNot => not.extend(r.into_keys()),
                    }
                }
                let mut out: Scored = HashMap::new();
                if let Some((first, rest)) = must.split_first() {
                    for (&id, &(addr, s)) in first {
                        let mut score = s;
                        let mut all = true;
                        for m in rest {
                            match m.get(&id) {
                                Some(&(_, v)) => score += v,
                                None => {
                                    all = false;
                                    break;
                                }
                            }
                        }
                        if all {
                            out.insert(id, (addr, score));
                        }
                    }
                    for sh in &should {
                        for (id, v) in out.iter_mut() {
                            if let Some(&(_, x)) = sh.get(id) {
                                v.1 += x;
                            }
                        }
                    }
                } else {
                    for sh in &should {
                        for (&id, &(addr, x)) in sh {
                            out.entry(id).and_modify(|v| v.1 += x).or_insert((addr, x));
                        }
                    }
                }
                out.retain(|id, _| !not.contains(id));
                Ok(out)
            }
            FtsQuery::MultiMatch { query, columns, boosts, operator } => {
                let cols = if columns.is_empty() { self.all_columns()? } else { columns.clone() };
                if let Some(b) = boosts {
                    if b.len() != cols.len() {
                        return Err(Error::invalid_input("Invalid boosts: The number of boosts must match the number of queries"));
                    }
                }
                let mut out: Scored = HashMap::new();
                for (i, c) in cols.iter().enumerate() {
                    let boost = boosts.as_ref().map_or(1.0, |b| b[i]);
                    let leaf = FtsQuery::Match {
                        query: query.clone(),
                        column: Some(c.clone()),
                        boost,
                        fuzziness: Some(0),
                        max_expansions: 50,
                        operator: *operator,
                        prefix_length: 0,
                    };
                    for (id, (addr, s)) in self.eval(&leaf)? {
                        out.entry(id).and_modify(|v| v.1 = v.1.max(s)).or_insert((addr, s));
                    }
                }
                Ok(out)
            }
            FtsQuery::Boost { positive, negative, negative_boost } => {
                let mut pos = self.eval(positive)?;
                let neg = self.eval(negative)?;
                let factor = 1.0 - *negative_boost;
                for (id, v) in pos.iter_mut() {
                    if neg.contains_key(id) {
                        v.1 *= factor;
                    }
                }
                Ok(pos)
            }
        }
    }

    /// Every INVERTED-indexed text column (pylance's error when none).
    pub fn all_columns(&self) -> Result<Vec<String>> {
        let cols = indexed_columns(self.ds)?;
        if cols.is_empty() {
            return Err(Error::invalid_input("Cannot perform full text search unless an INVERTED index has been created on at least one column"));
        }
        Ok(cols)
    }

    fn single_column(&self, column: Option<&str>) -> Result<String> {
        match column {
            Some(c) => Ok(c.to_string()),
            None => {
                let cols = self.all_columns()?;
                if cols.len() > 1 {
                    return Err(Error::invalid_input(format!("the query names no column and {} columns are indexed; name one", cols.len())));
                }
                Ok(cols[0].clone())
            }
        }
    }

    /// Rows holding any (or, with `all`, every) group of terms, scored by
    /// the sum over their terms; with `phrase`, also in order within `slop`.
    fn terms(&self, ci: &ColumnIndex, groups: &[Vec<String>], all: bool, phrase: Option<(&[(String, u32)], u32)>) -> Result<Scored> {
        let mut out: Scored = HashMap::new();
        let ng = groups.len();
        if ng == 0 {
            return Ok(out);
        }
        let stats = ci.index.stats();
        if stats.num_docs > 0 {
            let avgdl = stats.avgdl();
            for p in &ci.index.partitions {
                // doc -> (score, groups matched, last group counted)
                let mut acc: HashMap<u32, (f32, usize, usize)> = HashMap::new();
                for (g, group) in groups.iter().enumerate() {
                    for term in group {
                        let n = ci.index.doc_freq(term);
                        if n == 0 {
                            continue;
                        }
                        let w = idf(n, stats.num_docs);
                        let Some(tid) = p.token_id(term) else { continue };
                        let post = p.postings(tid, false)?;
                        for (&d, &tf) in post.docs.iter().zip(&post.freqs) {
                            let dl = p.num_tokens[d as usize];
                            let e = acc.entry(d).or_insert((0.0, 0, usize::MAX));
                            e.0 += w * doc_weight(tf, dl, avgdl);
                            if e.2 != g {
                                e.1 += 1;
                                e.2 = g;
                            }
                        }
                    }
                }
                let positions: Option<HashMap<&str, Arc<crate::index::inverted::posting::Postings>>> = match phrase {
                    Some((ph, _)) => {
                        let mut m = HashMap::new();
                        for (t, _) in ph {
                            if let Some(tid) = p.token_id(t) {
                                m.insert(t.as_str(), p.postings(tid, true)?);
                            }
                        }
                        Some(m)
                    }
                    None => None,
                };
                for (d, (score, matched, _)) in acc {
                    if all && matched < ng {
                        continue;
                    }
                    if let (Some((ph, slop)), Some(pm)) = (phrase, &positions) {
                        let lists: Option<Vec<(&[u32], u32)>> = ph
                            .iter()
                            .map(|(t, qp)| {
                                let post = pm.get(t.as_str())?;
                                let i = post.docs.binary_search(&d).ok()?;
                                Some((post.positions.as_ref()?[i].as_slice(), *qp))
                            })
                            .collect();
                        match lists {
                            Some(l) if phrase_matches(&l, slop) => {}
                            _ => continue,
                        }
                    }
                    let id = p.row_ids[d as usize];
                    if let Some(addr) = self.rows.admit(id) {
                        out.insert(id, (addr, score));
                    }
                }
            }
        }
        if !ci.unindexed.is_empty() {
            self.flat_terms(ci, stats, groups, all, phrase, &mut out)?;
        }
        Ok(out)
    }

    fn flat_terms(
        &self,
        ci: &ColumnIndex,
        stats: Stats,
        groups: &[Vec<String>],
        all: bool,
        phrase: Option<(&[(String, u32)], u32)>,
        out: &mut Scored,
    ) -> Result<()> {
        let flat = self.flat(ci)?;
        let combined = Stats { num_docs: stats.num_docs + flat.docs.len() as u64, total_tokens: stats.total_tokens + flat.total_tokens };
        let avgdl = combined.avgdl();
        let terms: Vec<&String> = groups.iter().flatten().collect();
        let mut flat_n: HashMap<&str, u64> = terms.iter().map(|t| (t.as_str(), 0)).collect();
        for d in &flat.docs {
            let mut seen: HashSet<&str> = HashSet::new();
            for t in &d.tokens {
                if let Some(c) = flat_n.get_mut(t.text.as_str()) {
                    if seen.insert(t.text.as_str()) {
                        *c += 1;
                    }
                }
            }
        }
        let weights: HashMap<&str, f32> = flat_n.iter().map(|(t, &n)| (*t, idf(ci.index.doc_freq(t) + n, combined.num_docs))).collect();
        for d in &flat.docs {
            let dl = d.tokens.len() as u32;
            let mut score = 0.0f32;
            let mut matched = 0usize;
            for group in groups {
                let mut hit = false;
                for term in group {
                    let tf = d.tokens.iter().filter(|t| &t.text == term).count() as u32;
                    if tf == 0 {
                        continue;
                    }
                    hit = true;
                    score += weights[term.as_str()] * doc_weight(tf, dl, avgdl);
                }
                matched += usize::from(hit);
            }
            if matched == 0 || (all && matched < groups.len()) {
                continue;
            }
            if let Some((ph, slop)) = phrase {
                let lists: Vec<(Vec<u32>, u32)> =
                    ph.iter().map(|(t, qp)| (d.tokens.iter().filter(|x| &x.text == t).map(|x| x.position).collect(), *qp)).collect();
                let refs: Vec<(&[u32], u32)> = lists.iter().map(|(v, q)| (v.as_slice(), *q)).collect();
                if !phrase_matches(&refs, slop) {
                    continue;
                }
            }
            if self.rows.allowed.as_ref().is_some_and(|a| !a.contains(&d.row_id)) {
                continue;
            }
            out.insert(d.row_id, (d.addr, score));
        }
        Ok(())
    }
}

fn string_at(a: &dyn Array, i: usize) -> Option<&str> {
    if a.is_null(i) {
        return None;
    }
    match a.data_type() {
        DataType::Utf8 => Some(a.as_string::<i32>().value(i)),
        DataType::LargeUtf8 => Some(a.as_string::<i64>().value(i)),
        DataType::Utf8View => Some(a.as_string_view().value(i)),
        _ => None,
    }
}

fn analyze(ci: &ColumnIndex, text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    ci.index.tokenizer.tokenize(text, &mut out);
    out
}

/// Whether positions line up as a phrase: pylance's check. Each term's
/// positions (ascending) and its position in the query; relative positions
/// (position − query position) of consecutive query terms must satisfy
/// `last <= next <= last + slop`. The search advances every term past the
/// furthest position the failing pair allows, as pylance's does.
pub fn phrase_matches(terms: &[(&[u32], u32)], slop: u32) -> bool {
    let mut its: Vec<(&[u32], i64, usize)> = terms.iter().map(|&(p, q)| (p, i64::from(q), 0usize)).collect();
    its.sort_by_key(|t| t.1);
    let slop = i64::from(slop);
    let rel = |t: &(&[u32], i64, usize)| t.0.get(t.2).map(|&p| i64::from(p) - t.1);
    let seek = |t: &mut (&[u32], i64, usize), least_rel: i64| {
        let least = least_rel + t.1;
        t.2 = t.0.partition_point(|&p| i64::from(p) < least);
    };
    for t in its.iter_mut() {
        seek(t, 0);
    }
    loop {
        let mut max_rel: Option<i64> = None;
        let mut ok = true;
        for w in 0..its.len().saturating_sub(1) {
            let (Some(last), Some(next)) = (rel(&its[w]), rel(&its[w + 1])) else { return false };
            let move_to = if last > next { last } else { (last + 1).max(next - slop) };
            max_rel = max_rel.max(Some(move_to));
            if !(last <= next && next <= last + slop) {
                ok = false;
                break;
            }
        }
        if ok {
            return true;
        }
        let m = max_rel.unwrap_or(0);
        for t in its.iter_mut() {
            seek(t, m);
        }
    }
}

/// Run the scan's query: hits ordered by score descending, then row id
/// (the top `limit` when one is given).
pub fn run(ds: &Arc<Dataset>, s: &FtsScan) -> Result<Vec<Hit>> {
    let mut ctx = Ctx::new(ds, s)?;
    let scored = ctx.eval(&s.query)?;
    let mut hits: Vec<Hit> = scored.into_iter().map(|(row_id, (addr, score))| Hit { score, row_id, addr }).collect();
    // A leaf on a column without an index is pylance's bare flat search:
    // rows in scan order unless a limit asks for the top k.
    let flat_leaf = match &s.query {
        FtsQuery::Match { column: Some(c), .. } | FtsQuery::Phrase { column: Some(c), .. } => {
            ctx.indices.get(c).is_some_and(|ci| ci.uuids.is_empty())
        }
        _ => false,
    };
    if flat_leaf && s.limit.is_none() {
        hits.sort_by_key(|h| h.addr);
        return Ok(hits);
    }
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.row_id.cmp(&b.row_id)));
    if let Some(l) = s.limit {
        hits.truncate((l + s.offset) as usize);
    }
    Ok(hits)
}
