"""Filters on ``_rowid`` and ``_rowaddr``, with and without asking for the
columns, with and without stable row ids: the same rows as pylance 14."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest
from datagen import assert_tables_equal

import lancelet

pytestmark = pytest.mark.pylance

FILTERS = [
    "_rowid < 5",
    "_rowid >= 4294967296 AND _rowid < 4294967299",
    "_rowaddr = 8589934593",
    "_rowaddr >= 4294967296 AND a > 12",
    "_rowid IN (1, 2, 3, 4, 12, 13)",
    "_rowid < 8 OR _rowaddr > 8589934598",
    "_rowid BETWEEN 12 AND 14",
]


@pytest.fixture(params=[False, True], ids=["addr-ids", "stable-ids"])
def ds_path(tmp_path, request):
    p = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"a": list(range(30)), "s": [f"v{i}" for i in range(30)]}), p,
                        max_rows_per_file=10, enable_stable_row_ids=request.param)
    lance.dataset(p).delete("a = 3 OR a = 11")
    lance.write_dataset(pa.table({"a": [100, 101], "s": ["x", "y"]}), p, mode="append")
    return p


@pytest.mark.parametrize("flt", FILTERS)
@pytest.mark.parametrize("kw", [{}, {"with_row_id": True}, {"with_row_address": True},
                                {"columns": ["s"], "with_row_id": True, "with_row_address": True}],
                         ids=["plain", "rowid", "rowaddr", "both"])
def test_same_rows_as_pylance(ds_path, flt, kw):
    want = lance.dataset(ds_path).to_table(filter=flt, **kw)
    got = lancelet.dataset(ds_path).to_table(filter=flt, **kw)
    assert got.schema.names == want.schema.names
    assert_tables_equal(got, want, context=f"{flt} {kw}")
    assert lancelet.dataset(ds_path).count_rows(filter=flt) == lance.dataset(ds_path).count_rows(filter=flt)


def test_limit_offset_and_delete(ds_path):
    ll, pl = lancelet.dataset(ds_path), lance.dataset(ds_path)
    kw = dict(filter="_rowid > 2", limit=4, offset=3, with_row_id=True)
    assert_tables_equal(ll.to_table(**kw), pl.to_table(**kw))
    assert ll.delete("_rowaddr < 4294967296") == {"num_deleted_rows": 9}  # all of fragment 0
    assert_tables_equal(lancelet.dataset(ds_path).to_table(), lance.dataset(ds_path).to_table())
    assert lance.dataset(ds_path).count_rows() == 21


def test_bad_row_column_filters(ds_path):
    ds = lancelet.dataset(ds_path)
    with pytest.raises(lancelet.exceptions.InvalidInputError):
        ds.to_table(filter="_rowid = 'abc'")
    with pytest.raises(lancelet.exceptions.InvalidInputError, match="_rowidx"):
        ds.to_table(filter="_rowidx = 1")
