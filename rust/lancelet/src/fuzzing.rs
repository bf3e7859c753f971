//! Entry points of the fuzz targets (`fuzz/`, cargo-fuzz): one function per
//! parser of bytes lancelet did not write itself in this process.
//!
//! Each function takes arbitrary bytes and drives them through the public
//! reading paths of the crate — in memory (`memory://` stores), so a run
//! touches no disk. The contract every input must honour: lancelet returns
//! data or an error of a user-facing kind (`Corrupt`, `Unsupported`,
//! `NotFound`, `InvalidInput`, `Conflict`); a panic, an abort, a hang, an
//! allocation beyond what the bytes can hold, or an `Error::Internal` is a
//! bug. `Error::Internal` is turned into a panic here so that libFuzzer
//! reports it like any other crash.
//!
//! The same functions replay the committed corpora (`fuzz/corpus/<target>`)
//! in `cargo test` (see the tests at the end), so every input that once
//! crashed stays a regression test on the stable toolchain.
//!
//! Datasets the targets need (data files for manifests to point at, a
//! dataset to commit staged fragments to) are written once per process by
//! lancelet itself under fixed names, so that seed manifests made by
//! [`seed_manifests`] find their data files in every later run.

use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use arrow_array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array, LargeStringArray, RecordBatch, StringArray,
    StructArray, TimestampMicrosecondArray, UInt8Array,
};
use arrow_schema::{DataType, Field, Fields, Schema};
use bytes::Bytes;
use prost::Message;

use crate::error::{Error, Result};
use crate::file::{FileReader, FileVersion, FileWriter};
use crate::io::{Storage, StorageOptions};
use crate::proto::table as pb;
use crate::table::commit::{commit, CommitOptions};
use crate::table::conflict::Rebase;
use crate::table::deletion::{decode_deletions, live_ranges};
use crate::table::manifest::{decode_manifest, list_versions, parse_manifest_name, ManifestNaming};
use crate::table::rowids::{RowIdIndex, RowIdSequence};
use crate::table::scan::{ScanOptions, Scanner};
use crate::table::transaction::{build_manifest, new_transaction, BuildOptions};
use crate::table::{Dataset, VersionRef};

use pb::transaction::Operation;

/// Rows read at most from one fuzzed data file: decoding is what is
/// tested, and a file may legitimately describe billions of rows in a few
/// bytes (constant and run-length pages).
const MAX_READ_ROWS: u64 = 4096;

/// The value of a result, `None` for an ordinary error; panics on
/// `Error::Internal`, which is a bug whatever the input.
pub fn ok<T>(r: Result<T>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(Error::Internal { what }) => panic!("InternalError (a lancelet bug) on fuzzed input: {what}"),
        Err(_) => None,
    }
}

/// Serializes targets that share a memory store (libFuzzer runs one input
/// at a time; `cargo test` runs tests on several threads).
fn store_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------- deletion files

/// `.arrow` deletion files (Arrow IPC, validated and decoded by shape).
pub fn deletion_arrow(data: &[u8]) {
    deletion_file(pb::deletion_file::DeletionFileType::ArrowArray as i32, data);
}

/// `.bin` deletion files (portable Roaring bitmaps).
pub fn deletion_bitmap(data: &[u8]) {
    deletion_file(pb::deletion_file::DeletionFileType::Bitmap as i32, data);
}

fn deletion_file(file_type: i32, data: &[u8]) {
    for rows in [0u64, 50, 8192, 1 << 32, u64::MAX] {
        if let Some(set) = ok(decode_deletions(file_type, Bytes::copy_from_slice(data), rows)) {
            assert!(set.max().is_none_or(|m| u64::from(m) < rows), "deleted row beyond the fragment");
            assert!(set.len() <= rows, "more deletions than rows");
            let live = live_ranges(rows.min(1 << 20), Some(&set));
            assert!(live.windows(2).all(|w| w[0].end < w[1].start), "live ranges overlap or touch");
        }
    }
}

// ---------------------------------------------------------------- row ids

/// Serialized `RowIdSequence`s (stable row ids).
pub fn row_ids(data: &[u8]) {
    let Some(seq) = ok(RowIdSequence::decode(data)) else { return };
    let n = seq.len();
    // Positions near both ends (what a scan with `_rowid` reads).
    let head = 0..n.min(64);
    let tail = n.saturating_sub(64).max(head.end)..n;
    let ranges: Vec<Range<u64>> = [head, tail].into_iter().filter(|r| !r.is_empty()).collect();
    let ids = seq.select(&ranges);
    assert_eq!(ids.len() as u64, ranges.iter().map(|r| r.end - r.start).sum::<u64>());
    // The index over all positions, and over every other one.
    #[allow(clippy::single_range_in_vec_init)]
    let all = [0..n];
    let every_other: Vec<Range<u64>> = (0..n.min(256)).step_by(2).map(|i| i..i + 1).collect();
    for live in [&all[..], &every_other[..]] {
        if let Some(index) = ok(RowIdIndex::build([(7u64, &seq, live)])) {
            for id in ids.iter().take(16) {
                if let Some(addr) = index.get(*id) {
                    assert_eq!(addr >> 32, 7, "row id {id} mapped outside its fragment");
                }
            }
        }
    }
}

