//! `merge_insert`: match source rows to dataset rows on key columns, then
//! update or delete matched rows, insert unmatched source rows and delete
//! dataset rows no source row matched — committed as pylance 14 does, as
//! one `Update` (108) transaction in `REWRITE_ROWS` mode.
//!
//! How it runs:
//!
//! 1. The source is held in memory (a re-run after a conflict needs it
//!    again) and its keys go into one hash table ([`super::keys`]; a
//!    single integer-like key column is hashed as a word, with a bitmap of
//!    the source's keys in front when they span a narrow range); a null
//!    key never matches.
//! 2. The dataset is scanned reading only the key columns (plus the
//!    columns the conditions name) with `_rowaddr` (and `_rowid` with
//!    stable row ids); each live row is looked up. Deleted rows never
//!    match. As in pylance, a dataset row that two source rows would
//!    update or delete (after the condition) is an error; repeated source
//!    keys are fine otherwise (inserted twice when unmatched, ignored when
//!    matched rows are left alone), and two dataset rows may match one
//!    source row.
//! 3. `when_matched_update_all(condition)`: matched rows where the
//!    condition holds (it names `source.x` / `target.x`, or a column only
//!    one side has) are rewritten with the source's values; columns the
//!    source lacks keep the dataset's values (read with a take).
//!    `when_matched_delete`: matched rows are deleted.
//!    `when_not_matched_insert_all`: source rows matching nothing are
//!    inserted (columns the source lacks are null).
//!    `when_not_matched_by_source_delete(expr)`: dataset rows matching no
//!    source row (and `expr`, if given) are deleted.
//! 4. New rows — updated ones in dataset order, then inserted ones in
//!    source order — go into new fragments after the existing ones
//!    (the plain upsert — update all without a condition, insert all,
//!    every column in the source, no stable row ids — writes the source in
//!    source order instead, on another thread while step 2 runs: see
//!    [`upsert_overlapped`]);
//!    updated and deleted rows are marked deleted (see [`super::update`]
//!    for the deletion files and `removed_fragment_ids`). With stable row
//!    ids updated rows keep their ids and inserted rows take new ones from
//!    `next_row_id` (the manifest fills them in). A merge changing nothing
//!    still commits (an empty Update). `fields_for_preserving_frag_bitmap`
//!    lists every field id of the schema, as pylance writes it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{new_null_array, Array, ArrayRef, BooleanArray, RecordBatch, StructArray, UInt32Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::error::{Error, Result};
use crate::expr::SqlFilter;
use crate::hashing::FxMap;
use crate::table::conflict::AffectedRows;
use crate::table::dataset::Dataset;
use crate::table::ops::keys::{BatchKeys, WordMap};
use crate::table::ops::retry::{run_with_retries, Prepared};
use crate::table::ops::rewrite::{prepare_update, MovedRows};
use crate::table::ops::update::MAX_ROWS_PER_FILE;
use crate::table::ops::{FragmentProgress, Progress};
use crate::table::properties::{CommitProperties, Committed};
use crate::table::scan::{RowFilter, ScanOptions, Scanner, ROW_ADDR, ROW_ID};
use crate::table::write::{dataset_file_version, stage_fragments, StageTarget};

/// What happens to dataset rows a source row matches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum WhenMatched {
    /// Leave them.
    #[default]
    DoNothing,
    /// Replace them by the source row where `condition` (if any) holds.
    UpdateAll { condition: Option<String> },
    /// Delete them.
    Delete,
}

/// What happens to dataset rows no source row matches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum WhenNotMatchedBySource {
    /// Keep them.
    #[default]
    Keep,
    /// Delete them (those where `condition`, if any, holds).
    Delete { condition: Option<String> },
}

/// A merge_insert job (pylance's `MergeInsertBuilder`).
#[derive(Clone, Default)]
pub struct MergeInsertParams {
    /// Key columns.
    pub on: Vec<String>,
    /// Matched rows.
    pub when_matched: WhenMatched,
    /// Insert source rows that match nothing.
    pub insert_not_matched: bool,
    /// Dataset rows that match nothing.
    pub when_not_matched_by_source: WhenNotMatchedBySource,
}

/// Rows a merge_insert changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeStats {
    /// Source rows inserted.
    pub inserted: u64,
    /// Dataset rows replaced.
    pub updated: u64,
    /// Dataset rows deleted.
    pub deleted: u64,
}

