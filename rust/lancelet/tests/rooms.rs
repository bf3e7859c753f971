//! The rooms of the crate and their order (docs/architecture.md, "Rooms"):
//! a module may use the leaves and the rooms below its own, never one
//! above. This test reads every source file's `crate::…` and `super::…`
//! paths (outside test code) and fails on a path that reaches up, so the
//! drawing stays true without a reviewer.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// Rooms from the bottom up; rooms in one entry are peers (neither may use
/// the other). Leaves (rank 0) import nothing above the leaves.
const ROOMS: &[&[&str]] = &[
    &["error", "proto", "process", "ids", "hashing", "system_columns", "float_order"],
    &["io"],
    &["encoding"],
    &["file"],
    &["index"],
    &["expr"],
    &["table"],
    &["namespace", "tiledb"],
    // Test and fuzzing entry points: built only for tests or `--features fuzzing`.
    &["fuzzing", "fuzzing_tests", "fuzzing_tiledb", "fuzzing_fsst", "fuzzing_skip", "fuzzing_fts", "testdata"],
];

/// Crate-root re-exports and where they live.
const ROOT_ITEMS: &[(&str, &str)] = &[("Error", "error"), ("Result", "error"), ("corrupt", "error"), ("unsupported", "error")];

fn rank(room: &str) -> Option<usize> {
    ROOMS.iter().position(|r| r.contains(&room))
}

/// Drop comments and the contents of string literals (paths in them are
/// text, not dependencies).
fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if b[i] == b'"' && !(i > 0 && b[i - 1] == b'\'') {
            out.push('"');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            out.push('"');
            i += 1;
        } else {
            let c = src[i..].chars().next().expect("in bounds");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Remove `#[cfg(test)] mod name { … }` blocks; return the names of
/// `#[cfg(test)] mod name;` declarations (files that are test code).
fn cut_tests(src: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut test_files = Vec::new();
    let mut rest = src;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        let decl = after.trim_start();
        let decl = decl.strip_prefix("pub(crate) ").or_else(|| decl.strip_prefix("pub ")).unwrap_or(decl);
        if let Some(m) = decl.strip_prefix("mod ") {
            let name: String = m.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            let tail = m[name.len()..].trim_start();
            if let Some(after_decl) = tail.strip_prefix(';') {
                test_files.push(name);
                rest = after_decl;
                continue;
            }
            if tail.starts_with('{') {
                let mut depth = 0usize;
                let mut end = tail.len();
                for (i, c) in tail.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = i + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                rest = &tail[end..];
                continue;
            }
        }
        // Some other item under cfg(test): its paths are test code too, but
        // it cannot be cut safely without a parser; keep it.
        out.push_str("#[cfg(test)]");
        rest = after;
    }
    out.push_str(rest);
    (out, test_files)
}

fn ident_at(s: &str) -> &str {
    let end = s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

/// The first module named by every `crate::` path (grouped imports too)
/// and by every `super::` path resolved against `module` (the file's
/// module path). Macros (`crate::name!`) are skipped.
fn targets(code: &str, module: &[String]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        if at > 0 && code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$') {
            continue; // `lancelet_crate::`, `$crate::`
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The group runs to its matching brace (groups nest).
            let mut depth = 1usize;
            let end = group
                .char_indices()
                .find(|&(_, c)| {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        _ => {}
                    }
                    depth == 0
                })
                .map_or(group.len(), |(i, _)| i);
            let body = &group[..end];
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in body.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        push(&mut out, body[start..i].trim());
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            push(&mut out, body[start..].trim());
        } else {
            let name = ident_at(rest);
            if !rest[name.len()..].starts_with('!') {
                push(&mut out, name);
            }
        }
    }
    for (at, _) in code.match_indices("super::") {
        if at > 0 && code[..at].ends_with("super::") || code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue; // counted from the first `super::` of a chain
        }
        let mut n = 0;
        let mut rest = &code[at..];
        while let Some(r) = rest.strip_prefix("super::") {
            n += 1;
            rest = r;
        }
        if n > module.len() {
            continue;
        }
        let base = &module[..module.len() - n];
        match base.first() {
            Some(room) => {
                out.insert(room.clone());
            }
            None => push(&mut out, ident_at(rest)),
        }
    }
    out
}

fn push(out: &mut BTreeSet<String>, item: &str) {
    let name = ident_at(item);
    if name.is_empty() || name == "self" {
        return;
    }
    let room = ROOT_ITEMS.iter().find(|(n, _)| *n == name).map(|(_, r)| *r).unwrap_or(name);
    out.insert(room.to_string());
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).expect("readable source dir") {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a source file (`table/ops/delete.rs` →
/// `[table, ops, delete]`; `mod.rs` and `lib.rs` name their directory).
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel.with_extension("").iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod") | Some("lib")) {
        parts.pop();
    }
    parts
}

