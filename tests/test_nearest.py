"""nearest= queries (flat KNN) against pylance 14 on the same datasets:
same rows in the same order, same columns, `_distance` within 1e-5
relative; pylance's validation errors; explain_plan texts."""

import numpy as np
import pyarrow as pa
import pytest

import lancelet
from lancelet.exceptions import InvalidInputError

pytestmark = pytest.mark.pylance

DIM = 64


def clustered(n, dim=DIM, clusters=20, seed=7):
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 4, (clusters, dim))
    assign = rng.integers(0, clusters, n)
    return (centers[assign] + rng.normal(0, 1, (n, dim))).astype(np.float32), rng


def make_table(n, dtype=np.float32, seed=7):
    vecs, _ = clustered(n, seed=seed)
    vecs = vecs.astype(dtype)
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "s": pa.array([f"r{i % 97}" for i in range(n)]),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), DIM),
    }), vecs


@pytest.fixture(scope="module")
def base(tmp_path_factory, lance_mod):
    path = str(tmp_path_factory.mktemp("nn") / "ds")
    tbl, vecs = make_table(3000)
    lance_mod.write_dataset(tbl, path, max_rows_per_file=1000)
    return path, vecs


def same(lance_mod, path, nearest, **kw):
    theirs = lance_mod.dataset(path).to_table(nearest={**nearest, "use_index": False}, **kw)
    ours = lancelet.dataset(path).to_table(nearest=nearest, **kw)
    assert ours.column_names == theirs.column_names
    assert ours.schema.types == theirs.schema.types
    for c in ours.column_names:
        if c == "_distance":
            np.testing.assert_allclose(ours[c].to_numpy(), theirs[c].to_numpy(), rtol=1e-5, atol=1e-5)
        else:
            assert ours[c].to_pylist() == theirs[c].to_pylist(), c
    return ours


def queries(vecs, n=3, seed=11):
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, len(vecs), n)
    return [vecs[r].astype(np.float32) + rng.normal(0, 0.5, vecs.shape[1]).astype(np.float32) for r in rows]


@pytest.mark.parametrize("metric", [None, "l2", "cosine", "dot"])
def test_flat_metrics(lance_mod, base, metric):
    path, vecs = base
    for q in queries(vecs):
        nn = {"column": "vec", "q": q, "k": 10}
        if metric:
            nn["metric"] = metric
        t = same(lance_mod, path, nn, columns=["id"])
        assert t.num_rows == 10


def test_default_k_and_columns(lance_mod, base):
    path, vecs = base
    q = queries(vecs, 1)[0]
    t = same(lance_mod, path, {"column": "vec", "q": q})
    assert t.num_rows == 10 and t.column_names == ["id", "s", "vec", "_distance"]
    same(lance_mod, path, {"column": "vec", "q": q, "k": 4}, columns=["vec", "id"])
    same(lance_mod, path, {"column": "vec", "q": q, "k": 4}, columns=["s"], with_row_id=True)
    same(lance_mod, path, {"column": "vec", "q": q, "k": 4}, columns=[])
    same(lance_mod, path, {"column": "vec", "q": q, "k": 4}, columns=["_distance", "id"])
    same(lance_mod, path, {"column": "vec", "q": q, "k": 4}, columns=["id", "_rowid"])
    same(lance_mod, path, {"column": "vec", "q": q.tolist(), "k": 4}, columns=["id"])


def test_filters_limit_offset(lance_mod, base):
    path, vecs = base
    q = queries(vecs, 1)[0]
    nn = {"column": "vec", "q": q, "k": 10}
    post = same(lance_mod, path, nn, columns=["id"], filter="id > 1500")
    pre = same(lance_mod, path, nn, columns=["id"], filter="id > 1500", prefilter=True)
    assert pre.num_rows == 10 and post.num_rows <= 10
    same(lance_mod, path, nn, columns=["id", "s"], filter="s = 'r5' OR id < 100", prefilter=True)
    same(lance_mod, path, nn, columns=["s"], filter="id > 1500", limit=2, offset=1)
    same(lance_mod, path, nn, columns=["id"], filter="id > 1500", prefilter=True, limit=3, offset=2)
    same(lance_mod, path, nn, columns=["id"], limit=3)
    same(lance_mod, path, nn, columns=["id"], offset=8)