/// Rows per batch of the new rows written.
pub(super) const OUT_BATCH: usize = 16 * 1024;

/// The checked job against one version.
pub(super) struct Plan {
    /// Positions of the key columns in the dataset schema and the source.
    pub(super) keys: Vec<(usize, usize)>,
    /// Update condition planned over `target`/`source` structs.
    pub(super) condition: Option<Condition>,
    /// Not-matched-by-source delete filter over dataset columns.
    pub(super) by_source: Option<SqlFilter>,
    /// Dataset columns the scan reads (keys first).
    pub(super) scan_columns: Vec<String>,
}

/// A `when_matched_update_all` condition.
pub(super) struct Condition {
    pub(super) filter: SqlFilter,
    /// Dataset / source columns it reads.
    target_cols: Vec<String>,
    source_cols: Vec<String>,
}

fn names(s: &Schema) -> String {
    s.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", ")
}

pub(super) fn plan(ds: &Dataset, source: &Schema, p: &MergeInsertParams) -> Result<Plan> {
    let target = ds.schema();
    if p.when_matched == WhenMatched::DoNothing && !p.insert_not_matched && p.when_not_matched_by_source == WhenNotMatchedBySource::Keep {
        return Err(Error::invalid_input(
            "merge_insert would change nothing: call when_matched_update_all, when_matched_delete, \
             when_not_matched_insert_all or when_not_matched_by_source_delete",
        ));
    }
    if p.on.is_empty() {
        return Err(Error::invalid_input("merge_insert needs at least one key column in `on`"));
    }
    for f in source.fields() {
        let Ok(t) = target.field_with_name(f.name()) else {
            return Err(Error::invalid_input(format!(
                "merge_insert: source column {:?} is not in the dataset (dataset columns: {})",
                f.name(),
                names(target)
            )));
        };
        if !t.data_type().equals_datatype(f.data_type()) {
            return Err(Error::invalid_input(format!(
                "merge_insert: source column {:?} has type {} but the dataset's has type {}",
                f.name(),
                f.data_type(),
                t.data_type()
            )));
        }
    }
    if p.insert_not_matched {
        if let Some(f) = target.fields().iter().find(|f| !f.is_nullable() && source.field_with_name(f.name()).is_err()) {
            return Err(Error::invalid_input(format!(
                "merge_insert: the source lacks column {:?}, which is not nullable, so its rows cannot be inserted",
                f.name()
            )));
        }
    }
    let mut keys = Vec::with_capacity(p.on.len());
    for k in &p.on {
        let Ok(t) = target.index_of(k) else {
            return Err(Error::invalid_input(format!("merge_insert key column {k:?} is not in the dataset (columns: {})", names(target))));
        };
        let Ok(s) = source.index_of(k) else {
            return Err(Error::invalid_input(format!("merge_insert key column {k:?} is not in the source (columns: {})", names(source))));
        };
        if keys.iter().any(|&(x, _)| x == t) {
            return Err(Error::invalid_input(format!("merge_insert key column {k:?} is listed twice")));
        }
        keys.push((t, s));
    }
    let mut scan_columns: Vec<String> = p.on.clone();
    let mut want = |c: &str| {
        if !scan_columns.iter().any(|x| x == c) {
            scan_columns.push(c.to_string());
        }
    };
    let condition = match &p.when_matched {
        WhenMatched::UpdateAll { condition: Some(sql) } => {
            let c = plan_condition(sql, target, source)?;
            c.target_cols.iter().for_each(|c| want(c));
            Some(c)
        }
        _ => None,
    };
    let by_source = match &p.when_not_matched_by_source {
        WhenNotMatchedBySource::Delete { condition: Some(sql) } => {
            let f = SqlFilter::new(sql, target).map_err(|e| e.context("when_not_matched_by_source_delete"))?;
            f.columns().iter().for_each(|c| want(c));
            Some(f)
        }
        _ => None,
    };
    Ok(Plan { keys, condition, by_source, scan_columns })
}

