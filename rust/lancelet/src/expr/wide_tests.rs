//! Wide and deep filters: long `IN` lists and `AND`/`OR` chains work on any
//! thread, absurd nesting is refused, and `IN` agrees with `OR` of `=`.

use std::sync::Arc;

use arrow_array::*;
use arrow_schema::{DataType, Field, Schema};
use proptest::prelude::*;

use super::*;
use crate::error::Error;
use crate::file::stats::GroupStats;

fn ids(n: i64) -> RecordBatch {
    let schema = Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("f", DataType::Float64, true),
        Field::new("u8", DataType::UInt8, true),
    ]);
    let id: Int64Array = (0..n).map(|i| if i % 97 == 13 { None } else { Some(i) }).collect();
    let s: StringArray = (0..n).map(|i| Some(format!("k{}", i % 1000))).collect();
    let f: Float64Array = (0..n).map(|i| Some(if i % 50 == 0 { f64::NAN } else { i as f64 / 2.0 })).collect();
    let u: UInt8Array = (0..n).map(|i| Some((i % 256) as u8)).collect();
    RecordBatch::try_new(Arc::new(schema), vec![Arc::new(id), Arc::new(s), Arc::new(f), Arc::new(u)]).unwrap()
}

fn count(sql: &str, b: &RecordBatch) -> usize {
    let f = SqlFilter::new(sql, &b.schema()).unwrap_or_else(|e| panic!("{}: {e}", &sql[..sql.len().min(80)]));
    f.evaluate(b).unwrap().true_count()
}

fn refused(sql: &str) -> String {
    let b = ids(10);
    match SqlFilter::new(sql, &b.schema()) {
        Err(e @ Error::InvalidInput { .. }) => e.to_string(),
        other => panic!("expected InvalidInput, got {other:?}"),
    }
}

fn list(n: i64) -> String {
    (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
}

/// Run `f` on a thread with a small stack (smaller than rayon's, Python's
/// or Spark's worker threads get), so a deep recursion would crash here.
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new().stack_size(256 * 1024).spawn(f).unwrap().join().unwrap()
}

#[test]
fn in_list_of_2000_and_100000() {
    let b = ids(20_000);
    let expected = (0..2000).filter(|i| i % 97 != 13).count();
    assert_eq!(count(&format!("id IN ({})", list(2000)), &b), expected);
    let expected = (0..20_000).filter(|i| i % 97 != 13).count();
    let sql = format!("id IN ({})", list(100_000));
    assert_eq!(on_small_stack(move || count(&sql, &ids(20_000))), expected);
    assert_eq!(count(&format!("id NOT IN ({})", list(100_000)), &b), 0);
    let strings = (0..100_000).map(|i| format!("'k{i}'")).collect::<Vec<_>>().join(",");
    assert_eq!(count(&format!("s IN ({strings})"), &b), 20_000);
}

#[test]
fn or_and_chains_of_100000_terms() {
    let b = ids(5_000);
    let or = (0..100_000).map(|i| format!("id = {i}")).collect::<Vec<_>>().join(" OR ");
    let expected = (0..5000).filter(|i| i % 97 != 13).count();
    assert_eq!(on_small_stack(move || count(&or, &ids(5_000))), expected);
    let and = (0..100_000).map(|i| format!("id <> {}", i + 10)).collect::<Vec<_>>().join(" AND ");
    assert_eq!(count(&and, &b), (0..10).filter(|i| i % 97 != 13).count());
    // a delete-style mix: (a AND b) OR (c AND d) OR ...
    let mix = (0..20_000).map(|i| format!("(id = {i} AND u8 = {})", i % 256)).collect::<Vec<_>>().join(" OR ");
    assert_eq!(count(&mix, &b), expected);
}

#[test]
fn absurd_nesting_is_refused() {
    let deep = 10_000;
    let parens = format!("{}id > 5{}", "(".repeat(deep), ")".repeat(deep));
    let nots = format!("{}id > 5", "NOT ".repeat(deep));
    let minus = format!("{}id > 5", "- ".repeat(deep)); // "--" would start a comment
    let arith = format!("id{} > 5", " + 1".repeat(deep));
    let cmp = format!("id > 5{}", " = true".repeat(deep));
    let mixed = format!("{}id > 5{}", "(NOT ".repeat(deep), ")".repeat(deep));
    let func = format!("{}s{} = 'a'", "lower(".repeat(deep), ")".repeat(deep));
    for sql in [parens, nots, minus, arith, cmp, mixed, func] {
        let e = on_small_stack(move || refused(&sql));
        assert!(e.contains("nests more than 128 levels"), "{e}");
        assert!(e.len() < 1000, "the message quotes the filter shortened: {e}");
    }
}