// ---------------------------------------------------------------- small tables

fn sample_batch() -> RecordBatch {
    let st = StructArray::new(
        Fields::from(vec![Field::new("x", DataType::Int64, true), Field::new("y", DataType::Utf8, true)]),
        vec![
            Arc::new(Int64Array::from(vec![Some(1), Some(2), Some(9), None, Some(5)])),
            Arc::new(StringArray::from(vec![Some("p"), Some("q"), Some("z"), Some("r"), None])),
        ],
        Some(vec![true, true, false, true, true].into()),
    );
    let ts = TimestampMicrosecondArray::from(vec![Some(1_704_103_200_000_000), None, Some(0), Some(-1), Some(i64::MAX)]);
    let dec = Decimal128Array::from(vec![Some(150), Some(225), None, Some(-300), Some(0)]).with_precision_and_scale(10, 2);
    let cols: Vec<(&str, ArrayRef)> = vec![
        ("id", Arc::new(Int64Array::from(vec![0, 1, 2, 3, 4]))),
        ("i", Arc::new(Int32Array::from(vec![Some(1), Some(i32::MAX), None, Some(i32::MIN), Some(5)]))),
        ("f", Arc::new(Float64Array::from(vec![Some(1.5), None, Some(f64::INFINITY), Some(-0.0), Some(f64::NAN)]))),
        ("s", Arc::new(StringArray::from(vec![Some("a"), Some("b'c"), None, Some("Ábc"), Some("a_%\\")]))),
        ("b", Arc::new(BooleanArray::from(vec![Some(true), Some(false), None, Some(true), Some(false)]))),
        ("d", Arc::new(Date32Array::from(vec![Some(19723), Some(i32::MIN), None, Some(0), Some(i32::MAX)]))),
        ("ts", Arc::new(ts.with_timezone("UTC"))),
        ("dec", Arc::new(dec.expect("valid precision"))),
        ("u8", Arc::new(UInt8Array::from(vec![0, 1, 127, 200, 255]))),
        ("st", Arc::new(st)),
        ("ls", Arc::new(LargeStringArray::from(vec!["a", "", "c", "dd", "e"]))),
    ];
    RecordBatch::try_from_iter(cols).expect("valid batch")
}

/// The dataset the table-level targets start from: written once per
/// process by lancelet under fixed file names (see the module docs).
struct BaseDataset {
    uri: &'static str,
    root: Storage,
    schema: Arc<Schema>,
    /// The manifest of version 1, as written.
    manifest: Bytes,
}

const BASE_URI: &str = "memory://lancelet-fuzz/ds";

fn base() -> &'static BaseDataset {
    static BASE: OnceLock<BaseDataset> = OnceLock::new();
    BASE.get_or_init(|| make_base().expect("writing the fuzz base dataset"))
}

/// From the first fuzzed input on, URIs other than `memory://` are refused
/// on this thread (a fuzzed manifest's base paths could name any file or
/// host).
fn memory_only() {
    crate::io::MEMORY_ONLY.with(|m| m.set(true));
}

/// Three fragments of five rows (2.1 data files `data/f{i}.lance`), stable
/// row ids, fragment 1 with an `.arrow` deletion file and fragment 2 with a
/// `.bin` one.
fn make_base() -> Result<BaseDataset> {
    let root = Storage::open(BASE_URI)?;
    let batch = sample_batch();
    let schema = batch.schema();
    let lance_schema = crate::file::schema::LanceSchema::from_arrow(&schema)?;
    let mut fragments = Vec::new();
    for i in 0..3u64 {
        let path = format!("f{i}.lance");
        let mut w = FileWriter::create_with_lance_schema(root.child(&format!("data/{path}"))?, lance_schema.clone(), FileVersion::V2_1)?;
        w.write(&batch)?;
        let size = w.finish()?;
        let (major, minor) = FileVersion::V2_1.data_file_numbers();
        let ids = crate::table::write::column_field_ids(&lance_schema, FileVersion::V2_1);
        fragments.push(pb::DataFragment {
            physical_rows: batch.num_rows() as u64,
            files: vec![pb::DataFile {
                path,
                column_indices: (0..ids.len() as i32).collect(),
                fields: ids,
                file_major_version: major,
                file_minor_version: minor,
                file_size_bytes: size,
                ..Default::default()
            }],
            ..Default::default()
        });
    }
    // Deletion files named `{fragment}-{read_version}-{id}.{ext}`.
    let arrow = crate::table::deletion::encode_arrow(&[3, 0])?;
    root.child("_deletions/1-0-11.arrow")?.write_all(Bytes::from(arrow))?;
    fragments[1].deletion_file = Some(pb::DeletionFile { file_type: 0, read_version: 0, id: 11, num_deleted_rows: 2, base_id: None });
    let set: roaring::RoaringBitmap = [1u32, 2, 4].into_iter().collect();
    let mut bin = Vec::new();
    set.serialize_into(&mut bin).map_err(|e| Error::Internal { what: e.to_string() })?;
    root.child("_deletions/2-0-12.bin")?.write_all(Bytes::from(bin))?;
    fragments[2].deletion_file = Some(pb::DeletionFile { file_type: 1, read_version: 0, id: 12, num_deleted_rows: 3, base_id: None });
    let txn = new_transaction(
        0,
        Operation::Overwrite(pb::transaction::Overwrite {
            fragments,
            schema: lance_schema.to_pb()?,
            schema_metadata: lance_schema.metadata_pb(),
            ..Default::default()
        }),
    );
    let opts = CommitOptions { build: BuildOptions { enable_stable_row_ids: true, data_storage_version: "2.1".into() }, ..Default::default() };
    let v = commit(&root, &txn, &opts)?;
    let name = list_versions(&root)?.into_iter().find(|l| l.version == v).expect("committed").name;
    let manifest = root.child(&format!("_versions/{name}"))?.read_all()?;
    Ok(BaseDataset { uri: BASE_URI, root, schema, manifest })
}