def test_k_larger_than_rows_and_range(lance_mod, base):
    path, vecs = base
    q = queries(vecs, 1)[0]
    t = same(lance_mod, path, {"column": "vec", "q": q, "k": 5000}, columns=["id"])
    assert t.num_rows == 3000
    d = t["_distance"].to_numpy()
    lo, hi = float(d[20]), float(d[60])
    r = same(lance_mod, path, {"column": "vec", "q": q, "k": 30, "distance_range": (lo, hi)}, columns=["id"])
    assert r.num_rows == 30 and r["_distance"].to_numpy().min() >= lo
    same(lance_mod, path, {"column": "vec", "q": q, "k": 30, "distance_range": (None, hi)}, columns=["id"])
    same(lance_mod, path, {"column": "vec", "q": q, "k": 30, "distance_range": (lo, None)}, columns=["id"])


def test_batch_queries(lance_mod, base):
    path, vecs = base
    qs = np.stack(queries(vecs, 4))
    t = same(lance_mod, path, {"column": "vec", "q": qs, "k": 3}, columns=["id"])
    assert t.column_names == ["query_index", "id", "_distance"] and t.num_rows == 12
    same(lance_mod, path, {"column": "vec", "q": [list(map(float, x)) for x in qs], "k": 3}, columns=["id"],
         with_row_id=True)
    same(lance_mod, path, {"column": "vec", "q": qs, "k": 3}, columns=["id"], limit=5)


def test_deletions_and_stable_ids(lance_mod, tmp_path):
    tbl, vecs = make_table(2500, seed=3)
    q = queries(vecs, 2)
    for stable in (False, True):
        path = str(tmp_path / f"ds{stable}")
        ds = lance_mod.write_dataset(tbl, path, max_rows_per_file=800, enable_stable_row_ids=stable)
        first = lance_mod.dataset(path).to_table(nearest={"column": "vec", "q": q[0], "k": 5}, columns=["id"])
        gone = ", ".join(str(i) for i in first["id"].to_pylist()[:3])
        ds.delete(f"id % 3 = 0 OR id IN ({gone})")
        for x in q:
            t = same(lance_mod, path, {"column": "vec", "q": x, "k": 8}, columns=["id"], with_row_id=True)
            assert all(i % 3 != 0 and str(i) not in gone.split(", ") for i in t["id"].to_pylist())
        same(lance_mod, path, {"column": "vec", "q": q[0], "k": 8}, columns=["id"], filter="id < 1200",
             prefilter=True, with_row_id=True)


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_other_float_types(lance_mod, tmp_path, dtype):
    tbl, vecs = make_table(1500, dtype=dtype, seed=5)
    path = str(tmp_path / "ds")
    lance_mod.write_dataset(tbl, path, max_rows_per_file=600)
    for metric in ("l2", "cosine", "dot"):
        for q in queries(vecs.astype(np.float32), 2):
            same(lance_mod, path, {"column": "vec", "q": q, "k": 7, "metric": metric}, columns=["id"])


def test_hamming(lance_mod, tmp_path):
    rng = np.random.default_rng(9)
    centers = rng.integers(0, 256, (10, 16), dtype=np.uint8)
    flips = rng.integers(0, 256, (1200, 16), dtype=np.uint8) & rng.integers(0, 256, (1200, 16), dtype=np.uint8) \
        & rng.integers(0, 256, (1200, 16), dtype=np.uint8)
    vecs = centers[rng.integers(0, 10, 1200)] ^ flips
    tbl = pa.table({"id": pa.array(np.arange(1200, dtype=np.int64)),
                    "vec": pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), 16)})
    path = str(tmp_path / "ds")
    lance_mod.write_dataset(tbl, path, max_rows_per_file=500)
    for i in (3, 700):
        same(lance_mod, path, {"column": "vec", "q": vecs[i].astype(np.float32), "k": 9, "metric": "hamming"},
             columns=["id"])