#[test]
fn deepest_accepted_filter_runs_on_a_small_stack() {
    // Every kind of nesting up to the limit, planned, folded, evaluated and
    // pruned on a 256 KiB stack.
    let depth = (MAX_DEPTH - 2) as usize;
    let cases = vec![
        format!("{}id > 5{}", "(NOT ".repeat(depth / 2), ")".repeat(depth / 2)),
        format!("id{} > 5", " + 1".repeat(depth)),
        format!("{}id{} > 5", "abs(".repeat(depth), ")".repeat(depth)),
        // each repetition nests three levels: two parentheses and the OR
        format!("{}id > 5{}", "(id < 0 OR (".repeat(depth / 3), "))".repeat(depth / 3)),
        format!("id IN ({}1{})", "(".repeat(depth - 1), ")".repeat(depth - 1)),
    ];
    for sql in cases {
        let n = on_small_stack(move || {
            let b = ids(1000);
            let f = SqlFilter::new(&sql, &b.schema()).unwrap_or_else(|e| panic!("{e}"));
            let stats = |_: &str| -> Option<GroupStats> { None };
            let _ = f.prune(&stats, 1000);
            f.evaluate(&b).unwrap().true_count()
        });
        assert!(n <= 1000);
    }
}

#[test]
fn in_semantics() {
    let b = ids(300);
    // nulls: x null -> null; not found with a null in the list -> null
    assert_eq!(count("id IN (1, 2, NULL)", &b), 2);
    assert_eq!(count("id NOT IN (1, 2, NULL)", &b), 0);
    assert_eq!(count(&format!("id NOT IN ({}, NULL)", list(50)), &b), 0);
    assert_eq!(count(&format!("id IN ({}, NULL)", list(50)), &b), 49);
    assert_eq!(count("(id IN (1, NULL)) IS NULL", &b), 300 - 1);
    // NaN equals NaN (Arrow's total order), as with `=`
    assert_eq!(count("f IN (0.5, 'NaN'::double)", &b), count("f = 0.5 OR f = 'NaN'::double", &b));
    // coercion per item: 2.5 needs id as a double, 300 does not fit u8
    assert_eq!(count("id IN (1, 2.5, 3.0)", &b), 2);
    assert_eq!(count("u8 IN (1, 300, 255)", &b), 3);
    assert_eq!(count(&format!("u8 IN ({})", list(1000)), &b), 300);
    // items that are not literals
    assert_eq!(count("id IN (u8, 1000)", &b), count("id = u8", &b));
    assert_eq!(count("1 IN (1, 2)", &b), 300);
    assert_eq!(count("NULL IN (1, 2)", &b), 0);
    // duplicates
    assert_eq!(count("id IN (5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5)", &b), 1);
    // errors name the item
    let e = refused("id IN (1, 'x')");
    assert!(e.contains("cannot convert the literal x"), "{e}");
    assert!(refused("id IN ()").contains("at least one value"));
    assert!(refused("id IN (SELECT 1)").contains("unsupported subquery"));
}

/// `x IN (list)` equals `x = v1 OR x = v2 ...` for every list size (both
/// sides of the small/hashed threshold) and type.
fn agree(col: &str, values: &[String], b: &RecordBatch) {
    let list = values.join(", ");
    let or = values.iter().map(|v| format!("{col} = {v}")).collect::<Vec<_>>().join(" OR ");
    let (fin, fnot) = (
        SqlFilter::new(&format!("{col} IN ({list})"), &b.schema()).unwrap(),
        SqlFilter::new(&format!("{col} NOT IN ({list})"), &b.schema()).unwrap(),
    );
    let (f_or, f_nor) = (SqlFilter::new(&or, &b.schema()).unwrap(), SqlFilter::new(&format!("NOT ({or})"), &b.schema()).unwrap());
    let raw = |f: &SqlFilter| eval::evaluate_predicate(f.expr(), b).unwrap();
    assert_eq!(raw(&fin), raw(&f_or), "{col} IN ({list})");
    assert_eq!(raw(&fnot), raw(&f_nor), "{col} NOT IN ({list})");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn in_equals_or_chain(ints in prop::collection::vec(-5i64..400, 1..40), floats in prop::collection::vec(0u32..300, 1..20),
                          strs in prop::collection::vec(0u32..1200, 1..30), with_null in any::<bool>()) {
        let b = ids(400);
        let mut ints: Vec<String> = ints.iter().map(|i| i.to_string()).collect();
        let mut strs: Vec<String> = strs.iter().map(|i| format!("'k{i}'")).collect();
        if with_null {
            ints.push("NULL".into());
            strs.push("NULL".into());
        }
        agree("id", &ints, &b);
        agree("u8", &ints, &b);
        agree("s", &strs, &b);
        let floats: Vec<String> = floats.iter().map(|f| format!("{}", *f as f64 / 2.0)).collect();
        agree("f", &floats, &b);
    }
}

#[test]
fn filters_planned_from_many_threads_at_once() {
    // One planning thread serves every caller: answers reach the thread
    // that asked, errors included, with callers on small stacks.
    let handles: Vec<_> = (0..8)
        .map(|t| {
            std::thread::Builder::new()
                .stack_size(256 << 10)
                .spawn(move || {
                    let b = ids(300);
                    for k in 0..40 {
                        let n = (t * 40 + k) % 300;
                        let want = (0..n).filter(|i| i % 97 != 13).count(); // ids() has nulls
                        assert_eq!(count(&format!("id < {n}"), &b), want, "thread {t}");
                        let bad = SqlFilter::new(&format!("nope_{t}_{k} = 1"), &b.schema()).expect_err("unknown column");
                        assert!(bad.to_string().contains(&format!("nope_{t}_{k}")), "{bad}");
                    }
                })
                .unwrap()
        })
        .collect();
    handles.into_iter().for_each(|h| h.join().unwrap());
}
