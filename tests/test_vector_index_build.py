"""Building vector indices (IVF_FLAT, IVF_PQ, IVF_SQ) with lancelet, checked
against pylance 14 (docs/research/vector-index.md).

With the same user-given IVF centroids (and PQ codebook) both libraries must
write the same index: partition assignment, row order, codes, metadata,
IVF message and manifest entry (uuid and timestamps aside). With trained
models, pylance must open and use lancelet's index with at least its own
recall."""

from __future__ import annotations

import glob
import json
import os
import shutil
import struct

import numpy as np
import pyarrow as pa
import pytest
from manifest_raw import _section, fields, manifest_path

import lancelet

pytestmark = pytest.mark.pylance

N, D = 4000, 32


def _table(vecs: np.ndarray, extra_nulls=()) -> pa.Table:
    flat = pa.array(vecs.reshape(-1))
    mask = None
    if extra_nulls:
        m = np.zeros(len(vecs), dtype=bool)
        m[list(extra_nulls)] = True
        mask = pa.array(m)
    col = pa.FixedSizeListArray.from_arrays(flat, vecs.shape[1], mask=mask)
    return pa.table({"id": pa.array(np.arange(len(vecs), dtype=np.int64)), "vec": col})


def _pair(tmp_path, lance_mod, tbl, **write_kw):
    """The same data written twice by pylance: one copy for each library."""
    out = []
    for who in ("py", "ll"):
        p = str(tmp_path / who)
        shutil.rmtree(p, ignore_errors=True)
        lance_mod.write_dataset(tbl, p, max_rows_per_file=2000, **write_kw)
        out.append(p)
    return out


def _raw_entries(path: str, version: int):
    """IndexMetadata messages of a version as (field, value) lists."""
    with open(manifest_path(path, version), "rb") as f:
        b = f.read()
    (pos,) = struct.unpack_from("<Q", b, len(b) - 16)
    at = [v for n, v in fields(_section(b, pos)) if n == 6]
    return [fields(raw) for n, raw in fields(_section(b, at[0])) if n == 1] if at else []


def _details(entry):
    """VectorIndexDetails of an entry: the non-map fields and the map."""
    anyv = dict(fields(dict(entry)[6]))
    det = fields(anyv[2])
    plain = [(n, v) for n, v in det if n != 9]
    params = {}
    for n, v in det:
        if n == 9:
            kv = dict(fields(v))
            params[kv[1].decode()] = kv[2].decode()
    return anyv[1].decode(), plain, params


def _comparable_entry(entry):
    """IndexMetadata without uuid, created_at and file sizes."""
    d = {}
    for n, v in entry:
        if n in (1, 8):
            continue
        if n == 6:
            d[6] = _details(entry)
        elif n == 10:
            d.setdefault(10, []).append(dict(fields(v))[1].decode())
        else:
            d[n] = v
    return d


def _index_dir(path: str) -> str:
    dirs = glob.glob(os.path.join(path, "_indices", "*"))
    assert len(dirs) == 1, dirs
    return dirs[0]


def _ivf(b: bytes):
    """offsets, lengths, centroid tensor bytes, loss of an IVF message."""
    offsets, lengths, tensor, loss = [], [], None, None
    for n, v in fields(b):
        if n in (2, 3):
            i = 0
            out = offsets if n == 2 else lengths
            while i < len(v):
                x = 0
                shift = 0
                while True:
                    c = v[i]
                    i += 1
                    x |= (c & 0x7F) << shift
                    shift += 7
                    if c < 0x80:
                        break
                out.append(x)
        elif n == 4:
            tensor = v
        elif n == 5:
            loss = struct.unpack("<d", v)[0]
    return offsets, lengths, tensor, loss


