"""``lancelet.spark.knn_join`` in Spark (local[2]): every query row's k
nearest dataset rows equal a single-process search of that query — exact
(flat) against pylance, indexed (a pylance IVF_PQ index) against lancelet
and within the index's recall of pylance — with filters, null queries and
the output schema; bad arguments fail on the driver before any task."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet
import lancelet.spark as ls
from lancelet.exceptions import InvalidInputError

pytestmark = pytest.mark.spark

DIM = 16


def _clustered(rng: np.random.Generator, n: int) -> np.ndarray:
    """Embeddings around 12 centres (real embeddings cluster; noise does not)."""
    centres = rng.normal(size=(12, DIM)) * 4
    return (centres[rng.integers(0, 12, n)] + rng.normal(size=(n, DIM))).astype(np.float32)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(7)
    n = 3000
    vecs = _clustered(rng, n)
    t = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "title": pa.array([f"doc {i}" for i in range(n)]),
        "grp": pa.array(rng.integers(0, 4, n).astype(np.int32)),
        "emb": pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), DIM),
    })
    flat = str(tmp_path_factory.mktemp("knn") / "flat")
    lance.write_dataset(t, flat, max_rows_per_file=1000)
    lance.dataset(flat).delete("id % 11 = 3")
    indexed = str(tmp_path_factory.mktemp("knn") / "indexed")
    lance.write_dataset(t, indexed, max_rows_per_file=1000)
    lance.dataset(indexed).create_index("emb", "IVF_PQ", num_partitions=8, num_sub_vectors=4)
    queries = _clustered(np.random.default_rng(8), 30)
    return flat, indexed, queries


def _query_df(spark, queries):
    rows = [(i, None if i == 4 else [float(x) for x in q]) for i, q in enumerate(queries)]
    return spark.createDataFrame(rows, "qid long, emb array<float>")


def _by_query(rows):
    out = {}
    for r in rows:
        out.setdefault(r["qid"], []).append(r)
    return out


def test_flat_join_equals_pylance_per_query(spark, data):
    flat, _, queries = data
    df = _query_df(spark, queries).repartition(3)
    got = ls.knn_join(df, flat, "emb", k=5, columns=["id", "title"])
    assert got.columns == ["qid", "emb", "id", "title", "_distance"]
    assert [f.dataType.simpleString() for f in got.schema.fields] == ["bigint", "array<float>", "bigint", "string", "float"]
    by_q = _by_query([r.asDict() for r in got.collect()])
    assert 4 not in by_q  # a null query vector joins nothing
    assert sorted(by_q) == [i for i in range(len(queries)) if i != 4]
    pl = lance.dataset(flat)
    for qid, rows in by_q.items():
        want = pl.to_table(columns=["id", "title"], nearest={"column": "emb", "q": queries[qid], "k": 5})
        rows.sort(key=lambda r: (r["_distance"], r["id"]))
        assert [r["id"] for r in rows] == want.column("id").to_pylist(), qid
        assert [r["title"] for r in rows] == want.column("title").to_pylist()
        np.testing.assert_allclose([r["_distance"] for r in rows], want.column("_distance").to_numpy(), rtol=1e-5)
        assert all(r["id"] % 11 != 3 for r in rows)  # deleted rows never come back


def test_indexed_join_equals_lancelet_and_recalls_pylance(spark, data):
    _, indexed, queries = data
    got = ls.knn_join(_query_df(spark, queries), indexed, "emb", k=10, columns=["id"], nprobes=3, refine_factor=2)
    by_q = _by_query([r.asDict() for r in got.collect()])
    ours, theirs = lancelet.dataset(indexed), lance.dataset(indexed)
    overlap = total = 0
    for qid, rows in by_q.items():
        opts = {"column": "emb", "q": queries[qid], "k": 10, "nprobes": 3, "refine_factor": 2}
        want = ours.to_table(columns=["id"], nearest=opts)
        rows.sort(key=lambda r: (r["_distance"], r["id"]))
        assert [r["id"] for r in rows] == want.column("id").to_pylist(), qid
        pl = set(theirs.to_table(columns=["id"], nearest=opts).column("id").to_pylist())
        overlap += len(pl & {r["id"] for r in rows})
        total += len(pl)
    assert overlap / total >= 0.9, overlap / total


def test_filters_prefilter_and_postfilter(spark, data):
    flat, _, queries = data
    df = _query_df(spark, queries[:6])
    pl = lance.dataset(flat)
    for prefilter in (True, False):
        got = _by_query([r.asDict() for r in ls.knn_join(df, flat, "emb", k=4, columns=["id", "grp"],
                                                          filter="grp = 2", prefilter=prefilter).collect()])
        for qid, rows in got.items():
            want = pl.to_table(columns=["id", "grp"], nearest={"column": "emb", "q": queries[qid], "k": 4},
                               filter="grp = 2", prefilter=prefilter)
            assert sorted(r["id"] for r in rows) == sorted(want.column("id").to_pylist()), (qid, prefilter)
            assert all(r["grp"] == 2 for r in rows)
        if prefilter:
            assert all(len(rows) == 4 for rows in got.values())


def test_default_columns_and_query_column(spark, data):
    flat, _, queries = data
    df = spark.createDataFrame([(0, [float(x) for x in queries[0]])], "qid long, vec array<double>")
    got = ls.knn_join(df, flat, "emb", k=3, query_column="vec")
    assert got.columns == ["qid", "vec", "id", "title", "grp", "_distance"]
    rows = got.collect()
    want = lance.dataset(flat).to_table(nearest={"column": "emb", "q": queries[0], "k": 3})
    assert sorted(r["id"] for r in rows) == sorted(want.column("id").to_pylist())


def test_bad_arguments_fail_on_the_driver(spark, data):
    flat, _, queries = data
    df = _query_df(spark, queries[:2])
    with pytest.raises(InvalidInputError, match="no column 'nope'"):
        ls.knn_join(df, flat, "nope", k=3)
    with pytest.raises(InvalidInputError, match="not a fixed-size list"):
        ls.knn_join(df, flat, "title", k=3)
    with pytest.raises(InvalidInputError, match="query_column"):
        ls.knn_join(df, flat, "emb", k=3, query_column="vector")
    with pytest.raises(InvalidInputError, match="'id' is both"):
        ls.knn_join(df.withColumnRenamed("qid", "id"), flat, "emb", k=3)
    with pytest.raises(InvalidInputError, match="k must be > 0"):
        ls.knn_join(df, flat, "emb", k=0)
    with pytest.raises(InvalidInputError, match="unexpected keyword argument 'nprobe'"):
        ls.knn_join(df, flat, "emb", k=3, nprobe=2)
    with pytest.raises(InvalidInputError, match="no column 'missing'"):
        ls.knn_join(df, flat, "emb", k=3, columns=["missing"])
    with pytest.raises(ValueError):  # pylance's nearest= check (a metric it does not know)
        ls.knn_join(df, flat, "emb", k=3, metric="manhattan")
    with pytest.raises(lancelet.exceptions.LanceletError):  # a filter on a column that does not exist
        ls.knn_join(df, flat, "emb", k=3, filter="nope > 1")