/// Remove every file under `dir` of `root`.
fn clear(root: &Storage, dir: &str) {
    let d = root.child(dir).expect("valid dir");
    for (name, _) in d.list().unwrap_or_default() {
        let _ = d.child(&name).map(|c| c.delete());
    }
}

/// Reset the base dataset to version 1 alone.
fn reset_base(b: &BaseDataset) {
    for dir in ["_versions", "_transactions", "_refs/tags", "_refs/branches"] {
        clear(&b.root, dir);
    }
    b.root.child("_versions/1.manifest").and_then(|s| s.write_all(b.manifest.clone())).expect("memory write");
}

/// Manifest files of the base dataset, for seeding the corpora: version 1
/// as written, and a version 2 made by an append.
pub fn seed_manifests() -> Vec<Vec<u8>> {
    let _g = store_lock();
    let b = base();
    reset_base(b);
    let mut out = vec![b.manifest.to_vec()];
    let frag = pb::DataFragment {
        physical_rows: 5,
        files: decode_manifest(b.manifest.clone()).expect("ok").manifest.fragments[0].files.clone(),
        ..Default::default()
    };
    let txn = new_transaction(1, Operation::Append(pb::transaction::Append { fragments: vec![frag] }));
    if let Some(v) = ok(commit(&b.root, &txn, &CommitOptions::default())) {
        if let Some(loc) = list_versions(&b.root).ok().and_then(|l| l.into_iter().find(|l| l.version == v)) {
            out.push(b.root.child(&format!("_versions/{}", loc.name)).and_then(|s| s.read_all()).expect("written").to_vec());
        }
    }
    reset_base(b);
    out
}

/// Everything a reader does with an opened dataset, bounded in rows.
fn exercise_dataset(ds: Dataset) {
    let _ = ds.summary();
    let _ = ok(ds.versions());
    let _ = ok(ds.tags());
    let n = ds.fragments().len().min(8);
    for i in 0..n {
        let Some(rows) = ok(ds.physical_rows(i)) else { continue };
        if let Some(Some(set)) = ok(ds.deletions(i)) {
            assert!(set.max().is_none_or(|m| u64::from(m) < rows));
        }
        let _ = ok(ds.live_rows(i));
        if let Some(Some(seq)) = ok(ds.row_id_sequence(i)) {
            assert_eq!(seq.len(), rows);
        }
    }
    let _ = ok(ds.row_id_index());
    let ds = Arc::new(ds);
    let opts = ScanOptions { limit: Some(MAX_READ_ROWS), with_row_id: true, with_row_address: true, ..Default::default() };
    if let Some(scan) = ok(Scanner::new(ds.clone(), opts)) {
        let _ = ok(scan.count_rows());
        let _ = ok(scan.collect());
    }
    let _ = ok(ds.take(&[0, 2, 7], None));
    let _ = ok(ds.take_row_ids_found(&[0, 1, 5, 1 << 40], None));
}

// ---------------------------------------------------------------- manifests