/// Plan a matched-row condition: `target.x` / `source.x`, or a bare name
/// only one side has.
fn plan_condition(sql: &str, target: &Schema, source: &Schema) -> Result<Condition> {
    let mut fields = vec![
        Field::new("target", DataType::Struct(target.fields().clone()), false),
        Field::new("source", DataType::Struct(source.fields().clone()), false),
    ];
    let in_both = |n: &str| target.field_with_name(n).is_ok() && source.field_with_name(n).is_ok();
    for f in target.fields().iter().chain(source.fields().iter()) {
        let n = f.name();
        if n != "target" && n != "source" && !in_both(n) && !fields.iter().any(|x| x.name() == n) {
            fields.push(f.as_ref().clone());
        }
    }
    let schema = Schema::new(fields);
    let filter = SqlFilter::new(sql, &schema).map_err(|e| {
        // A bare name both sides have is ambiguous: say so.
        let ambiguous: Vec<&str> = target.fields().iter().map(|f| f.name().as_str()).filter(|n| in_both(n) && mentions(sql, n)).collect();
        match (&e, ambiguous.is_empty()) {
            (Error::InvalidInput { .. }, false) => Error::invalid_input(format!(
                "merge_insert condition `{sql}`: column {:?} is in both the source and the dataset; write source.{0} or target.{0}",
                ambiguous[0]
            )),
            _ => e.context("when_matched_update_all"),
        }
    })?;
    let (mut target_cols, mut source_cols) = (Vec::new(), Vec::new());
    for (top, path) in filter.column_paths() {
        let (side, col) = match top.as_str() {
            "target" => (&mut target_cols, path.first().cloned()),
            "source" => (&mut source_cols, path.first().cloned()),
            n if target.field_with_name(n).is_ok() => (&mut target_cols, Some(n.to_string())),
            n => (&mut source_cols, Some(n.to_string())),
        };
        if let Some(c) = col {
            if !side.contains(&c) {
                side.push(c);
            }
        }
    }
    Ok(Condition { filter, target_cols, source_cols })
}

/// Whether `sql` names `name` outside a `source.`/`target.` qualifier
/// (a rough word match, only used to explain an error).
fn mentions(sql: &str, name: &str) -> bool {
    let lower = sql.to_ascii_lowercase();
    let name = name.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    lower.match_indices(&name).any(|(i, _)| {
        let before = if i == 0 { None } else { Some(bytes[i - 1]) };
        let after = bytes.get(i + name.len()).copied();
        !before.is_some_and(|c| word(c) || c == b'.') && !after.is_some_and(word)
    })
}

/// The evaluation batch of a condition for pairs (dataset row of `scan`,
/// source row).
pub(super) fn condition_batch(
    c: &Condition,
    scan: &RecordBatch,
    t_idx: &UInt32Array,
    source: &RecordBatch,
    s_idx: &UInt32Array,
    target_schema: &Schema,
) -> Result<RecordBatch> {
    let side = |cols: &[String], batch: &RecordBatch, idx: &UInt32Array| -> Result<Vec<(Arc<Field>, ArrayRef)>> {
        cols.iter()
            .map(|name| {
                let col = batch.column_by_name(name).ok_or_else(|| Error::Internal { what: format!("condition column {name} not read") })?;
                let f = batch.schema().field_with_name(name).map_err(|e| Error::Internal { what: e.to_string() })?.clone();
                Ok((Arc::new(f), arrow_select::take::take(col, idx, None).map_err(Error::internal_arrow)?))
            })
            .collect()
    };
    let t = side(&c.target_cols, scan, t_idx)?;
    let s = side(&c.source_cols, source, s_idx)?;
    let n = t_idx.len();
    let strukt = |parts: &[(Arc<Field>, ArrayRef)]| -> ArrayRef {
        if parts.is_empty() {
            Arc::new(StructArray::new_empty_fields(n, None))
        } else {
            Arc::new(StructArray::from(parts.to_vec()))
        }
    };
    let mut fields = vec![Field::new("target", strukt(&t).data_type().clone(), false), Field::new("source", strukt(&s).data_type().clone(), false)];
    let mut cols = vec![strukt(&t), strukt(&s)];
    for (f, a) in t.iter().filter(|(f, _)| target_schema.field_with_name(f.name()).is_ok()).chain(s.iter()) {
        if !fields.iter().any(|x| x.name() == f.name()) {
            fields.push(f.as_ref().clone().with_nullable(true));
            cols.push(a.clone());
        }
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).map_err(Error::internal_arrow)
}

