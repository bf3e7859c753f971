"""Statistics pruning: pylance 14 keeps per-batch min/max/null-count
statistics only in legacy (v0.1) data files; a filtered lancelet scan skips
the batches they rule out, reading fewer bytes, and returns what pylance
returns. 2.x files carry no statistics (see docs/architecture.md)."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest
from datagen import assert_tables_equal

import lancelet

pytestmark = pytest.mark.pylance

N = 4000


@pytest.fixture(scope="module")
def legacy_path(tmp_path_factory):
    p = str(tmp_path_factory.mktemp("stats") / "legacy")
    t = pa.table({
        "x": pa.array(range(N), pa.int64()),
        "name": pa.array([f"n{i:05d}" for i in range(N)]),
        "f": pa.array([i / 3 for i in range(N)], pa.float64()),
        "payload": pa.array([("p%d" % i) * 20 for i in range(N)]),
        "maybe": pa.array([None if i < 2000 else i for i in range(N)], pa.int32()),
    })
    lance.write_dataset(t, p, data_storage_version="legacy", max_rows_per_file=2000, max_rows_per_group=250)
    lance.dataset(p).delete("x % 13 = 0")
    return p


def scan_bytes(path, **kw):
    ds = lancelet.dataset(path)
    before = ds._native.io_stats()
    got = ds.to_table(**kw)
    after = ds._native.io_stats()
    return got, after[1] - before[1], after[0] - before[0]


@pytest.mark.parametrize("flt", [
    "x < 300", "x >= 3700", "x = 2100", "x BETWEEN 1990 AND 2010", "x IN (5, 3999)",
    "300 > x", "name > 'n03900'", "x < 100 OR x > 3900", "x < 100 AND payload LIKE 'p1%'",
    "maybe > 3000", "maybe IS NULL", "f < 10.0", "x + 0 < 300",
])
def test_results_match_pylance(legacy_path, flt):
    got, _, _ = scan_bytes(legacy_path, filter=flt, with_row_id=True)
    want = lance.dataset(legacy_path).to_table(filter=flt, with_row_id=True)
    assert_tables_equal(got, want, context=flt)
    assert lancelet.dataset(legacy_path).count_rows(filter=flt) == lance.dataset(legacy_path).count_rows(filter=flt)


def test_pruning_reads_less(legacy_path):
    pruned, pruned_bytes, pruned_reqs = scan_bytes(legacy_path, filter="x < 300")
    # the same rows through an expression statistics cannot judge
    full, full_bytes, full_reqs = scan_bytes(legacy_path, filter="x + 0 < 300")
    assert pruned == full and pruned.num_rows == 300 - 300 // 13 - 1
    assert pruned_bytes < full_bytes and pruned_reqs < full_reqs
    # What pruning saves is reading the filter column of ruled-out batches
    # (the other columns are read for passing rows only either way): above
    # the cost of the files' metadata and statistics (a filter they rule
    # out everywhere), 2 of 16 batches of x are read instead of 16.
    _, meta_bytes, _ = scan_bytes(legacy_path, columns=["x"], filter="x > 100000")
    _, x_pruned, _ = scan_bytes(legacy_path, columns=["x"], filter="x < 300")
    _, x_full, _ = scan_bytes(legacy_path, columns=["x"], filter="x + 0 < 300")
    assert (x_pruned - meta_bytes) * 4 < x_full - meta_bytes, (meta_bytes, x_pruned, x_full)
    # a filter that rules out a whole fragment skips it too
    _, none_bytes, none_reqs = scan_bytes(legacy_path, filter="x > 100000")
    assert none_bytes == meta_bytes and none_reqs * 4 < full_reqs


def test_two_x_files_are_not_pruned_but_correct(tmp_path):
    p = str(tmp_path / "v22")
    lance.write_dataset(pa.table({"x": pa.array(range(1000), pa.int64())}), p, max_rows_per_file=300)
    for flt in ["x < 30", "x > 950 OR x = 5"]:
        assert_tables_equal(lancelet.dataset(p).to_table(filter=flt), lance.dataset(p).to_table(filter=flt))