def errors_of(fn):
    try:
        fn()
    except Exception as e:
        return type(e), str(e)
    return None, None


@pytest.mark.parametrize("nearest", [
    {"column": "nope", "q": np.zeros(DIM)},
    {"column": "id", "q": np.zeros(DIM)},
    {"column": "vec", "q": np.zeros(DIM - 1)},
    {"column": "vec", "q": np.zeros(DIM), "k": 0},
    {"column": "vec", "q": np.zeros(DIM), "nprobes": 0},
    {"column": "vec", "q": np.zeros(DIM), "minimum_nprobes": -1},
    {"column": "vec", "q": np.zeros(DIM), "maximum_nprobes": -1},
    {"column": "vec", "q": np.zeros(DIM), "minimum_nprobes": 5, "maximum_nprobes": 2},
    {"column": "vec", "q": np.zeros(DIM), "refine_factor": 0},
    {"column": "vec", "q": np.zeros(DIM), "ef": 0},
    {"column": "vec", "q": np.zeros(DIM), "distance_range": (1.0,)},
    {"column": "vec", "q": np.zeros(DIM), "metric": "foo"},
    {"column": "vec", "q": np.zeros((2, DIM - 1))},
    {"column": "vec", "q": ["a", "b"]},
    {"column": "vec", "q": np.zeros(DIM), "bogus": 1},
])
def test_validation_errors(lance_mod, base, nearest):
    path, _ = base
    theirs = errors_of(lambda: lance_mod.dataset(path).to_table(nearest=nearest))
    ours = errors_of(lambda: lancelet.dataset(path).to_table(nearest=nearest))
    assert theirs[0] is not None and ours[0] is not None
    assert issubclass(ours[0], theirs[0]) or (theirs[0] is ValueError and issubclass(ours[0], ValueError)), (ours, theirs)
    if "bogus" not in nearest:
        assert theirs[1] in ours[1] or ours[1] in theirs[1], (ours, theirs)


def test_no_index_error_is_invalid_input(base):
    path, _ = base
    with pytest.raises(InvalidInputError):
        lancelet.dataset(path).to_table(nearest={"column": "vec", "q": np.zeros(DIM)}, columns=["nope"])


def _norm_plan(text, path):
    return text.replace(path.lstrip("/"), "URI").strip()


