"""Damaged input -> the right typed exception (naming the file), never a crash.

Lance v2 footer (last 40 bytes, little-endian):
    u64 column_meta_start | u64 cmo_table_offset | u64 gbo_table_offset |
    u32 num_global_buffers | u32 num_columns | u16 major | u16 minor | b"LANC"
"""
from __future__ import annotations

import faulthandler
import shutil
import struct
import time

import numpy as np
import pyarrow as pa
import pytest
from datagen import pylance_write

import lancelet
import lancelet.file
from lancelet.exceptions import CorruptFileError, InvalidInputError, LanceletError, NotFoundError, UnsupportedError

pytestmark = pytest.mark.pylance

FOOTER = struct.Struct("<QQQIIHH4s")
assert FOOTER.size == 40


def parse_footer(data: bytes) -> dict:
    cm0, cmo, gbo, ngb, ncols, major, minor, magic = FOOTER.unpack(data[-40:])
    return dict(cm0=cm0, cmo=cmo, gbo=gbo, ngb=ngb, ncols=ncols, major=major, minor=minor, magic=magic)


def with_footer(data: bytes, **changes) -> bytes:
    f = parse_footer(data)
    f.update(changes)
    return data[:-40] + FOOTER.pack(f["cm0"], f["cmo"], f["gbo"], f["ngb"], f["ncols"], f["major"], f["minor"],
                                    f["magic"])


def cmo_entries(data: bytes) -> list[tuple[int, int]]:
    f = parse_footer(data)
    return [struct.unpack_from("<QQ", data, f["cmo"] + 16 * i) for i in range(f["ncols"])]


def gbo_entries(data: bytes) -> list[tuple[int, int]]:
    f = parse_footer(data)
    return [struct.unpack_from("<QQ", data, f["gbo"] + 16 * i) for i in range(f["ngb"])]


def _table(n=300):
    return pa.table({
        "i": pa.array(np.arange(n, dtype=np.int32)),
        "s": pa.array([None if i % 5 == 0 else f"str{i}" for i in range(n)]),
        "l": pa.array([list(range(i % 4)) for i in range(n)], pa.list_(pa.int64())),
    })


@pytest.fixture(params=["2.0", "2.1", "2.2"])
def good_file(request, tmp_path):
    """(path, bytes, version) of a valid pylance-written file."""
    p = tmp_path / f"good_{request.param}.lance"
    pylance_write(_table(), p, request.param)
    return p, p.read_bytes(), request.param