/// Run a merge_insert of `source` (batches of `source_schema`) into `ds`.
pub fn merge_insert(
    ds: &Arc<Dataset>,
    source_schema: SchemaRef,
    source: Vec<RecordBatch>,
    params: &MergeInsertParams,
    props: &CommitProperties,
) -> Result<Committed<MergeStats>> {
    plan(ds, &source_schema, params)?;
    let source = arrow_select::concat::concat_batches(&source_schema, &source)
        .map_err(|e| Error::invalid_input(format!("merge_insert source: {e}")).with_source(e))?;
    run_with_retries(ds, props, |ds| run_once(ds, &source, params, &props.progress))
}

/// Source rows by key: every row of a key, in source order (null keys
/// never match).
struct SourceIndex<'a> {
    /// key -> (first row, last row) of its chain.
    heads: Heads<'a>,
    /// The next row with the same key ([`NO_ROW`] at the end).
    next: Vec<u32>,
}

/// The chains' heads, by word or byte-string key (see [`super::keys`]).
enum Heads<'a> {
    /// Word keys, with a bitmap of the source keys when they span a
    /// narrow range (most dataset rows match nothing: the bitmap answers
    /// them without a probe of the hash table).
    Words(WordMap<(u32, u32)>, Option<KeyBits>),
    Bytes(FxMap<&'a [u8], (u32, u32)>),
}

/// One bit per value in `min..min + 64 * bits.len()`: set for the source's
/// keys.
struct KeyBits {
    min: u64,
    bits: Vec<u64>,
}

impl KeyBits {
    /// A bitmap of `keys` if their range is at most 64 bits per key (and
    /// 2^30 values): a few hundred KiB for a dense source.
    fn new(keys: &[u64]) -> Option<KeyBits> {
        let (min, max) = (keys.iter().min()?, keys.iter().max()?);
        let span = max - min;
        if span >= (64 * keys.len() as u64).max(1 << 16) || span >= 1 << 30 {
            return None;
        }
        let mut bits = vec![0u64; (span / 64 + 1) as usize];
        for &k in keys {
            let d = k - min;
            bits[(d / 64) as usize] |= 1 << (d % 64);
        }
        Some(KeyBits { min: *min, bits })
    }

    /// Whether `k` is a source key.
    #[inline]
    fn contains(&self, k: u64) -> bool {
        let d = k.wrapping_sub(self.min);
        self.bits.get((d / 64) as usize).is_some_and(|w| w >> (d % 64) & 1 == 1)
    }
}

const NO_ROW: u32 = u32::MAX;

/// Append row `i` to its key's chain.
fn chain<K: std::hash::Hash + Eq, S: std::hash::BuildHasher>(
    heads: &mut std::collections::HashMap<K, (u32, u32), S>,
    next: &mut [u32],
    k: K,
    i: u32,
) {
    heads
        .entry(k)
        .and_modify(|e| {
            next[e.1 as usize] = i;
            e.1 = i;
        })
        .or_insert((i, i));
}

impl<'a> SourceIndex<'a> {
    fn new(keys: &'a BatchKeys) -> Self {
        let mut next = vec![NO_ROW; keys.len()];
        let heads = match keys {
            BatchKeys::Words { values, nulls } => {
                let mut heads = WordMap::default();
                heads.reserve(values.len());
                let mut live = Vec::with_capacity(values.len());
                for (i, &k) in values.iter().enumerate() {
                    if !nulls.as_ref().is_some_and(|n| n.is_null(i)) {
                        chain(&mut heads, &mut next, k, i as u32);
                        live.push(k);
                    }
                }
                Heads::Words(heads, KeyBits::new(&live))
            }
            BatchKeys::Bytes(keys) => {
                let mut heads = FxMap::default();
                heads.reserve(keys.len());
                for i in 0..keys.len() {
                    if let Some(k) = keys.get(i) {
                        chain(&mut heads, &mut next, k, i as u32);
                    }
                }
                Heads::Bytes(heads)
            }
        };
        SourceIndex { heads, next }
    }

