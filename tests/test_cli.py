"""The ``lancelet`` command-line tool (``lancelet.cli``): ``inspect`` and
``cat`` on pylance-written fixtures and lancelet-written datasets, checked
against pylance; error exit codes; the ``python -m lancelet`` entry point."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import lancelet
from lancelet.cli import main

pytestmark = pytest.mark.pylance


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def inspect_json(capsys, *argv):
    code, out, err = run(capsys, "inspect", *argv, "--json")
    assert code == 0, err
    assert err == ""
    return json.loads(out)


def check_against_pylance(info, path, lance_mod, version=None):
    """Every number ``inspect --json`` shows, compared with pylance's view."""
    pds = lance_mod.dataset(str(path), version=version)
    assert info["version"] == pds.version
    assert info["latest_version"] == pds.latest_version
    assert [v["version"] for v in info["versions"]] == [v["version"] for v in pds.versions()]
    for v in info["versions"]:
        assert v["rows"] == lance_mod.dataset(str(path), version=v["version"]).count_rows()
        assert v["current"] == (v["version"] == pds.version)
    tags = pds.tags.list()
    for v in info["versions"]:
        assert sorted(v["tags"]) == sorted(n for n, t in tags.items() if t["version"] == v["version"])
    assert [(f["name"], f["type"], f["nullable"]) for f in info["schema"]] == \
        [(f.name, str(f.type), f.nullable) for f in pds.schema]
    frags = pds.get_fragments()
    assert [f["id"] for f in info["fragments"]] == [f.fragment_id for f in frags]
    total_bytes = 0
    for mine, theirs in zip(info["fragments"], frags):
        assert mine["physical_rows"] == theirs.metadata.physical_rows
        assert mine["rows"] == theirs.count_rows()
        assert [d["path"] for d in mine["data_files"]] == [d.path for d in theirs.data_files()]
        for d, td in zip(mine["data_files"], theirs.data_files()):
            assert d["file_version"] == f"{td.file_major_version}.{td.file_minor_version}"
            assert d["size_bytes"] == os.path.getsize(Path(path) / "data" / td.path)
            assert d["fields"] == list(td.fields)
            total_bytes += d["size_bytes"]
        tdel = theirs.metadata.deletion_file
        if tdel is None:
            assert mine["deletion_file"] is None
        else:
            d = mine["deletion_file"]
            assert d["deleted_rows"] == tdel.num_deleted_rows
            assert d["kind"] == {"bitmap": "bitmap", "array": "arrow"}[str(tdel.file_type).lower().split(".")[-1]]
            assert d["size_bytes"] == os.path.getsize(Path(path) / d["path"])
            total_bytes += d["size_bytes"]
    t = info["totals"]
    assert t["rows"] == pds.count_rows()
    assert t["fragments"] == len(frags)
    assert t["physical_rows"] == sum(f.metadata.physical_rows for f in frags)
    assert t["deleted_rows"] == t["physical_rows"] - t["rows"]
    assert t["bytes_on_disk"] == total_bytes
    assert info["stable_row_ids"] == ("stable_row_ids" in info["features"])


# ---------------------------------------------------------------------------
# inspect on pylance-written fixtures
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["ops_history", "deletion_bitmap", "deletion_arrow", "deletion_arrow_zstd",
                                  "stable_row_ids", "two_versions", "v1_manifest_names", "v2_0_basic",
                                  "btree_index"])
def test_inspect_json_matches_pylance(capsys, fixtures_dir, lance_mod, name):
    path = fixtures_dir / name
    check_against_pylance(inspect_json(capsys, path), path, lance_mod)


