//! The plan texts pylance 14 prints for nearest queries
//! (`explain_plan()`; docs/research/vector-index.md §11.1), rebuilt from
//! the query: DataFusion's node names and the column positions (`id@3`)
//! its schemas give, so that plans compare equal to pylance's.
//!
//! Flat search: a scan of the vector column (with the filter's columns
//! for a prefilter), `KNNVectorDistance`, the `distance_range` filter, the
//! top-k sort, the null-distance filter, the limit, then the takes of the
//! postfilter's and the projected columns. With an index: `ANNSubIndex` /
//! `ANNIvfPartition` (plus the prefilter's scan), the refine stage, and
//! the union with the flat search of unindexed fragments. Filters print as
//! DataFusion does for the simple forms (`col op literal` joined by
//! AND/OR, `IN` lists); other filters print as written.

use std::fmt::Write;

use arrow_schema::DataType;

use super::ann::{unindexed, IndexRoute};
use super::{NearestScan, Route, DISTANCE};
use crate::error::Result;
use crate::system_columns::ROW_ID;
use crate::table::dataset::Dataset;
use crate::table::search_output::PlanNode as Node;
use crate::table::search_output::{col_name, OutCol};

/// One token of a simple filter.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Num(String),
    Str(String),
    Op(String),
    Word(String),
    Punct(char),
}

fn tokens(sql: &str) -> Option<Vec<Tok>> {
    let c: Vec<char> = sql.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '\'' {
            let mut s = String::new();
            i += 1;
            while i < c.len() && c[i] != '\'' {
                s.push(c[i]);
                i += 1;
            }
            i += 1;
            out.push(Tok::Str(s));
        } else if ch.is_ascii_digit() || (ch == '-' && i + 1 < c.len() && c[i + 1].is_ascii_digit()) {
            let s0 = i;
            i += 1;
            while i < c.len() && (c[i].is_ascii_digit() || c[i] == '.') {
                i += 1;
            }
            out.push(Tok::Num(c[s0..i].iter().collect()));
        } else if ch.is_alphabetic() || ch == '_' {
            let s0 = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let w: String = c[s0..i].iter().collect();
            match w.to_ascii_uppercase().as_str() {
                "AND" | "OR" | "IN" => out.push(Tok::Word(w.to_ascii_uppercase())),
                _ => out.push(Tok::Ident(w)),
            }
        } else if "<>=!".contains(ch) {
            let s0 = i;
            while i < c.len() && "<>=!".contains(c[i]) {
                i += 1;
            }
            out.push(Tok::Op(c[s0..i].iter().collect()));
        } else if "(),".contains(ch) {
            out.push(Tok::Punct(ch));
            i += 1;
        } else {
            return None;
        }
    }
    Some(out)
}

/// A comparison `col op literal`.
struct Cmp {
    col: String,
    op: String,
    lit: Tok,
}