    /// The rows of a batch of dataset keys (of the source's key types)
    /// that some source row matches, in order, each with the first source
    /// row of its key.
    fn hits(&self, keys: &BatchKeys) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        match (&self.heads, keys) {
            (Heads::Words(map, bits), BatchKeys::Words { values, nulls }) => {
                for (row, &k) in values.iter().enumerate() {
                    if bits.as_ref().is_some_and(|b| !b.contains(k)) || nulls.as_ref().is_some_and(|n| n.is_null(row)) {
                        continue;
                    }
                    if let Some(e) = map.get(&k) {
                        out.push((row as u32, e.0));
                    }
                }
            }
            (Heads::Bytes(map), BatchKeys::Bytes(k)) => {
                for row in 0..k.len() {
                    if let Some(e) = k.get(row).and_then(|k| map.get(k)) {
                        out.push((row as u32, e.0));
                    }
                }
            }
            // Both sides have the same key types, hence the same form.
            _ => {}
        }
        out
    }

    /// Source row `first` and the later rows with its key.
    fn chain_from(&self, first: u32) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors(Some(first), move |&i| Some(self.next[i as usize]).filter(|&n| n != NO_ROW))
    }
}

/// Matched / deleted rows found by the scan.
#[derive(Default)]
struct Found {
    /// Dataset rows to replace: (address, row id, source row).
    updates: Vec<(u64, u64, u32)>,
    /// Dataset rows to delete.
    deletes: Vec<u64>,
    /// Source rows that matched some dataset row.
    source_matched: Vec<bool>,
}

fn run_once(ds: &Arc<Dataset>, source: &RecordBatch, params: &MergeInsertParams, report: &Option<Progress>) -> Result<Prepared<MergeStats>> {
    let plan = plan(ds, &source.schema(), params)?;
    let stable = ds.has_stable_row_ids();
    let source_keys = BatchKeys::new(&plan.keys.iter().map(|&(_, s)| source.column(s).clone()).collect::<Vec<_>>())?;
    let index = SourceIndex::new(&source_keys);
    let version = dataset_file_version(ds.manifest())?;
    let target = StageTarget {
        root: ds.root(),
        schema: ds.lance_schema(),
        version,
        max_rows_per_file: MAX_ROWS_PER_FILE,
        name_prefix: "",
        group_bytes: 0,
        place: None,
    };
    let out_schema = ds.schema().clone();
    let (found, inserted, new_fragments) = if plain_upsert(ds, source, params) {
        upsert_overlapped(ds, source, &plan, &index, params, &target, report)?
    } else {
        let found = scan_and_match(ds, source, &plan, &index, stable, params, report)?;
        let inserts: Vec<u32> = if params.insert_not_matched {
            (0..source.num_rows() as u32).filter(|&i| !found.source_matched[i as usize]).collect()
        } else {
            Vec::new()
        };
        let update_batches = found.updates.chunks(OUT_BATCH).map(|chunk| updated_rows(ds, source, &out_schema, chunk));
        let insert_batches = inserts.chunks(OUT_BATCH).map(|chunk| inserted_rows(source, &out_schema, chunk));
        let new_fragments = stage_fragments(&target, update_batches.chain(insert_batches))?;
        (found, inserts.len() as u64, new_fragments)
    };
    let (updated, deleted) = (found.updates.len() as u64, found.deletes.len() as u64);
    // Updated rows come first: they keep their ids; the manifest gives the
    // inserted rows new ones.
    let moved_ids: Vec<u64> = if stable { found.updates.iter().map(|u| u.1).collect() } else { Vec::new() };
    let mut affected = AffectedRows::new();
    for a in found.updates.iter().map(|u| u.0).chain(found.deletes.iter().copied()) {
        affected.entry(a >> 32).or_default().insert(a as u32);
    }
    let stats = MergeStats { inserted, updated, deleted };
    let moved = MovedRows { new_fragments, moved_ids, affected, preserved_fields: all_field_ids(ds) };
    prepare_update(ds, moved, || Ok(()), stats)
}

/// Whether this is the plain upsert that [`upsert_overlapped`] runs:
/// `when_matched_update_all()` without a condition and
/// `when_not_matched_insert_all()`, a source holding every dataset column,
/// and no stable row ids (moved rows would have to come first, see
/// [`super::rewrite`]).
fn plain_upsert(ds: &Dataset, source: &RecordBatch, params: &MergeInsertParams) -> bool {
    params.when_matched == (WhenMatched::UpdateAll { condition: None })
        && params.insert_not_matched
        && !ds.has_stable_row_ids()
        && ds.schema().fields().iter().all(|f| source.schema().field_with_name(f.name()).is_ok())
}

