"""Blob columns of datasets, both ways against pylance 14: v1 (large_binary
with ``lance-encoding:blob``; out of line in 2.0/2.1 data files) and v2
(``lance.blob.v2``: inline up to 64 KiB, packed sidecars up to 4 MiB,
dedicated sidecars above). ``to_table`` returns pylance's descriptors by
default and the bytes with ``blob_handling="all_binary"``; ``take_blobs``
returns lazy file-like ``BlobFile``s."""

from __future__ import annotations

import datetime
import io
import os
import uuid

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet
from lancelet.exceptions import InvalidInputError

pytestmark = pytest.mark.pylance

KIB = 1024
MIB = 1024 * KIB


def _values(seed: int, n: int, big: bool = True) -> list:
    """Seeded blob values: nulls, empties, small, around the 64 KiB inline
    limit, packed sizes and (when ``big``) one above 4 MiB."""
    rng = np.random.default_rng(seed)
    sizes = [0, 5, 64 * KIB, 64 * KIB + 1, 300 * KIB]
    if big:
        sizes.append(4 * MIB + 1)
    out = []
    for i in range(n):
        if i % 7 == 3:
            out.append(None)
            continue
        size = sizes[i % len(sizes)] if i < len(sizes) * 2 else int(rng.integers(0, 3000))
        out.append(rng.integers(0, 256, size, dtype=np.uint8).tobytes())
    return out


def _v1_table(values) -> pa.Table:
    field = pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    return pa.table({"id": pa.array(range(len(values)), pa.int64()), "b": pa.array(values, pa.large_binary())},
                    schema=pa.schema([pa.field("id", pa.int64()), field]))


def _v2_table(values) -> pa.Table:
    return pa.table({"id": pa.array(range(len(values)), pa.int64()), "b": lance.blob_array(values)})


def _pylance_writes(kind: str, uri: str, values, **kw):
    if kind == "v1_2.0":
        return lance.write_dataset(_v1_table(values), uri, data_storage_version="2.0", **kw)
    if kind == "v1_2.1":
        return lance.write_dataset(_v1_table(values), uri, data_storage_version="2.1", **kw)
    if kind == "v1_input_2.2":  # pylance 14 stores a v1 input in 2.2 as blob v2
        return lance.write_dataset(_v1_table(values), uri, **kw)
    return lance.write_dataset(_v2_table(values), uri, **kw)


KINDS = ["v1_2.0", "v1_2.1", "v1_input_2.2", "v2_2.2"]


def _same(ours: pa.Table, theirs: pa.Table):
    assert ours.schema == theirs.schema
    assert ours.schema.field("b").metadata == theirs.schema.field("b").metadata
    assert ours.to_pylist() == theirs.to_pylist()


@pytest.mark.parametrize("kind", KINDS)
def test_pylance_writes_lancelet_reads(kind, tmp_path):
    values = _values(1, 16)
    uri = str(tmp_path / "ds")
    theirs = _pylance_writes(kind, uri, values, max_rows_per_file=9)
    ours = lancelet.dataset(uri)
    # default (descriptors), and every blob_handling value
    _same(ours.to_table(), theirs.to_table())
    for h in ["all_binary", "blobs_descriptions", "all_descriptions"]:
        _same(ours.to_table(blob_handling=h), theirs.to_table(blob_handling=h))
    assert ours.to_table(blob_handling="all_binary").column("b").to_pylist() == values
    _same(ours.to_table(columns=["b"], filter="id >= 5", blob_handling="all_binary"),
          theirs.to_table(columns=["b"], filter="id >= 5", blob_handling="all_binary"))


@pytest.mark.parametrize("kind", KINDS)
def test_take_blobs_matches_pylance(kind, tmp_path):
    values = _values(2, 14)
    uri = str(tmp_path / "ds")
    theirs = _pylance_writes(kind, uri, values, max_rows_per_file=6)
    ours = lancelet.dataset(uri)
    rng = np.random.default_rng(5)
    idx = [int(i) for i in rng.permutation(len(values))]
    a = ours.take_blobs("b", indices=idx)
    b = theirs.take_blobs("b", indices=idx)
    assert [x is None for x in a] == [x is None for x in b] == [values[i] is None for i in idx]
    for i, x, y in zip(idx, a, b):
        if x is None:
            continue
        assert x.size() == y.size() == len(values[i])
        assert x.read() == y.read() == values[i]
    # ids (no stable row ids: addresses) and addresses
    addrs = theirs.to_table(with_row_address=True, columns=["id"])["_rowaddr"].to_pylist()
    for key in ("ids", "addresses"):
        got = ours.take_blobs("b", **{key: [addrs[4], addrs[0]]})
        want = [values[4], values[0]]
        assert [None if f is None else f.read() for f in got] == want


def test_blob_file_is_a_lazy_seekable_file(tmp_path):
    big = os.urandom(5 * MIB)
    uri = str(tmp_path / "ds")
    _pylance_writes("v2_2.2", uri, [big, b"abc", b""])
    ds = lancelet.dataset(uri)
    f, small, empty = ds.take_blobs("b", indices=[0, 1, 2], buffer_size=1024)
    before = lancelet._native._io_stats()["bytes"]
    with f:
        assert isinstance(f, io.RawIOBase) and f.readable() and f.seekable()
        assert f.read(10) == big[:10] and f.tell() == 10
        assert f.seek(-5, io.SEEK_END) == len(big) - 5
        assert f.read() == big[-5:] and f.read() == b""
        f.seek(1000)
        assert f.read_range(MIB, 7) == big[MIB:MIB + 7] and f.tell() == 1000
        assert f.read_ranges([(0, 3), (2 * MIB, 4)]) == [big[:3], big[2 * MIB:2 * MIB + 4]]
        buf = bytearray(16)
        assert f.readinto(buf) == 16 and bytes(buf) == big[1000:1016]
        with pytest.raises(ValueError):
            f.read_range(len(big) - 1, 2)
        with pytest.raises(ValueError):
            f.seek(-1)
    # ranged reads: far less than the blob was fetched
    assert lancelet._native._io_stats()["bytes"] - before < MIB
    assert f.closed
    with pytest.raises(ValueError):
        f.read(1)
    assert small.read() == b"abc" and empty.size() == 0 and empty.read() == b""


