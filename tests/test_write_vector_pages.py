"""Vector columns (top-level fixed-size lists of >= 256-byte rows) whose
batches fill a page alone are stored from the Arrow memory itself, without
a copy (rust/lancelet/src/file/write/vectors.rs); batches with null rows or
null items, and small batches, are shredded as before. Whatever the mix,
pylance and lancelet must read the dataset back identically, and takes
must return the same rows."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet


def _vectors(rng: np.random.Generator, n: int, dim: int, row_nulls: float, item_nulls: float,
             item: pa.DataType) -> pa.Array:
    vals = rng.standard_normal(n * dim).astype(item.to_pandas_dtype())
    items = pa.array(vals, item, mask=rng.random(n * dim) < item_nulls if item_nulls else None)
    mask = pa.array(rng.random(n) < row_nulls) if row_nulls else None
    return pa.FixedSizeListArray.from_arrays(items, dim, mask=mask)


@pytest.mark.parametrize("version,item,dim", [("2.1", pa.float32(), 64), ("2.2", pa.float64(), 40),
                                              ("2.2", pa.float32(), 128)])
def test_vector_pages_read_back_in_pylance(tmp_path, version, item, dim):
    rng = np.random.default_rng(dim)
    row = dim * item.bit_width // 8
    big = (8 << 20) // row + 100  # a batch that fills an 8 MiB page alone
    # (rows, row nulls, item nulls): page-sized clean batches (uncopied),
    # one with null rows, one with null items, small ones buffered together.
    plan = [(big, 0, 0), (300, 0, 0), (big, 0, 0), (big, 0.05, 0), (700, 0, 0), (big, 0, 0.01), (big + 5, 0, 0)]
    batches = []
    start = 0
    for n, rn, inull in plan:
        ids = pa.array(np.arange(start, start + n, dtype=np.int64))
        full = _vectors(rng, n + 3, dim, rn, inull, item)
        batches.append(pa.record_batch([ids, full.slice(2, n)], names=["id", "vec"]))
        start += n
    t = pa.Table.from_batches(batches)
    path = str(tmp_path / "ds")
    lancelet.write_dataset(pa.RecordBatchReader.from_batches(t.schema, batches), path,
                           data_storage_version=version, max_rows_per_file=3 * big)
    assert lance.dataset(path).to_table().equals(t)
    assert lancelet.dataset(path).to_table().equals(t)
    idx = [0, big - 1, big, big + 300, 2 * big + 299, 3 * big + 400, start - 1]
    assert lance.dataset(path).take(idx).equals(t.take(idx))


def test_abandoned_file_writer_with_numpy_vectors_returns(tmp_path):
    # Vector pages are uploaded from the Arrow memory itself; numpy-backed
    # buffers are released under the GIL. A writer abandoned with parts in
    # flight must release the GIL while its upload is aborted, not hang; a
    # subprocess with a time limit keeps a regression from hanging the run.
    import subprocess
    import sys
    import textwrap

    path = tmp_path / "f.lance"
    code = textwrap.dedent(f"""
        import numpy as np, pyarrow as pa
        from lancelet.file import LanceFileWriter
        vals = np.random.default_rng(1).standard_normal(60_000 * 64).astype(np.float32)
        batch = pa.record_batch([pa.FixedSizeListArray.from_arrays(pa.array(vals), 64)], names=["v"])
        try:
            with LanceFileWriter({str(path)!r}) as w:
                for _ in range(6):
                    w.write(batch)
                raise RuntimeError("abandon")
        except RuntimeError:
            pass
        print("done")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "done"
    assert not path.exists()