/// The plain upsert: every source row becomes exactly one new row — the
/// update of the dataset row it matches, or an insert — with the source's
/// values in every column. So the new rows do not wait for the scan: the
/// source is written, in source order, on another thread while the scan
/// matches keys (the write and the scan overlap instead of adding up). A
/// source row that matches several dataset rows replaces each of them:
/// its extra copies are written after the rest once the scan is done.
/// If the scan fails, the write stops and its files are removed.
fn upsert_overlapped(
    ds: &Arc<Dataset>,
    source: &RecordBatch,
    plan: &Plan,
    index: &SourceIndex<'_>,
    params: &MergeInsertParams,
    target: &StageTarget<'_>,
    report: &Option<Progress>,
) -> Result<(Found, u64, Vec<crate::proto::table::DataFragment>)> {
    let out_schema = ds.schema().clone();
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<Result<RecordBatch>>();
    std::thread::scope(|scope| {
        let writer = std::thread::Builder::new()
            .name("lancelet-upsert".into())
            .spawn_scoped(scope, || {
                let chunks = (0..source.num_rows()).step_by(OUT_BATCH).map(|start| {
                    if stop.load(Ordering::Relaxed) {
                        return Err(Error::Internal { what: "merge_insert write stopped".into() });
                    }
                    let len = OUT_BATCH.min(source.num_rows() - start);
                    source_rows(&source.slice(start, len), &out_schema)
                });
                stage_fragments(target, chunks.chain(rx))
            })
            .map_err(|e| Error::Internal { what: format!("cannot start the merge_insert writer thread: {e}") })?;
        let scanned = scan_and_match(ds, source, plan, index, false, params, report);
        // Extra copies of source rows matching more than one dataset row.
        let extra = scanned.as_ref().ok().map(|found| {
            let mut seen = vec![false; source.num_rows()];
            found.updates.iter().filter_map(|u| std::mem::replace(&mut seen[u.2 as usize], true).then_some(u.2)).collect::<Vec<u32>>()
        });
        match &extra {
            Some(extra) => {
                for chunk in extra.chunks(OUT_BATCH) {
                    let _ = tx.send(inserted_rows(source, &out_schema, chunk));
                }
            }
            None => {
                stop.store(true, Ordering::Relaxed);
                let _ = tx.send(Err(Error::Internal { what: "merge_insert write stopped".into() }));
            }
        }
        drop(tx);
        let written = writer.join().map_err(|_| Error::Internal { what: "the merge_insert writer thread panicked".into() })?;
        let found = scanned?;
        let new_fragments = written?;
        let inserted = found.source_matched.iter().filter(|m| !**m).count() as u64;
        Ok((found, inserted, new_fragments))
    })
}

/// Source rows as new rows of the dataset's schema (columns by name).
fn source_rows(source: &RecordBatch, out: &SchemaRef) -> Result<RecordBatch> {
    let cols = out
        .fields()
        .iter()
        .map(|f| source.column_by_name(f.name()).cloned().ok_or_else(|| Error::Internal { what: format!("source column {} missing", f.name()) }))
        .collect::<Result<Vec<_>>>()?;
    RecordBatch::try_new(out.clone(), cols).map_err(|e| Error::invalid_input(format!("merge_insert: {e}")).with_source(e))
}

/// Every field id of the schema, in order (top-level fields and children).
pub(super) fn all_field_ids(ds: &Dataset) -> Vec<u32> {
    fn walk(f: &crate::file::schema::LanceField, out: &mut Vec<u32>) {
        out.push(f.id as u32);
        f.children.iter().for_each(|c| walk(c, out));
    }
    let mut out = Vec::new();
    ds.lance_schema().fields.iter().for_each(|f| walk(f, &mut out));
    out
}

