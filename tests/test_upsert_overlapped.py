"""The plain upsert (``when_matched_update_all().when_not_matched_insert_all()``
with every column in the source) writes the source while the scan matches
keys: its edge cases against pylance — dataset rows sharing a key (one
source row replaces both), deleted rows, several fragments, a source whose
columns come in another order, word keys of several widths and byte-string
keys — and a failing scan leaving no file behind."""

from __future__ import annotations

import os

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet
from lancelet.exceptions import InvalidInputError


def _rows(path, key):
    return lance.dataset(path).to_table().sort_by([(key, "ascending"), ("v", "ascending")]).to_pylist()


def _twins(tmp_path, table, **kw):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    for p in (a, b):
        lance.write_dataset(table, p, max_rows_per_file=150, **kw)
        lance.dataset(p).delete("v % 7 = 3")
    return a, b


@pytest.mark.parametrize("key_type", [pa.int64(), pa.int16(), pa.uint32(), pa.string()], ids=str)
@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_plain_upsert_like_pylance(tmp_path, key_type, version):
    rng = np.random.default_rng(3)
    keys = np.arange(400) * 3
    keys[20] = keys[21]  # two live dataset rows share a key
    def col(k):
        return pa.array([f"k{x}" for x in k]) if key_type == pa.string() else pa.array(k).cast(key_type)
    base = pa.table({"k": col(keys), "v": pa.array(np.arange(400), pa.int64()),
                     "s": pa.array([f"s{i}" * (i % 5) for i in range(400)])})
    a, b = _twins(tmp_path, base, data_storage_version=version)
    src_keys = np.concatenate([rng.choice(keys, 120, replace=False), keys[[21]], np.arange(2000, 2100)])
    src_keys = np.unique(src_keys)
    rng.shuffle(src_keys)
    n = len(src_keys)
    # columns in another order than the dataset's
    source = pa.table({"s": pa.array([f"new{i}" for i in range(n)]), "v": pa.array(np.arange(n) + 1000, pa.int64()), "k": col(src_keys)})
    r1 = lancelet.dataset(a).merge_insert("k").when_matched_update_all().when_not_matched_insert_all().execute(source)
    r2 = lance.dataset(b).merge_insert("k").when_matched_update_all().when_not_matched_insert_all().execute(source)
    assert r1 == r2
    assert r1["num_updated_rows"] > 0 and r1["num_inserted_rows"] > 0
    # one source row replaced both rows of the shared key
    shared = [r for r in _rows(a, "k") if r["k"] == col(keys[[21]])[0].as_py()]
    assert len(shared) == 2 and shared[0]["v"] == shared[1]["v"] >= 1000
    assert _rows(a, "k") == _rows(b, "k")
    assert lance.dataset(a).schema == lance.dataset(b).schema
    # pylance keeps writing on it
    lance.dataset(a).merge_insert("k").when_matched_update_all().when_not_matched_insert_all().execute(source.slice(0, 5))
    lance.dataset(b).merge_insert("k").when_matched_update_all().when_not_matched_insert_all().execute(source.slice(0, 5))
    assert _rows(a, "k") == _rows(b, "k")


def test_failed_plain_upsert_leaves_no_files(tmp_path):
    base = pa.table({"k": pa.array(np.arange(1000), pa.int64()), "v": pa.array(np.arange(1000), pa.int64()), "s": ["x"] * 1000})
    a, _ = _twins(tmp_path, base)
    files = sorted(os.listdir(os.path.join(a, "data")))
    version = lance.dataset(a).version
    # two source rows for dataset row 5: ambiguous, found by the scan while
    # the source is being written
    source = pa.table({"k": pa.array([5, 2000, 5] + list(range(3000, 60000)), pa.int64())})
    source = source.append_column("v", pa.array(np.arange(source.num_rows), pa.int64())).append_column(
        "s", pa.array(["y"] * source.num_rows))
    with pytest.raises(InvalidInputError, match="k = 5"):
        lancelet.dataset(a).merge_insert("k").when_matched_update_all().when_not_matched_insert_all().execute(source)
    assert sorted(os.listdir(os.path.join(a, "data"))) == files
    assert lance.dataset(a).version == version
