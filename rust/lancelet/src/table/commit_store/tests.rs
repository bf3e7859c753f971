//! The commit protocol step by step, on an in-memory bucket with an
//! in-memory manifest store (`memory+store://`): a writer that dies after
//! any step leaves a dataset that opens, and the next commit succeeds.

use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};

use super::*;
use crate::error::Error;
use crate::ids::random_u64;
use crate::table::dataset::{Dataset, VersionRef};
use crate::table::hooks::{install, FailHook};
use crate::table::manifest::{list_versions, read_manifest};
use crate::table::scan::{ScanOptions, Scanner};
use crate::table::write::{write_dataset, WriteMode, WriteParams};

fn batch(ids: std::ops::Range<i64>) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
    RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from_iter_values(ids))]).unwrap()
}

fn write(uri: &str, ids: std::ops::Range<i64>, mode: WriteMode) -> crate::error::Result<u64> {
    let b = batch(ids);
    let p = WriteParams { mode, ..Default::default() };
    write_dataset(uri, b.schema(), vec![Ok(b)].into_iter(), &p, &Default::default()).map(|c| c.dataset.version())
}

fn count(uri: &str, version: Option<u64>) -> u64 {
    let ds = Dataset::open(uri, version.map(VersionRef::Number)).unwrap();
    Scanner::new(Arc::new(ds), ScanOptions::default()).unwrap().count_rows().unwrap()
}

fn fresh(name: &str) -> String {
    format!("memory+store://{name}-{}/p/d", random_u64())
}

fn store_of(uri: &str) -> (Storage, Arc<dyn ManifestStore>) {
    let root = Storage::open(uri).unwrap();
    let store = root.manifest_store().unwrap().clone();
    (root, store)
}

fn files(root: &Storage) -> Vec<String> {
    let mut v: Vec<String> = root.child(VERSIONS_DIR).unwrap().list().unwrap().into_iter().map(|(n, _)| n).collect();
    v.sort();
    v
}

#[test]
fn staging_names() {
    assert_eq!(final_name_of("18446744073709551614.manifest-9a5b6b3b-9a34-41d4-ba89-fcba4aeab3e2"), Some("18446744073709551614.manifest"));
    assert_eq!(final_name_of("18446744073709551614.manifest"), None);
    assert_eq!(final_name_of("x.manifest-1"), None);
}

/// Commits go through the store: one item per version, final paths, the
/// size of the final manifest, no staging file left, no hint file.
#[test]
fn commits_leave_final_items() {
    let uri = fresh("final");
    assert_eq!(write(&uri, 0..10, WriteMode::Create).unwrap(), 1);
    assert_eq!(write(&uri, 10..15, WriteMode::Append).unwrap(), 2);
    let (root, store) = store_of(&uri);
    let items = store.list("p/d").unwrap();
    assert_eq!(items.iter().map(|i| i.version).collect::<Vec<_>>(), [1, 2]);
    for i in &items {
        let name = ManifestNaming::V2.file_name(i.version);
        assert_eq!(i.path, format!("p/d/_versions/{name}"));
        assert_eq!(i.size, Some(root.child(&format!("{VERSIONS_DIR}/{name}")).unwrap().size().unwrap()));
    }
    assert_eq!(files(&root), [ManifestNaming::V2.file_name(2), ManifestNaming::V2.file_name(1)]);
    assert_eq!(count(&uri, None), 15);
    assert_eq!(count(&uri, Some(1)), 10);
}

/// The store decides: a manifest written around the store is not part of
/// the history, and a version whose item still points at its staging
/// manifest is finished by the next reader.
#[test]
fn the_store_decides_the_latest_version() {
    let uri = fresh("decides");
    write(&uri, 0..10, WriteMode::Create).unwrap();
    write(&uri, 10..12, WriteMode::Append).unwrap();
    let (root, store) = store_of(&uri);
    let (name2, name3) = (ManifestNaming::V2.file_name(2), ManifestNaming::V2.file_name(3));
    let v2 = read_manifest(&root, &name2).unwrap().bytes;
    // A manifest of version 3 put down without the store: ignored.
    root.child(&format!("{VERSIONS_DIR}/{name3}")).unwrap().write_all(v2.clone()).unwrap();
    assert_eq!(list_versions(&root).unwrap().iter().map(|l| l.version).collect::<Vec<_>>(), [1, 2]);
    // Version 2 as a writer that died right after its claim leaves it.
    root.child(&format!("{VERSIONS_DIR}/{name2}")).unwrap().delete().unwrap();
    let staged = stage(&root, 2, ManifestNaming::V2, v2.clone()).unwrap();
    store.finalize("p/d", &staged).unwrap();
    assert_eq!(count(&uri, None), 12);
    assert_eq!(store.latest("p/d").unwrap().unwrap().path, format!("p/d/_versions/{name2}"));
    assert!(files(&root).iter().all(|f| final_name_of(f).is_none()), "{:?}", files(&root));
    assert_eq!(write(&uri, 12..14, WriteMode::Append).unwrap(), 3);
    assert_eq!(count(&uri, None), 14);
    assert_eq!(count(&uri, Some(2)), 12);
    // A claim of a taken version deletes its own staging file only.
    let late = stage(&root, 3, ManifestNaming::V2, v2).unwrap();
    assert!(!claim(&root, store.as_ref(), &late).unwrap());
    assert!(files(&root).iter().all(|f| final_name_of(f).is_none()), "{:?}", files(&root));
    assert_eq!(count(&uri, None), 14);
}