def test_bad_blob_requests_are_typed(tmp_path):
    uri = str(tmp_path / "ds")
    _pylance_writes("v2_2.2", uri, [b"x", None])
    ds = lancelet.dataset(uri)
    v = ds.version
    with pytest.raises(InvalidInputError, match="not a blob column"):
        ds.take_blobs("id", indices=[0])
    with pytest.raises(ValueError):  # pylance raises ValueError too
        lance.dataset(uri).take_blobs("id", indices=[0])
    with pytest.raises(InvalidInputError, match="exactly one"):
        ds.take_blobs("b", indices=[0], ids=[0])
    with pytest.raises(InvalidInputError):
        ds.take_blobs("b", indices=[5])
    with pytest.raises(InvalidInputError, match="no column"):
        ds.take_blobs("nope", indices=[0])
    with pytest.raises(InvalidInputError, match="blob_handling"):
        ds.to_table(blob_handling="bytes")
    assert lancelet.dataset(uri).version == v


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_lancelet_writes_v1_pylance_reads(version, tmp_path):
    values = _values(3, 12, big=False)
    uri = str(tmp_path / "ds")
    lancelet.write_dataset(_v1_table(values), uri, data_storage_version=version)
    theirs = lance.dataset(uri)
    ours = lancelet.dataset(uri)
    assert theirs.to_table(blob_handling="all_binary").column("b").to_pylist() == values
    _same(ours.to_table(), theirs.to_table())
    _same(ours.to_table(blob_handling="all_binary"), theirs.to_table(blob_handling="all_binary"))
    assert [None if f is None else f.read() for f in theirs.take_blobs("b", indices=list(range(12)))] == values
    assert [None if f is None else f.read() for f in ours.take_blobs("b", indices=list(range(12)))] == values


def test_blobs_survive_delete_and_lancelet_append(tmp_path):
    values = _values(4, 12)
    uri = str(tmp_path / "ds")
    _pylance_writes("v1_2.1", uri, values)
    ds = lancelet.dataset(uri)
    ds.delete("id % 3 = 0")
    keep = [v for i, v in enumerate(values) if i % 3 != 0]
    assert lance.dataset(uri).to_table(blob_handling="all_binary").column("b").to_pylist() == keep
    assert ds.to_table(blob_handling="all_binary").column("b").to_pylist() == keep
    assert [None if f is None else f.read() for f in ds.take_blobs("b", indices=list(range(len(keep))))] == keep


def test_s3_pylance_writes_lancelet_reads(s3_server):
    so = s3_server.storage_options
    uri = f"s3://lancelet/blobs-{uuid.uuid4().hex[:8]}"
    values = _values(6, 9)
    theirs = _pylance_writes("v2_2.2", uri, values, storage_options=so)
    ours = lancelet.dataset(uri, storage_options=so)
    _same(ours.to_table(), theirs.to_table())
    assert ours.to_table(blob_handling="all_binary").column("b").to_pylist() == values
    got = ours.take_blobs("b", indices=list(range(len(values))))
    assert [None if f is None else f.read() for f in got] == values
    f = got[5]  # 4 MiB + 1: a dedicated sidecar
    assert f.read_range(4 * MIB - 2, 3) == values[5][4 * MIB - 2:]


def test_v1_blobs_survive_compaction_and_cleanup(tmp_path):
    values = _values(7, 18)
    uri = str(tmp_path / "ds")
    _pylance_writes("v1_2.1", uri, values, max_rows_per_file=5)
    ds = lancelet.dataset(uri)
    ds.delete("id = 4")
    ds.optimize.compact_files(target_rows_per_fragment=100)
    keep = [v for i, v in enumerate(values) if i != 4]
    ds = lancelet.dataset(uri)
    assert len(ds.get_fragments()) == 1
    ds.cleanup_old_versions(older_than=datetime.timedelta(0), delete_unverified=True)
    theirs = lance.dataset(uri)
    assert theirs.to_table(blob_handling="all_binary").column("b").to_pylist() == keep
    _same(lancelet.dataset(uri).to_table(), theirs.to_table())
    got = lancelet.dataset(uri).take_blobs("b", indices=list(range(len(keep))))
    assert [None if f is None else f.read() for f in got] == keep


def test_v2_live_sidecars_survive_cleanup(tmp_path):
    values = _values(8, 9)
    uri = str(tmp_path / "ds")
    _pylance_writes("v2_2.2", uri, values)
    lance.dataset(uri).delete("id = 0")
    sidecars = sorted(p.name for p in (tmp_path / "ds" / "data").rglob("*.blob"))
    assert sidecars  # packed and dedicated sidecars exist
    lancelet.dataset(uri).cleanup_old_versions(older_than=datetime.timedelta(0), delete_unverified=True)
    assert sorted(p.name for p in (tmp_path / "ds" / "data").rglob("*.blob")) == sidecars
    keep = values[1:]
    assert lancelet.dataset(uri).to_table(blob_handling="all_binary").column("b").to_pylist() == keep
    assert lance.dataset(uri).to_table(blob_handling="all_binary").column("b").to_pylist() == keep