def test_inspect_ops_history(capsys, fixtures_dir, lance_mod):
    path = fixtures_dir / "ops_history"
    info = inspect_json(capsys, path)
    assert info["version"] == 10 and info["latest_version"] == 10
    assert [v["version"] for v in info["versions"]] == list(range(1, 11))
    assert {v["version"]: v["tags"] for v in info["versions"]}[2] == ["t1"]
    assert [v["rows"] for v in info["versions"]][:2] == [10, 20]
    assert [f["id"] for f in info["fragments"]] == [0, 1]
    assert info["totals"]["rows"] == 20
    assert [f["name"] for f in info["schema"]] == ["x", "y", "z"]

    code, out, err = run(capsys, "inspect", path)
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["Dataset", str(path)]
    assert lines[1].split() == ["Version", "10", "(latest)"]
    assert "Stable row ids  no" in out
    vrows = {ln.split()[0].lstrip("*"): ln.split() for ln in lines
             if ln.strip() and ln.strip().lstrip("*").split()[0].isdigit() and "-" in ln.split()[1]}
    assert sorted(map(int, vrows)) == list(range(1, 11))
    assert vrows["2"][-1] == "t1" and vrows["2"][-2] == "20"
    assert any(ln.lstrip().startswith("*10") for ln in lines)  # the shown version is marked
    assert "x: int32" in out
    assert "Totals" in out
    # the header row of the fragments table and aligned columns
    hdr = next(ln for ln in lines if ln.split()[:3] == ["id", "physical", "rows"])
    frag_rows = lines[lines.index(hdr) + 1:lines.index(hdr) + 5]
    ends = {len(r[:hdr.index("rows") + len("rows")]) for r in [hdr] + frag_rows}
    assert len(ends) == 1


def test_inspect_older_version_and_tag(capsys, fixtures_dir, lance_mod):
    path = fixtures_dir / "ops_history"
    by_number = inspect_json(capsys, path, "--version", "2")
    by_tag = inspect_json(capsys, path, "--version", "t1")
    for info in (by_number, by_tag):
        assert info["version"] == 2 and info["latest_version"] == 10
        assert info["totals"]["rows"] == 20
        assert [v["version"] for v in info["versions"] if v["current"]] == [2]
        check_against_pylance(info, path, lance_mod, version=2)
    code, out, _ = run(capsys, "inspect", path, "--version", "2")
    assert code == 0
    assert out.splitlines()[1].split() == ["Version", "2", "(latest", "is", "10)"]


def test_inspect_deletions(capsys, fixtures_dir):
    info = inspect_json(capsys, fixtures_dir / "deletion_bitmap")
    (frag,) = info["fragments"]
    assert frag["physical_rows"] == 6000 and frag["rows"] == 1000
    assert frag["deletion_file"]["kind"] == "bitmap"
    assert frag["deletion_file"]["deleted_rows"] == 5000
    assert frag["deletion_file"]["path"].startswith("_deletions/") and frag["deletion_file"]["path"].endswith(".bin")
    assert "deletion_files" in info["features"]

    info = inspect_json(capsys, fixtures_dir / "deletion_arrow")
    (frag,) = info["fragments"]
    assert (frag["physical_rows"], frag["rows"]) == (100, 96)
    assert frag["deletion_file"]["kind"] == "arrow" and frag["deletion_file"]["deleted_rows"] == 4

    code, out, _ = run(capsys, "inspect", fixtures_dir / "deletion_bitmap")
    assert code == 0
    assert "bitmap: 5,000 deleted" in out
    assert "1,000  (6,000 physical, 5,000 deleted)" in out


def test_inspect_stable_row_ids(capsys, fixtures_dir):
    info = inspect_json(capsys, fixtures_dir / "stable_row_ids")
    assert info["stable_row_ids"] is True
    assert "stable_row_ids" in info["features"]
    assert [f["id"] for f in info["fragments"]] == [0, 1, 2]
    assert [f["rows"] for f in info["fragments"]] == [8, 4, 1]
    assert [f["deletion_file"] and f["deletion_file"]["deleted_rows"] for f in info["fragments"]] == [2, 1, None]
    code, out, _ = run(capsys, "inspect", fixtures_dir / "stable_row_ids")
    assert code == 0 and "Stable row ids  yes" in out