/// Scan the dataset's keys and decide each live row's fate.
fn scan_and_match(
    ds: &Arc<Dataset>,
    source: &RecordBatch,
    plan: &Plan,
    index: &SourceIndex<'_>,
    stable: bool,
    params: &MergeInsertParams,
    report: &Option<Progress>,
) -> Result<Found> {
    let opts = ScanOptions { columns: Some(plan.scan_columns.clone()), with_row_address: true, with_row_id: stable, ..Default::default() };
    let scanner = Scanner::new(ds.clone(), opts)?;
    let mut found = Found { source_matched: vec![false; source.num_rows()], ..Default::default() };
    let mut progress = FragmentProgress::new("merge_insert", ds, report)?;
    let delete_unmatched = matches!(params.when_not_matched_by_source, WhenNotMatchedBySource::Delete { .. });
    for b in scanner.stream()? {
        let b = b?;
        let addrs = b
            .column_by_name(ROW_ADDR)
            .ok_or_else(|| Error::Internal { what: "scan returned no _rowaddr".into() })?
            .as_primitive::<UInt64Type>()
            .clone();
        if let (Some(first), Some(last)) = (addrs.values().first(), addrs.values().last()) {
            progress.at(first >> 32, report)?;
            progress.at(last >> 32, report)?;
        }
        let ids = if stable {
            Some(
                b.column_by_name(ROW_ID)
                    .ok_or_else(|| Error::Internal { what: "scan returned no _rowid".into() })?
                    .as_primitive::<UInt64Type>()
                    .clone(),
            )
        } else {
            None
        };
        let keys = BatchKeys::new(&(0..plan.keys.len()).map(|i| b.column(i).clone()).collect::<Vec<_>>())?;
        let hits = index.hits(&keys);
        let (mut t_idx, mut s_idx) = (Vec::with_capacity(hits.len()), Vec::with_capacity(hits.len()));
        let mut unmatched = Vec::new();
        let mut next_row = 0u32;
        for &(row, first) in &hits {
            if delete_unmatched {
                unmatched.extend(next_row..row);
            }
            next_row = row + 1;
            for s in index.chain_from(first) {
                found.source_matched[s as usize] = true;
                t_idx.push(row);
                s_idx.push(s);
            }
        }
        if delete_unmatched {
            unmatched.extend(next_row..b.num_rows() as u32);
        }
        let (mut t_idx, mut s_idx) = (UInt32Array::from(t_idx), UInt32Array::from(s_idx));
        if let (Some(c), false) = (&plan.condition, t_idx.is_empty()) {
            let eval = condition_batch(c, &b, &t_idx, source, &s_idx, ds.schema())?;
            let keep = c.filter.evaluate(&eval)?;
            t_idx = filter_u32(&t_idx, &keep)?;
            s_idx = filter_u32(&s_idx, &keep)?;
        }
        // As pylance: a dataset row that two source rows would update or
        // delete (after the condition) is ambiguous; repeated source keys
        // are fine when nothing is done with the matches.
        if !matches!(params.when_matched, WhenMatched::DoNothing) {
            if let Some(w) = t_idx.values().windows(2).position(|w| w[0] == w[1]) {
                return Err(ambiguous(&b, t_idx.value(w) as usize, plan.keys.len(), s_idx.value(w), s_idx.value(w + 1), &params.on));
            }
        }
        match params.when_matched {
            WhenMatched::UpdateAll { .. } => {
                for (t, s) in t_idx.values().iter().zip(s_idx.values().iter()) {
                    let id = ids.as_ref().map(|ids| ids.value(*t as usize)).unwrap_or(0);
                    found.updates.push((addrs.value(*t as usize), id, *s));
                }
            }
            WhenMatched::Delete => found.deletes.extend(t_idx.values().iter().map(|&t| addrs.value(t as usize))),
            WhenMatched::DoNothing => {}
        }
        if delete_unmatched && !unmatched.is_empty() {
            let rows = UInt32Array::from(unmatched);
            let rows = match &plan.by_source {
                Some(f) => {
                    let keep = f.evaluate(&b)?;
                    let keep = arrow_select::take::take(&keep, &rows, None).map_err(Error::internal_arrow)?;
                    filter_u32(&rows, keep.as_boolean())?
                }
                None => rows,
            };
            found.deletes.extend(rows.values().iter().map(|&t| addrs.value(t as usize)));
        }
    }
    progress.finish(report)?;
    Ok(found)
}

pub(super) fn filter_u32(a: &UInt32Array, keep: &BooleanArray) -> Result<UInt32Array> {
    Ok(arrow_select::filter::filter(a, keep).map_err(Error::internal_arrow)?.as_primitive().clone())
}

