"""Blob columns (large_binary with ``lance-encoding:blob``): values stored out
of line behind (position, size) descriptions."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancelet.file
from datagen import assert_tables_equal, pylance_read

pytestmark = pytest.mark.pylance


def _blob_table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    values = []
    for i in range(n):
        k = i % 5
        if k == 0:
            values.append(None)
        elif k == 1:
            values.append(b"")
        else:
            values.append(rng.integers(0, 256, int(rng.integers(1, 20_000)), dtype=np.uint8).tobytes())
    field = pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    return pa.table({"id": pa.array(np.arange(n)), "blob": pa.array(values, pa.large_binary())},
                    schema=pa.schema([pa.field("id", pa.int64()), field]))


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_pylance_blob_column_reads_equal(version, tmp_path, lance_mod):
    table = _blob_table(300, seed=3)
    p = tmp_path / "blob.lance"
    w = lance_mod.file.LanceFileWriter(str(p), table.schema, version=version)
    w.write_batch(table)
    w.close()
    oracle = pylance_read(p)
    r = lancelet.file.LanceFileReader(str(p))
    assert_tables_equal(r.read(), oracle)
    assert r.read(columns=["blob"]).column(0).to_pylist() == table.column("blob").to_pylist()
    idx = [299, 3, 3, 0, 150]
    assert r.take(idx, columns=["blob"]).column(0).to_pylist() == [table.column("blob")[i].as_py() for i in idx]
    assert_tables_equal(r.read(offset=101, limit=57), oracle.slice(101, 57))
