//! Plans of scans as text: `Scanner.explain_plan()` and `analyze_plan()`.
//!
//! ```text
//! LanceletScan: uri=..., version=3, projection=[id, cat], num_fragments=3, row_id=false, row_addr=false, limit=None, offset=0, full_filter=id = 5, refine_filter=--
//!   ScalarIndexQuery: query=[id = 5]@id_idx(BTree)
//! ```
//!
//! The `ScalarIndexQuery` line is pylance's: the indexable part of the
//! filter, each leaf `[<predicate>]@<index name>(<BTree|Bitmap|LabelList>)`
//! under `AND(..)`, `OR(..)`, `NOT(..)`. `refine_filter` is what is still
//! evaluated on the rows the indices leave (`--` when they answer the whole
//! filter). `analyze_plan` runs the scan and adds what happened: rows out,
//! rows the indices selected and proved, fragments answered by indices and
//! scanned without them, and times.

use std::fmt::Write;
use std::time::Instant;

use crate::error::Result;
use crate::table::scan::Scanner;

fn header(s: &Scanner) -> String {
    let ds = s.dataset();
    let o = s.options();
    let projection: Vec<String> = s.schema().fields().iter().map(|f| f.name().clone()).filter(|n| n != "_rowid" && n != "_rowaddr").collect();
    let num_fragments = o.fragments.as_ref().map_or(ds.fragments().len(), |f| f.len());
    let filter = o.filter.as_ref().map(|f| f.text());
    let refine = match (&filter, s.index_selection()) {
        (None, _) => "--".to_string(),
        (Some(f), None) => f.clone(),
        (Some(f), Some(ix)) if ix.exact() => {
            let _ = f;
            "--".to_string()
        }
        (Some(f), Some(_)) => f.clone(),
    };
    format!(
        "LanceletScan: uri={}, version={}, projection=[{}], num_fragments={num_fragments}, row_id={}, row_addr={}, limit={}, offset={}, full_filter={}, refine_filter={refine}",
        ds.uri(),
        ds.version(),
        projection.join(", "),
        o.with_row_id,
        o.with_row_address,
        o.limit.map_or("None".to_string(), |l| l.to_string()),
        o.offset,
        filter.unwrap_or_else(|| "--".into()),
    )
}

/// The plan of a scan (nothing is read but index metadata).
pub fn explain(s: &Scanner, verbose: bool) -> Result<String> {
    let mut out = header(s);
    if let Some(ix) = s.index_selection() {
        write!(out, "\n  ScalarIndexQuery: query={}", ix.describe()).expect("string");
        if verbose {
            let ds = s.dataset();
            let (covered, rest): (Vec<u64>, Vec<u64>) = ds.fragments().iter().map(|f| f.id).partition(|id| ix.covers(*id));
            write!(out, "\n    fragments answered by indices: {covered:?}, scanned without them: {rest:?}").expect("string");
        }
    }
    out.push('\n');
    Ok(out)
}

/// Run the scan and report what happened.
pub fn analyze(s: &Scanner) -> Result<String> {
    let t0 = Instant::now();
    let mut rows = 0u64;
    let mut batches = 0u64;
    for b in s.stream()? {
        rows += b?.num_rows() as u64;
        batches += 1;
    }
    let scan_time = t0.elapsed();
    let mut out = String::new();
    write!(out, "AnalyzeExec: elapsed={scan_time:?}, metrics=[output_rows={rows}, output_batches={batches}]\n  {}", header(s)).expect("string");
    if let Some(ix) = s.index_selection() {
        let t1 = Instant::now();
        let ds = s.dataset();
        let (mut indexed, mut scanned, mut candidates, mut proven) = (0u64, 0u64, 0u64, 0u64);
        for i in 0..ds.fragments().len() {
            match ix.select(ds, i)? {
                Some(p) => {
                    indexed += 1;
                    candidates += p.maybe.iter().map(|r| r.end - r.start).sum::<u64>();
                    proven += p.sure.iter().map(|r| r.end - r.start).sum::<u64>();
                }
                None => scanned += 1,
            }
        }
        write!(
            out,
            "\n    ScalarIndexQuery: query={}, metrics=[rows_selected={candidates}, rows_proven={proven}, fragments_indexed={indexed}, fragments_scanned={scanned}, search_time={:?}]",
            ix.describe(),
            t1.elapsed()
        )
        .expect("string");
    }
    out.push('\n');
    Ok(out)
}
