"""lancelet reads every data file of the pylance-14 fixtures exactly like pylance does.

Fixtures: tests/fixtures/pylance-14/<dataset>/data/*.lance (see its README.md).
For each file: schema + values vs ``lance.file.LanceFileReader`` (the oracle), ``.version`` and
``.num_rows``; for single-file datasets without deletions also vs ``expected.json`` /
``expected_schema.txt``.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import FIXTURES_DIR, fixture_data_files, fixture_datasets
from datagen import assert_tables_equal, jsonable, pylance_read

import lancelet.file

pytestmark = pytest.mark.pylance

# footer version of each dataset's data files (README: 2.0 files say 0.3 in the footer -> "2.0")
EXPECTED_VERSION = {
    "v2_0_basic": "2.0",
    "v2_1_types": "2.1",
    "v2_1_encodings": "2.1",
}  # everything else: "2.2" (pylance 14 default)

DATA_FILES = fixture_data_files()
INDEX_FILES = sorted(FIXTURES_DIR.glob("*/_indices/*/*.lance"))


def _ids(paths):
    return [f"{p.parent.parent.name}/{p.name[:8]}" for p in paths]


def _require(paths, what):
    assert paths, f"no {what} under {FIXTURES_DIR}"


def _single_file_datasets():
    out = []
    for d in fixture_datasets():
        files = sorted((d / "data").glob("*.lance"))
        has_deletions = (d / "_deletions").is_dir() and any((d / "_deletions").iterdir())
        if len(files) == 1 and not has_deletions:
            out.append(d)
    return out


SINGLE = _single_file_datasets()


def test_fixtures_present(fixtures_dir):
    names = {d.name for d in fixture_datasets()}
    for required in ("v2_0_basic", "v2_1_types", "v2_2_types", "v2_2_encodings", "v2_1_encodings",
                     "v2_2_fullzip", "v2_2_general_compression"):
        assert required in names, f"fixture dataset {required} missing from {fixtures_dir}"


@pytest.mark.parametrize("path", DATA_FILES or [None], ids=_ids(DATA_FILES) or ["missing"])
def test_read_matches_pylance(path):
    _require(DATA_FILES, "fixture data files")
    expected = pylance_read(path)
    r = lancelet.file.LanceFileReader(str(path))
    assert_tables_equal(r.read(), expected, context=str(path))
    assert r.schema == expected.schema, f"{path}: reader.schema {r.schema} != {expected.schema}"
    assert r.schema.metadata == expected.schema.metadata


@pytest.mark.parametrize("path", DATA_FILES or [None], ids=_ids(DATA_FILES) or ["missing"])
def test_version_and_num_rows(path, lance_mod):
    _require(DATA_FILES, "fixture data files")
    r = lancelet.file.LanceFileReader(str(path))
    assert r.version == EXPECTED_VERSION.get(path.parent.parent.name, "2.2")
    md = lance_mod.file.LanceFileReader(str(path)).metadata()
    assert r.num_rows == md.num_rows
    assert isinstance(r.num_rows, int)


@pytest.mark.parametrize("path", DATA_FILES or [None], ids=_ids(DATA_FILES) or ["missing"])
def test_ranges_and_take_match_pylance(path, lance_mod):
    _require(DATA_FILES, "fixture data files")
    pl = lance_mod.file.LanceFileReader(str(path))
    n = pl.metadata().num_rows
    full = pylance_read(path)
    r = lancelet.file.LanceFileReader(str(path))
    rng = np.random.default_rng(n)
    for start, length in [(0, 1), (n - 1, 1), (n // 3, max(1, n // 2)), (0, n), (n, 0)]:
        start = max(0, min(start, n))
        length = max(0, min(length, n - start))
        assert_tables_equal(r.read(offset=start, limit=length), full.slice(start, length),
                            context=f"{path} read({start},{length})")
    idx = sorted(set(rng.integers(0, n, min(n, 25)).tolist()))
    assert_tables_equal(r.take(idx), pl.take_rows(idx).to_table(), context=f"{path} take(sorted)")
    shuffled = list(rng.permutation(idx)) + idx[:3]  # unsorted + duplicates
    assert_tables_equal(r.take(shuffled), full.take(shuffled), context=f"{path} take(unsorted, dups)")


@pytest.mark.parametrize("path", DATA_FILES or [None], ids=_ids(DATA_FILES) or ["missing"])
def test_projection_matches_pylance(path):
    _require(DATA_FILES, "fixture data files")
    full = pylance_read(path)
    names = full.schema.names
    cols = list(reversed(names))[: max(1, len(names) // 2)]  # subset, in non-file order
    r = lancelet.file.LanceFileReader(str(path))
    assert_tables_equal(r.read(columns=cols), full.select(cols), context=f"{path} columns={cols}")


@pytest.mark.parametrize("path", INDEX_FILES or [None], ids=[p.name for p in INDEX_FILES] or ["missing"])
def test_index_files_match_pylance(path):
    """_indices/<uuid>/*.lance are Lance 2.2 files too (btree pages / lookup)."""
    _require(INDEX_FILES, "index files")
    r = lancelet.file.LanceFileReader(str(path))
    assert_tables_equal(r.read(), pylance_read(path), context=str(path))
    assert r.version == "2.2"


@pytest.mark.parametrize("dataset", SINGLE or [None], ids=[d.name for d in SINGLE] or ["missing"])
def test_matches_expected_json(dataset):
    _require(SINGLE, "single-file fixture datasets")
    expected = json.loads((dataset / "expected.json").read_text())
    (path,) = sorted((dataset / "data").glob("*.lance"))
    r = lancelet.file.LanceFileReader(str(path))
    table = r.read()
    assert r.num_rows == expected["num_rows"] == table.num_rows
    got_rows = jsonable(table.to_pylist())
    assert len(got_rows) == len(expected["rows"])
    for i, (got, exp) in enumerate(zip(got_rows, expected["rows"])):
        assert got == exp, f"{dataset.name} row {i}: {got!r} != {exp!r}"
    expected_schema = _canon_schema_text((dataset / "expected_schema.txt").read_text())
    assert _canon_schema_text(str(table.schema)) == expected_schema
    assert _canon_schema_text(str(r.schema)) == expected_schema


def _canon_schema_text(text: str) -> str:
    """pyarrow's schema printout with the lines of each metadata block sorted (key order is not data)."""
    out, block = [], []
    for line in text.rstrip("\n").split("\n"):
        if block and line.startswith(block[0][0]) and not line.strip().startswith("--"):
            block[1].append(line)
            continue
        if block:
            out.extend(sorted(block[1]))
            block = []
        out.append(line)
        if line.strip().startswith("-- ") and line.strip().endswith("metadata --"):
            indent = line[: len(line) - len(line.lstrip())] + "  "
            block = [indent, []]
    if block:
        out.extend(sorted(block[1]))
    return "\n".join(out)


def test_expected_json_covers_some_datasets():
    names = {d.name for d in SINGLE}
    assert {"v2_0_basic", "v2_2_types", "v2_2_encodings"} <= names, names