def test_inspect_v2_0_file_version(capsys, fixtures_dir):
    info = inspect_json(capsys, fixtures_dir / "v2_0_basic")
    assert [d["file_version"] for f in info["fragments"] for d in f["data_files"]] == ["2.0"]


# ---------------------------------------------------------------------------
# lancelet-written datasets
# ---------------------------------------------------------------------------
@pytest.fixture
def written(tmp_path):
    """3 fragments written by lancelet (ids 0..2), one appended fragment,
    a delete touching two fragments, and a tag."""
    path = tmp_path / "w.lance"
    t = pa.table({"id": pa.array(range(30), pa.int64()),
                  "name": pa.array([None if i % 7 == 0 else f"n{i}" for i in range(30)]),
                  "score": pa.array([i / 4 for i in range(30)])})
    ds = lancelet.write_dataset(t, path, max_rows_per_file=10)
    ds.insert(pa.table({"id": pa.array([100, 101], pa.int64()), "name": ["a,b", "line\nbreak"],
                        "score": [1.5, None]}))
    assert ds.delete("id >= 8 AND id < 12")["num_deleted_rows"] == 4
    ds.tags.create("before-delete", 2)
    return path


def test_inspect_lancelet_written(capsys, written, lance_mod):
    info = inspect_json(capsys, written)
    check_against_pylance(info, written, lance_mod)
    assert info["version"] == 3
    assert [v["rows"] for v in info["versions"]] == [30, 32, 28]
    assert [v["tags"] for v in info["versions"]] == [[], ["before-delete"], []]
    assert [f["id"] for f in info["fragments"]] == [0, 1, 2, 3]
    assert [f["rows"] for f in info["fragments"]] == [8, 8, 10, 2]
    dels = [f["deletion_file"] for f in info["fragments"]]
    assert [d and (d["kind"], d["deleted_rows"]) for d in dels] == [("arrow", 2), ("arrow", 2), None, None]
    assert all(d["file_version"] == "2.2" for f in info["fragments"] for d in f["data_files"])
    assert info["totals"]["deletion_files"] == 2

    code, out, _ = run(capsys, "inspect", written)
    assert code == 0
    assert "before-delete" in out and "arrow: 2 deleted" in out


# ---------------------------------------------------------------------------
# cat
# ---------------------------------------------------------------------------
def test_cat_csv_filter_columns_limit_offset(capsys, fixtures_dir, lance_mod):
    path = fixtures_dir / "ops_history"
    code, out, err = run(capsys, "cat", path, "--columns", "x,z", "--filter", "x >= 5 AND x < 15",
                         "--offset", "2", "--limit", "4", "--format", "csv")
    assert code == 0, err
    rows = list(csv.reader(io.StringIO(out)))
    want = lance_mod.dataset(str(path)).to_table(columns=["x", "z"], filter="x >= 5 AND x < 15", offset=2, limit=4)
    assert rows[0] == ["x", "z"]
    assert rows[1:] == [[str(a), str(b)] for a, b in zip(want["x"].to_pylist(), want["z"].to_pylist())]
    assert rows[1:] == [["7", "14"], ["8", "16"], ["9", "18"], ["10", "20"]]


def test_cat_json_lines_matches_pylance(capsys, fixtures_dir, lance_mod):
    path = fixtures_dir / "deletion_arrow"
    code, out, _ = run(capsys, "cat", path, "--format", "json", "--batch-size", "7")
    assert code == 0
    got = [json.loads(ln) for ln in out.splitlines()]
    assert got == lance_mod.dataset(str(path)).to_table().to_pylist()
    assert len(got) == 96 and {r["x"] for r in got}.isdisjoint({0, 1, 2, 50})