def _files(lance_mod, d: str):
    from lance.file import LanceFileReader
    out = {}
    for name in ("index.idx", "auxiliary.idx"):
        r = LanceFileReader(os.path.join(d, name))
        tbl = r.read_all().to_table()
        meta = {k.decode(): v.decode() for k, v in (tbl.schema.metadata or {}).items()}
        n_buf = len(r.metadata().global_buffers)
        bufs = [bytes(r.read_global_buffer(i)) for i in range(1, n_buf)]
        out[name] = (tbl, meta, bufs)
    return out


def _parse_meta(meta: dict) -> dict:
    out = {}
    for k, v in meta.items():
        try:
            j = json.loads(v)
        except ValueError:
            out[k] = v
            continue
        if k == "storage_metadata":
            j = [json.loads(s) for s in j]
        out[k] = j
    return out


def _vectors(dtype=np.float32, n=N, d=D, seed=42):
    return np.random.default_rng(seed).standard_normal((n, d)).astype(dtype)


def _model(dtype, parts=4, m=4, nbits=8, d=D, seed=7):
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((parts, d)).astype(dtype)
    cb = (rng.standard_normal((m, 2 ** nbits, d // m)) * 0.5).astype(dtype)
    return c, cb


CASES = [(t, metric, dt) for t in ("IVF_FLAT", "IVF_PQ", "IVF_SQ") for metric in ("l2", "cosine", "dot")
         for dt in (np.float32,)] + [(t, "l2", np.float16) for t in ("IVF_FLAT", "IVF_PQ", "IVF_SQ")] + [
    ("IVF_PQ", "cosine", np.float16)]


@pytest.mark.parametrize("index_type,metric,dtype", CASES)
def test_same_files_as_pylance_with_given_model(tmp_path, lance_mod, index_type, metric, dtype):
    vecs = _vectors(dtype)
    py, ll = _pair(tmp_path, lance_mod, _table(vecs))
    c, cb = _model(dtype)
    kw = dict(num_partitions=4, ivf_centroids=c, metric=metric)
    if index_type == "IVF_PQ":
        kw.update(num_sub_vectors=4, pq_codebook=cb)
    lance_mod.dataset(py).create_index("vec", index_type, **kw)
    lancelet.dataset(ll).create_index("vec", index_type, **kw)

    a, b = _files(lance_mod, _index_dir(py)), _files(lance_mod, _index_dir(ll))
    for name in ("index.idx", "auxiliary.idx"):
        ta, ma, ba = a[name]
        tb, mb, bb = b[name]
        assert tb.schema == ta.schema, name
        assert _parse_meta(mb) == _parse_meta(ma), name
        if name == "auxiliary.idx":
            assert tb.column("_rowid").equals(ta.column("_rowid"))
            col = ta.schema.names[1]
            if col == "flat" and metric == "cosine" and dtype == np.float16:
                np.testing.assert_allclose(np.stack(tb.column(col).to_numpy(zero_copy_only=False)).astype(np.float64),
                                           np.stack(ta.column(col).to_numpy(zero_copy_only=False)).astype(np.float64),
                                           rtol=1e-3, atol=1e-3)
            else:
                same = np.mean(np.stack(tb.column(col).to_numpy(zero_copy_only=False))
                               == np.stack(ta.column(col).to_numpy(zero_copy_only=False)))
                assert same >= (0.999 if dtype == np.float32 else 0.99), (col, same)
            assert bb == ba, "global buffers (IVF offsets/lengths, PQ codebook)"
        else:
            assert tb.num_rows == ta.num_rows == 0
            oa, la, tena, lossa = _ivf(ba[0])
            ob, lb, tenb, lossb = _ivf(bb[0])
            assert (ob, lb, tenb) == (oa, la, tena)
            assert lossb == pytest.approx(lossa, rel=1e-5 if dtype == np.float32 else 1e-3)

    ea, eb = _raw_entries(py, 2), _raw_entries(ll, 2)
    assert [_comparable_entry(e) for e in eb] == [_comparable_entry(e) for e in ea]


def test_pylance_uses_lancelet_index_with_good_recall(tmp_path, lance_mod):
    rng = np.random.default_rng(3)
    centers = rng.standard_normal((20, 64)).astype(np.float32) * 4
    vecs = (centers[rng.integers(0, 20, 20000)] + rng.standard_normal((20000, 64)).astype(np.float32)).astype(np.float32)
    py, ll = _pair(tmp_path, lance_mod, _table(vecs))
    queries = vecs[rng.integers(0, 20000, 30)] + rng.standard_normal((30, 64)).astype(np.float32) * 0.1
    for index_type, kw in (("IVF_FLAT", {}), ("IVF_PQ", {"num_sub_vectors": 16}), ("IVF_SQ", {})):
        lance_mod.dataset(py).create_index("vec", index_type, num_partitions=16, replace=True, **kw)
        lancelet.dataset(ll).create_index("vec", index_type, num_partitions=16, replace=True, **kw)
        recalls = []
        for p in (py, ll):
            ds = lance_mod.dataset(p)
            plan = ds.scanner(nearest={"column": "vec", "q": queries[0], "k": 10}, columns=["id"]).explain_plan()
            assert "ANNSubIndex" in plan
            hits = 0
            for q in queries:
                truth = set(np.argsort(((vecs - q) ** 2).sum(1))[:10])
                got = ds.to_table(nearest={"column": "vec", "q": q, "k": 10, "nprobes": 4}, columns=["id"])
                hits += len(truth & set(got.column("id").to_pylist()))
            recalls.append(hits / (10 * len(queries)))
        assert recalls[1] >= recalls[0] - 0.02, (index_type, recalls)


def test_validation_messages(tmp_path, lance_mod):
    p = str(tmp_path / "v")
    tbl = _table(_vectors()).append_column("s", pa.array(["x"] * N))
    lance_mod.write_dataset(tbl, p)
    ds = lancelet.dataset(p)
    with pytest.raises(KeyError, match="nope not found in schema"):
        ds.create_index("nope", "IVF_PQ")
    with pytest.raises(TypeError, match="Vector column s must be FixedSizeListArray 1-dimensional FixedShapeTensorArray, got string"):
        ds.create_index("s", "IVF_FLAT")
    with pytest.raises(ValueError, match=r"dimension \(32\) must be divisible by num_sub_vectors \(5\)"):
        ds.create_index("vec", "IVF_PQ", num_sub_vectors=5)
    with pytest.raises(ValueError, match="Metric foo not supported."):
        ds.create_index("vec", "IVF_FLAT", metric="foo")
    with pytest.raises(NotImplementedError, match="index types supported. Got IVF_XX"):
        ds.create_index("vec", "ivf_xx")
    with pytest.raises(ValueError, match="num_partitions and num_sub_vectors are required for IVF_PQ"):
        ds.create_index("vec", "IVF_PQ", num_partitions=4)
    with pytest.raises(ValueError, match="ivf_centroids must be specified when pq_codebook is provided"):
        ds.create_index("vec", "IVF_PQ", num_sub_vectors=4, pq_codebook=np.zeros((4, 256, 8), np.float32))
    with pytest.raises(ValueError, match="Ivf centroids has 3 clusters, but num_partitions=4"):
        ds.create_index("vec", "IVF_FLAT", num_partitions=4, ivf_centroids=np.zeros((3, 32), np.float32))
    with pytest.raises(NotImplementedError):
        ds.create_index("vec", "IVF_HNSW_SQ")
    with pytest.raises(NotImplementedError):
        ds.create_index("vec", "IVF_RQ")
    # Nothing was committed, no index directory left.
    assert lancelet.dataset(p).version == 1
    assert not os.path.exists(os.path.join(p, "_indices")) or not os.listdir(os.path.join(p, "_indices"))


def test_replace_semantics(tmp_path, lance_mod):
    p = str(tmp_path / "r")
    lance_mod.write_dataset(_table(_vectors()), p)
    ds = lancelet.dataset(p)
    ds.create_index("vec", "IVF_FLAT", num_partitions=2)
    # IndexExistsError is also the RuntimeError pylance raises
    with pytest.raises(lancelet.exceptions.IndexExistsError,
                       match="Index name 'vec_idx' already exists, please specify a different name or use replace=True"):
        ds.create_index("vec", "IVF_FLAT", num_partitions=2)
    with pytest.raises(RuntimeError, match="Index name 'vec_idx' already exists"):
        lance_mod.dataset(p).create_index("vec", "IVF_FLAT", num_partitions=2)
    assert ds.version == 2
    ds.create_index("vec", "IVF_SQ", num_partitions=2, replace=True)
    assert ds.version == 3
    ix = lance_mod.dataset(p).list_indices()
    assert [(i["name"], i["type"]) for i in ix] == [("vec_idx", "IVF_SQ")]
    ds.create_index("vec", "IVF_FLAT", name="other", num_partitions=2)
    assert sorted((i["name"], i["type"]) for i in ds.list_indices()) == [("other", "IVF_FLAT"), ("vec_idx", "IVF_SQ")]


def test_failed_build_leaves_nothing(tmp_path, lance_mod):
    p = str(tmp_path / "f")
    lance_mod.write_dataset(_table(_vectors()), p)
    ds = lancelet.dataset(p)
    with pytest.raises(ValueError):
        # A codebook of the wrong sub-vector width fails inside the build.
        ds.create_index("vec", "IVF_PQ", num_sub_vectors=4, ivf_centroids=np.zeros((4, 32), np.float32),
                        pq_codebook=pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(4 * 256 * 4, np.float32)), 4))
    assert lancelet.dataset(p).version == 1
    assert not glob.glob(os.path.join(p, "_indices", "*"))


def test_stable_row_ids_and_deletions(tmp_path, lance_mod):
    vecs = _vectors()
    tbl = _table(vecs, extra_nulls=(5,))
    py, ll = _pair(tmp_path, lance_mod, tbl, enable_stable_row_ids=True)
    for p in (py, ll):
        lance_mod.dataset(p).delete("id < 100 or id = 2500")
    c, _ = _model(np.float32)
    lance_mod.dataset(py).create_index("vec", "IVF_FLAT", ivf_centroids=c)
    lancelet.dataset(ll).create_index("vec", "IVF_FLAT", ivf_centroids=c)
    a, b = _files(lance_mod, _index_dir(py)), _files(lance_mod, _index_dir(ll))
    ta, tb = a["auxiliary.idx"][0], b["auxiliary.idx"][0]
    assert tb.num_rows == ta.num_rows == N - 101
    assert tb.column("_rowid").equals(ta.column("_rowid"))
    assert max(tb.column("_rowid").to_pylist()) < N  # stable ids, not addresses


def test_introspection_matches_pylance(tmp_path, lance_mod):
    py, ll = _pair(tmp_path, lance_mod, _table(_vectors()))
    c, cb = _model(np.float32)
    kw = dict(num_partitions=4, ivf_centroids=c, num_sub_vectors=4, pq_codebook=cb, metric="cosine")
    lance_mod.dataset(py).create_index("vec", "IVF_PQ", **kw)
    lancelet.dataset(ll).create_index("vec", "IVF_PQ", **kw)
    dp, dl = lance_mod.dataset(py), lancelet.dataset(ll)
    strip = lambda rows: [{k: v for k, v in r.items() if k not in ("uuid", "fragment_ids")} for r in rows]  # noqa: E731
    assert strip(dl.list_indices()) == strip(dp.list_indices())
    assert [sorted(r["fragment_ids"]) for r in dl.list_indices()] == [sorted(r["fragment_ids"]) for r in dp.list_indices()]
    (a,), (b,) = dp.describe_indices(), dl.describe_indices()
    for attr in ("name", "type_url", "index_type", "num_rows_indexed", "fields", "field_names", "details"):
        assert getattr(b, attr) == getattr(a, attr), attr
    # pylance reads lancelet's index statistics as its own.
    sa = lance_mod.dataset(py).stats.index_stats("vec_idx")
    sb = lance_mod.dataset(ll).stats.index_stats("vec_idx")
    for k in ("index_type", "num_indexed_rows", "num_unindexed_rows", "num_indexed_fragments"):
        assert sb[k] == sa[k], k
    ia, ib = sa["indices"][0], sb["indices"][0]
    for k in ("metric_type", "num_partitions", "sub_index", "partitions", "centroids"):
        assert ib[k] == ia[k], k
    assert ib["loss"] == pytest.approx(ia["loss"], rel=1e-5)


def test_default_partitions_and_trained_build(tmp_path, lance_mod):
    p = str(tmp_path / "d")
    lance_mod.write_dataset(_table(_vectors(n=20000)), p)
    ds = lancelet.dataset(p)
    ds.create_index("vec", "IVF_FLAT")
    r = lance_mod.dataset(p).stats.index_stats("vec_idx")
    assert r["indices"][0]["num_partitions"] == 4  # 20000 // 4096
    assert r["num_indexed_rows"] == 20000
    ds.create_index("vec", "IVF_SQ", replace=True)
    assert lance_mod.dataset(p).stats.index_stats("vec_idx")["indices"][0]["num_partitions"] == 2
    ds.create_index("vec", "IVF_PQ", num_sub_vectors=8, replace=True, sample_rate=32, max_iters=5)
    det = lancelet.dataset(p).describe_indices()[0].details
    assert det["compression"] == {"type": "pq", "num_bits": 8, "num_sub_vectors": 8}
    assert det["runtime_hints"]["lance.pq.sample_rate"] == "32"
    assert det["runtime_hints"]["lance.ivf.max_iters"] == "5"


def test_null_and_nan_vectors_are_not_indexed(tmp_path, lance_mod):
    vecs = _vectors()
    vecs[9, 3] = np.nan
    py, ll = _pair(tmp_path, lance_mod, _table(vecs, extra_nulls=(7, 2100)))
    c, _ = _model(np.float32)
    lance_mod.dataset(py).create_index("vec", "IVF_SQ", ivf_centroids=c)
    lancelet.dataset(ll).create_index("vec", "IVF_SQ", ivf_centroids=c)
    ta = _files(lance_mod, _index_dir(py))["auxiliary.idx"][0]
    tb = _files(lance_mod, _index_dir(ll))["auxiliary.idx"][0]
    assert tb.num_rows == ta.num_rows == N - 3
    assert tb.equals(ta)


def test_index_statistics_equal_pylance(tmp_path, lance_mod):
    py, ll = _pair(tmp_path, lance_mod, _table(_vectors()))
    c, cb = _model(np.float32)
    for t, kw in (("IVF_FLAT", {}), ("IVF_PQ", {"num_sub_vectors": 4, "pq_codebook": cb}), ("IVF_SQ", {})):
        lance_mod.dataset(py).create_index("vec", t, ivf_centroids=c, metric="cosine", replace=True, **kw)
        lancelet.dataset(ll).create_index("vec", t, ivf_centroids=c, metric="cosine", replace=True, **kw)
        sa = lance_mod.dataset(py).stats.index_stats("vec_idx")
        sb = lancelet.dataset(ll).stats.index_stats("vec_idx")
        assert list(sb) == list(sa)
        for k in sa:
            if k not in ("indices", "segments", "updated_at_timestamp_ms"):
                assert sb[k] == sa[k], k
        ia, ib = sa["indices"][0], sb["indices"][0]
        assert list(ib) == list(ia)
        for k in ia:
            if k not in ("uuid", "uri", "loss"):
                assert ib[k] == ia[k], k
        assert ib["uri"].endswith(f"{ib['uuid']}/index.idx")
        assert ib["loss"] == pytest.approx(ia["loss"], rel=1e-5)
    with pytest.raises(KeyError, match='Index "nope" not found'):
        lancelet.dataset(ll).stats.index_stats("nope")