/// The error for a dataset row matched by two source rows.
fn ambiguous(b: &RecordBatch, row: usize, n_keys: usize, s1: u32, s2: u32, on: &[String]) -> Error {
    let opts = arrow_cast::display::FormatOptions::default();
    let key: Vec<String> = (0..n_keys)
        .map(|i| {
            let v = arrow_cast::display::ArrayFormatter::try_new(b.column(i).as_ref(), &opts)
                .map(|f| f.value(row).to_string())
                .unwrap_or_else(|_| "?".into());
            format!("{} = {v}", on[i])
        })
        .collect();
    Error::invalid_input(format!(
        "merge_insert: source rows {s1} and {s2} both match the dataset row with {}; each dataset row may be matched by at most one source row",
        key.join(" AND ")
    ))
}

/// New rows replacing dataset rows: the source's values, the dataset's
/// for columns the source lacks.
pub(super) fn updated_rows(ds: &Arc<Dataset>, source: &RecordBatch, out: &SchemaRef, chunk: &[(u64, u64, u32)]) -> Result<RecordBatch> {
    let s_idx = UInt32Array::from(chunk.iter().map(|u| u.2).collect::<Vec<_>>());
    let missing: Vec<String> = out.fields().iter().filter(|f| source.schema().field_with_name(f.name()).is_err()).map(|f| f.name().clone()).collect();
    let kept = if missing.is_empty() {
        None
    } else {
        let addrs: Vec<u64> = chunk.iter().map(|u| u.0).collect();
        Some(ds.take_addresses(&addrs, Some(&missing))?)
    };
    let cols = out
        .fields()
        .iter()
        .map(|f| match source.column_by_name(f.name()) {
            Some(c) => arrow_select::take::take(c, &s_idx, None).map_err(Error::internal_arrow),
            None => kept
                .as_ref()
                .and_then(|k| k.column_by_name(f.name()).cloned())
                .ok_or_else(|| Error::Internal { what: format!("column {} not taken", f.name()) }),
        })
        .collect::<Result<Vec<_>>>()?;
    RecordBatch::try_new(out.clone(), cols).map_err(|e| Error::invalid_input(format!("merge_insert: {e}")).with_source(e))
}

/// Inserted source rows (nulls for columns the source lacks).
pub(super) fn inserted_rows(source: &RecordBatch, out: &SchemaRef, chunk: &[u32]) -> Result<RecordBatch> {
    let idx = UInt32Array::from(chunk.to_vec());
    let cols = out
        .fields()
        .iter()
        .map(|f| match source.column_by_name(f.name()) {
            Some(c) => arrow_select::take::take(c, &idx, None).map_err(Error::internal_arrow),
            None => Ok(new_null_array(f.data_type(), chunk.len())),
        })
        .collect::<Result<Vec<_>>>()?;
    RecordBatch::try_new(out.clone(), cols).map_err(|e| Error::invalid_input(format!("merge_insert: {e}")).with_source(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_bits_answer_exactly_within_a_narrow_range() {
        let keys = [10u64, 12, 200, 10];
        let bits = KeyBits::new(&keys).expect("a narrow range");
        for k in 0..300u64 {
            assert_eq!(bits.contains(k), keys.contains(&k), "{k}");
        }
        assert!(!bits.contains(u64::MAX) && !bits.contains(10 + (1 << 40)));
        // A wide range (negative integers' bits, sparse keys) has no bitmap.
        assert!(KeyBits::new(&[0, u64::MAX]).is_none());
        assert!(KeyBits::new(&[0, 1 << 20]).is_none());
        assert!(KeyBits::new(&[]).is_none());
    }

    #[test]
    fn hits_follow_chains_in_source_order() {
        let src: ArrayRef = Arc::new(arrow_array::Int64Array::from(vec![Some(5), None, Some(7), Some(5)]));
        let keys = BatchKeys::new(&[src]).unwrap();
        let index = SourceIndex::new(&keys);
        let ds: ArrayRef = Arc::new(arrow_array::Int64Array::from(vec![Some(1), Some(5), None, Some(7)]));
        let hits = index.hits(&BatchKeys::new(&[ds]).unwrap());
        let rows: Vec<(u32, Vec<u32>)> = hits.iter().map(|&(r, f)| (r, index.chain_from(f).collect())).collect();
        assert_eq!(rows, vec![(1, vec![0, 3]), (3, vec![2])]);
    }
}
