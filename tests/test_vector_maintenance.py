"""Vector index maintenance against pylance 14 (issue 31,
docs/research/vector-index.md §12–§13): compaction remaps IVF segments
(new uuid, row addresses mapped, deleted rows dropped, model kept),
``optimize_indices`` adds delta segments and merges the newest ones, and
both libraries read what the other wrote.

Each test starts from one dataset and index written by pylance (or
lancelet) and copied, so both libraries maintain the same index: the files
they write must then hold the same rows, codes and model, the manifest
entries the same fields, and ``nearest=`` the same answers."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pyarrow as pa
import pytest

import lancelet
from lancelet.exceptions import UnsupportedError

pytestmark = pytest.mark.pylance

DIM = 16


def _table(n, seed, start=0, spread=1.0):
    """Clustered embeddings: two well separated groups of four clusters, so
    a 2-partition index has two partitions of similar size."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 3, (8, DIM))
    centers[:4] += 12
    vecs = (centers[rng.integers(0, 8, n)] + rng.normal(0, spread, (n, DIM))).astype(np.float32)
    return pa.table({
        "id": pa.array(np.arange(start, start + n, dtype=np.int64)),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), DIM),
    })


CASES = [
    ("IVF_FLAT", "l2", {}),
    ("IVF_PQ", "l2", {"num_sub_vectors": 4}),
    ("IVF_PQ", "dot", {"num_sub_vectors": 8}),
    ("IVF_SQ", "cosine", {}),
]


def _pair(root, lance_mod, kind, metric, extra, builder="pylance", n=6000, **write_kw):
    """One dataset with an index (built by `builder`), copied: pylance
    maintains `theirs`, lancelet `ours`."""
    theirs, ours = str(root / "theirs"), str(root / "ours")
    lance_mod.write_dataset(_table(n, 5), theirs, max_rows_per_file=2000, **write_kw)
    if builder == "pylance":
        lance_mod.dataset(theirs).create_index("vec", kind, metric=metric, num_partitions=2, **extra)
    else:
        lancelet.dataset(theirs).create_index("vec", kind, metric=metric, num_partitions=2, **extra)
    shutil.copytree(theirs, ours)
    return theirs, ours


def _segments(lance_mod, path):
    """Per segment (manifest order): the list_indices row and the two
    files' contents as pylance's reader sees them."""
    from lance.file import LanceFileReader

    out = []
    for row in lance_mod.dataset(path).list_indices():
        base = f"{path}/_indices/{row['uuid']}"
        aux = LanceFileReader(f"{base}/auxiliary.idx")
        idx = LanceFileReader(f"{base}/index.idx")
        out.append({
            "row": row,
            "aux": aux.read_all().to_table(),
            "aux_ivf": bytes(aux.read_global_buffer(1)),
            "aux_meta": {k: v for k, v in (aux.read_all().to_table().schema.metadata or {}).items()},
            "idx_ivf": bytes(idx.read_global_buffer(1)),
            "sizes": {f: os.path.getsize(f"{base}/{f}") for f in ("auxiliary.idx", "index.idx")},
        })
    return out


def _ivf(b):
    """(lengths, centroids bytes, loss) of an IVF message."""
    from manifest_raw import fields, packed_varints

    d = dict(fields(b))
    lengths = packed_varints(d[3]) if 3 in d else []
    cent = dict(fields(d[4])).get(3) if 4 in d else None
    loss = d.get(5)
    return lengths, cent, loss


