"""Writes of multi-chunk input (a chunked table or a RecordBatchReader):
lancelet converts and encodes column by column over the chunks without
concatenating them, and the fragment equals the one written from the same
rows in one chunk (same files byte for byte, same reads in tiledb-py)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import tiledb

import lancelet.tiledb as lt
from lancelet.exceptions import InvalidInputError


def _schema(sparse: bool) -> lt.ArraySchema:
    if sparse:
        dom = lt.Domain(lt.Dim("x", domain=(0, 10_000), tile=100, dtype=np.int64),
                        lt.Dim("k", dtype="ascii"))
    else:
        dom = lt.Domain(lt.Dim("x", domain=(0, 99), tile=10, dtype=np.int64),
                        lt.Dim("y", domain=(0, 29), tile=7, dtype=np.int64))
    return lt.ArraySchema(domain=dom, sparse=sparse, capacity=37, attrs=[
        lt.Attr("v", dtype=np.float64, filters=[lt.ByteShuffleFilter(), lt.ZstdFilter(3)]),
        lt.Attr("s", dtype=str, nullable=True),
        lt.Attr("l", dtype=pa.list_(pa.int32())),
        lt.Attr("i", dtype=np.int16, nullable=True),
    ])


def _rows(rng, n, sparse):
    cols = {}
    if sparse:
        x = rng.choice(10_001, n, replace=False)
        cols["x"] = pa.array(x, pa.int64())
        cols["k"] = pa.array([f"k{v % 7}" for v in x])
    cols["v"] = pa.array(rng.normal(size=n))
    cols["s"] = pa.array([None if j % 5 == 0 else "é" * (j % 4) + str(j) for j in range(n)])
    cols["l"] = pa.array([list(range(j % 3)) for j in range(n)], pa.list_(pa.int32()))
    cols["i"] = pa.array([None if j % 7 == 0 else j % 1000 for j in range(n)], pa.int64())
    return pa.table(cols)


def _fragment_files(uri):
    """Data files, and the metadata's decoded tiles and footer after the
    schema name (which differs between arrays)."""
    from test_tiledb_write import metadata_tiles

    (frag,) = (Path(uri) / "__fragments").iterdir()
    out = {p.name: p.read_bytes() for p in frag.iterdir() if p.name != "__fragment_metadata.tdb"}
    out["__fragment_metadata.tdb"] = metadata_tiles(frag)
    return out


def _tiledb_rows(uri):
    with tiledb.open(uri) as A:
        r = A.query(coords=True, attrs=["v", "s", "i"]).df[:]
    return sorted(map(tuple, r.astype(object).where(r.notna(), None).values.tolist()), key=repr)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_chunked_input_writes_the_same_fragment(tmp_path, sparse, seed):
    rng = np.random.default_rng(seed)
    n = 100 * 30 if not sparse else 1500
    table = _rows(rng, n, sparse)
    cuts = sorted(set(rng.integers(0, n, 6).tolist()) | {0, n})
    chunks = [table.slice(a, b - a) for a, b in zip(cuts, cuts[1:])] + [table.slice(n, 0)]
    one, many, reader = (str(tmp_path / k) for k in ("one", "many", "reader"))
    for u in (one, many, reader):
        lt.create_array(u, _schema(sparse))
    lt.write(one, table, timestamp=5)
    lt.write(many, pa.Table.from_batches([b for c in chunks for b in c.to_batches()] or [], schema=table.schema), timestamp=5)
    batches = [b for c in chunks for b in c.to_batches()]
    lt.write(reader, pa.RecordBatchReader.from_batches(table.schema, batches), timestamp=5)
    want = _fragment_files(one)
    assert _fragment_files(many) == want
    assert _fragment_files(reader) == want
    assert _tiledb_rows(many) == _tiledb_rows(one)
    assert lt.open_array(reader).read().equals(lt.open_array(one).read())


def test_errors_in_a_later_chunk_name_the_row_and_write_nothing(tmp_path):
    uri = str(tmp_path / "d")
    lt.create_array(uri, _schema(False))
    table = _rows(np.random.default_rng(3), 3000, False)
    bad = table.set_column(3, "i", pa.array([j % 1000 for j in range(2999)] + [70_000], pa.int64()))
    with pytest.raises(InvalidInputError, match="rows from 2000"):
        lt.write(uri, pa.Table.from_batches(bad.to_batches(max_chunksize=1000)))
    assert list((Path(uri) / "__fragments").iterdir()) == []
    assert [p.name for p in (Path(uri) / "__commits").iterdir()] == []
    # a non-nullable column with a null in the second chunk
    dom = lt.Domain(lt.Dim("x", domain=(0, 9), tile=5, dtype=np.int64))
    u2 = str(tmp_path / "n")
    lt.create_array(u2, lt.ArraySchema(domain=dom, attrs=[lt.Attr("a", dtype=np.int32)]))
    t = pa.table({"a": pa.array([1, 2, 3, 4, 5, 6, 7, 8, None, 10], pa.int32())})
    with pytest.raises(InvalidInputError, match="nulls"):
        lt.write(u2, pa.Table.from_batches(t.to_batches(max_chunksize=4)))
    assert list((Path(u2) / "__fragments").iterdir()) == []
