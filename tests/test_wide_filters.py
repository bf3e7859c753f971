"""Wide and deep filters (issue 15, item 1).

A 2,000-item ``IN`` list or ``OR`` chain used to overflow the stack (SIGSEGV)
in every path that takes a filter. Now ``IN`` is one set lookup and AND/OR
chains are n-ary, so 100,000 items work, in to_table / to_batches /
count_rows / delete, on the caller's thread (parsing, planning) and on the
scan's worker threads (evaluation); absurd nesting is an InvalidInputError.
Results are checked against pylance.
"""
from __future__ import annotations

import threading

import pyarrow as pa
import pytest

import lancelet
from lancelet.exceptions import InvalidInputError

N = 10_000


@pytest.fixture(scope="module")
def table():
    ids = pa.array(range(N), pa.int64())
    names = pa.array([f"n{i % 3000}" for i in range(N)])
    return pa.table({"id": ids, "name": names, "x": pa.array([i % 7 for i in range(N)], pa.int32())})


@pytest.fixture
def uri(tmp_path, table):
    u = str(tmp_path / "wide")
    lancelet.write_dataset(table, u, max_rows_per_file=2500)  # 4 fragments: units on several workers
    return u


def in_list(n: int, step: int = 1) -> str:
    return "id IN (" + ", ".join(str(i * step) for i in range(n)) + ")"


def or_chain(n: int) -> str:
    return " OR ".join(f"id = {i}" for i in range(n))


WIDE = {
    "in2000": (in_list(2000), 2000),
    "in100000": (in_list(100_000, 3), len(range(0, N, 3))),
    "or2000": (or_chain(2000), 2000),
    "strings": ("name IN (" + ", ".join(f"'n{i}'" for i in range(0, 3000, 2)) + ")", N // 2),
    "mixed": (" OR ".join(f"(id = {i} AND x = {i % 7})" for i in range(2000)), 2000),
}


@pytest.mark.parametrize("case", sorted(WIDE))
def test_wide_filter_every_path(uri, case, lance_mod):
    sql, expected = WIDE[case]
    ds = lancelet.dataset(uri)
    assert ds.count_rows(filter=sql) == expected
    t = ds.to_table(filter=sql, columns=["id"])
    assert t.num_rows == expected
    assert sum(b.num_rows for b in ds.to_batches(filter=sql, columns=["id"])) == expected
    ref = lance_mod.dataset(uri)
    assert sorted(t.column("id").to_pylist()) == sorted(ref.to_table(filter=sql, columns=["id"]).column("id").to_pylist())
    assert ds.delete(sql)["num_deleted_rows"] == expected
    assert lancelet.dataset(uri).count_rows() == N - expected
    assert lance_mod.dataset(uri).count_rows() == N - expected


def test_wide_filter_on_a_small_thread_stack(uri):
    """Parsing and planning run on the calling thread: a 256 KiB stack is
    enough however wide the filter is."""
    out = {}

    def run():
        try:
            ds = lancelet.dataset(uri)
            out["in"] = ds.count_rows(filter=in_list(100_000))
            out["or"] = ds.count_rows(filter=or_chain(20_000))
            with pytest.raises(InvalidInputError):
                ds.count_rows(filter="(" * 10_000 + "id > 1" + ")" * 10_000)
        except BaseException as e:
            out["error"] = e

    old = threading.stack_size(256 * 1024)
    try:
        t = threading.Thread(target=run)
        t.start()
        t.join()
    finally:
        threading.stack_size(old)
    assert "error" not in out, out.get("error")
    assert out == {"in": N, "or": N}


DEEP = {
    "parentheses": "(" * 10_000 + "id > 5" + ")" * 10_000,
    "not": "NOT " * 10_000 + "id > 5",
    "minus": "- " * 10_000 + "id > 5",  # with spaces: "--" starts a comment
    "arithmetic": "id" + " + 1" * 10_000 + " > 5",
    "functions": "lower(" * 10_000 + "name" + ")" * 10_000 + " = 'a'",
}


@pytest.mark.parametrize("case", sorted(DEEP))
def test_absurd_nesting_is_invalid_input(uri, case):
    ds = lancelet.dataset(uri)
    sql = DEEP[case]
    for call in (lambda: ds.count_rows(filter=sql), lambda: ds.to_table(filter=sql), lambda: list(ds.to_batches(filter=sql)),
                 lambda: ds.delete(sql)):
        with pytest.raises(InvalidInputError, match="nests more than 128 levels") as e:
            call()
        assert len(str(e.value)) < 1000  # the filter is quoted shortened
    assert lancelet.dataset(uri).version == 1  # nothing was committed


@pytest.mark.spark
def test_wide_isin_pushed_down_from_spark(spark, uri):
    """A 2,000-value isin() is pushed to lancelet as one IN list and
    evaluated in the Python worker's scan threads."""
    from pyspark.sql import functions as F

    df = spark.read.format("lancelet").option("pushdown", "true").load(uri)
    assert df.filter(F.col("id").isin(list(range(0, 4000, 2)))).count() == 2000
    df = spark.read.format("lancelet").option("filter", in_list(5000, 2)).load(uri)
    assert df.count() == N // 2


DEEPEST = {  # 126 levels is the most accepted with these shapes; one more is refused
    "parentheses": lambda k: "(" * k + "id > 5" + ")" * k,
    "not": lambda k: "NOT " * k + "id > 5",
    "arithmetic": lambda k: "id" + " + 1" * k + " > 5",
    "functions": lambda k: "abs(" * k + "id" + ")" * k + " > 5",
}


@pytest.mark.parametrize("case", sorted(DEEPEST))
def test_deepest_accepted_filter_every_path(uri, case):
    """At the limit, a filter runs in every path (parsed on the caller's
    thread, evaluated on the scan's workers); one level more is refused."""
    make = DEEPEST[case]
    sql = make(126)
    expected = {"parentheses": N - 6, "not": N - 6, "arithmetic": N, "functions": N - 6}[case]
    ds = lancelet.dataset(uri)
    assert ds.count_rows(filter=sql) == expected
    assert ds.to_table(filter=sql, columns=["id"]).num_rows == expected
    assert sum(b.num_rows for b in ds.to_batches(filter=sql, columns=["x"])) == expected
    with pytest.raises(InvalidInputError, match="nests more than 128 levels"):
        ds.count_rows(filter=make(127))
    assert ds.delete(sql)["num_deleted_rows"] == expected
    assert lancelet.dataset(uri).count_rows() == N - expected
