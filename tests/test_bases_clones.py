"""Shallow and deep clones and multi-base datasets, both ways against
pylance 14: each library clones / writes, the other reads every version,
appends, and the first reads back. The clone source stays byte-identical;
bad input is a typed error and writes nothing."""

from __future__ import annotations

import hashlib
import os
import random

import lance
import pyarrow as pa
import pytest

import lancelet
from lancelet.exceptions import AlreadyExistsError, InvalidInputError, NotFoundError


def tbl(rng, start, n):
    return pa.table({"a": pa.array(range(start, start + n), pa.int64()),
                     "s": pa.array([f"v{rng.randrange(1000)}" for _ in range(n)], pa.string())})


def snapshot(path):
    out = {}
    for r, _d, fs in os.walk(path):
        for f in fs:
            p = os.path.join(r, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, path)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def same_every_version(uri):
    ll = lancelet.dataset(uri)
    theirs = lance.dataset(uri)
    assert [v["version"] for v in ll.versions()] == [v["version"] for v in theirs.versions()]
    for v in [x["version"] for x in theirs.versions()]:
        a = lance.dataset(uri, version=v).to_table()
        b = lancelet.dataset(uri, version=v).to_table()
        assert a.schema.remove_metadata() == b.schema.remove_metadata()
        assert a.sort_by("a").to_pylist() == b.sort_by("a").to_pylist(), f"version {v}"


def make_source(lib, path, rng):
    ds = lib.write_dataset(tbl(rng, 0, 200), str(path), max_rows_per_file=80)
    ds = lib.write_dataset(tbl(rng, 200, 50), str(path), mode="append")
    ds.delete(f"a % 7 = {rng.randrange(7)}")
    ds = lib.dataset(str(path))
    ds.create_scalar_index("a", "BTREE")
    ds.tags.create("t", 2)
    return lib.dataset(str(path))


def both(x):
    return [(lance, lancelet), (lancelet, lance)][x]


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("way", [0, 1], ids=["pylance_clones", "lancelet_clones"])
def test_shallow_clone_both_ways(tmp_path, seed, way):
    rng = random.Random(seed)
    cloner, other = both(way)
    src = tmp_path / "src"
    make_source(lance, src, rng)
    before = snapshot(src)
    for ref, version in [(2, 2), ("t", 2), (("main", 4), 4), ((None, None), 4)]:
        target = tmp_path / f"clone_{version}_{abs(hash(str(ref)))}"
        c = cloner.dataset(str(src)).shallow_clone(str(target), ref)
        assert c.version == version
        assert sorted(os.listdir(target)) == ["_transactions", "_versions"]
        bp = c.base_paths()
        assert list(bp) == [0] and bp[0].path == str(src) and bp[0].is_dataset_root and bp[0].name is None
        for lib in (lance, lancelet):
            got = lib.dataset(str(target)).to_table().sort_by("a")
            assert got.to_pylist() == lance.dataset(str(src), version=version).to_table().sort_by("a").to_pylist()
        # the index of the source answers on the clone, in both libraries
        k = lance.dataset(str(src), version=version).to_table()["a"][3].as_py()
        for lib in (lance, lancelet):
            assert lib.dataset(str(target)).to_table(filter=f"a = {k}")["a"].to_pylist() == [k]
        # the other library appends and deletes on the clone; files stay in the clone
        ods = other.dataset(str(target))
        other.write_dataset(tbl(rng, 1000, 30), str(target), mode="append")
        other.dataset(str(target)).delete("a = 1005")
        ods = cloner.dataset(str(target))
        ods.delete(f"a = {k}")
        cloner.write_dataset(tbl(rng, 2000, 10), str(target), mode="append")
        same_every_version(str(target))
        assert snapshot(src) == before, "the clone source changed"
        assert {b.path for b in lancelet.dataset(str(target)).base_paths().values()} == {str(src)}


@pytest.mark.parametrize("way", [0, 1], ids=["pylance_clones", "lancelet_clones"])
def test_deep_clone_both_ways(tmp_path, way):
    rng = random.Random(7)
    cloner, other = both(way)
    src = tmp_path / "src"
    make_source(lance, src, rng)
    before = snapshot(src)
    target = tmp_path / "deep"
    d = cloner.dataset(str(src)).deep_clone(str(target), 4)
    assert d.version == 4 and d.base_paths() == {}
    assert snapshot(src) == before
    for lib in (lance, lancelet):
        assert lib.dataset(str(target)).to_table().sort_by("a") == lance.dataset(str(src)).to_table().sort_by("a")
    # it stands alone: the source may go
    import shutil
    shutil.rmtree(src)
    k = lancelet.dataset(str(target)).to_table()["a"][5].as_py()
    for lib in (lance, lancelet):
        assert lib.dataset(str(target)).to_table(filter=f"a = {k}")["a"].to_pylist() == [k]
    other.write_dataset(tbl(rng, 500, 20), str(target), mode="append")
    same_every_version(str(target))


