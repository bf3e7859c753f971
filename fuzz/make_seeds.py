"""Write the seed corpora of the fuzz targets (fuzz/corpus/<target>/).

Datasets and data files are written the way the tests write them (pylance
and lancelet, the encoding shapes of tests/datagen.py, every data storage
version, deletions of both kinds, stable row ids, tags, an index), the
fixtures are added when present, and the SQL filters of the tests are
collected; then `examples/fuzz_seeds.rs` sorts every file into the
corpora of the targets that parse it. Minimize afterwards (see README.md):

    python fuzz/make_seeds.py [--fixtures ../shared/fixtures] [--out fuzz/seeds-raw]
"""
from __future__ import annotations

import argparse
import ast
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np
import pyarrow as pa

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import datagen  # noqa: E402  (tests/datagen.py: the encoding shapes)


def small_shapes(version: str):
    """The tests' encoding shapes, smaller (the fuzzer likes small files)."""
    d = datagen
    yield "bitpacking", d.shape_bitpacking(version, n=600)
    yield "dictionary", d.shape_dictionary(version, n=1200)
    yield "rle", d.shape_rle(version, n=1200)
    yield "constant", d.shape_constant(version, n=600)
    yield "fsst", d.shape_fsst(version, n=400)
    yield "fullzip", d.shape_fullzip(version, n=40)
    yield "fullzip_fsl", d.shape_fullzip_fsl(version, n=40)
    yield "compression", d.shape_compression(version, n=1200)
    yield "structural", d.shape_structural(version, n=200)
    yield "packed_struct", d.shape_packed_struct(version, n=100)
    yield "bss", d.shape_bss(version, n=600)
    yield "wide", d.wide_table(version, n=60)


def blob_table(n: int) -> pa.Table:
    rng = np.random.default_rng(5)
    values = [None if i % 7 == 3 else bytes(rng.integers(0, 256, int(rng.integers(0, 300)), dtype=np.uint8)) for i in range(n)]
    field = pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    return pa.table({"id": pa.array(np.arange(n)), "blob": pa.array(values, pa.large_binary())},
                    schema=pa.schema([pa.field("id", pa.int64()), field]))


def write_files(out: pathlib.Path):
    import lance

    import lancelet.file
    for version in ("2.0", "2.1", "2.2"):
        for name, table in small_shapes(version):
            datagen.pylance_write(table, out / f"pylance_{version}_{name}.lance", version)
            try:
                lancelet.file.write_table(table, str(out / f"lancelet_{version}_{name}.lance"), version=version)
            except Exception as e:
                print(f"lancelet {version} {name}: {e}", file=sys.stderr)
    for version in ("2.1", "2.2"):
        datagen.pylance_write(blob_table(40), out / f"pylance_{version}_blob.lance", version)
        lancelet.file.write_table(blob_table(40), str(out / f"lancelet_{version}_blob.lance"), version=version)
    # v0.1 (legacy) data files come inside pylance datasets
    for i, table in enumerate([datagen.shape_structural("2.0", n=100), datagen.wide_table("2.0", n=40)]):
        lance.write_dataset(table, str(out / f"legacy_{i}"), data_storage_version="legacy")


def write_datasets(out: pathlib.Path):
    import lance

    import lancelet
    t = pa.table({"id": pa.array(np.arange(6000)), "s": pa.array([f"v{i % 13}" for i in range(6000)])})
    for version in ("2.0", "2.1", "2.2"):
        for stable in (False, True):
            uri = str(out / f"ds_{version}_{int(stable)}")
            ds = lance.write_dataset(t.slice(0, 3000), uri, data_storage_version=version, max_rows_per_file=1000,
                                     enable_stable_row_ids=stable)
            ds = lance.write_dataset(t.slice(3000), uri, mode="append")
            ds.delete("id % 97 = 0")            # few rows per fragment: .arrow
            ds.delete("id >= 3000 AND id < 5500")  # many rows: .bin
            ds.tags.create("first", 1)
            ds.tags.create("latest", ds.version)
            if not stable:
                ds.create_scalar_index("id", "BTREE")
            lance.write_dataset(t.slice(0, 10), uri, mode="overwrite")
    # lancelet-written datasets (its own deletion files, transactions, tags)
    for version in ("2.1", "2.2"):
        uri = str(out / f"lancelet_ds_{version}")
        ds = lancelet.write_dataset(t.slice(0, 2000), uri, data_storage_version=version, max_rows_per_file=700,
                                    enable_stable_row_ids=True)
        ds = lancelet.write_dataset(t.slice(2000, 2500), uri, mode="append")
        ds.delete("id % 5 = 0")
        ds.tags.create("t1", 1)


FILTER_PATTERNS = [
    re.compile(r'\brows\(\s*("(?:[^"\\]|\\.)*")'),             # rust expr tests: rows("...")
    re.compile(r'\b(?:filter|predicate)\s*=\s*("(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\')'),  # python: filter="..."
]


def collect_filters(out: pathlib.Path):
    found = set()
    for path in list((ROOT / "tests").glob("*.py")) + list((ROOT / "rust/lancelet/src/expr").glob("*.rs")):
        text = path.read_text()
        for pat in FILTER_PATTERNS:
            for m in pat.finditer(text):
                lit = m.group(1)
                try:
                    value = ast.literal_eval(lit) if path.suffix == ".py" else bytes(lit[1:-1], "utf8").decode("unicode_escape")
                except (ValueError, SyntaxError):
                    continue
                if isinstance(value, str) and value.strip() and "\n" not in value:
                    found.add(value)
    (out / "filters.sql").write_text("\n".join(sorted(found)) + "\n")
    print(f"{len(found)} SQL filters collected from the tests", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixtures", default=str(ROOT.parent.parent / "shared" / "fixtures"))
    ap.add_argument("--out", default=str(ROOT / "fuzz" / "seeds-raw"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        (tmp / "files").mkdir()
        (tmp / "datasets").mkdir()
        write_files(tmp / "files")
        write_datasets(tmp / "datasets")
        collect_filters(tmp)
        inputs = [str(tmp)]
        if pathlib.Path(args.fixtures).is_dir():
            inputs.append(args.fixtures)
        subprocess.run(["cargo", "run", "-q", "-p", "lancelet", "--features", "fuzzing", "--example", "fuzz_seeds", "--",
                        args.out, *inputs], cwd=ROOT, check=True)


if __name__ == "__main__":
    main()
