//! Sorts real files into the seed corpora of the fuzz targets (`fuzz/`).
//!
//! ```text
//! cargo run -p lancelet --features fuzzing --example fuzz_seeds -- OUT_DIR INPUT_DIR...
//! ```
//!
//! Every file under the input directories (datasets and data files that
//! pylance and lancelet wrote) is copied to `OUT_DIR/<target>/<hash>` for each
//! target that parses its kind: manifests (and, taken out of them, the
//! embedded transactions, inline row id sequences and fragments as a
//! distributed writer would stage them), transaction files, deletion files,
//! tag files and version hints, the names in `_versions/`, and data files
//! sorted by version and by the page layouts they hold. Files larger than
//! the size limit are skipped (the fuzzer works best on small inputs).

use std::collections::BTreeSet;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use lancelet::file::{FileReader, FileVersion};
use lancelet::fuzzing::PageKind;
use lancelet::proto::table as pb;
use lancelet::table::manifest::decode_manifest;
use prost::Message;

const MAX_SEED_BYTES: usize = 256 * 1024;

fn save(out: &Path, target: &str, data: &[u8], added: &mut BTreeSet<(String, u64)>) {
    if data.len() > MAX_SEED_BYTES {
        return;
    }
    let mut h = DefaultHasher::new();
    data.hash(&mut h);
    let key = h.finish();
    if !added.insert((target.to_string(), key)) {
        return;
    }
    let dir = out.join(target);
    std::fs::create_dir_all(&dir).expect("create corpus dir");
    std::fs::write(dir.join(format!("seed-{key:016x}")), data).expect("write seed");
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, files);
        } else {
            files.push(p);
        }
    }
}

fn manifest_parts(data: &[u8], out: &Path, added: &mut BTreeSet<(String, u64)>) {
    let Ok(f) = decode_manifest(Bytes::copy_from_slice(data)) else { return };
    if let Ok(Some(t)) = f.transaction() {
        save(out, "transaction", &t.encode_to_vec(), added);
    }
    for frag in &f.manifest.fragments {
        if let Some(pb::data_fragment::RowIdSequence::InlineRowIds(b)) = &frag.row_id_sequence {
            save(out, "row_ids", b, added);
        }
        // As a worker stages it: no id, no deletions, no row ids.
        let staged = pb::DataFragment { id: 0, files: frag.files.clone(), physical_rows: frag.physical_rows, ..Default::default() };
        save(out, "staged_fragments", &staged.encode_to_vec(), added);
    }
}

fn data_file(path: &Path, data: &[u8], out: &Path, added: &mut BTreeSet<(String, u64)>) {
    let Ok(r) = FileReader::open(&path.to_string_lossy()) else { return };
    match r.version() {
        FileVersion::Legacy => save(out, "legacy_file", data, added),
        FileVersion::V2_0 => {
            save(out, "file_v2_0", data, added);
            save(out, "file_footer", data, added);
        }
        _ => {
            save(out, "file_footer", data, added);
            for kind in lancelet::fuzzing::page_kinds_of(&r) {
                let target = match kind {
                    PageKind::MiniBlock => "page_miniblock",
                    PageKind::Dictionary => "page_dictionary",
                    PageKind::FullZip => "page_fullzip",
                    PageKind::Constant => "page_constant",
                    PageKind::Blob => "page_blob",
                };
                save(out, target, data, added);
            }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (out, inputs) = args.split_first().expect("usage: fuzz_seeds OUT_DIR INPUT_DIR...");
    let out = Path::new(out);
    let mut added = BTreeSet::new();
    let mut files = Vec::new();
    for i in inputs {
        walk(Path::new(i), &mut files);
    }
    files.sort();
    for path in &files {
        let Ok(data) = std::fs::read(path) else { continue };
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let parent = path.parent().and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.ends_with(".manifest") {
            save(out, "manifest", &data, &mut added);
            manifest_parts(&data, out, &mut added);
        } else if name.ends_with(".txn") {
            save(out, "transaction", &data, &mut added);
        } else if parent == "_deletions" && name.ends_with(".arrow") {
            save(out, "deletion_arrow", &data, &mut added);
        } else if parent == "_deletions" && name.ends_with(".bin") {
            save(out, "deletion_bitmap", &data, &mut added);
        } else if name == "latest_version_hint.json" || (parent == "tags" && name.ends_with(".json")) {
            save(out, "tags_hint", &data, &mut added);
        } else if name.ends_with(".lance") {
            data_file(path, &data, out, &mut added);
        } else if name.ends_with(".sql") {
            // One filter per line (collected from the tests by make_seeds.py).
            for line in String::from_utf8_lossy(&data).lines().filter(|l| !l.trim().is_empty()) {
                save(out, "sql_filter", line.as_bytes(), &mut added);
            }
        }
        if parent == "_versions" && name.ends_with(".manifest") {
            // The names of one _versions/ directory, one seed.
            let dir = path.parent().expect("parent");
            let mut names: Vec<String> =
                std::fs::read_dir(dir).map(|e| e.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect()).unwrap_or_default();
            names.sort();
            save(out, "version_names", names.join("\n").as_bytes(), &mut added);
        }
    }
    for m in lancelet::fuzzing::seed_manifests() {
        save(out, "manifest", &m, &mut added);
        manifest_parts(&m, out, &mut added);
    }
    let mut per_target = std::collections::BTreeMap::new();
    for (t, _) in &added {
        *per_target.entry(t.clone()).or_insert(0) += 1;
    }
    for (t, n) in per_target {
        println!("{t}: {n} seeds");
    }
}
