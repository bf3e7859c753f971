//! Namespace tests on in-memory and local roots (interop with pylance is
//! tested from Python, `tests/test_namespace*.py`).

use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};

use super::catalog::{self, NewRow};
use super::*;

fn root(name: &str) -> String {
    format!("memory://ns-{name}-{}/root", crate::ids::random_u64())
}

fn ids(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

fn data() -> (arrow_schema::SchemaRef, Vec<crate::Result<RecordBatch>>) {
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from(vec![1, 2, 3]))]).unwrap();
    (schema, vec![Ok(batch)])
}

fn create(ns: &DirectoryNamespace, id: &[String]) -> NsResult<(TableInfo, u64)> {
    let (schema, batches) = data();
    ns.create_table(id, None, CreateMode::Create, schema, batches.into_iter(), &Default::default())
}

#[test]
fn v2_lifecycle() {
    let ns = DirectoryNamespace::open(&root("v2"), &Default::default(), true, true).unwrap();
    ns.create_namespace(&ids(&["a"]), Some(r#"{"k":"v"}"#.into()), CreateMode::Create).unwrap();
    ns.create_namespace(&ids(&["a", "b"]), None, CreateMode::Create).unwrap();
    let (t, v) = create(&ns, &ids(&["a", "b", "t"])).unwrap();
    assert_eq!(v, 1);
    assert!(t.location.ends_with("_a$b$t") && t.location.len() == 9 + 5);
    let (r, _) = create(&ns, &ids(&["r"])).unwrap();
    assert_eq!(r.location, "r.lance");
    assert!(!ns.root().child("r.lance/.lance-reserved").unwrap().exists().unwrap());
    assert_eq!(ns.list_namespaces(&[]).unwrap(), ids(&["a"]));
    assert_eq!(ns.list_tables(&ids(&["a", "b"]), true).unwrap(), ids(&["t"]));
    assert_eq!(ns.list_tables(&[], true).unwrap(), ids(&["r"]));
    assert!(matches!(ns.describe_namespace(&ids(&["a"])).unwrap(), Properties::Json(Some(j)) if j == r#"{"k":"v"}"#));
    assert!(matches!(create(&ns, &ids(&["a", "b", "t"])), Err(NsError::TableAlreadyExists(_))));
    assert!(matches!(create(&ns, &ids(&["zz", "t"])), Err(NsError::NamespaceNotFound(_))));
    assert!(matches!(ns.drop_namespace(&ids(&["a"]), false, false), Err(NsError::NamespaceNotEmpty(_))));
    ns.rename_table(&ids(&["a", "b", "t"]), Some(&ids(&["a"])), "u").unwrap();
    assert_eq!(ns.describe_table(&ids(&["a", "u"]), true).unwrap().only_declared, Some(false));
    ns.drop_table(&ids(&["a", "u"])).unwrap();
    assert!(!ns.root().child(&t.location).unwrap().has_objects().unwrap());
    assert!(matches!(ns.drop_table(&ids(&["a", "u"])), Err(NsError::TableNotFound(_))));
    ns.drop_namespace(&ids(&["a", "b"]), false, false).unwrap();
    ns.drop_namespace(&ids(&["a"]), false, false).unwrap();
    ns.drop_namespace(&ids(&["a"]), true, false).unwrap();
    assert!(matches!(ns.drop_namespace(&ids(&["a"]), false, false), Err(NsError::NamespaceNotFound(_))));
}

#[test]
fn stale_commits_conflict_instead_of_rebasing() {
    let ns = DirectoryNamespace::open(&root("stale"), &Default::default(), true, true).unwrap();
    ns.create_namespace(&ids(&["a"]), None, CreateMode::Create).unwrap();
    let stale = ns.snapshot().unwrap();
    ns.create_namespace(&ids(&["b"]), None, CreateMode::Create).unwrap();
    // An Append decided on the old version must not land on the new one.
    let add = [NewRow::namespace("c".into(), None)];
    assert!(matches!(catalog::commit(ns.root(), &stale, &[], &add), Err(crate::Error::Conflict { .. })));
    let i = stale.find("a", catalog::NAMESPACE).unwrap();
    assert!(matches!(catalog::commit(ns.root(), &stale, &[i], &[]), Err(crate::Error::Conflict { .. })));
    assert_eq!(ns.list_namespaces(&[]).unwrap(), ids(&["a", "b"]));
    // The first write races for version 1 the same way.
    let fresh = DirectoryNamespace::open(&root("first"), &Default::default(), true, true).unwrap();
    let empty = fresh.snapshot().unwrap();
    fresh.create_namespace(&ids(&["x"]), None, CreateMode::Create).unwrap();
    assert!(matches!(catalog::commit(fresh.root(), &empty, &[], &add), Err(crate::Error::Conflict { .. })));
}

#[test]
fn v1_never_writes_a_manifest() {
    let ns = DirectoryNamespace::open(&root("v1"), &Default::default(), false, true).unwrap();
    create(&ns, &ids(&["t"])).unwrap();
    ns.declare_table(&ids(&["d"]), None).unwrap();
    assert_eq!(ns.list_tables(&[], true).unwrap(), ids(&["d", "t"]));
    assert_eq!(ns.list_tables(&[], false).unwrap(), ids(&["t"]));
    ns.deregister_table(&ids(&["t"])).unwrap();
    assert!(ns.root().child("t.lance/.lance-deregistered").unwrap().exists().unwrap());
    assert!(matches!(ns.describe_table(&ids(&["t"]), false), Err(NsError::TableNotFound(_))));
    assert!(matches!(create(&ns, &ids(&["a", "b"])), Err(NsError::Core(crate::Error::Unsupported { .. }))));
    assert!(!ns.root().child("__manifest").unwrap().has_objects().unwrap());
}

#[test]
fn compat_rows_claim_their_directories() {
    let ns = DirectoryNamespace::open(&root("compat"), &Default::default(), true, true).unwrap();
    let v1 = DirectoryNamespace::open(ns.root_uri(), &Default::default(), false, true).unwrap();
    create(&v1, &ids(&["old"])).unwrap();
    ns.rename_table(&ids(&["old"]), None, "new").unwrap();
    assert_eq!(ns.list_tables(&[], true).unwrap(), ids(&["new"]));
    assert!(v1.list_tables(&[], true).unwrap().is_empty());
    assert_eq!(ns.describe_table(&ids(&["new"]), false).unwrap().location, "old.lance");
    // A later table named "old" must not reuse the occupied directory.
    let (t, _) = create(&ns, &ids(&["old"])).unwrap();
    assert!(t.location.ends_with("_old"));
    ns.deregister_table(&ids(&["new"])).unwrap();
    assert_eq!(ns.list_tables(&[], true).unwrap(), ids(&["old"]));
}

#[test]
fn names_are_checked_before_any_io() {
    let ns = DirectoryNamespace::open(&root("names"), &Default::default(), true, true).unwrap();
    for bad in [ids(&[".."]), ids(&["a/b"]), ids(&["a$b"]), ids(&[""]), ids(&[])] {
        assert!(matches!(create(&ns, &bad), Err(NsError::Core(crate::Error::InvalidInput { .. }))), "{bad:?}");
    }
    assert!(matches!(ns.register_table(&ids(&["t"]), "../x", None, false), Err(NsError::Core(crate::Error::InvalidInput { .. }))));
    assert!(!ns.root().has_objects().unwrap());
}

#[test]
fn s3_locations_are_percent_encoded_uris() {
    let ns = DirectoryNamespace {
        root: crate::io::Storage::open("memory://x/r").unwrap(),
        root_uri: "s3://bucket/some root".into(),
        manifest: true,
        dir_listing: true,
    };
    assert_eq!(ns.location_uri("1a2b3c4d_ns$t%#?"), "s3://bucket/some%20root/1a2b3c4d_ns$t%25%23%3F");
    let local = DirectoryNamespace::open("/tmp/x/../y", &Default::default(), true, true).unwrap();
    assert_eq!(local.location_uri("a b%.lance"), "/tmp/y/a b%.lance");
}