@pytest.mark.parametrize("kw", [
    dict(columns=["id"]),
    dict(),
    dict(columns=["s", "id"], with_row_id=True),
    dict(columns=["vec", "id"]),
    dict(columns=[]),
    dict(columns=["id"], limit=3, offset=2),
    dict(columns=["id"], filter="id > 100"),
    dict(columns=["id"], filter="s > 'r2'"),
    dict(columns=["id", "s"], filter="id > 100"),
    dict(columns=["id"], filter="id > 100", limit=2, offset=1),
    dict(columns=["id"], filter="id > 100", prefilter=True, with_row_id=True),
    dict(columns=["s"], filter="id > 100", prefilter=True),
    dict(columns=["id"], filter="id > 100 AND s < 'r5'", prefilter=True),
    dict(columns=["id"], filter="id IN (1, 2)", prefilter=True),
    dict(columns=["id"], nn={"metric": "cosine", "k": 7}),
    dict(columns=["id"], nn={"distance_range": (1.0, None)}),
    dict(columns=["id"], nn={"distance_range": (1.0, 50.5)}),
    dict(columns=["id"], with_row_id=True, nn={"batch": True}),
    dict(nn={"batch": True}),
    dict(columns=["id"], filter="id > 5", nn={"batch": True}),
    dict(columns=["id"], filter="id > 5", prefilter=True, nn={"batch": True}),
])
def test_flat_plans(lance_mod, base, kw):
    path, vecs = base
    kw = dict(kw)
    nn = {"column": "vec", "q": vecs[0], "k": 5}
    extra = kw.pop("nn", {})
    if extra.pop("batch", False):
        nn["q"] = np.stack([vecs[0], vecs[1]])
    nn.update(extra)
    theirs = lance_mod.dataset(path).scanner(nearest=nn, **kw).explain_plan(True)
    ours = lancelet.dataset(path).scanner(nearest=nn, **kw).explain_plan(True)
    assert _norm_plan(ours, path) == _norm_plan(theirs, path)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, lance_mod):
    """pylance's IVF_FLAT index on 2 of 3 fragments (the third appended
    after), and a copy where it covers everything."""
    root = tmp_path_factory.mktemp("nnidx")
    tbl, vecs = make_table(3000, seed=13)
    full, part = str(root / "full"), str(root / "part")
    for p in (full, part):
        lance_mod.write_dataset(tbl.slice(0, 2000), p, max_rows_per_file=1000)
        lance_mod.dataset(p).create_index("vec", "IVF_FLAT", num_partitions=4)
    lance_mod.write_dataset(tbl.slice(2000), part, mode="append")
    return full, part, vecs


@pytest.mark.parametrize("which", ["full", "part"])
@pytest.mark.parametrize("kw", [
    dict(columns=["id"]),
    dict(columns=["id"], nn={"nprobes": 2, "refine_factor": 3}),
    dict(columns=["id"], filter="id > 100"),
    dict(columns=["id"], filter="id > 100", prefilter=True),
    dict(columns=["id"], fast_search=True),
    dict(columns=["id", "s"], with_row_id=True, limit=3),
    dict(columns=["id"], limit=2, offset=1),
    dict(columns=["id"], offset=7),
    dict(columns=["id"], offset=2),
    dict(columns=["id"], limit=7),
    dict(columns=["id"], limit=3, offset=1, filter="id > 3", prefilter=True),
    dict(columns=["id"], limit=3, filter="id > 3"),
    dict(columns=["id"], limit=3, nn={"refine_factor": 2}),
    dict(columns=["id"], nn={"use_index": False}, offset=2),
    dict(columns=["id"], nn={"use_index": False}, limit=7),
])
def test_indexed_plans(lance_mod, indexed, which, kw):
    full, part, vecs = indexed
    path = full if which == "full" else part
    kw = dict(kw)
    nn = {"column": "vec", "q": vecs[0], "k": 5, **kw.pop("nn", {})}
    theirs = lance_mod.dataset(path).scanner(nearest=nn, **kw).explain_plan(True)
    ours = lancelet.dataset(path).scanner(nearest=nn, **kw).explain_plan(True)
    assert _norm_plan(ours, path) == _norm_plan(theirs, path)


def test_indexed_dataset_without_the_index(lance_mod, indexed):
    """use_index=False, or a metric other than the index's: exact flat
    search, as pylance (plan included)."""
    _, part, vecs = indexed
    q = queries(vecs, 1)[0]
    same(lance_mod, part, {"column": "vec", "q": q, "k": 6, "use_index": False}, columns=["id"])
    nn = {"column": "vec", "q": q, "k": 6, "metric": "cosine"}
    theirs = lance_mod.dataset(part).to_table(nearest=nn, columns=["id"])
    ours = lancelet.dataset(part).to_table(nearest=nn, columns=["id"])
    assert ours["id"].to_pylist() == theirs["id"].to_pylist()
    plan = lancelet.dataset(part).scanner(nearest=nn, columns=["id"]).explain_plan()
    assert "KNNVectorDistance: metric=cosine" in plan and "ANNSubIndex" not in plan