/// Manifest files: framing, every section (index section and embedded
/// transaction included), then the dataset opened on them and read, and an
/// append committed on top.
pub fn manifest(data: &[u8]) {
    memory_only();
    let bytes = Bytes::copy_from_slice(data);
    if let Some(f) = ok(decode_manifest(bytes.clone())) {
        let _ = ok(f.transaction());
        let _ = ok(f.index_section());
        let lead = f.leading_bytes();
        assert!(lead.len() <= data.len());
        let _ = ok(crate::file::schema::LanceSchema::from_pb(&f.manifest.fields, &f.manifest.schema_metadata));
    }
    let _g = store_lock();
    let b = base();
    reset_base(b);
    // Named after the version it claims (so that it is the latest), else 2.
    let version = ok(decode_manifest(bytes.clone())).map(|f| f.manifest.version).filter(|v| *v > 1).unwrap_or(2);
    let name = ManifestNaming::V2.file_name(version);
    b.root.child(&format!("_versions/{name}")).and_then(|s| s.write_all(bytes)).expect("memory write");
    if let Some(ds) = ok(Dataset::open(b.uri, None)) {
        // An append on top: rebuilds the next manifest from this one.
        let frag =
            pb::DataFragment { physical_rows: 5, files: ds.fragments().first().map(|f| f.files.clone()).unwrap_or_default(), ..Default::default() };
        let txn = new_transaction(ds.version(), Operation::Append(pb::transaction::Append { fragments: vec![frag] }));
        exercise_dataset(ds);
        if ok(commit(&b.root, &txn, &CommitOptions::default())).is_some() {
            // What we wrote must read back (it carries the fuzzed content on).
            let _ = ok(Dataset::open(b.uri, None).map(|d| d.summary()));
        }
    }
    reset_base(b);
}

// ---------------------------------------------------------------- transactions

/// Transactions of other writers (`_transactions/*.txn` and embedded
/// sections): decoded, checked against each operation lancelet commits,
/// and met by a commit that has to rebase over them.
pub fn transaction(data: &[u8]) {
    memory_only();
    let Some(theirs) = ok(pb::Transaction::decode(data).map_err(Error::bad_protobuf)) else { return };
    let mine = [
        Operation::Append(Default::default()),
        Operation::Delete(pb::transaction::Delete { deleted_fragment_ids: vec![0, 2], ..Default::default() }),
        Operation::Overwrite(Default::default()),
        Operation::Restore(pb::transaction::Restore { version: 1 }),
    ];
    for op in mine {
        let t = new_transaction(1, op);
        // the conflict table, both ways
        let _ = ok(Rebase::new(&t, None, None).check(&theirs, 2).map_err(|c| c.into_error()));
        let _ = ok(Rebase::new(&theirs, None, None).check(&t, 2).map_err(|c| c.into_error()));
    }
    let _ = crate::table::transaction::transaction_file_name(&theirs);
    let _g = store_lock();
    let b = base();
    reset_base(b);
    // Version 2 committed "by someone else": its manifest names the fuzzed
    // transaction file instead of embedding one.
    let Some(prev) = ok(decode_manifest(b.manifest.clone())) else { return };
    let mut m2 = prev.manifest.clone();
    m2.version = 2;
    m2.transaction_section = None;
    m2.transaction_file = "1-fuzz.txn".into();
    let (file, _) = crate::table::manifest::frame_sections(&[&m2.encode_to_vec()]);
    b.root.child("_transactions/1-fuzz.txn").and_then(|s| s.write_all(Bytes::copy_from_slice(data))).expect("memory write");
    b.root.child(&format!("_versions/{}", ManifestNaming::V2.file_name(2))).and_then(|s| s.write_all(Bytes::from(file))).expect("memory write");
    // Our commits read at version 1 must check against it.
    let frag = pb::DataFragment { physical_rows: 5, files: prev.manifest.fragments[0].files.clone(), ..Default::default() };
    for op in [
        Operation::Append(pb::transaction::Append { fragments: vec![frag] }),
        Operation::Delete(pb::transaction::Delete { deleted_fragment_ids: vec![0], predicate: "fuzz".into(), ..Default::default() }),
    ] {
        let t = new_transaction(1, op);
        let _ = ok(commit(&b.root, &t, &CommitOptions::default()));
    }
    // And lancelet's manifest builder on the decoded transaction (as for a
    // caller's staged operation).
    let _ = ok(build_manifest(Some(&prev.manifest), &theirs, 3, &BuildOptions::default(), Some(&prev.manifest), Some(&b.root)));
    reset_base(b);
}

// ---------------------------------------------------------------- staged fragments

/// Staged fragments handed back by distributed-write workers (protobuf
/// `DataFragment` bytes from the caller), committed as an append and read.
pub fn staged_fragments(data: &[u8]) {
    memory_only();
    use crate::table::staged::{commit_fragments, StagePlan};
    use crate::table::write::WriteMode;
    let _g = store_lock();
    let b = base();
    reset_base(b);
    let plan = StagePlan {
        uri: b.uri.to_string(),
        mode: WriteMode::Append,
        read_version: 1,
        data_storage_version: Some(FileVersion::V2_1),
        schema: b.schema.clone(),
        storage_options: StorageOptions::new(),
    };
    // One staged fragment, or several split at 0xFF 0xFE 0xFD.
    let parts: Vec<Vec<u8>> = split_on(data, b"\xff\xfe\xfd").into_iter().map(<[u8]>::to_vec).collect();
    if let Some(c) = ok(commit_fragments(&plan, &parts, false, &Default::default())) {
        exercise_dataset(c.dataset);
    }
    reset_base(b);
}