def _same_segments(lance_mod, theirs, ours, loss_rtol=1e-4):
    a, b = _segments(lance_mod, theirs), _segments(lance_mod, ours)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        rx, ry = x["row"], y["row"]
        assert (rx["name"], rx["type"], sorted(rx["fragment_ids"]), rx["version"]) == \
            (ry["name"], ry["type"], sorted(ry["fragment_ids"]), ry["version"])
        assert x["aux"].column_names == y["aux"].column_names
        assert x["aux"]["_rowid"].to_pylist() == y["aux"]["_rowid"].to_pylist()
        col = x["aux"].column_names[1]
        if col == "flat":
            np.testing.assert_allclose(np.stack(x["aux"][col].to_numpy(zero_copy_only=False)),
                                       np.stack(y["aux"][col].to_numpy(zero_copy_only=False)), rtol=1e-6)
        else:
            assert x["aux"][col].to_pylist() == y["aux"][col].to_pylist()
        lx, cx, sx = _ivf(x["idx_ivf"])
        ly, cy, sy = _ivf(y["idx_ivf"])
        assert cx == cy, "centroids differ"
        if sx is None or sy is None:
            assert sx == sy
        else:
            import struct
            fx, fy = struct.unpack("<d", sx)[0], struct.unpack("<d", sy)[0]
            assert fx == pytest.approx(fy, rel=loss_rtol, abs=1e-3)
        assert _ivf(x["aux_ivf"])[0] == _ivf(y["aux_ivf"])[0]
        assert x["aux_meta"] == y["aux_meta"]
    return a, b


def _stats(ds):
    s = ds.stats.index_stats("vec_idx") if hasattr(ds, "stats") else ds.index_statistics("vec_idx")
    return {k: s[k] for k in ("num_indices", "num_segments", "num_indexed_rows_per_delta", "num_unindexed_rows",
                              "num_indexed_fragments", "num_unindexed_fragments")}


def _queries(n=4, seed=11):
    t = _table(n, seed)
    return [np.asarray(v, dtype=np.float32) for v in t["vec"].to_pylist()]


def _answers_agree(lance_mod, theirs, ours, k=10, nprobes=2):
    """lancelet on `ours` answers as pylance on `theirs`; each library
    reads the other's files too."""
    for q in _queries():
        n = {"column": "vec", "q": q, "k": k, "nprobes": nprobes}
        ref = lance_mod.dataset(theirs).to_table(nearest=n, columns=["id"])
        for got in (lancelet.dataset(ours).to_table(nearest=n, columns=["id"]),
                    lancelet.dataset(theirs).to_table(nearest=n, columns=["id"]),
                    lance_mod.dataset(ours).to_table(nearest=n, columns=["id"])):
            assert got["id"].to_pylist() == ref["id"].to_pylist()
            np.testing.assert_allclose(got["_distance"].to_numpy(), ref["_distance"].to_numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}")
@pytest.mark.parametrize("builder", ["pylance", "lancelet"])
def test_compaction_remaps_like_pylance(tmp_path, lance_mod, case, builder):
    kind, metric, extra = case
    theirs, ours = _pair(tmp_path, lance_mod, kind, metric, extra, builder=builder)
    before = lance_mod.dataset(theirs).list_indices()[0]["uuid"]
    lance_mod.dataset(theirs).delete("id % 10 = 0")
    lancelet.dataset(ours).delete("id % 10 = 0")
    lance_mod.dataset(theirs).optimize.compact_files()
    lancelet.dataset(ours).optimize.compact_files()
    a, b = _same_segments(lance_mod, theirs, ours, loss_rtol=0)
    assert a[0]["row"]["uuid"] != before and b[0]["row"]["uuid"] != before
    assert b[0]["aux"].num_rows == 5400
    # the manifest entry records the sizes of the files written
    assert lance_mod.dataset(ours).describe_indices()[0].total_size_bytes == sum(b[0]["sizes"].values())
    assert _stats(lancelet.dataset(ours)) == _stats(lance_mod.dataset(theirs))
    assert _stats(lancelet.dataset(ours))["num_unindexed_rows"] == 0
    _answers_agree(lance_mod, theirs, ours)


def test_deleted_rows_stay_gone_after_remap(tmp_path, lance_mod):
    theirs, ours = _pair(tmp_path, lance_mod, "IVF_FLAT", "l2", {})
    tbl = lance_mod.dataset(ours).to_table()
    ds = lancelet.dataset(ours)
    ds.delete("id < 300")
    ds.optimize.compact_files()
    for i in (0, 17, 299):
        q = np.asarray(tbl["vec"][i].as_py(), dtype=np.float32)
        got = lancelet.dataset(ours).to_table(nearest={"column": "vec", "q": q, "k": 5, "nprobes": 2}, columns=["id"])
        assert i not in got["id"].to_pylist()
        assert min(got["id"].to_pylist()) >= 300