def test_cat_table(capsys, written):
    code, out, err = run(capsys, "cat", written, "--filter", "id > 25", "--count")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["id", "name", "score"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    body = [ln.split() for ln in lines[2:]]
    assert body == [["26", "n26", "6.5"], ["27", "n27", "6.75"], ["28", "null", "7.0"], ["29", "n29", "7.25"],
                    ["100", "a,b", "1.5"], ["101", "line\\nbreak", "null"]]
    # numbers are right-aligned: every id cell ends at the same column
    assert len({ln.index(ln.split()[0]) + len(ln.split()[0]) for ln in lines[2:]}) == 1
    assert err.strip() == "(6 rows)"


def test_cat_csv_quoting_and_nulls(capsys, written):
    code, out, _ = run(capsys, "cat", written, "--filter", "id >= 100", "--format", "csv")
    assert code == 0
    rows = list(csv.reader(io.StringIO(out)))
    assert rows == [["id", "name", "score"], ["100", "a,b", "1.5"], ["101", "line\nbreak", ""]]


def test_cat_versions_and_empty_result(capsys, written):
    code, out, _ = run(capsys, "cat", written, "--version", "before-delete", "--filter", "id >= 8 AND id < 12",
                       "--format", "json")
    assert code == 0
    assert [json.loads(ln)["id"] for ln in out.splitlines()] == [8, 9, 10, 11]
    code, out, _ = run(capsys, "cat", written, "--filter", "id >= 8 AND id < 12", "--format", "csv")
    assert code == 0 and out.splitlines() == ["id,name,score"]
    code, out, _ = run(capsys, "cat", written, "--filter", "id < 0")
    assert code == 0 and out.splitlines()[0].split() == ["id", "name", "score"] and len(out.splitlines()) == 2


def test_cat_streams_batches(capsys, tmp_path, monkeypatch):
    """cat reads batch by batch (to_batches), never the whole table."""
    path = tmp_path / "big.lance"
    lancelet.write_dataset(pa.table({"v": pa.array(range(20_000), pa.int64())}), path, max_rows_per_file=5000)
    dsmod = sys.modules["lancelet.dataset"]

    def no_to_table(*a, **k):
        raise AssertionError("cat must not materialize the table")

    monkeypatch.setattr(dsmod.Scanner, "to_table", no_to_table)
    monkeypatch.setattr(dsmod.Dataset, "to_table", no_to_table)
    code, out, _ = run(capsys, "cat", path, "--format", "csv", "--batch-size", "1000")
    assert code == 0
    assert out.splitlines()[1:] == [str(i) for i in range(20_000)]


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------
def assert_one_line_error(err, *needles):
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], err


def test_missing_dataset(capsys, tmp_path):
    missing = tmp_path / "nope.lance"
    for cmd in ("inspect", "cat"):
        code, out, err = run(capsys, cmd, missing)
        assert code == 1
        assert out == ""
        assert_one_line_error(err, f"lancelet {cmd}: error:", "nope.lance")


def test_bad_filter_and_column(capsys, fixtures_dir):
    path = fixtures_dir / "ops_history"
    code, out, err = run(capsys, "cat", path, "--filter", "x >>> 3")
    assert code == 2 and out == ""
    assert_one_line_error(err, "lancelet cat: error:")
    code, out, err = run(capsys, "cat", path, "--filter", "nosuchcol = 1")
    assert code == 2
    assert_one_line_error(err, "nosuchcol")
    code, out, err = run(capsys, "cat", path, "--columns", "x,nosuchcol")
    assert code == 2 and out == ""
    assert_one_line_error(err, "nosuchcol")


def test_missing_version_and_bad_arguments(capsys, fixtures_dir):
    path = fixtures_dir / "ops_history"
    code, _, err = run(capsys, "inspect", path, "--version", "99")
    assert code == 1
    assert_one_line_error(err, "99")
    code, _, err = run(capsys, "cat", path, "--version", "no-such-tag")
    assert code == 1
    assert_one_line_error(err, "no-such-tag")
    code, _, err = run(capsys, "cat", path, "--limit", "-3")
    assert code == 2
    assert_one_line_error(err, "-3")
    code, _, err = run(capsys, "cat", path, "--format", "xml")
    assert code == 2
    assert_one_line_error(err, "xml")
    code, _, err = run(capsys, "frobnicate", path)
    assert code == 2
    assert_one_line_error(err, "frobnicate")
    code, _, err = run(capsys)
    assert code == 2 and "inspect" in err


