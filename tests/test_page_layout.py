"""Page cuts match pylance's: a table of wide vectors written by lancelet
takes no more bytes than pylance's file of the same data (issue 16's
"bytes on disk <= 1.0x" for dataset B), and each library reads the
other's file identically."""

from __future__ import annotations

import glob
import os

import lance
import numpy as np
import pyarrow as pa

import lancelet


def _vectors(n: int, dim: int, seed: int = 5) -> pa.Table:
    rng = np.random.default_rng(seed)
    vals = rng.standard_normal(n * dim, dtype=np.float32)
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(vals), dim),
    })


def _data_bytes(path: str) -> int:
    files = glob.glob(os.path.join(path, "data", "*.lance"))
    assert len(files) == 1
    return os.path.getsize(files[0])


def test_one_batch_of_vectors_is_one_page_like_pylance(tmp_path):
    # 12 MB of vectors in one batch: pylance writes one page per column
    # (more than its 8 MiB page threshold arrives at once); so must we, or
    # every extra page costs ~90 bytes of metadata.
    t = _vectors(24_000, 128)
    ll, pl = str(tmp_path / "ll"), str(tmp_path / "pl")
    lancelet.write_dataset(t, ll)
    lance.write_dataset(t, pl)
    assert _data_bytes(ll) <= _data_bytes(pl)
    assert lance.dataset(ll).to_table().equals(t)
    assert lancelet.dataset(pl).to_table().equals(t)
    idx = [0, 1, 4_095, 12_000, 23_999]
    assert lance.dataset(ll).take(idx).equals(t.take(idx))
    assert lancelet.dataset(ll).take(idx).equals(t.take(idx))
    got = lancelet.dataset(ll).to_table(filter="id >= 23990")
    assert got.equals(t.slice(23_990))


def test_streamed_vectors_read_back(tmp_path):
    # Small batches accumulate into pages; both libraries read the result.
    t = _vectors(30_000, 96)
    ll = str(tmp_path / "ll")
    lancelet.write_dataset(pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=1_000)), ll)
    assert lance.dataset(ll).to_table().equals(t)
    assert lancelet.dataset(ll).to_table(batch_size=777).equals(t)
