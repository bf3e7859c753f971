"""Shared pytest configuration for the lancelet test-suite.

Run from the repo root:  ``pytest tests/``  (fast subset; add ``-m slow`` / ``--runslow``
for the big shapes).  There is deliberately *no* "is lancelet importable" guard:
if the package is broken the tests must fail, not skip.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
# The pylance 14.0.2 fixtures, copied into the repository with the script
# that made them (tests/fixtures/pylance-14/make_fixtures.py): a clone alone
# runs every test.
FIXTURES_DIR = TESTS_DIR / "fixtures" / "pylance-14"

if str(TESTS_DIR) not in sys.path:  # make `import datagen` work under any import mode
    sys.path.insert(0, str(TESTS_DIR))

# The TileDB oracle (tiledb-py 0.36.1, TileDB 2.30.0) has a race in its sparse
# global-order reader: the "preprocess tile merge" step merges the fragments'
# tiles in tasks on TileDB's thread pool, and the task that spawns them can
# still be running when the query is gone. It then frees a
# `tiledb::algorithm::MergeUnit` whose memory belonged to that query: SIGSEGV,
# once in CI (test_tiledb_consolidate_sets.py) and once in about 150,000 reads
# of that test's arrays in a loop. The core showed a worker finishing the merge
# of the previous read (an array TileDB had consolidated itself) while the
# main thread started the next query. With the step off, TileDB skips that
# merge (the crashing code is only reached through it) and reads through its
# per-fragment path, returning the same cells; 133,000 reads so did not crash.
# Set in the environment before tiledb is imported, so that every Ctx/Config
# and every subprocess inherits it; scripts/tiledb_oracle_race.py tells whether
# a newer TileDB still needs it.
os.environ.setdefault("TILEDB_SM_QUERY_SPARSE_GLOBAL_ORDER_PREPROCESS_TILE_MERGE", "0")


def fixture_datasets() -> list[Path]:
    """Every pylance-14 fixture dataset directory (those with a data/ folder)."""
    assert FIXTURES_DIR.is_dir(), f"the repository's fixtures are missing: {FIXTURES_DIR}"
    return sorted(p for p in FIXTURES_DIR.iterdir() if (p / "data").is_dir())


def fixture_data_files() -> list[Path]:
    return [f for d in fixture_datasets() for f in sorted((d / "data").glob("*.lance"))]


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False,
                     help="also run tests marked @pytest.mark.slow")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: big data (100k+ rows, multi-MB values); run with --runslow or -m slow")
    config.addinivalue_line("markers", "spark: needs a Spark installation")
    config.addinivalue_line("markers", "bench: benchmark, not a correctness test")
    config.addinivalue_line("markers", "pylance: uses pylance (`import lance`) as the oracle")


def pytest_collection_modifyitems(config, items):
    # slow tests run when asked for explicitly: --runslow, or a -m expression mentioning "slow"
    markexpr = config.getoption("-m") or ""
    if config.getoption("--runslow") or "slow" in markexpr:
        return
    skip_slow = pytest.mark.skip(reason="slow: run with --runslow (or -m slow)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


@pytest.fixture(autouse=True)
def no_caught_panics():
    """A Rust panic caught at the FFI boundary (turned into InternalError)
    is a bug wherever it happens: fail the test during which one occurred,
    even if the test expected an error there."""
    from lancelet import _native

    before, _ = _native._caught_panics()
    yield
    after, last = _native._caught_panics()
    if after != before:
        pytest.fail(f"{after - before} Rust panic(s) caught at the FFI boundary during this test (a bug); "
                    f"last: {last}", pytrace=False)


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    assert FIXTURES_DIR.is_dir(), f"the repository's fixtures are missing: {FIXTURES_DIR}"
    return FIXTURES_DIR


@pytest.fixture
def lance_path(tmp_path):
    """Factory for fresh file paths inside tmp_path: ``lance_path("x")`` -> tmp_path/x.lance."""
    counter = {"n": 0}

    def make(stem: str | None = None) -> Path:
        counter["n"] += 1
        return tmp_path / f"{stem or 'file'}_{counter['n']}.lance"

    return make


@pytest.fixture
def copy_fixture_file(tmp_path, fixtures_dir):
    """Copy one fixture data file into tmp_path (so tests may mutate it)."""
    def copy(dataset: str, index: int = 0) -> Path:
        src = sorted((fixtures_dir / dataset / "data").glob("*.lance"))[index]
        dst = tmp_path / f"{dataset}_{index}.lance"
        shutil.copyfile(src, dst)
        return dst

    return copy


@pytest.fixture(scope="session")
def lance_mod():
    """pylance (the oracle).  It is a hard requirement of the suite, so no skip."""
    import lance
    import lance.file
    assert lance.__version__.startswith("14."), f"oracle must be pylance 14.x, found {lance.__version__}"
    return lance


def pytest_report_header(config):
    return [f"lancelet fixtures: {FIXTURES_DIR} ({'found' if FIXTURES_DIR.is_dir() else 'MISSING'})",
            f"pid {os.getpid()}"]


@pytest.fixture(scope="session")
def spark():
    """One local[2] Spark session for the spark-marked tests (pushdown on;
    tests switch it off with spark.conf.set where they need to)."""
    from pyspark.sql import SparkSession

    import lancelet.spark

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (SparkSession.builder.master("local[2]").appName("lancelet-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.python.filterPushdown.enabled", "true")
               .config("spark.executorEnv.PYTHONPATH", os.environ.get("PYTHONPATH", ""))
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    lancelet.spark.register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """A local SeaweedFS S3 server for the whole session (see s3_server.py).
    It fails, never skips, when SeaweedFS is not installed."""
    import s3_server as srv

    server = srv.start(tmp_path_factory.mktemp("seaweedfs"))
    try:
        yield server
    finally:
        server.stop()