fn split_on<'a>(data: &'a [u8], sep: &[u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    while let Some(i) = rest.windows(sep.len()).position(|w| w == sep) {
        out.push(&rest[..i]);
        rest = &rest[i + sep.len()..];
    }
    out.push(rest);
    out
}

// ---------------------------------------------------------------- tags, hint, names

/// Tag files (`_refs/tags/*.json`), branch records (`_refs/branches/*.json`)
/// and `_versions/latest_version_hint.json`: the same bytes as all three,
/// then the dataset opened by tag, its tags and branches listed, and a
/// cleanup run (which reads both and must keep the only version).
pub fn tags_and_hint(data: &[u8]) {
    memory_only();
    let _g = store_lock();
    let b = base();
    reset_base(b);
    let bytes = Bytes::copy_from_slice(data);
    b.root.child("_refs/tags/t.json").and_then(|s| s.write_all(bytes.clone())).expect("memory write");
    b.root.child("_refs/branches/b%2Fc.json").and_then(|s| s.write_all(bytes.clone())).expect("memory write");
    if let Some(branches) = ok(crate::table::branches::list_branches(&b.root)) {
        // Whatever record parsed is written back unchanged (metadata
        // rewrites go through branch_json).
        for r in branches {
            let again = crate::table::branches::parse_branch(&r.name, crate::table::branches::branch_json(&r).as_bytes(), "x");
            assert_eq!(again.ok().as_ref(), Some(&r), "a branch record changed on a round trip");
        }
    }
    b.root.child("_versions/latest_version_hint.json").and_then(|s| s.write_all(bytes)).expect("memory write");
    if let Some(ds) = ok(Dataset::open(b.uri, Some(VersionRef::Tag("t".into())))) {
        assert_eq!(ds.version(), 1, "a tag opened a version that does not exist");
        if let Some(tags) = ok(ds.tags()) {
            assert!(tags.iter().all(|t| t.name == "t"));
        }
    }
    if let Some(ds) = ok(Dataset::open(b.uri, None)) {
        assert_eq!(ds.version(), 1, "the hint decided the latest version");
        let policy = crate::table::cleanup::CleanupPolicy { delete_unverified: true, ..Default::default() };
        if ok(crate::table::cleanup::cleanup_old_versions(&ds, &policy, &Default::default())).is_some() {
            assert!(ok(Dataset::open(b.uri, None)).is_some(), "a cleanup removed the only version");
        }
    }
    reset_base(b);
}

/// `_versions/` file names: the bytes, as lines, are names listed there.
pub fn version_names(data: &[u8]) {
    memory_only();
    let text = String::from_utf8_lossy(data);
    let names: Vec<&str> = text.split('\n').take(64).collect();
    for n in &names {
        if let Some((v, naming)) = parse_manifest_name(n) {
            // (A V1 name of 20 digits reads as V2, in Lance too: V1
            // versions from 10^19 on have no name of their own.)
            if naming == ManifestNaming::V2 || v < 10u64.pow(19) {
                assert_eq!(parse_manifest_name(&naming.file_name(v)), Some((v, naming)), "{n:?}");
            }
        }
    }
    let _g = store_lock();
    let root = Storage::open("memory://lancelet-fuzz-names/ds").expect("memory store");
    clear(&root, "_versions");
    for n in &names {
        if let Ok(s) = root.child(&format!("_versions/{n}")) {
            let _ = s.write_all(Bytes::from_static(b"not a manifest"));
        }
    }
    if let Some(list) = ok(list_versions(&root)) {
        assert!(list.windows(2).all(|w| w[0].version < w[1].version), "versions not sorted and unique");
        // The newest one is opened (and found corrupt).
        if let Some(last) = list.last() {
            let _ = ok(Dataset::open("memory://lancelet-fuzz-names/ds", Some(VersionRef::Number(last.version))));
        }
    }
    clear(&root, "_versions");
}

// ---------------------------------------------------------------- SQL filters