/// `[(joiner, comparison)]` of a filter made of comparisons and IN lists
/// joined by AND/OR (IN lists expand to ORs, as DataFusion prints them).
fn simple_filter(sql: &str) -> Option<Vec<(Option<String>, Cmp)>> {
    let t = tokens(sql)?;
    let mut out = Vec::new();
    let mut i = 0;
    let mut joiner = None;
    while i < t.len() {
        let Tok::Ident(col) = &t[i] else { return None };
        match t.get(i + 1)? {
            Tok::Op(op) => {
                let lit = t.get(i + 2)?.clone();
                if !matches!(lit, Tok::Num(_) | Tok::Str(_)) {
                    return None;
                }
                let op = if op == "==" {
                    "=".to_string()
                } else if op == "<>" {
                    "!=".to_string()
                } else {
                    op.clone()
                };
                out.push((joiner.take(), Cmp { col: col.clone(), op, lit }));
                i += 3;
            }
            Tok::Word(w) if w == "IN" => {
                if t.get(i + 2)? != &Tok::Punct('(') {
                    return None;
                }
                i += 3;
                let mut first = true;
                loop {
                    let lit = t.get(i)?.clone();
                    if !matches!(lit, Tok::Num(_) | Tok::Str(_)) {
                        return None;
                    }
                    let j = if first { joiner.take() } else { Some("OR".to_string()) };
                    out.push((j, Cmp { col: col.clone(), op: "=".into(), lit }));
                    first = false;
                    i += 1;
                    match t.get(i)? {
                        Tok::Punct(',') => i += 1,
                        Tok::Punct(')') => {
                            i += 1;
                            break;
                        }
                        _ => return None,
                    }
                }
            }
            _ => return None,
        }
        match t.get(i) {
            None => break,
            Some(Tok::Word(w)) if w == "AND" || w == "OR" => {
                joiner = Some(w.clone());
                i += 1;
            }
            _ => return None,
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The filter as DataFusion prints a logical expression (`full_filter=`):
/// `id > Int64(100)`.
pub(crate) fn logical_filter(ds: &Dataset, sql: &str) -> String {
    let Some(parts) = simple_filter(sql) else { return sql.to_string() };
    let mut s = String::new();
    for (j, c) in parts {
        if let Some(j) = j {
            let _ = write!(s, " {j} ");
        }
        let ty = ds.schema().field_with_name(&c.col).map(|f| f.data_type().clone()).unwrap_or(DataType::Null);
        let lit = match (&c.lit, &ty) {
            (Tok::Str(v), _) => format!("Utf8(\"{v}\")"),
            (Tok::Num(v), t) if t.is_integer() || t.is_floating() => format!("{t}({v})"),
            (Tok::Num(v), _) => format!("Int64({v})"),
            _ => String::new(),
        };
        let _ = write!(s, "{} {} {lit}", c.col, c.op);
    }
    s
}

/// The filter as DataFusion prints a physical expression (`FilterExec:`):
/// `id@3 > 100`.
pub(crate) fn physical_filter(sql: &str, schema: &[String]) -> String {
    let Some(parts) = simple_filter(sql) else { return sql.to_string() };
    let mut s = String::new();
    for (j, c) in parts {
        if let Some(j) = j {
            let _ = write!(s, " {j} ");
        }
        let lit = match &c.lit {
            Tok::Str(v) | Tok::Num(v) => v.clone(),
            _ => String::new(),
        };
        let _ = write!(s, "{} {} {lit}", col_ref(schema, &c.col), c.op);
    }
    s
}

fn col_ref(schema: &[String], name: &str) -> String {
    format!("{name}@{}", schema.iter().position(|n| n == name).unwrap_or(usize::MAX))
}

/// The data uri as pylance prints it (`tmp/ds/data`: no scheme, no
/// leading `/`).
pub(crate) fn data_uri(ds: &Dataset) -> String {
    let u = ds.uri();
    let u = u.strip_prefix("file://").unwrap_or(u);
    format!("{}/data", u.trim_start_matches('/').trim_end_matches('/'))
}

fn take(uri: &str, cols: &[String], child: Node) -> Node {
    Node::over(format!("LanceRead: uri={uri}, projection=[{}], source=stream(_rowid)", cols.join(", ")), child)
}

fn scan_node(uri: &str, cols: &[String], num_fragments: usize, filter: Option<&str>) -> Node {
    let f = filter.unwrap_or("--");
    Node::leaf(format!(
        "LanceRead: uri={uri}, projection=[{}], num_fragments={num_fragments}, range_before=None, range_after=None, row_id=true, row_addr=false, full_filter={f}, refine_filter={f}",
        cols.join(", ")
    ))
}

fn sort_node(k: usize, schema: &[String], child: Node) -> Node {
    Node::over(
        format!(
            "SortExec: TopK(fetch={k}), expr=[{} ASC NULLS LAST, {} ASC NULLS LAST], preserve_partitioning=[false]",
            col_ref(schema, DISTANCE),
            col_ref(schema, ROW_ID)
        ),
        child,
    )
}

fn not_null(schema: &[String], child: Node) -> Node {
    Node::over(format!("FilterExec: {} IS NOT NULL", col_ref(schema, DISTANCE)), child)
}

/// Dataset columns in schema order.
fn in_dataset_order(ds: &Dataset, names: &[String]) -> Vec<String> {
    ds.schema().fields().iter().map(|f| f.name().clone()).filter(|n| names.contains(n)).collect()
}

/// The plan text of a nearest query.
pub fn explain(ds: &std::sync::Arc<Dataset>, s: &NearestScan) -> Result<String> {
    let vc = s.validate(ds)?;
    let route = super::route(ds, s, &vc)?;
    let uri = data_uri(ds);
    let n = &s.nearest;
    let col = n.column.clone();
    let out_cols = s.out_cols(ds);
    let projected: Vec<String> = out_cols.iter().filter_map(|c| if let OutCol::Data(x) = c { Some(x.clone()) } else { None }).collect();
    let filter_sql = s.filter.as_ref().map(|f| f.text());
    let filter_cols: Vec<String> = s.filter.as_ref().map(|f| f.columns()).unwrap_or_default();
    let prefilter = s.prefilter && filter_sql.is_some();
    // (skip, fetch, top-k fetch) of a limit pushed into the index's top-k.
    let mut pushed: Option<(usize, usize, usize)> = None;
    let (mut node, mut schema) = match &route {
        Route::Flat { metric } => {
            let mut scan_cols = vec![col.clone()];
            if prefilter {
                scan_cols.extend(filter_cols.iter().cloned());
                scan_cols = in_dataset_order(ds, &scan_cols);
            }
            let full = filter_sql.as_deref().filter(|_| prefilter).map(|f| logical_filter(ds, f));
            let mut node = scan_node(&uri, &scan_cols, ds.fragments().len(), full.as_deref());
            if prefilter {
                node = Node::over(format!("FilterExec: {}", physical_filter(filter_sql.as_deref().unwrap_or(""), &scan_cols)), node);
            }
            if n.batch {
                let mut schema = vec!["query_index".to_string()];
                schema.extend(scan_cols.iter().filter(|c| **c != col || projected.contains(&col)).cloned());
                schema.push(ROW_ID.into());
                schema.push(DISTANCE.into());
                node = Node::over(format!("KNNVectorDistance: queries={}, k={}, metric={}", n.num_queries, n.k, metric.as_str()), node);
                (node, schema)
            } else {
                let mut schema = scan_cols.clone();
                schema.push(ROW_ID.into());
                schema.push(DISTANCE.into());
                node = Node::over(format!("KNNVectorDistance: metric={}", metric.as_str()), node);
                if let Some(r) = range_text(n.distance_range, &schema) {
                    node = Node::over(format!("FilterExec: {r}"), node);
                }
                node = not_null(&schema, sort_node(n.k, &schema, node));
                (node, schema)
            }
        }
        Route::Index(r) => {
            // A limit right above the index's top-k (no refine, no union,
            // no postfilter) is pushed into it, as DataFusion does.
            let plain = s.fast_search || unindexed(ds, r).is_empty();
            if plain && n.refine_factor.is_none() && (prefilter || filter_sql.is_none()) && (s.limit.is_some() || s.offset > 0) {
                let skip = s.offset as usize;
                let fetch = s.limit.map_or(n.k.saturating_sub(skip), |l| l as usize);
                let sort_fetch = if s.limit.is_some() { n.k.min(skip + fetch) } else { skip + fetch };
                pushed = Some((skip, fetch, sort_fetch));
            }
            index_plan(ds, s, r, &uri, prefilter, filter_sql.as_deref(), &filter_cols, pushed.map(|p| p.2))
        }
    };
    let limit = |node: Node| -> Node {
        if let Some((skip, fetch, _)) = pushed {
            if skip == 0 {
                return node;
            }
            return Node::over(format!("GlobalLimitExec: skip={skip}, fetch={fetch}"), node);
        }
        if s.limit.is_none() && s.offset == 0 {
            return node;
        }
        let fetch = s.limit.map_or("None".to_string(), |l| l.to_string());
        Node::over(format!("GlobalLimitExec: skip={}, fetch={fetch}", s.offset), node)
    };
    if let (Some(f), false) = (&filter_sql, prefilter) {
        let first: Vec<String> = in_dataset_order(ds, &filter_cols).into_iter().filter(|c| !schema.contains(c)).collect();
        if !first.is_empty() {
            schema.extend(first.iter().cloned());
            node = take(&uri, &first, node);
        }
        node = limit(Node::over(format!("FilterExec: {}", physical_filter(f, &schema)), node));
    } else {
        node = limit(node);
    }
    let rest: Vec<String> = in_dataset_order(ds, &projected).into_iter().filter(|c| !schema.contains(c)).collect();
    if !rest.is_empty() {
        schema.extend(rest.iter().cloned());
        node = take(&uri, &rest, node);
    }
    let mut exprs = Vec::new();
    if n.batch {
        exprs.push(format!("{} as query_index", col_ref(&schema, "query_index")));
    }
    for c in &out_cols {
        let name = col_name(c, DISTANCE);
        exprs.push(format!("{} as {name}", col_ref(&schema, name)));
    }
    let root = Node::over(format!("ProjectionExec: expr=[{}]", exprs.join(", ")), node);
    let mut out = String::new();
    root.render(0, &mut out);
    Ok(out)
}

fn range_text(range: (Option<f32>, Option<f32>), schema: &[String]) -> Option<String> {
    let d = col_ref(schema, DISTANCE);
    match range {
        (None, None) => None,
        (Some(lo), None) => Some(format!("{d} >= {lo}")),
        (None, Some(hi)) => Some(format!("{d} < {hi}")),
        (Some(lo), Some(hi)) => Some(format!("{d} >= {lo} AND {d} < {hi}")),
    }
}

/// The ANN part of the plan and its output schema (`sort_fetch`: a limit
/// pushed into the index's top-k).
#[allow(clippy::too_many_arguments)]
fn index_plan(
    ds: &Dataset,
    s: &NearestScan,
    r: &IndexRoute,
    uri: &str,
    prefilter: bool,
    filter_sql: Option<&str>,
    filter_cols: &[String],
    sort_fetch: Option<usize>,
) -> (Node, Vec<String>) {
    let n = &s.nearest;
    let col = n.column.clone();
    let rest = if s.fast_search { Vec::new() } else { unindexed(ds, r) };
    let merge_flat = !rest.is_empty();
    let refine = n.refine_factor;
    let k_index = n.k * refine.map_or(1, |f| f.max(1) as usize);
    let deltas = r.segments.len();
    let maxp = n.probes.maximum.map_or("None".to_string(), |m| format!("Some({m})"));
    let mut ann = Node::over(
        format!("ANNSubIndex: name={}, k={k_index}, deltas={deltas}, metric={}", r.name, r.metric.plan_name()),
        Node::leaf(format!(
            "ANNIvfPartition: uuid={}, minimum_nprobes={}, maximum_nprobes={maxp}, deltas={deltas}",
            r.uuid(),
            n.probes.minimum.unwrap_or(1)
        )),
    );
    if prefilter {
        let f = logical_filter(ds, filter_sql.unwrap_or(""));
        let covered = ds.fragments().iter().filter(|f| u32::try_from(f.id).is_ok_and(|i| r.covered.contains(i))).count();
        ann.push(Node::leaf(format!(
            "LanceRead: uri={uri}, projection=[], num_fragments={covered}, range_before=None, range_after=None, row_id=true, row_addr=false, full_filter={f}, refine_filter={f}"
        )));
    }
    let ann_schema = vec![DISTANCE.to_string(), ROW_ID.to_string()];
    let ann = sort_node(sort_fetch.unwrap_or(k_index), &ann_schema, ann);
    // With refine_factor: the candidates' vectors, exact distances, top k;
    // the schema is then [_rowid, vec, _distance].
    let refined = |ann: Node| -> Node {
        let node = take(uri, std::slice::from_ref(&col), ann);
        let schema = [ROW_ID.to_string(), col.clone(), DISTANCE.to_string()];
        let node = Node::over(format!("KNNVectorDistance: metric={}", r.metric.as_str()), node);
        not_null(&schema, sort_node(n.k, &schema, node))
    };
    if merge_flat {
        // (a) flat top-k of the unindexed fragments, (b) the index's k
        // candidates with their vectors; exact distances of the union.
        let mut scan_cols = vec![col.clone()];
        if prefilter {
            scan_cols.extend(filter_cols.iter().cloned());
        }
        let mut flat_schema = scan_cols.clone();
        flat_schema.push(ROW_ID.into());
        flat_schema.push(DISTANCE.into());
        let mut flat = Node::leaf(format!(
            "LanceScan: uri={uri}, projection=[{}], row_id=true, row_addr=false, ordered=false, range=None",
            scan_cols.join(", ")
        ));
        if prefilter {
            flat = Node::over(format!("FilterExec: {}", physical_filter(filter_sql.unwrap_or(""), &flat_schema)), flat);
        }
        flat = Node::over(format!("KNNVectorDistance: metric={}", r.metric.as_str()), flat);
        flat = not_null(&flat_schema, sort_node(n.k, &flat_schema, flat));
        // The flat branch is projected to the index branch's schema.
        let order: Vec<&str> = if refine.is_some() { vec![ROW_ID, &col, DISTANCE] } else { vec![DISTANCE, ROW_ID, &col] };
        let exprs: Vec<String> = order.iter().map(|c| format!("{} as {c}", col_ref(&flat_schema, c))).collect();
        let flat = Node::over(format!("ProjectionExec: expr=[{}]", exprs.join(", ")), flat);
        let indexed = if refine.is_some() { refined(ann) } else { take(uri, std::slice::from_ref(&col), ann) };
        let union = Node::with_children("UnionExec".into(), vec![flat, indexed]);
        // The union is [_distance, _rowid, vec]; the exact distance
        // replaces `_distance` at the end.
        let schema = vec![ROW_ID.to_string(), col.clone(), DISTANCE.to_string()];
        let node = Node::over(format!("KNNVectorDistance: metric={}", r.metric.as_str()), Node::over("CoalescePartitionsExec".into(), union));
        return (not_null(&schema, sort_node(n.k, &schema, node)), schema);
    }
    if refine.is_some() {
        return (refined(ann), vec![ROW_ID.to_string(), col.clone(), DISTANCE.to_string()]);
    }
    (ann, ann_schema)
}