def test_debug_shows_the_exception(capsys, tmp_path):
    with pytest.raises(lancelet.LanceletError):
        main(["--debug", "inspect", str(tmp_path / "nope.lance")])
    with pytest.raises(lancelet.LanceletError):
        main(["cat", str(tmp_path / "nope.lance"), "--debug"])


def test_help(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "inspect" in out and "cat" in out
    code, out, _ = run(capsys, "cat", "--help")
    assert code == 0 and "--filter" in out


# ---------------------------------------------------------------------------
# the entry point
# ---------------------------------------------------------------------------
def test_python_m_lancelet(fixtures_dir, tmp_path):
    env = dict(os.environ)
    pkg_parent = str(Path(lancelet.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([pkg_parent] + [p for p in [env.get("PYTHONPATH")] if p])
    r = subprocess.run([sys.executable, "-m", "lancelet", "inspect", str(fixtures_dir / "deletion_bitmap"), "--json"],
                       capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=120)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["totals"]["rows"] == 1000 and info["fragments"][0]["deletion_file"]["deleted_rows"] == 5000
    r = subprocess.run([sys.executable, "-m", "lancelet", "inspect", str(tmp_path / "missing")],
                       capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=120)
    assert r.returncode == 1 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1


def test_inspect_vector_indices(capsys, tmp_path, lance_mod):
    """Vector indices (pylance's and lancelet's) list their metric, partitions
    and quantizer, as pylance's own statistics give them."""
    import numpy as np

    rng = np.random.default_rng(7)
    centers = rng.normal(size=(4, 16))
    vecs = (centers[rng.integers(0, 4, 800)] + 0.1 * rng.normal(size=(800, 16))).astype("float32")
    t = pa.table({"id": pa.array(range(800)),
                  "v": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), 16)})
    path = tmp_path / "vec"
    lance_mod.write_dataset(t, str(path))
    pds = lance_mod.dataset(str(path))
    pds.create_index("v", "IVF_PQ", name="pq", num_partitions=3, num_sub_vectors=4, metric="cosine")
    pds.create_index("v", "IVF_HNSW_SQ", name="hsq", num_partitions=2)
    lancelet.dataset(str(path)).create_index("v", "IVF_FLAT", name="flat", num_partitions=2, metric="dot")
    lancelet.dataset(str(path)).create_scalar_index("id", "BTREE")
    info = inspect_json(capsys, path)
    by_name = {i["name"]: i for i in info["indices"]}
    assert "vector" not in by_name["id_idx"]
    theirs = lance_mod.dataset(str(path))
    for name in ("pq", "hsq", "flat"):
        want = theirs.stats.index_stats(name)["indices"][0]
        got = by_name[name]["vector"]
        assert got["metric"] == want["metric_type"]
        assert got["num_partitions"] == want["num_partitions"]
        assert got["partition_sizes"] == [p["size"] for p in want["partitions"]]
        assert sum(got["partition_sizes"]) == 800
    assert (by_name["pq"]["vector"]["metric"], by_name["flat"]["vector"]["metric"]) == ("cosine", "dot")
    assert by_name["pq"]["vector"]["quantizer"] == {"type": "PQ", "num_sub_vectors": 4, "num_bits": 8}
    assert by_name["hsq"]["vector"]["quantizer"] == {"type": "SQ", "num_bits": 8}
    code, out, err = run(capsys, "inspect", path)
    assert code == 0, err
    assert "cosine, 3 partitions, PQ 4x8 bits" in out
    assert "l2, 2 partitions, SQ 8 bits" in out
    assert "dot, 2 partitions" in out