/// SQL filters: parsed, planned against a table of many types, evaluated,
/// used for statistics pruning and in a dataset scan.
pub fn sql_filter(data: &[u8]) {
    memory_only();
    let sql = String::from_utf8_lossy(data);
    let batch = sample_batch();
    let Some(filter) = ok(crate::expr::parse_filter(&sql, &batch.schema())) else { return };
    let cols = filter.columns();
    let projected: Vec<usize> = cols.iter().filter_map(|c| batch.schema().index_of(c).ok()).collect();
    if projected.len() == cols.len() {
        if let Some(mask) = ok(filter.evaluate(&batch.project(&projected).expect("projection"))) {
            assert_eq!(mask.len(), batch.num_rows());
        }
    }
    let stats = |name: &str| -> Option<crate::file::stats::GroupStats> {
        let i = batch.schema().index_of(name).ok()?;
        let col = batch.column(i);
        if col.len() < 2 {
            return None;
        }
        let lo = arrow_select::take::take(col.as_ref(), &arrow_array::UInt32Array::from(vec![0, 3]), None).ok()?;
        let hi = arrow_select::take::take(col.as_ref(), &arrow_array::UInt32Array::from(vec![2, 4]), None).ok()?;
        Some(crate::file::stats::GroupStats { ranges: vec![0..3, 3..5], min: lo, max: hi, null_count: vec![1, 0] })
    };
    let p = filter.prune(&stats, 5);
    assert!(p.maybe.iter().all(|r| r.end <= 5) && p.sure.iter().all(|r| r.end <= 5));
    let _g = store_lock();
    let b = base();
    reset_base(b);
    if let Some(ds) = ok(Dataset::open(b.uri, None)) {
        let opts = ScanOptions { filter: Some(filter), with_row_id: true, ..Default::default() };
        if let Some(scan) = ok(Scanner::new(Arc::new(ds), opts)) {
            let _ = ok(scan.count_rows());
        }
    }
}

// ---------------------------------------------------------------- data files

pub use crate::file::reader::PageKind;

/// A 2.x or v0.1 data file: footer, offset tables, column metadata, schema,
/// every page (2.0 encoding trees, 2.1/2.2 layouts), read whole (up to
/// [`MAX_READ_ROWS`]) and in part (takes, sparse ranges).
pub fn data_file(data: &[u8]) {
    read_data_file(data, None, None);
}

/// A data file of the given family (`true`: a 2.0 file, `false`: v0.1);
/// other files are passed over.
pub fn data_file_of(data: &[u8], v2_0: bool) {
    let want = if v2_0 { FileVersion::V2_0 } else { FileVersion::Legacy };
    read_data_file(data, Some(want), None);
}

/// A 2.1/2.2 data file holding at least one page of `kind`.
pub fn data_file_with_pages(data: &[u8], kind: PageKind) {
    read_data_file(data, None, Some(kind));
}

/// Only the footer, the offset tables and what opening a file reads.
pub fn file_footer(data: &[u8]) {
    memory_only();
    if let Some(v) = ok(crate::file::footer::parse_version_tail(data)) {
        if v != FileVersion::Legacy {
            if let Some(f) = ok(crate::file::footer::Footer::parse(data, data.len() as u64)) {
                let meta = f.metadata_range(data.len() as u64);
                assert!(meta.end <= data.len() as u64 && meta.start <= meta.end);
                let cmo = f.cmo_table_offset as usize..(f.cmo_table_offset + 16 * u64::from(f.num_columns)) as usize;
                let _ = ok(crate::file::footer::parse_offset_table(&data[cmo], f.num_columns as usize, meta.end, "column metadata"));
            }
        }
    }
    let _g = store_lock();
    let s = Storage::open("memory://lancelet-fuzz-file/footer.lance").expect("memory store");
    s.write_all(Bytes::copy_from_slice(data)).expect("memory write");
    if let Some(r) = ok(FileReader::open_storage(s)) {
        let _ = (r.num_rows(), r.schema(), r.version());
    }
}

/// The layouts of the pages of an open 2.1/2.2 file (for sorting seeds).
pub fn page_kinds_of(r: &FileReader) -> Vec<PageKind> {
    r.page_kinds()
}

fn read_data_file(data: &[u8], version: Option<FileVersion>, kind: Option<PageKind>) {
    memory_only();
    let _g = store_lock();
    let s = Storage::open("memory://lancelet-fuzz-file/f.lance").expect("memory store");
    s.write_all(Bytes::copy_from_slice(data)).expect("memory write");
    let Some(r) = ok(FileReader::open_storage(s)) else { return };
    if version.is_some_and(|v| v != r.version()) {
        return;
    }
    if let Some(kind) = kind {
        if !r.page_kinds().contains(&kind) {
            return;
        }
    }
    let n = r.num_rows();
    let all: Vec<usize> = (0..r.schema().fields().len()).collect();
    if let Some(b) = ok(r.read_range(&all, 0..n.min(MAX_READ_ROWS))) {
        assert_eq!(b.num_rows() as u64, n.min(MAX_READ_ROWS));
    }
    // Blob columns as their descriptions; v2 descriptors resolved to the
    // bytes they point at (sidecars and external objects are missing here).
    if let Some(p) = ok(r.read_pieces_described(&all, &[0..n.min(MAX_READ_ROWS)])) {
        for (c, f) in all.iter().zip(r.schema().fields()) {
            if crate::table::blobs::is_v2_descriptor(f) {
                if let Some(col) = ok(p.concat_column(*c)) {
                    if let Some(locs) = ok(crate::table::blobs::v2_locations(&col, r.storage(), r.storage())) {
                        let _ = ok(crate::table::blobs::read_locations(&locs));
                    }
                }
            }
        }
    }
    if n > 0 {
        let idx = [n - 1, 0, n / 2, n - 1];
        if let Some(b) = ok(r.take(&all, &idx)) {
            assert_eq!(b.num_rows(), idx.len());
        }
        // Sparse ranges: partial page reads.
        let ranges: Vec<Range<u64>> = [0..1, n / 3..n / 3 + 1, n - 1..n].into_iter().filter(|r| r.start >= 1 || r.end == 1).collect();
        let mut ranges: Vec<Range<u64>> = ranges.into_iter().fold(Vec::new(), |mut acc, r| {
            if acc.last().is_none_or(|l: &Range<u64>| l.end <= r.start) {
                acc.push(r);
            }
            acc
        });
        ranges.dedup();
        for c in 0..all.len().min(16) {
            let _ = ok(r.read_ranges(&[c], &ranges));
        }
    }
}