def test_clone_of_a_clone_reads_both_sources(tmp_path):
    rng = random.Random(3)
    src = tmp_path / "src"
    make_source(lance, src, rng)
    c1 = lancelet.dataset(str(src)).shallow_clone(str(tmp_path / "c1"), 4)
    lancelet.write_dataset(tbl(rng, 900, 10), str(tmp_path / "c1"), mode="append")
    c2 = lance.dataset(str(tmp_path / "c1")).shallow_clone(str(tmp_path / "c2"), 5)
    c2l = lancelet.dataset(str(tmp_path / "c1")).shallow_clone(str(tmp_path / "c3"), 5)
    assert sorted(c2.base_paths()) == [0, 1] and sorted(c2l.base_paths()) == [0, 1]
    assert ({b.path for b in c2.base_paths().values()} == {b.path for b in c2l.base_paths().values()}
            == {str(src), str(tmp_path / "c1")})
    for p in ("c2", "c3"):
        same_every_version(str(tmp_path / p))
    assert c1.version == 4


def test_clone_bad_input_writes_nothing(tmp_path):
    rng = random.Random(5)
    src = tmp_path / "src"
    make_source(lance, src, rng)
    ds = lancelet.dataset(str(src))
    ds.shallow_clone(str(tmp_path / "c"), 2)
    before = snapshot(tmp_path / "c")
    for clone in (ds.shallow_clone, ds.deep_clone):
        with pytest.raises(AlreadyExistsError) as e:
            clone(str(tmp_path / "c"), 3)
        assert isinstance(e.value, OSError)
        assert snapshot(tmp_path / "c") == before
        for ref in (99, "no_such_tag", ("no_such_branch", 1)):
            with pytest.raises(NotFoundError) as e:
                clone(str(tmp_path / "x"), ref)
            assert isinstance(e.value, OSError)
            assert not (tmp_path / "x").exists()
        with pytest.raises((InvalidInputError, TypeError)):
            clone(str(tmp_path / "x"), 1.5)
    assert snapshot(src) == snapshot(src)


@pytest.mark.parametrize("way", [0, 1], ids=["pylance_writes", "lancelet_writes"])
def test_multi_base_write_both_ways(tmp_path, way):
    rng = random.Random(11)
    writer, other = both(way)
    uri, b1, b2 = str(tmp_path / "ds"), str(tmp_path / "b1"), str(tmp_path / "b2")
    ds = writer.write_dataset(tbl(rng, 0, 40), uri, initial_bases=[
        writer.DatasetBasePath(b1, name="b1"), writer.DatasetBasePath(b2, name="b2", is_dataset_root=True)],
        target_bases=["b1"])
    bp = ds.base_paths()
    assert sorted(bp) == [1, 2]
    assert (bp[1].name, bp[1].path, bp[1].is_dataset_root) == ("b1", b1, False)
    assert (bp[2].name, bp[2].path, bp[2].is_dataset_root) == ("b2", b2, True)
    assert [f for f in os.listdir(b1) if f.endswith(".lance")] and not os.path.exists(os.path.join(uri, "data"))
    other.write_dataset(tbl(rng, 100, 10), uri, mode="append", target_bases=["b2"])
    assert os.listdir(os.path.join(b2, "data"))
    writer.write_dataset(tbl(rng, 200, 10), uri, mode="append", target_bases=[b1])
    other.dataset(uri).delete("a = 3")
    d = other.dataset(uri).add_bases([other.DatasetBasePath(str(tmp_path / "b3"), name="b3")])
    assert d.base_paths()[3].name == "b3"
    writer.write_dataset(tbl(rng, 300, 10), uri, mode="append", target_bases=["b3"])
    other.write_dataset(tbl(rng, 400, 10), uri, mode="append")
    same_every_version(uri)
    assert ({(i, b.name, b.path, b.is_dataset_root) for i, b in lance.dataset(uri).base_paths().items()}
            == {(i, b.name, b.path, b.is_dataset_root) for i, b in lancelet.dataset(uri).base_paths().items()})


def test_bases_bad_input_writes_nothing(tmp_path):
    rng = random.Random(13)
    uri = str(tmp_path / "ds")
    with pytest.raises(NotFoundError) as e:
        lancelet.write_dataset(tbl(rng, 0, 5), uri, target_bases=["zz"])
    assert isinstance(e.value, OSError) and not os.path.exists(os.path.join(uri, "_versions"))
    ds = lancelet.write_dataset(tbl(rng, 0, 5), uri, initial_bases=[lancelet.DatasetBasePath(str(tmp_path / "b"), name="b")])
    with pytest.raises(InvalidInputError):
        ds.add_bases([lancelet.DatasetBasePath(str(tmp_path / "c"), name="b")])
    with pytest.raises(InvalidInputError):
        ds.add_bases([lancelet.DatasetBasePath(str(tmp_path / "b"), name="other")])
    with pytest.raises(InvalidInputError):
        lancelet.write_dataset(tbl(rng, 0, 5), uri, mode="append",
                               initial_bases=[lancelet.DatasetBasePath(str(tmp_path / "d"), name="d")])
    assert lancelet.dataset(uri).version == 1 and lance.dataset(uri).version == 1
