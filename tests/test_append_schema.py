"""Appends whose columns are reordered or a subset of the dataset's, as
pylance 14 takes them: each data file keeps the fields it was given, in the
order given; missing nullable fields (struct children too) read as nulls;
a missing non-nullable field, an extra field or another type is refused.
Both directions against pylance."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest
from datagen import assert_tables_equal

import lancelet

pytestmark = pytest.mark.pylance

ST = pa.struct([("x", pa.int64()), ("y", pa.string())])
SCHEMA = pa.schema([pa.field("a", pa.int64(), nullable=False), pa.field("b", pa.string()), pa.field("s", ST)])

APPENDS = {
    "reorder": pa.table({"s": pa.array([{"x": 3, "y": "c"}], ST), "a": [3], "b": ["z"]}),
    "subset": pa.table({"a": pa.array([4], pa.int64()), "b": ["w"]}),
    "struct-subset-reordered": pa.table({
        "s": pa.array([{"y": "q", "x": 5}], pa.struct([("y", pa.string()), ("x", pa.int64())])),
        "a": pa.array([5], pa.int64())}),
    "struct-one-child": pa.table({"a": pa.array([6], pa.int64()),
                                  "s": pa.array([{"y": "r"}], pa.struct([("y", pa.string())]))}),
}


def base(path, version):
    t = pa.table({"a": [1, 2], "b": ["x", "y"], "s": pa.array([{"x": 1, "y": "a"}, {"x": None, "y": "b"}], ST)}, schema=SCHEMA)
    lance.write_dataset(t, path, data_storage_version=version)


def fields_of_last_fragment(path):
    return [d.fields for d in lance.dataset(path).get_fragments()[-1].data_files()]


@pytest.mark.parametrize("version", ["2.0", "2.2"])
@pytest.mark.parametrize("name", list(APPENDS))
def test_lancelet_appends_like_pylance(tmp_path, version, name):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    base(ours, version)
    base(theirs, version)
    lancelet.write_dataset(APPENDS[name], ours, mode="append")
    lance.write_dataset(APPENDS[name], theirs, mode="append")
    assert fields_of_last_fragment(ours) == fields_of_last_fragment(theirs)
    want = lance.dataset(theirs).to_table()
    assert_tables_equal(lance.dataset(ours).to_table(), want)
    assert_tables_equal(lancelet.dataset(ours).to_table(), want)
    assert_tables_equal(lancelet.dataset(theirs).to_table(), want)
    # and through Dataset.insert, then pylance appends on top
    lancelet.dataset(ours).insert(APPENDS[name])
    lance.write_dataset(APPENDS["subset"], ours, mode="append")
    assert_tables_equal(lancelet.dataset(ours).to_table(), lance.dataset(ours).to_table())


def test_refusals_match_pylance(tmp_path):
    p = str(tmp_path / "ds")
    base(p, "2.2")
    bad = {
        "missing non-nullable": pa.table({"b": ["w"]}),
        "extra": pa.table({"a": pa.array([1], pa.int64()), "zz": [1]}),
        "type": pa.table({"a": pa.array([1], pa.int32())}),
        "struct extra child": pa.table({"a": pa.array([1], pa.int64()),
                                        "s": pa.array([{"q": 1}], pa.struct([("q", pa.int64())]))}),
    }
    for what, t in bad.items():
        with pytest.raises(OSError):
            lance.write_dataset(t, p, mode="append")
        with pytest.raises(lancelet.InvalidInputError) as e:
            lancelet.write_dataset(t, p, mode="append")
        assert any(n in str(e.value) for n in ('"a"', '"zz"', '"s.q"')), (what, str(e.value))
    with pytest.raises(lancelet.InvalidInputError, match="not nullable"):
        lancelet.write_dataset(pa.table({"a": pa.array([None], pa.int64())}), p, mode="append")
    assert lancelet.dataset(p).latest_version == 1