/// Every fuzz target that takes raw bytes, by name (the names of
/// `fuzz/fuzz_targets/*.rs` and of their corpus directories).
pub fn targets() -> Vec<(&'static str, fn(&[u8]))> {
    vec![
        ("manifest", manifest),
        ("transaction", transaction),
        ("deletion_arrow", deletion_arrow),
        ("deletion_bitmap", deletion_bitmap),
        ("row_ids", row_ids),
        ("staged_fragments", staged_fragments),
        ("tags_hint", tags_and_hint),
        ("version_names", version_names),
        ("sql_filter", sql_filter),
        ("file_v2_0", |d| data_file_of(d, true)),
        ("legacy_file", |d| data_file_of(d, false)),
        ("file_footer", file_footer),
        ("page_miniblock", |d| data_file_with_pages(d, PageKind::MiniBlock)),
        ("page_dictionary", |d| data_file_with_pages(d, PageKind::Dictionary)),
        ("page_fullzip", |d| data_file_with_pages(d, PageKind::FullZip)),
        ("page_constant", |d| data_file_with_pages(d, PageKind::Constant)),
        ("page_blob", |d| data_file_with_pages(d, PageKind::Blob)),
        ("tiledb_array", tiledb_array),
        ("fsst_decode", fsst_decode),
        ("vector_index", crate::index::vector::testing::vector_index),
        ("zonemap_index", zonemap_index),
        ("bloomfilter_index", bloomfilter_index),
        ("ngram_index", ngram_index),
        ("fts_postings", fts_postings),
    ]
}

// ---------------------------------------------------------------- seeds written here

