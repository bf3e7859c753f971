//! The fuzz targets in `cargo test`: every committed corpus and regression
//! input replayed, then a short deterministic run of each target (seeded
//! mutations of those inputs and of the seeds written in-process) on the
//! stable toolchain. The long coverage-guided runs are cargo-fuzz's (see
//! fuzz/README.md).

use super::*;

fn fuzz_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The committed inputs of a target: `fuzz/corpus/<target>` and
/// `fuzz/regressions/<target>`, sorted by path.
fn committed(target: &str) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for sub in ["corpus", "regressions"] {
        let dir = fuzz_dir().join(sub).join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut files: Vec<_> = entries.map(|e| e.expect("dir entry").path()).filter(|p| p.is_file()).collect();
        files.sort();
        for f in files {
            out.push((f.display().to_string(), std::fs::read(&f).expect("corpus file")));
        }
    }
    out
}

/// Run `target` on `data`; the panic message if it panicked, or an
/// allocation bomb: a single request beyond [`BOMB_BYTES`] (what the
/// long runs' `-malloc_limit_mb=512` reports as a crash).
fn run_caught(run: fn(&[u8]), data: &[u8]) -> Option<String> {
    let bombs = big_requests::count();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(data)));
    let panic = r.err().map(|e| e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default());
    panic.or_else(|| (big_requests::count() > bombs).then(|| format!("allocation bomb: a request of over {BOMB_BYTES} bytes")))
}

/// libFuzzer's `-malloc_limit_mb` of the long runs (fuzz/long_run.sh).
const BOMB_BYTES: usize = 512 << 20;

/// The test binary's allocator: the system's, counting single requests
/// over [`BOMB_BYTES`] so that a replayed input that asks for one fails
/// even on a machine with the memory to grant it. (Other tests running at
/// the same time ask for far less.)
mod big_requests {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    static COUNT: AtomicUsize = AtomicUsize::new(0);

    pub fn count() -> usize {
        COUNT.load(Relaxed)
    }

    fn note(size: usize) {
        if size > super::BOMB_BYTES {
            COUNT.fetch_add(1, Relaxed);
        }
    }

    struct Counting;

