"""A child process forked after the parent used lancelet works.

``fork()`` copies memory but not threads: a child that reached for the
parent's thread pool, I/O runtime or filter-planning thread used to wait
forever (Python's ``multiprocessing`` forks by default on Linux before
3.14, and pylance answers this case with a "not fork-safe" warning and, for
a filtered scan, a segfault). Every child here runs under a deadline and a
hung child fails the test."""

from __future__ import annotations

import multiprocessing
import os
import warnings

import lance
import pyarrow as pa
import pytest

import lancelet

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX-only")

DEADLINE_S = 60


def table(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "s": pa.array([None if i % 11 == 0 else f"row {i} " + "x" * (i % 13) for i in ids]),
        "v": pa.FixedSizeListArray.from_arrays(pa.array([float(i) for i in ids for _ in range(4)], pa.float32()), 4),
    })


def run_forked(target, *args):
    """Run ``target(queue, *args)`` in a forked child; return what it put
    on the queue, failing if the child hangs, dies or raises."""
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    with warnings.catch_warnings():
        # Python 3.12+ warns about fork() in a process with threads: that
        # is the very situation under test.
        warnings.simplefilter("ignore", DeprecationWarning)
        p = ctx.Process(target=_guarded, args=(target, q) + args)
        p.start()
    p.join(DEADLINE_S)
    if p.is_alive():
        p.kill()
        p.join()
        pytest.fail(f"the forked child hung for {DEADLINE_S} s in {target.__name__}")
    assert p.exitcode == 0, f"the forked child died with exit code {p.exitcode}"
    status, value = q.get(timeout=10)
    assert status == "ok", value
    return value


def _guarded(target, q, *args):
    try:
        q.put(("ok", target(*args)))
    except BaseException as e:  # report to the parent, which fails the test
        q.put(("error", f"{type(e).__name__}: {e}"))


def _read_everything(uri, inherited=None):
    ds = inherited if inherited is not None else lancelet.dataset(uri)
    return {
        "count": ds.count_rows(),
        "count_filtered": ds.count_rows(filter="id < 100 OR s LIKE 'row 9%'"),
        "scan": ds.to_table().column("id").to_pylist(),
        "filtered": ds.to_table(columns=["id", "v"], filter="id % 7 = 3").column("id").to_pylist(),
        "take": ds.take([5, 3000, 1]).column("s").to_pylist(),
        "batches": sum(b.num_rows for b in ds.to_batches(batch_size=777)),
    }


def _append(uri, start, n):
    lancelet.write_dataset(table(start, n), uri, mode="append")
    return lancelet.dataset(uri).count_rows()


@pytest.fixture
def used_dataset(tmp_path):
    """A dataset the parent has written, scanned with a filter and taken
    from: its pool, runtime and planner are all running at the fork."""
    uri = str(tmp_path / "ds")
    lancelet.write_dataset(table(0, 5000), uri, max_rows_per_file=2000)
    ds = lancelet.dataset(uri)
    expected = _read_everything(uri, ds)
    return uri, ds, expected


def test_child_reads_a_dataset_it_opens(used_dataset):
    uri, _, expected = used_dataset
    assert run_forked(_read_everything, uri) == expected


def test_child_reads_through_the_parents_handle(used_dataset):
    uri, ds, expected = used_dataset
    assert run_forked(_read_everything, uri, ds) == expected


def test_child_writes_and_both_libraries_see_it(used_dataset):
    uri, _, _ = used_dataset
    assert run_forked(_append, uri, 5000, 1234) == 6234
    # The parent goes on as before: its threads were never touched.
    ds = lancelet.dataset(uri)
    assert ds.count_rows(filter="id >= 5000") == 1234
    assert lance.dataset(uri).to_table().sort_by("id").equals(ds.to_table().sort_by("id"))


def test_grandchild_after_two_forks(used_dataset):
    uri, _, expected = used_dataset

    def twice(uri):
        return run_forked(_read_everything, uri)

    assert run_forked(twice, uri) == expected


def test_forked_pool_workers(used_dataset):
    uri, _, expected = used_dataset
    ctx = multiprocessing.get_context("fork")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with ctx.Pool(2) as pool:
            got = pool.map_async(_read_everything, [uri] * 4).get(DEADLINE_S)
    assert got == [expected] * 4


def _read_s3(uri, so, inherited=None):
    ds = inherited if inherited is not None else lancelet.dataset(uri, storage_options=so)
    return ds.to_table(filter="id % 7 = 3").column("id").to_pylist(), ds.take([1, 4000]).column("id").to_pylist()


def _append_s3(uri, so):
    lancelet.write_dataset(table(5000, 100), uri, mode="append", storage_options=so)
    return lancelet.dataset(uri, storage_options=so).count_rows()


def test_child_on_s3_after_the_parent_used_the_store(s3_server, tmp_path):
    """Object-store clients keep pooled connections served by the I/O
    runtime's tasks; the child's requests must not wait on the parent's."""
    import uuid

    so = s3_server.storage_options
    uri = f"s3://lancelet/fork-{uuid.uuid4().hex[:8]}"
    lancelet.write_dataset(table(0, 5000), uri, storage_options=so, max_rows_per_file=2000)
    ds = lancelet.dataset(uri, storage_options=so)
    expected = _read_s3(uri, so, ds)
    assert run_forked(_read_s3, uri, so) == expected
    for _ in range(3):  # a pooled connection is there on some runs only
        assert run_forked(_read_s3, uri, so, ds) == expected
    assert run_forked(_append_s3, uri, so) == 5100
    assert lancelet.dataset(uri, storage_options=so).count_rows(filter="id >= 5000") == 100