# pylance encodes a dot-metric PQ delta's rows by a rule lancelet does not
# reproduce yet: the delta's codes differ, and with them the ranking of near
# ties (issue 31, left open). Strict, so a fix shows up as XPASS.
_DELTA_CASES = [c if c[:2] != ("IVF_PQ", "dot") else
                pytest.param(c, marks=pytest.mark.xfail(strict=True, reason="PQ dot delta codes differ from pylance's"))
                for c in CASES]


@pytest.mark.parametrize("case", _DELTA_CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def test_optimize_deltas_and_merges_like_pylance(tmp_path, lance_mod, case):
    kind, metric, extra = case
    theirs, ours = _pair(tmp_path, lance_mod, kind, metric, extra)
    base_uuid = lance_mod.dataset(theirs).list_indices()[0]["uuid"]

    def append(seed, start):
        for p in (theirs, ours):
            lance_mod.write_dataset(_table(300, seed, start=start), p, mode="append")

    def both(**kw):
        lance_mod.dataset(theirs).optimize.optimize_indices(**kw)
        lancelet.dataset(ours).optimize.optimize_indices(**kw)
        assert lancelet.dataset(ours).version == lance_mod.dataset(theirs).version
        _same_segments(lance_mod, theirs, ours)
        assert _stats(lancelet.dataset(ours)) == _stats(lance_mod.dataset(theirs))
        _answers_agree(lance_mod, theirs, ours)

    append(21, 100_000)
    both()                                   # a delta over the new fragment
    rows = lancelet.dataset(ours).list_indices()
    assert [r["uuid"] for r in rows][0] == base_uuid and len(rows) == 2
    append(22, 200_000)
    both(num_indices_to_merge=0)             # another delta
    assert _stats(lancelet.dataset(ours))["num_indexed_rows_per_delta"] == [6000, 300, 300]
    both(num_indices_to_merge=2)             # the two deltas merged
    assert _stats(lancelet.dataset(ours))["num_indexed_rows_per_delta"] == [6000, 600]
    append(23, 300_000)
    both(num_indices_to_merge=5)             # everything in one segment
    assert _stats(lancelet.dataset(ours))["num_segments"] == 1


def test_optimize_after_delete_is_a_noop(tmp_path, lance_mod):
    theirs, ours = _pair(tmp_path, lance_mod, "IVF_PQ", "l2", {"num_sub_vectors": 4})
    ds = lancelet.dataset(ours)
    ds.delete("id % 3 = 0")
    v = lancelet.dataset(ours).version
    lancelet.dataset(ours).optimize.optimize_indices()
    assert lancelet.dataset(ours).version == v
    lance_mod.dataset(theirs).delete("id % 3 = 0")
    lance_mod.dataset(theirs).optimize.optimize_indices()
    assert lance_mod.dataset(theirs).version == v


def test_compaction_then_optimize_both_ways(tmp_path, lance_mod):
    """pylance compacts and optimizes what lancelet maintained and the
    reverse; both keep answering alike."""
    theirs, ours = _pair(tmp_path, lance_mod, "IVF_PQ", "l2", {"num_sub_vectors": 4}, builder="lancelet")
    for p in (theirs, ours):
        lance_mod.write_dataset(_table(300, 31, start=50_000), p, mode="append")
    lancelet.dataset(ours).optimize.optimize_indices()
    lance_mod.dataset(theirs).optimize.optimize_indices()
    for p in (theirs, ours):
        lance_mod.dataset(p).delete("id % 7 = 0")
    lance_mod.dataset(ours).optimize.compact_files()      # pylance remaps lancelet's segments
    lancelet.dataset(theirs).optimize.compact_files()     # lancelet remaps pylance's
    a, b = _segments(lance_mod, theirs), _segments(lance_mod, ours)
    assert [sorted(s["row"]["fragment_ids"]) for s in a] == [sorted(s["row"]["fragment_ids"]) for s in b]
    assert [s["aux"]["_rowid"].to_pylist() for s in a] == [s["aux"]["_rowid"].to_pylist() for s in b]
    assert _stats(lancelet.dataset(ours)) == _stats(lance_mod.dataset(theirs))
    _answers_agree(lance_mod, theirs, ours)


def test_retrain_rebuilds_one_segment(tmp_path, lance_mod):
    theirs, ours = _pair(tmp_path, lance_mod, "IVF_PQ", "l2", {"num_sub_vectors": 4})
    for p in (theirs, ours):
        lance_mod.write_dataset(_table(300, 41, start=50_000), p, mode="append")
    lancelet.dataset(ours).optimize.optimize_indices()
    lance_mod.dataset(theirs).optimize.optimize_indices()
    v = lancelet.dataset(ours).version
    lancelet.dataset(ours).optimize.optimize_indices(retrain=True)
    lance_mod.dataset(theirs).optimize.optimize_indices(retrain=True)
    a, b = _segments(lance_mod, theirs), _segments(lance_mod, ours)
    assert len(a) == len(b) == 1
    assert b[0]["row"]["version"] == a[0]["row"]["version"] == v
    assert len(_ivf(b[0]["aux_ivf"])[0]) == len(_ivf(a[0]["aux_ivf"])[0])   # default partitions for 6300 rows
    assert _stats(lancelet.dataset(ours)) == _stats(lance_mod.dataset(theirs))
    # lancelet's retrained index answers as pylance reads it
    for q in _queries():
        n = {"column": "vec", "q": q, "k": 10}
        x = lancelet.dataset(ours).to_table(nearest=n, columns=["id"])
        y = lance_mod.dataset(ours).to_table(nearest=n, columns=["id"])
        assert x["id"].to_pylist() == y["id"].to_pylist()


def test_hnsw_optimize_refused_and_nothing_changes(tmp_path, lance_mod):
    p = str(tmp_path / "h")
    lance_mod.write_dataset(_table(2000, 5), p, max_rows_per_file=1000)
    lance_mod.dataset(p).create_index("vec", "IVF_HNSW_SQ", num_partitions=2)
    lance_mod.write_dataset(_table(100, 6, start=9000), p, mode="append")
    v = lance_mod.dataset(p).version
    dirs = sorted(os.listdir(f"{p}/_indices"))
    with pytest.raises(UnsupportedError, match="IVF_HNSW_SQ"):
        lancelet.dataset(p).optimize.optimize_indices()
    assert lancelet.dataset(p).version == v
    assert sorted(os.listdir(f"{p}/_indices")) == dirs


def test_deferred_remap_keeps_vector_index(tmp_path, lance_mod):
    theirs, ours = _pair(tmp_path, lance_mod, "IVF_FLAT", "l2", {})
    uuid = lancelet.dataset(ours).list_indices()[0]["uuid"]
    lance_mod.dataset(theirs).delete("id % 10 = 0")
    lancelet.dataset(ours).delete("id % 10 = 0")
    lance_mod.dataset(theirs).optimize.compact_files(defer_index_remap=True)
    lancelet.dataset(ours).optimize.compact_files(defer_index_remap=True)
    rows = {r["name"]: r for r in lancelet.dataset(ours).list_indices()}
    assert rows["vec_idx"]["uuid"] == uuid
    theirs_rows = {r["name"]: r for r in lance_mod.dataset(theirs).list_indices()}
    assert sorted(rows["vec_idx"]["fragment_ids"]) == sorted(theirs_rows["vec_idx"]["fragment_ids"])
    _answers_agree(lance_mod, theirs, ours)
    v = lancelet.dataset(ours).version
    lancelet.dataset(ours).optimize.optimize_indices()
    assert lancelet.dataset(ours).version == v


def test_stable_row_ids_are_not_remapped(tmp_path, lance_mod):
    theirs, ours = _pair(tmp_path, lance_mod, "IVF_SQ", "l2", {}, enable_stable_row_ids=True)
    lance_mod.dataset(theirs).delete("id % 10 = 0")
    lancelet.dataset(ours).delete("id % 10 = 0")
    lance_mod.dataset(theirs).optimize.compact_files()
    lancelet.dataset(ours).optimize.compact_files()
    a, b = _segments(lance_mod, theirs), _segments(lance_mod, ours)
    assert [s["row"]["uuid"] for s in a] == [s["row"]["uuid"] for s in b]
    assert sorted(a[0]["row"]["fragment_ids"]) == sorted(b[0]["row"]["fragment_ids"])
    _answers_agree(lance_mod, theirs, ours)