    // SAFETY: every call is passed to the system allocator unchanged.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            note(layout.size());
            unsafe { System.alloc(layout) }
        }
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            note(layout.size());
            unsafe { System.alloc_zeroed(layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            note(new_size);
            unsafe { System.realloc(ptr, layout, new_size) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[global_allocator]
    static ALLOCATOR: Counting = Counting;
}

/// Every committed corpus and regression input, through its target: the
/// libFuzzer runs' findings stay tests on the stable toolchain.
#[test]
fn replay_committed_corpora() {
    let mut failures = Vec::new();
    let mut total = 0;
    for (name, run) in targets() {
        for (path, data) in committed(name) {
            if let Some(msg) = run_caught(run, &data) {
                failures.push(format!("{name} on {path}: {msg}"));
            }
            total += 1;
        }
    }
    assert!(failures.is_empty(), "fuzz targets panic or allocate bombs:\n{}", failures.join("\n"));
    assert!(total >= 100, "only {total} committed inputs under {}", fuzz_dir().display());
}

/// A small deterministic PRNG (xorshift64*): the same mutations on every run.
struct Rng(u64);

impl Rng {
    fn for_target(name: &str) -> Rng {
        // FNV-1a of the name: each target its own fixed stream.
        Rng(name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Integers that hit size checks: small, sign and width boundaries, the
/// allocation-bomb sizes.
const INTERESTING: [u64; 12] = [0, 1, 0x7f, 0xff, 0xffff, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 1 << 32, 1 << 60, i64::MAX as u64, u64::MAX];

/// One to four mutations of `data`, the kinds libFuzzer's default
/// mutators apply: bit flips, interesting bytes and integers (LE, 1/2/4/8
/// bytes) written over the input, truncation, erasing, duplicating and
/// inserting ranges, and splicing in part of another input.
fn mutate(rng: &mut Rng, data: &[u8], other: &[u8]) -> Vec<u8> {
    let mut d = data.to_vec();
    for _ in 0..1 + rng.below(4) {
        let n = d.len();
        match rng.below(8) {
            0 if n > 0 => {
                let i = rng.below(n);
                d[i] ^= 1 << rng.below(8);
            }
            1 if n > 0 => {
                let i = rng.below(n);
                d[i] = rng.next() as u8;
            }
            2 if n > 0 => {
                let width = [1usize, 2, 4, 8][rng.below(4)];
                let i = rng.below(n);
                let v = INTERESTING[rng.below(INTERESTING.len())].wrapping_add(rng.below(3) as u64).wrapping_sub(1);
                let bytes = v.to_le_bytes();
                let end = (i + width).min(n);
                d[i..end].copy_from_slice(&bytes[..end - i]);
            }
            3 => d.truncate(rng.below(n + 1)),
            4 if n > 0 => {
                let i = rng.below(n);
                let len = 1 + rng.below((n - i).min(64));
                d.drain(i..i + len);
            }
            5 if n > 0 => {
                let i = rng.below(n);
                let len = 1 + rng.below((n - i).min(64));
                let copy = d[i..i + len].to_vec();
                let at = rng.below(n + 1);
                d.splice(at..at, copy);
            }
            6 => {
                let at = rng.below(n + 1);
                let bytes: Vec<u8> = (0..1 + rng.below(16)).map(|_| rng.next() as u8).collect();
                d.splice(at..at, bytes);
            }
            _ if !other.is_empty() => {
                let i = rng.below(other.len());
                let len = 1 + rng.below((other.len() - i).min(256));
                let at = rng.below(n + 1);
                let end = (at + len).min(n);
                d.splice(at..end, other[i..i + len].iter().copied());
            }
            _ => {}
        }
    }
    d
}

/// Mutations per target in the default test run (`LANCELET_FUZZ_ITERS`
/// overrides it, e.g. for a longer run on the stable toolchain).
fn iterations() -> usize {
    std::env::var("LANCELET_FUZZ_ITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(300)
}

/// The short deterministic run of every target: its seeds unchanged, then
/// `iterations()` seeded mutations of them. A panic (an `InternalError`
/// included, see [`ok`]) fails the test, and the input is written to
/// `target/fuzz-failures/<target>-<n>` to become a regression test.
#[test]
fn short_deterministic_runs() {
    let iters = iterations();
    let failed_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/fuzz-failures");
    let mut failures = Vec::new();
    for (name, run) in targets() {
        let mut inputs: Vec<Vec<u8>> = committed(name).into_iter().map(|(_, d)| d).collect();
        inputs.extend(generated_seeds(name));
        assert!(!inputs.is_empty(), "fuzz target {name} has no seeds");
        let mut rng = Rng::for_target(name);
        for k in 0..inputs.len() + iters {
            let input = if k < inputs.len() {
                inputs[k].clone()
            } else {
                let other = &inputs[rng.below(inputs.len())];
                mutate(&mut rng, &inputs[k % inputs.len()], other)
            };
            if let Some(msg) = run_caught(run, &input) {
                std::fs::create_dir_all(&failed_dir).expect("failure dir");
                let path = failed_dir.join(format!("{name}-{k}"));
                std::fs::write(&path, &input).expect("write failing input");
                failures.push(format!("{name} input {k} (saved as {}): {msg}", path.display()));
            }
        }
    }
    assert!(failures.is_empty(), "fuzz targets panic or allocate bombs:\n{}", failures.join("\n"));
}

#[test]
fn mutations_are_deterministic_and_varied() {
    let seed = b"0123456789abcdef".to_vec();
    let run = |name| {
        let mut rng = Rng::for_target(name);
        (0..50).map(|_| mutate(&mut rng, &seed, b"xyz")).collect::<Vec<_>>()
    };
    assert_eq!(run("a"), run("a"));
    assert_ne!(run("a"), run("b"));
    let distinct: std::collections::BTreeSet<_> = run("a").into_iter().collect();
    assert!(distinct.len() > 40, "{} distinct mutations of 50", distinct.len());
}

#[test]
fn every_target_has_generated_or_committed_seeds() {
    for (name, _) in targets() {
        assert!(!(committed(name).is_empty() && generated_seeds(name).is_empty()), "{name}");
    }
}

#[test]
fn base_dataset_reads() {
    let _g = store_lock();
    let b = base();
    reset_base(b);
    let ds = Dataset::open(b.uri, None).unwrap();
    assert_eq!(ds.fragments().len(), 3);
    assert_eq!(ds.deletions(1).unwrap().unwrap().len(), 2);
    assert_eq!(ds.deletions(2).unwrap().unwrap().len(), 3);
    let scan = Scanner::new(Arc::new(ds), ScanOptions::default()).unwrap();
    assert_eq!(scan.count_rows().unwrap(), 10);
}

#[test]
fn seeds_pass_every_target() {
    let seeds = seed_manifests();
    assert_eq!(seeds.len(), 2);
    for s in &seeds {
        manifest(s);
    }
}

/// Version 2 of the base dataset: its version 1 manifest edited by `edit`.
fn write_version_2(b: &BaseDataset, edit: impl FnOnce(&mut pb::Manifest)) {
    let mut m = decode_manifest(b.manifest.clone()).unwrap().manifest;
    m.version = 2;
    m.transaction_section = None;
    edit(&mut m);
    let (file, _) = crate::table::manifest::frame_sections(&[&m.encode_to_vec()]);
    b.root.child(&format!("_versions/{}", ManifestNaming::V2.file_name(2))).unwrap().write_all(Bytes::from(file)).unwrap();
}

/// Fragment ids and row counts that do not fit a row address (32 bits
/// each) are a corrupt manifest, not an overflow further on.
#[test]
fn fragment_ids_and_rows_beyond_32_bits_are_corrupt() {
    let _g = store_lock();
    let b = base();
    for edit in [|f: &mut pb::DataFragment| f.physical_rows = 1 << 33, |f: &mut pb::DataFragment| f.id = 1 << 32] {
        reset_base(b);
        write_version_2(b, |m| edit(&mut m.fragments[0]));
        match Dataset::open(b.uri, None) {
            Err(Error::Corrupt { path, what, .. }) => {
                assert!(path.is_some_and(|p| p.contains("_versions/")), "{what}");
                assert!(what.contains("32 bits"), "{what}");
            }
            other => panic!("expected a corrupt manifest, got {:?}", other.map(|d| d.version())),
        }
    }
    reset_base(b);
}

/// A row id counter at the end of u64 (stable row ids): an append is a
/// corrupt manifest, not an arithmetic overflow (a panic in debug builds).
#[test]
fn row_id_counter_at_the_end_is_corrupt() {
    let _g = store_lock();
    let b = base();
    reset_base(b);
    write_version_2(b, |m| m.next_row_id = u64::MAX - 2);
    let files = decode_manifest(b.manifest.clone()).unwrap().manifest.fragments[0].files.clone();
    let frag = pb::DataFragment { physical_rows: 5, files, ..Default::default() };
    let txn = new_transaction(2, Operation::Append(pb::transaction::Append { fragments: vec![frag] }));
    let r = commit(&b.root, &txn, &CommitOptions::default());
    assert!(matches!(r, Err(Error::Corrupt { ref what, .. }) if what.contains("row ids exhausted")), "{r:?}");
    reset_base(b);
}
