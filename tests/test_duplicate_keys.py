"""Repeated keys on the right / source side, as pylance 14 handles them
(checked by running it):

* ``merge``: the last right row of a key wins (a null key matches a null
  key, the last null-keyed row wins); no error.
* ``merge_insert``: a dataset row that two source rows would update or
  delete (after the ``when_matched_update_all`` condition) is an
  ``InvalidInputError`` and nothing is committed; repeated keys are fine
  otherwise: unmatched ones are all inserted, matched ones are ignored when
  matched rows are left alone, and a condition that keeps one of them
  decides which updates."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lancelet
from lancelet.exceptions import InvalidInputError


def _rows(path) -> list:
    return sorted(lance.dataset(path).to_table().to_pylist(), key=lambda r: tuple((v is None, v) for v in r.values()))


@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_merge_last_duplicate_wins(tmp_path, version):
    left = pa.table({"k": pa.array([1, 2, 3, None], pa.int64()), "v": [10, 20, 30, 40]})
    right = pa.table({"k2": pa.array([2, 2, 3, None, None, 7], pa.int64()), "w": ["a", "b", "c", "n1", "n2", "z"]})
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    lance.write_dataset(left, a, data_storage_version=version)
    lance.write_dataset(left, b, data_storage_version=version)
    lancelet.dataset(a).merge(right, "k", "k2")
    lance.dataset(b).merge(right, "k", "k2")
    assert lance.dataset(a).to_table() == lance.dataset(b).to_table()
    assert lance.dataset(a).to_table().column("w").to_pylist() == [None, "b", "c", "n2"]


SOURCE = pa.table({"k": pa.array([2, 2, 5, 5], pa.int64()), "v": pa.array([21, 22, 51, 52], pa.int64())})

CASES = {
    "upsert": lambda ds: ds.merge_insert("k").when_matched_update_all().when_not_matched_insert_all(),
    "update_only": lambda ds: ds.merge_insert("k").when_matched_update_all(),
    "delete": lambda ds: ds.merge_insert("k").when_matched_delete(),
    "insert_only": lambda ds: ds.merge_insert("k").when_not_matched_insert_all(),
    "condition_keeps_none": lambda ds: ds.merge_insert("k").when_matched_update_all("source.v > 100").when_not_matched_insert_all(),
    "condition_keeps_one": lambda ds: ds.merge_insert("k").when_matched_update_all("source.v > 21").when_not_matched_insert_all(),
    "by_source_delete": lambda ds: ds.merge_insert("k").when_not_matched_by_source_delete(),
    "insert_and_by_source": lambda ds: ds.merge_insert("k").when_not_matched_insert_all().when_not_matched_by_source_delete(),
}


def _run(builder):
    try:
        return builder.execute(SOURCE)
    except Exception as e:
        return e


@pytest.mark.parametrize("case", sorted(CASES))
def test_merge_insert_duplicate_source_keys(tmp_path, case):
    base = pa.table({"k": pa.array([1, 2, 3], pa.int64()), "v": pa.array([10, 20, 30], pa.int64())})
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    lance.write_dataset(base, a)
    lance.write_dataset(base, b)
    mine = _run(CASES[case](lancelet.dataset(a)))
    theirs = _run(CASES[case](lance.dataset(b)))
    if isinstance(theirs, Exception):
        assert "Ambiguous" in str(theirs)
        assert isinstance(mine, InvalidInputError) and "k = 2" in str(mine), mine
        assert lance.dataset(a).version == 1
    else:
        assert mine == theirs
        assert _rows(a) == _rows(b)
