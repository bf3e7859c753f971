"""nearest= through vector indices, end to end (issue 31): the query side
(table/nearest) over the index readers (index/vector/open.rs) on indices
built by pylance 14 and by lancelet, against pylance's answers on the same
dataset and index: same rows in the same order, `_distance` within 1e-4
relative (PQ/SQ distances are approximate, computed the same way)."""

import numpy as np
import pyarrow as pa
import pytest

import lancelet

pytestmark = pytest.mark.pylance

DIM = 32


def _table(n, seed):
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 4, (12, DIM))
    vecs = (centers[rng.integers(0, 12, n)] + rng.normal(0, 1, (n, DIM))).astype(np.float32)
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), DIM),
    }), vecs


CASES = [
    ("IVF_FLAT", "l2", {}),
    ("IVF_FLAT", "cosine", {}),
    ("IVF_PQ", "l2", {"num_sub_vectors": 4}),
    ("IVF_PQ", "dot", {"num_sub_vectors": 8}),
    ("IVF_SQ", "l2", {}),
]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def indexed(request, tmp_path_factory, lance_mod):
    """The same data and the same model (pylance's centroids and codebook,
    given to lancelet's build), one index built by each library."""
    kind, metric, extra = request.param
    root = tmp_path_factory.mktemp("nnix")
    tbl, vecs = _table(3000, seed=5)
    theirs, ours = str(root / "theirs"), str(root / "ours")
    for p in (theirs, ours):
        lance_mod.write_dataset(tbl, p, max_rows_per_file=1000)
    lance_mod.dataset(theirs).create_index("vec", kind, metric=metric, num_partitions=4, **extra)
    lancelet.dataset(ours).create_index("vec", kind, metric=metric, num_partitions=4, **extra)
    return theirs, ours, vecs, kind


def _queries(vecs, n=4):
    rng = np.random.default_rng(3)
    return [vecs[i] + rng.normal(0, 0.3, DIM).astype(np.float32) for i in rng.integers(0, len(vecs), n)]


def _check(ours, theirs):
    assert ours.column_names == theirs.column_names
    assert ours["id"].to_pylist() == theirs["id"].to_pylist()
    np.testing.assert_allclose(ours["_distance"].to_numpy(), theirs["_distance"].to_numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("nn", [{"k": 10}, {"k": 5, "nprobes": 1}, {"k": 7, "nprobes": 4}, {"k": 5, "refine_factor": 2}])
def test_lancelet_searches_pylances_index_as_pylance(lance_mod, indexed, nn):
    theirs, _, vecs, _ = indexed
    for q in _queries(vecs):
        n = {"column": "vec", "q": q, **nn}
        _check(lancelet.dataset(theirs).to_table(nearest=n, columns=["id"]),
               lance_mod.dataset(theirs).to_table(nearest=n, columns=["id"]))


def test_filters_and_plans_on_pylances_index(lance_mod, indexed):
    theirs, _, vecs, _ = indexed
    q = _queries(vecs, 1)[0]
    n = {"column": "vec", "q": q, "k": 8}
    for kw in (dict(filter="id < 1500"), dict(filter="id < 1500", prefilter=True)):
        _check(lancelet.dataset(theirs).to_table(nearest=n, columns=["id"], **kw),
               lance_mod.dataset(theirs).to_table(nearest=n, columns=["id"], **kw))
    plan = lancelet.dataset(theirs).scanner(nearest=n, columns=["id"]).explain_plan()
    assert "ANNSubIndex: name=vec_idx" in plan and "ANNIvfPartition" in plan, plan


def test_both_libraries_search_lancelets_index_alike(lance_mod, indexed):
    """lancelet's index (its own k-means) answered by both libraries: the
    same rows and distances, so the files say the same thing to both."""
    _, ours, vecs, _ = indexed
    for q in _queries(vecs):
        n = {"column": "vec", "q": q, "k": 10, "nprobes": 2}
        _check(lancelet.dataset(ours).to_table(nearest=n, columns=["id"]),
               lance_mod.dataset(ours).to_table(nearest=n, columns=["id"]))


def test_appended_rows_are_searched_flat(lance_mod, indexed, tmp_path):
    """Rows appended after the index: found by both, merged the same way."""
    theirs, _, vecs, kind = indexed
    import shutil

    p = str(tmp_path / "appended")
    shutil.copytree(theirs, p)
    extra, _ = _table(200, seed=9)
    extra = extra.set_column(0, "id", pa.array(np.arange(10_000, 10_200, dtype=np.int64)))
    lance_mod.write_dataset(extra, p, mode="append")
    for q in _queries(vecs, 3):
        n = {"column": "vec", "q": q, "k": 10}
        _check(lancelet.dataset(p).to_table(nearest=n, columns=["id"]),
               lance_mod.dataset(p).to_table(nearest=n, columns=["id"]))