/// Inputs for `target` that lancelet writes in this process (a dataset
/// with stable row ids and both kinds of deletion files, data files of
/// every 2.x version, hand-made row id sequences, tag files, version names,
/// filters): with the committed corpus (`fuzz/corpus/<target>`), what the
/// short runs in `cargo test` mutate, so that they need no file from
/// outside the repository.
pub fn generated_seeds(target: &str) -> Vec<Vec<u8>> {
    match target {
        "vector_index" => crate::index::vector::testing::seeds(),
        "manifest" => seed_manifests(),
        "transaction" => seed_manifests()
            .into_iter()
            .filter_map(|m| decode_manifest(Bytes::from(m)).ok()?.transaction().ok()?)
            .map(|t| t.encode_to_vec())
            .collect(),
        "deletion_arrow" => [vec![3u32, 0], (0..700).rev().collect(), (0..5000).step_by(3).collect()]
            .iter()
            .map(|v| crate::table::deletion::encode_arrow(v).expect("encode"))
            .collect(),
        "deletion_bitmap" => {
            let sets: [roaring::RoaringBitmap; 3] =
                [[1u32, 2, 4].into_iter().collect(), (0..5000).collect(), (0..100_000).step_by(7).chain([1 << 31]).collect()];
            sets.iter()
                .map(|s| {
                    let mut out = Vec::new();
                    s.serialize_into(&mut out).expect("in memory");
                    out
                })
                .collect()
        }
        "row_ids" => seed_row_ids(),
        "staged_fragments" => {
            let m = decode_manifest(base().manifest.clone()).expect("base manifest");
            let frag = |i: usize| pb::DataFragment { id: 0, row_id_sequence: None, ..m.manifest.fragments[i].clone() };
            vec![frag(0).encode_to_vec(), [frag(0).encode_to_vec(), b"\xff\xfe\xfd".to_vec(), frag(1).encode_to_vec()].concat()]
        }
        "tags_hint" => [
            r#"{"version": 1, "manifest_size": 1234, "branch": null}"#,
            r#"{"version":1}"#,
            r#"{"version": 18446744073709551615}"#,
            r#"{"createdAt": "2024-01-01T00:00:00Z", "version": 1, "nested": {"version": 7}}"#,
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect(),
        "version_names" => vec![
            b"1.manifest\n2.manifest\n10.manifest".to_vec(),
            b"18446744073709551614.manifest\n18446744073709551613.manifest\nlatest_version_hint.json".to_vec(),
            b"00000000000000000001.manifest\n3.manifest.tmp\n.manifest\n-1.manifest".to_vec(),
        ],
        "sql_filter" => [
            "id > 2 AND s LIKE 'a%'",
            "i IS NULL OR f >= 1.5",
            "st.x IN (1, 2, 9) AND NOT b",
            "d < date '2024-01-01' OR ts > timestamp '2024-01-01 10:00:00'",
            "dec BETWEEN 1.00 AND 2.50",
            "lower(s) = 'abc' AND u8 % 2 = 0",
            "CAST(i AS bigint) + id * 2 <> 7",
            "_rowid < 3 OR _rowaddr > 4294967296",
            "ls IS NOT NULL AND s NOT LIKE '%\\%%' ESCAPE '\\'",
            "(id = 1 OR id = 2) AND (i != 5 OR i IS DISTINCT FROM NULL)",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect(),
        "file_v2_0" => vec![seed_data_file(FileVersion::V2_0)],
        "file_footer" | "page_miniblock" | "page_dictionary" | "page_fullzip" | "page_constant" | "page_blob" => {
            [FileVersion::V2_0, FileVersion::V2_1, FileVersion::V2_2].into_iter().map(seed_data_file).collect()
        }
        "tiledb_array" => tiledb_target::seeds(),
        "fsst_decode" => fsst_target::seeds(),
        "zonemap_index" | "bloomfilter_index" | "ngram_index" => skip_target::seeds(target),
        "fts_postings" => fts_target::seeds(),
        _ => Vec::new(),
    }
}

/// Row id sequences of every segment kind and array width.
fn seed_row_ids() -> Vec<Vec<u8>> {
    use pb::encoded_u64_array::{Array, U16Array, U32Array, U64Array};
    use pb::u64_segment::{Range as R, RangeWithBitmap, RangeWithHoles, Segment as S};
    let u16s = |base: u64, v: &[u16]| pb::EncodedU64Array {
        array: Some(Array::U16Array(U16Array { base, offsets: v.iter().flat_map(|x| x.to_le_bytes()).collect() })),
    };
    let u32s = |base: u64, v: &[u32]| pb::EncodedU64Array {
        array: Some(Array::U32Array(U32Array { base, offsets: v.iter().flat_map(|x| x.to_le_bytes()).collect() })),
    };
    let u64s =
        |v: &[u64]| pb::EncodedU64Array { array: Some(Array::U64Array(U64Array { values: v.iter().flat_map(|x| x.to_le_bytes()).collect() })) };
    let seq = |segs: Vec<S>| pb::RowIdSequence { segments: segs.into_iter().map(|s| pb::U64Segment { segment: Some(s) }).collect() }.encode_to_vec();
    vec![
        seq(vec![S::Range(R { start: 0, end: 100 })]),
        seq(vec![
            S::Range(R { start: 5, end: 9 }),
            S::RangeWithHoles(RangeWithHoles { start: 20, end: 40, holes: Some(u16s(20, &[1, 3, 10])) }),
            S::RangeWithBitmap(RangeWithBitmap { start: 100, end: 116, bitmap: vec![0b1011_0110, 0xff] }),
            S::SortedArray(u32s(1000, &[0, 5, 70_000])),
            S::Array(u64s(&[9, 2, 1 << 40])),
        ]),
        seq(vec![S::RangeWithHoles(RangeWithHoles { start: 0, end: 1 << 40, holes: Some(u64s(&[7, 1 << 39])) })]),
    ]
}

/// `sample_batch` written by lancelet as one data file of `version`.
fn seed_data_file(version: FileVersion) -> Vec<u8> {
    let _g = store_lock();
    let mut batch = sample_batch();
    if version == FileVersion::V2_0 {
        // 2.0 does not encode a struct's own nulls.
        let keep: Vec<usize> = (0..batch.num_columns()).filter(|&i| batch.schema().field(i).name() != "st").collect();
        batch = batch.project(&keep).expect("projection");
    }
    let s = Storage::open("memory://lancelet-fuzz-seeds/f.lance").expect("memory store");
    let schema = crate::file::schema::LanceSchema::from_arrow(&batch.schema()).expect("schema");
    let mut w = FileWriter::create_with_lance_schema(s.clone(), schema, version).expect("writer");
    w.write(&batch).expect("write");
    w.finish().expect("finish");
    s.read_all().expect("read back").to_vec()
}

#[path = "fuzzing_tiledb.rs"]
mod tiledb_target;
pub use tiledb_target::tiledb_array;

#[path = "fuzzing_fsst.rs"]
mod fsst_target;
pub use fsst_target::fsst_decode;

#[path = "fuzzing_skip.rs"]
mod skip_target;
pub use skip_target::{bloomfilter_index, ngram_index, zonemap_index};

#[path = "fuzzing_fts.rs"]
mod fts_target;
pub use fts_target::fts_postings;

#[cfg(test)]
#[path = "fuzzing_tests.rs"]
mod tests;