def _write(tmp_path, name, data: bytes):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def read_everything(path):
    """Open + touch every public read path (errors may be raised lazily)."""
    r = lancelet.file.LanceFileReader(str(path))
    _ = r.schema, r.num_rows, r.version
    t = r.read()
    if r.num_rows:
        r.take([0, r.num_rows - 1])
        r.read(offset=r.num_rows // 2, limit=1)
    for _b in r.to_batches(batch_size=64):
        pass
    return t


def assert_raises_naming(exc_type, path):
    """Context manager: the read raises exc_type and the message names the file."""
    class _Ctx:
        def __enter__(self):
            self.cm = pytest.raises(exc_type)
            self.info = self.cm.__enter__()
            return self.info

        def __exit__(self, *exc):
            ret = self.cm.__exit__(*exc)
            msg = str(self.info.value)
            assert str(path) in msg or path.name in msg, f"error message does not name the file {path}: {msg!r}"
            return ret
    return _Ctx()


def test_sanity_good_file_reads(good_file):
    p, data, version = good_file
    f = parse_footer(data)
    assert f["magic"] == b"LANC" and f["ncols"] >= 3
    t = read_everything(p)
    assert t.equals(_table())


# ---------------------------------------------------------------- missing / truncated / magic

def test_missing_file(tmp_path):
    p = tmp_path / "does_not_exist.lance"
    with assert_raises_naming(NotFoundError, p):
        read_everything(p)


@pytest.mark.parametrize("cut", ["empty", "1", "20", "39", "40", "half", "minus1", "minus40", "minus41"])
def test_truncated(good_file, tmp_path, cut):
    p, data, _ = good_file
    n = len(data)
    keep = {"empty": 0, "1": 1, "20": 20, "39": 39, "40": 40, "half": n // 2, "minus1": n - 1,
            "minus40": n - 40, "minus41": n - 41}[cut]
    bad = _write(tmp_path, f"trunc_{cut}.lance", data[:keep])
    with assert_raises_naming(CorruptFileError, bad):
        read_everything(bad)


def test_footer_only_tail_kept(good_file, tmp_path):
    """Head cut off, footer intact: every offset now points past the end / to wrong bytes."""
    p, data, _ = good_file
    bad = _write(tmp_path, "headless.lance", data[len(data) // 2:])
    with assert_raises_naming(CorruptFileError, bad):
        read_everything(bad)


@pytest.mark.parametrize("magic", [b"LANX", b"\x00\x00\x00\x00", b"CNAL", b"lanc"])
def test_wrong_magic(good_file, tmp_path, magic):
    p, data, _ = good_file
    bad = _write(tmp_path, "magic.lance", with_footer(data, magic=magic))
    with assert_raises_naming(CorruptFileError, bad):
        read_everything(bad)


def test_not_a_lance_file(tmp_path):
    bad = _write(tmp_path, "parquet_like.lance", b"PAR1" + bytes(range(256)) * 4 + b"PAR1")
    with assert_raises_naming(CorruptFileError, bad):
        read_everything(bad)


# ---------------------------------------------------------------- protobuf

@pytest.mark.parametrize("col", [0, 1, 2])
def test_corrupt_column_metadata_protobuf(good_file, tmp_path, col):
    p, data, _ = good_file
    pos, size = cmo_entries(data)[col]
    assert size > 0
    bad = bytearray(data)
    bad[pos:pos + size] = b"\xff" * size  # truncated varint / invalid wire type
    bad = _write(tmp_path, f"cm{col}.lance", bytes(bad))
    with assert_raises_naming(CorruptFileError, bad):
        read_everything(bad)


def test_corrupt_file_descriptor_protobuf(good_file, tmp_path):
    p, data, _ = good_file
    pos, size = gbo_entries(data)[0]
    bad = bytearray(data)
    bad[pos:pos + size] = b"\xff" * size
    bad = _write(tmp_path, "gb0.lance", bytes(bad))
    with assert_raises_naming(CorruptFileError, bad):
        read_everything(bad)


def test_column_metadata_wrong_wire_types(good_file, tmp_path):
    """Valid-looking varints but nonsense: field 1 as a 64-bit fixed, field 2 as a huge length."""
    p, data, _ = good_file
    pos, size = cmo_entries(data)[0]
    junk = (b"\x09" + b"\x01" * 8 + b"\x12" + b"\xff\xff\xff\xff\x0f")
    junk = (junk * (size // len(junk) + 1))[:size]
    bad = bytearray(data)
    bad[pos:pos + size] = junk
    bad = _write(tmp_path, "wire.lance", bytes(bad))
    with assert_raises_naming(CorruptFileError, bad):
        read_everything(bad)


# ---------------------------------------------------------------- offsets outside the file

@pytest.mark.parametrize("what", ["cmo_past_end", "gbo_past_end", "cm0_past_end", "cmo_overflow",
                                  "ncols_huge", "ngb_huge", "cm0_after_cmo"])
def test_footer_offsets_outside_file(good_file, tmp_path, what):
    p, data, _ = good_file
    n = len(data)
    f = parse_footer(data)
    changes = {
        "cmo_past_end": dict(cmo=n + 1000),
        "gbo_past_end": dict(gbo=n + 1000),
        "cm0_past_end": dict(cm0=n + 8),
        "cmo_overflow": dict(cmo=2 ** 64 - 8),
        "ncols_huge": dict(ncols=2 ** 32 - 1),
        "ngb_huge": dict(ngb=2 ** 32 - 1),
        "cm0_after_cmo": dict(cm0=f["cmo"] + 8),
    }[what]
    bad = _write(tmp_path, f"{what}.lance", with_footer(data, **changes))
    with assert_raises_naming(CorruptFileError, bad):
        read_everything(bad)


@pytest.mark.parametrize("which", ["cmo_pos", "cmo_size", "gbo_pos", "gbo_size"])
def test_table_entries_outside_file(good_file, tmp_path, which):
    p, data, _ = good_file
    f = parse_footer(data)
    n = len(data)
    bad = bytearray(data)
    if which.startswith("cmo"):
        base = f["cmo"] + 16 * 1  # second column
    else:
        base = f["gbo"]
    if which.endswith("pos"):
        struct.pack_into("<Q", bad, base, n + 4096)
    else:
        struct.pack_into("<Q", bad, base + 8, 2 ** 62)
    bad = _write(tmp_path, f"{which}.lance", bytes(bad))
    with assert_raises_naming(CorruptFileError, bad):
        read_everything(bad)


# ---------------------------------------------------------------- versions

@pytest.mark.parametrize("major,minor", [(3, 0), (2, 9), (2, 255), (9, 9), (0, 7), (65535, 65535)])
def test_unknown_version(good_file, tmp_path, major, minor):
    p, data, _ = good_file
    bad = _write(tmp_path, f"v{major}_{minor}.lance", with_footer(data, major=major, minor=minor))
    with assert_raises_naming(UnsupportedError, bad):
        read_everything(bad)


# ---------------------------------------------------------------- writer: schema mismatch

def test_writer_batch_schema_mismatch(tmp_path):
    p = tmp_path / "mismatch.lance"
    schema = pa.schema([("a", pa.int32()), ("b", pa.string())])
    for bad in [pa.table({"a": pa.array([1], pa.int64()), "b": ["x"]}),      # wrong type
                pa.table({"a": pa.array([1], pa.int32())}),                   # missing column
                pa.table({"b": ["x"], "a": pa.array([1], pa.int32())}),       # other order
                pa.table({"a": pa.array([1], pa.int32()), "c": ["x"]})]:      # other name
        w = lancelet.file.LanceFileWriter(str(p), schema=schema)
        w.write(pa.table({"a": pa.array([1], pa.int32()), "b": ["x"]}))
        with assert_raises_naming(InvalidInputError, p):
            w.write(bad)
        # the writer is abandoned (test_file_writer_poison.py): no file
        with assert_raises_naming(InvalidInputError, p):
            w.close()
        assert not p.exists()


def test_writer_second_batch_mismatch_without_schema(tmp_path):
    p = tmp_path / "mismatch2.lance"
    with assert_raises_naming(InvalidInputError, p):
        with lancelet.file.LanceFileWriter(str(p)) as w:
            w.write(pa.record_batch({"a": pa.array([1, 2], pa.int32())}))
            w.write(pa.record_batch({"a": pa.array(["x"], pa.string())}))
    assert not p.exists()


def test_exceptions_are_lancelet_errors():
    for exc in (CorruptFileError, UnsupportedError, NotFoundError, InvalidInputError):
        assert issubclass(exc, LanceletError)


# ---------------------------------------------------------------- fuzz

FUZZ_DATASETS = ["v2_0_basic", "v2_1_types", "v2_2_types", "v2_1_encodings", "v2_2_encodings", "v2_2_fullzip",
                 "v2_2_general_compression", "two_versions"]
FUZZ_MUTATIONS = 400
FUZZ_TIME_BUDGET_S = 60.0


def _mutate(rng: np.random.Generator, data: bytes) -> tuple[bytes, str]:
    n = len(data)
    f = parse_footer(data)
    meta_start = min(f["cm0"], f["gbo"], f["cmo"], n - 40)
    kind = rng.integers(0, 6)
    b = bytearray(data)
    if kind == 0:  # flip bits anywhere
        for _ in range(int(rng.integers(1, 9))):
            i = int(rng.integers(0, n))
            b[i] ^= 1 << int(rng.integers(0, 8))
        return bytes(b), "flip-anywhere"
    if kind in (1, 2):  # flip bits in the metadata region (column metadata, tables, global buffer)
        for _ in range(int(rng.integers(1, 5))):
            i = int(rng.integers(meta_start, n))
            b[i] ^= 1 << int(rng.integers(0, 8))
        return bytes(b), "flip-metadata"
    if kind == 3:  # random byte values in metadata
        for _ in range(int(rng.integers(1, 4))):
            i = int(rng.integers(meta_start, n - 4))
            b[i] = int(rng.integers(0, 256))
        return bytes(b), "set-metadata"
    if kind == 4:  # overwrite a u64 in the offset tables / footer with something plausible-but-wrong
        i = int(rng.integers(max(0, f["cmo"]), n - 12)) if f["cmo"] < n - 12 else n - 40
        val = int(rng.choice([0, 1, n - 1, n, n + 1, 2 ** 31, 2 ** 63, int(rng.integers(0, 2 ** 62))]))
        struct.pack_into("<Q", b, i, val % 2 ** 64)
        return bytes(b), "u64-metadata"
    cut = int(rng.integers(0, n))  # truncate
    return data[:cut], "truncate"


def test_fuzz_random_mutations_of_fixtures(fixtures_dir, tmp_path):
    files = []
    for ds in FUZZ_DATASETS:
        files += sorted((fixtures_dir / ds / "data").glob("*.lance"))
    assert files, f"no fixture files under {fixtures_dir}"
    originals = [f.read_bytes() for f in files]
    rng = np.random.default_rng(20240607)
    failures = []
    outcomes = {"ok": 0, "error": 0}
    deadline = time.monotonic() + FUZZ_TIME_BUDGET_S
    # a hang inside the reader would stall the run forever: dump stacks and abort instead
    faulthandler.dump_traceback_later(FUZZ_TIME_BUDGET_S + 240, exit=True)
    try:
        for i in range(FUZZ_MUTATIONS):
            if time.monotonic() > deadline:
                break
            k = int(rng.integers(0, len(files)))
            data, kind = _mutate(rng, originals[k])
            p = tmp_path / f"m{i}_{kind}.lance"
            p.write_bytes(data)
            try:
                read_everything(p)
                outcomes["ok"] += 1
            except LanceletError:
                outcomes["error"] += 1
            except BaseException as e:
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
                failures.append(f"mutation {i} ({kind}) of {files[k].name}: {type(e).__module__}."
                                f"{type(e).__name__}: {str(e)[:200]}")
                shutil.copyfile(p, tmp_path / f"FAILED_{i}.lance")
            finally:
                p.unlink(missing_ok=True)
    finally:
        faulthandler.cancel_dump_traceback_later()
    done = outcomes["ok"] + outcomes["error"] + len(failures)
    assert done >= 100, f"only {done} mutations ran within {FUZZ_TIME_BUDGET_S}s: reader too slow?"
    assert outcomes["error"] > 0, "no mutation was ever detected as an error"
    assert not failures, f"{len(failures)}/{done} mutations raised non-LanceletError:\n" + "\n".join(failures[:20])
