"""Corrupt `.arrow` deletion files (issue 15 items 2 and 3): a size claim of
2^60 bytes, byte flips and truncations are `CorruptFileError` naming the
file, never an abort (SIGABRT on a failed allocation), a panic surfacing as
`InternalError`, or a silent wrong answer beyond the fragment.

pylance writes the deletion file as an Arrow IPC file with one UInt32
column; with enough rows its values buffer is ZSTD-compressed and starts
with the i64 LE uncompressed length (4000 rows -> 16000).
"""
from __future__ import annotations

import os
import pathlib
import struct
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

import lancelet
from lancelet.exceptions import CorruptFileError, InternalError

pytestmark = pytest.mark.pylance


def _dataset(tmp_path: pathlib.Path, name: str, rows: int, predicate: str) -> tuple[str, pathlib.Path]:
    import lance
    uri = str(tmp_path / name)
    lance.write_dataset(pa.table({"x": pa.array(range(rows), pa.int32())}), uri)
    lance.dataset(uri).delete(predicate)
    (deletion,) = (tmp_path / name / "_deletions").iterdir()
    assert deletion.suffix == ".arrow"
    return uri, deletion


@pytest.fixture()
def zstd_deletions(tmp_path):
    """6000 rows, 4000 deleted: a ZSTD-compressed values buffer."""
    return _dataset(tmp_path, "zstd", 6000, "x < 4000")


@pytest.fixture()
def small_deletions(tmp_path):
    """100 rows, 4 deleted: raw buffers."""
    return _dataset(tmp_path, "small", 100, "x < 3 or x = 50")


def _read_in_subprocess(uri: str) -> subprocess.CompletedProcess:
    code = textwrap.dedent(f"""
        import lancelet
        from lancelet.exceptions import CorruptFileError
        for op in ("to_table", "count_rows", "take"):
            ds = lancelet.dataset({uri!r})
            try:
                if op == "take":
                    ds.take([0, 1])
                elif op == "count_rows":
                    ds.count_rows(filter="x >= 0")
                else:
                    ds.to_table()
            except CorruptFileError as e:
                print(op, "CorruptFileError", e)
            else:
                print(op, "no error")
    """)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


def test_pylance_file_is_zstd_with_a_length_prefix(zstd_deletions):
    uri, path = zstd_deletions
    assert struct.pack("<q", 16000) in path.read_bytes()
    assert lancelet.dataset(uri).count_rows() == 2000


@pytest.mark.parametrize("claim", [1 << 60, (1 << 63) - 1, 1 << 33, 16001, 15999, -2])
def test_size_claim_is_corrupt_not_abort(zstd_deletions, claim):
    """A compressed buffer claiming 2^60 bytes used to abort the process."""
    uri, path = zstd_deletions
    data = path.read_bytes()
    at = data.index(struct.pack("<q", 16000))
    path.write_bytes(data[:at] + struct.pack("<q", claim) + data[at + 8:])
    r = _read_in_subprocess(uri)
    assert r.returncode == 0, f"reader died ({r.returncode}): {r.stderr[-2000:]}"
    lines = r.stdout.splitlines()
    assert len(lines) == 3, r.stdout + r.stderr
    for line in lines:
        assert "CorruptFileError" in line and path.name in line, line


def test_row_count_claim_is_corrupt(zstd_deletions):
    """A record batch claiming 2^60 rows is refused before any allocation."""
    uri, path = zstd_deletions
    data = path.read_bytes()
    n = data.count(struct.pack("<q", 4000))
    assert n >= 2
    path.write_bytes(data.replace(struct.pack("<q", 4000), struct.pack("<q", 1 << 60)))
    r = _read_in_subprocess(uri)
    assert r.returncode == 0, r.stderr[-2000:]
    assert all("CorruptFileError" in line and path.name in line for line in r.stdout.splitlines()), r.stdout


def _check_every_change(uri: str, path: pathlib.Path, positions, rows: int):
    good = path.read_bytes()
    outcomes = {"data": 0, "corrupt": 0}
    try:
        for i in positions:
            for x in (0x01, 0x80, 0xFF):
                bad = bytearray(good)
                bad[i] ^= x
                path.write_bytes(bytes(bad))
                try:
                    n = lancelet.dataset(uri).to_table().num_rows
                except InternalError as e:  # a panic caught at the FFI boundary: a bug
                    pytest.fail(f"byte {i} ^ {x:#x}: InternalError {e}")
                except CorruptFileError as e:
                    assert path.name in str(e), f"byte {i} ^ {x:#x}: {e}"
                    outcomes["corrupt"] += 1
                else:
                    assert 0 <= n <= rows
                    outcomes["data"] += 1
        for cut in range(0, len(good), max(1, len(good) // 200)):
            path.write_bytes(good[:cut])
            with pytest.raises(CorruptFileError, match=path.name):
                lancelet.dataset(uri).to_table()
    finally:
        path.write_bytes(good)
    # Most changes hit structure the decoder checks.
    assert outcomes["corrupt"] > outcomes["data"] / 4, outcomes


def test_every_byte_flip_of_a_small_file(small_deletions):
    """Used to surface as InternalError ("the offset of the new Buffer cannot
    exceed the existing length", Option::unwrap() on None)."""
    uri, path = small_deletions
    _check_every_change(uri, path, range(len(path.read_bytes())), 100)


def test_byte_flips_of_a_zstd_file(zstd_deletions):
    uri, path = zstd_deletions
    n = len(path.read_bytes())
    # Every byte of the head (messages and metadata), a stride through the body.
    positions = sorted(set(range(min(n, 400))) | set(range(400, n, 37)) | set(range(max(0, n - 300), n)))
    _check_every_change(uri, path, positions, 6000)