/// A writer killed after each step of the protocol: the dataset opens at
/// the version the store holds (finishing it when needed), both versions
/// read, and the next commit succeeds with no gap.
#[test]
fn a_writer_dying_at_any_step_leaves_a_usable_dataset() {
    let steps = ["staging_manifest", "store_put", "store_copy", "store_finalize", "store_delete_staging"];
    for (i, at) in steps.iter().enumerate() {
        let uri = fresh(&format!("dies-{at}"));
        write(&uri, 0..10, WriteMode::Create).unwrap();
        let died = at.to_string();
        let hook: FailHook = Arc::new(move |s: &str| if s == died { Err(Error::io("test", format!("killed before {s}"))) } else { Ok(()) });
        let guard = install(&uri, hook);
        let r = write(&uri, 10..15, WriteMode::Append);
        drop(guard);
        let committed = i >= 2;
        assert_eq!(r.is_ok(), committed, "{at}: {r:?}");
        let (root, store) = store_of(&uri);
        let latest = store.latest("p/d").unwrap().unwrap();
        assert_eq!(latest.version, if committed { 2 } else { 1 }, "{at}");
        // Before the claim only orphans (a staging file nobody points at)
        // can be left; after it, the item may still point at staging.
        assert_eq!(
            final_name_of(latest.path.rsplit('/').next().unwrap()).is_some(),
            *at == "store_copy" || *at == "store_finalize",
            "{at}: {latest:?}"
        );
        // A reader opens it (finishing the commit) ...
        let expect = if committed { 15 } else { 10 };
        assert_eq!(count(&uri, None), expect, "{at}");
        let latest = store.latest("p/d").unwrap().unwrap();
        assert_eq!(latest.path, format!("p/d/{VERSIONS_DIR}/{}", ManifestNaming::V2.file_name(latest.version)), "{at}");
        assert_eq!(count(&uri, Some(1)), 10);
        // ... and the next commit succeeds, with no gap.
        let next = write(&uri, 100..101, WriteMode::Append).unwrap();
        assert_eq!(next, latest.version + 1, "{at}");
        assert_eq!(count(&uri, None), expect + 1);
        assert_eq!(list_versions(&root).unwrap().iter().map(|l| l.version).collect::<Vec<_>>(), (1..=next).collect::<Vec<_>>());
        assert_eq!(store.list("p/d").unwrap().len() as u64, next);
    }
}

/// Finishing is idempotent and safe to race: a second finisher of the same
/// item, after the first deleted the staging file, just reports the final
/// name; an item pointing at a manifest that exists nowhere is a typed
/// error, not a panic, and a commit over it fails without changing it.
#[test]
fn finishing_twice_and_missing_manifests() {
    let uri = fresh("twice");
    write(&uri, 0..3, WriteMode::Create).unwrap();
    let (root, store) = store_of(&uri);
    let bytes = read_manifest(&root, &ManifestNaming::V2.file_name(1)).unwrap().bytes;
    let item = stage(&root, 2, ManifestNaming::V2, bytes.clone()).unwrap();
    assert!(claim(&root, store.as_ref(), &item).unwrap());
    let name = ManifestNaming::V2.file_name(2);
    assert_eq!(finish(&root, store.as_ref(), &item).unwrap(), name);
    assert_eq!(finish(&root, store.as_ref(), &item).unwrap(), name);
    assert_eq!(store.latest("p/d").unwrap().unwrap().path, format!("p/d/_versions/{name}"));

    // Version 3 claimed, then its staging file lost.
    let item = stage(&root, 3, ManifestNaming::V2, bytes).unwrap();
    assert!(claim(&root, store.as_ref(), &item).unwrap());
    root.child(&relative(&root, store.as_ref(), &item).unwrap()).unwrap().delete().unwrap();
    let e = Dataset::open(&uri, None).map(|d| d.version()).unwrap_err();
    assert!(matches!(&e, Error::NotFound { what, .. } if what.contains("version 3") && what.contains("does not exist")), "{e:?}");
    let e = write(&uri, 3..4, WriteMode::Append).unwrap_err();
    assert!(matches!(e, Error::NotFound { .. }), "{e:?}");
    assert_eq!(store.list("p/d").unwrap().len(), 3);
    // An item pointing outside the dataset is corrupt.
    let bad = StoreItem { version: 4, path: "elsewhere/_versions/x.manifest".into(), size: None };
    assert!(matches!(relative(&root, store.as_ref(), &bad), Err(Error::Corrupt { .. })));
}
