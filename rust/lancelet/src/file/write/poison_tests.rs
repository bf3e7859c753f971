//! A writer whose write failed is poisoned: later calls fail naming the
//! first failure, and nothing (not even a staged upload) is left behind.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::error::Error;
use crate::file::{FileReader, FileVersion, FileWriter};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lancelet-poison-{name}-{}", crate::ids::new_uuid()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, true)]))
}

/// `n` random rows of 8 bytes (pages of them do not compress): 2M rows
/// are 16 MiB, past the size that starts a multipart upload (a staged file
/// next to the target).
fn ints(seed: u64, n: usize) -> RecordBatch {
    let mut rng = StdRng::seed_from_u64(seed);
    let a: ArrayRef = Arc::new(Int64Array::from_iter_values((0..n).map(|_| rng.random::<i64>())));
    RecordBatch::try_new(schema(), vec![a]).unwrap()
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn assert_poisoned(r: Result<impl std::fmt::Debug, Error>, first: &str) {
    match r {
        Err(Error::InvalidInput { what, .. }) => {
            assert!(what.contains("failed earlier") && what.contains(first), "{what}");
        }
        other => panic!("expected the poisoned writer's error naming {first:?}, got {other:?}"),
    }
}

/// A rejected batch after pages went to storage: the staged upload is
/// removed at once, every later write and `finish` fails naming the
/// rejection, and no file appears (each file version).
#[test]
fn a_failed_write_poisons_the_writer() {
    for version in [FileVersion::V2_0, FileVersion::V2_1, FileVersion::V2_2] {
        let dir = scratch("schema");
        let path = dir.join("f.lance");
        let mut w = FileWriter::create(path.to_str().unwrap(), &schema(), version).unwrap();
        w.write(&ints(0, 2 << 20)).unwrap();
        assert!(!files(&dir).is_empty(), "{version}: pages past a part size are staged");
        let bad = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("x", DataType::Utf8, true)])),
            vec![Arc::new(StringArray::from(vec!["a"])) as ArrayRef],
        )
        .unwrap();
        let err = w.write(&bad).unwrap_err();
        assert!(matches!(err, Error::InvalidInput { .. }), "{err:?}");
        assert_eq!(w.failure(), Some(err.to_string().as_str()));
        assert_eq!(files(&dir), Vec::<PathBuf>::new(), "{version}: the staged upload is removed when the write fails");
        assert_poisoned(w.write(&ints(0, 10)), "expected type Int64, got Utf8");
        assert_poisoned(w.add_global_buffer(bytes::Bytes::from_static(b"x")), "expected type Int64, got Utf8");
        assert_poisoned(w.finish(), "expected type Int64, got Utf8");
        assert_eq!(files(&dir), Vec::<PathBuf>::new(), "{version}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A storage failure in the middle of a write (the upload cannot start:
/// the parent "directory" is a file) after some of the batch's pages were
/// recorded. Once the path is writable again, a writer that kept going
/// would finish a file whose metadata lists pages that were never stored
/// and misses the rows of the failed write; a poisoned one refuses.
#[test]
fn a_storage_failure_mid_write_poisons_the_writer() {
    for version in [FileVersion::V2_0, FileVersion::V2_2] {
        let dir = scratch("io");
        let parent = dir.join("sub");
        std::fs::write(&parent, b"not a directory").unwrap();
        let path = parent.join("f.lance");
        let mut w = FileWriter::create(path.to_str().unwrap(), &schema(), version).unwrap();
        w.set_page_bytes(1 << 20);
        let err = w.write(&ints(0, 2 << 20)).unwrap_err();
        assert!(matches!(err, Error::Io { .. }), "{version}: {err:?}");
        std::fs::remove_file(&parent).unwrap();
        std::fs::create_dir(&parent).unwrap();
        assert_poisoned(w.write(&ints(7, 100)), "I/O error");
        assert_poisoned(w.finish(), "I/O error");
        assert_eq!(files(&dir), Vec::<PathBuf>::new(), "{version}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Writes that succeed are unaffected: the writer is not poisoned and the
/// file reads back.
#[test]
fn successful_writes_still_finish() {
    let dir = scratch("ok");
    let path = dir.join("f.lance");
    let mut w = FileWriter::create(path.to_str().unwrap(), &schema(), FileVersion::V2_2).unwrap();
    w.write(&ints(0, 10)).unwrap();
    w.write(&ints(10, 5)).unwrap();
    assert_eq!(w.failure(), None);
    w.finish().unwrap();
    let r = FileReader::open(path.to_str().unwrap()).unwrap();
    assert_eq!(r.num_rows(), 15);
    let _ = std::fs::remove_dir_all(&dir);
}