#[test]
fn no_room_uses_one_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    all.sort();
    // Files that are test code: declared under #[cfg(test)] by their parent.
    let mut test_files: BTreeSet<PathBuf> = BTreeSet::new();
    let mut texts = Vec::new();
    for p in &all {
        let rel = p.strip_prefix(&src).expect("below src").to_path_buf();
        let (code, tests) = cut_tests(&strip(&fs::read_to_string(p).expect("readable source")));
        let dir = if matches!(p.file_name().and_then(|n| n.to_str()), Some("mod.rs") | Some("lib.rs")) {
            rel.parent().expect("has parent").to_path_buf()
        } else {
            rel.with_extension("")
        };
        for t in tests {
            test_files.insert(dir.join(format!("{t}.rs")));
            test_files.insert(dir.join(&t).join("mod.rs"));
        }
        texts.push((rel, code));
    }
    let mut problems = Vec::new();
    let mut seen_rooms = BTreeSet::new();
    for (rel, code) in &texts {
        let module = module_of(rel);
        let Some(room) = module.first() else { continue }; // lib.rs
        seen_rooms.insert(room.clone());
        let Some(mine) = rank(room) else {
            problems.push(format!("{}: room {room:?} is not in the drawing (add it to ROOMS and docs/architecture.md)", rel.display()));
            continue;
        };
        if test_files.contains(rel) || mine == ROOMS.len() - 1 {
            continue;
        }
        for t in targets(code, &module) {
            if &t == room {
                continue;
            }
            match rank(&t) {
                None => problems.push(format!("{}: uses crate::{t}, which is in no room of the drawing", rel.display())),
                Some(r) if r > mine || (r == mine && r != 0) => {
                    problems.push(format!("{}: room {room:?} (level {mine}) uses {t:?} (level {r})", rel.display()))
                }
                Some(_) => {}
            }
        }
    }
    assert!(problems.is_empty(), "rooms out of order:\n  {}", problems.join("\n  "));
    // The drawing names no room that is gone.
    for r in ROOMS.iter().flat_map(|r| r.iter()) {
        assert!(seen_rooms.contains(*r), "ROOMS names {r:?}, which is no module of the crate");
    }
}

#[test]
fn the_checker_sees_what_it_must() {
    let module = vec!["index".to_string(), "remap".to_string()];
    let code = strip("use crate::{error::{Error, Result}, table::Dataset};\n// crate::tiledb\nlet s = \"crate::namespace\";\nuse super::super::expr::X;\ncrate::corrupt!(x);");
    let t = targets(&code, &module);
    assert_eq!(t, ["error", "expr", "table"].iter().map(|s| s.to_string()).collect());
    let (cut, files) = cut_tests("a\n#[cfg(test)]\nmod tests {\n use crate::table::X; { }\n}\n#[cfg(test)]\nmod more;\nb");
    assert!(!cut.contains("table") && cut.contains('a') && cut.contains('b'));
    assert_eq!(files, vec!["more".to_string()]);
    assert_eq!(module_of(Path::new("table/ops/mod.rs")), vec!["table", "ops"]);
}

/// The commit kernel: builds manifests, decides conflicts, commits.
const KERNEL: &[&str] = &["table/commit.rs", "table/commit_store/mod.rs", "table/conflict.rs", "table/transaction.rs"];
/// What the kernel may use of the table room (everything else there is an
/// operation or a reader built on the kernel).
const KERNEL_USES: &[&str] = &[
    "commit",
    "commit_store",
    "conflict",
    "transaction",
    "hooks",
    "deletion",
    "fragment",
    "manifest",
    "features",
    "rowids",
    "row_meta",
    "dataset",
    "index_section",
    "apply_rewrite",
    "bases",
];

#[test]
fn the_commit_kernel_imports_no_operation() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut problems = Vec::new();
    for rel in KERNEL {
        let (code, _) = cut_tests(&strip(&fs::read_to_string(src.join(rel)).expect("kernel file")));
        for (at, _) in code.match_indices("crate::table::") {
            let name = ident_at(&code[at + "crate::table::".len()..]);
            if !KERNEL_USES.contains(&name) {
                problems.push(format!("{rel}: uses table::{name}"));
            }
        }
        for (at, _) in code.match_indices("super::") {
            let name = ident_at(&code[at + "super::".len()..]);
            if !name.is_empty() && name != "super" && !KERNEL_USES.contains(&name) {
                problems.push(format!("{rel}: uses super::{name}"));
            }
        }
    }
    assert!(problems.is_empty(), "the commit kernel reaches into operations:\n  {}", problems.join("\n  "));
}
