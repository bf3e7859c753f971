"""Errors keep their cause (issue 30 part 3, docs/errors.md "The cause").

A lancelet error made from another library's error (the file system's, the
object store's, prost's, Arrow's, the flatbuffer verifier's) is raised with
the same class as before, and its ``__cause__`` is an exception carrying
that error's text: an ``OSError`` (the subclass its errno picks) for a
storage error, a plain ``LanceletError`` otherwise, each with the next error
of the chain as its own ``__cause__``. Errors met while streaming (a scan's
``to_table``) keep theirs across the Arrow C stream too.
"""
from __future__ import annotations

import errno
import json
import os
import struct
import tempfile
from pathlib import Path

import pyarrow as pa
import pytest

import lancelet
import lancelet.file
from lancelet.exceptions import CorruptFileError, InvalidInputError, LanceletError, LanceletIOError, NotFoundError


def chain(e: BaseException) -> list[BaseException]:
    """``e``'s causes, outermost first."""
    out = []
    c = e.__cause__
    while c is not None:
        out.append(c)
        c = c.__cause__
    return out


def table(n: int = 10) -> pa.Table:
    return pa.table({"x": pa.array(range(n), pa.int32())})


def test_missing_file(tmp_path):
    with pytest.raises(NotFoundError) as info:
        lancelet.file.LanceFileReader(str(tmp_path / "nope.lance"))
    cause = info.value.__cause__
    assert type(cause) is FileNotFoundError, chain(info.value)
    assert cause.errno == errno.ENOENT
    assert "No such file or directory" in str(cause)
    assert "nope.lance" in str(info.value)


def test_missing_data_file_while_streaming(tmp_path):
    uri = str(tmp_path / "ds")
    lancelet.write_dataset(table(), uri)
    (data,) = (tmp_path / "ds" / "data").iterdir()
    data.unlink()
    with pytest.raises(NotFoundError) as info:
        lancelet.dataset(uri).to_table()
    assert data.name in str(info.value)
    cause = info.value.__cause__
    assert type(cause) is FileNotFoundError, chain(info.value)
    assert cause.errno == errno.ENOENT


def _probe(path: str) -> list | None:
    """Open ``path`` with LanceFileReader: None, or the error's class and
    message and its cause's class, errno and text."""
    try:
        lancelet.file.LanceFileReader(path)
        return None
    except Exception as e:
        c = e.__cause__
        return [type(e).__name__, str(e), type(c).__name__, getattr(c, "errno", None), str(c)]


def _probe_as_nobody(path: str) -> list | None:
    """``_probe`` in a forked child running as user nobody (lancelet
    rebuilds its process-wide resources after fork)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            os.setgid(65534)
            os.setuid(65534)
            os.write(w, json.dumps(_probe(path)).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, data
    return json.loads(data)


def test_permission_denied():
    """A file the process may not read: LanceletIOError from a
    PermissionError. Root reads a mode-000 file anyway, so as root the read
    runs in a forked child that dropped to user nobody (the file lies in a
    directory of /tmp it can reach)."""
    with tempfile.TemporaryDirectory(prefix="lancelet-perm-") as d:
        os.chmod(d, 0o755)
        f = Path(d) / "locked.lance"
        f.write_bytes(b"x" * 64)
        f.chmod(0o000)
        got = _probe(str(f)) if os.geteuid() != 0 else _probe_as_nobody(str(f))
    assert got is not None, "the mode-000 file was read"
    name, msg, cause, cause_errno, cause_text = got
    assert name == "LanceletIOError" and str(f) in msg, got
    assert cause == "PermissionError" and cause_errno == errno.EACCES, got
    assert "Permission denied" in cause_text and "Permission denied" in msg, got


def test_object_store_error(tmp_path):
    """The io-error case of test_error_contract: the object store fails to
    write below a regular file. The chain names the object store's error
    and ends in the file system's NotADirectoryError."""
    f = tmp_path / "plain.txt"
    f.write_text("x")
    with pytest.raises(LanceletIOError) as info:
        lancelet.write_dataset(table(3), str(f / "ds"))
    causes = chain(info.value)
    assert causes and all(isinstance(c, OSError) for c in causes), causes
    assert "LocalFileSystem" in str(causes[0]), causes
    assert str(causes[0]) in str(info.value)
    assert type(causes[-1]) is NotADirectoryError and causes[-1].errno == errno.ENOTDIR, causes


def _framed(body: bytes) -> bytes:
    """A manifest file: one section (u32 length + body), then the footer
    (u64 offset of the manifest section, u16 0, u16 2, LANC)."""
    return struct.pack("<I", len(body)) + body + struct.pack("<QHH", 0, 0, 2) + b"LANC"


def test_corrupt_protobuf(tmp_path):
    uri = str(tmp_path / "ds")
    lancelet.write_dataset(table(), uri)
    (manifest,) = (tmp_path / "ds" / "_versions").glob("*.manifest")
    manifest.write_bytes(_framed(b"\xff\xff\xff"))
    with pytest.raises(CorruptFileError) as info:
        lancelet.dataset(uri)
    assert manifest.name in str(info.value) and "bad protobuf" in str(info.value)
    cause = info.value.__cause__
    assert type(cause) is LanceletError, chain(info.value)
    assert "failed to decode Protobuf message" in str(cause)
    assert str(cause) in str(info.value)


@pytest.mark.pylance
def test_corrupt_arrow_deletion_file(tmp_path, lance_mod):
    """pylance's .arrow deletion file with its footer's root offset pointing
    past the footer: CorruptFileError (as for any garbage deletion file),
    caused by the flatbuffer verifier's error."""
    uri = str(tmp_path / "ds")
    lance_mod.write_dataset(table(100), uri)
    lance_mod.dataset(uri).delete("x < 3")
    (deletion,) = (tmp_path / "ds" / "_deletions").iterdir()
    assert deletion.suffix == ".arrow"
    b = bytearray(deletion.read_bytes())
    (footer_len,) = struct.unpack("<i", b[-10:-6])
    at = len(b) - 10 - footer_len
    b[at:at + 4] = struct.pack("<I", 0xFFFFFFFF)
    deletion.write_bytes(bytes(b))
    with pytest.raises(CorruptFileError) as info:
        lancelet.dataset(uri).to_table()
    assert deletion.name in str(info.value) and "not a valid flatbuffer" in str(info.value)
    cause = info.value.__cause__
    assert type(cause) is LanceletError, chain(info.value)
    assert str(cause) and str(cause) in str(info.value)


def test_filter_evaluation_while_streaming(tmp_path):
    uri = str(tmp_path / "ds")
    lancelet.write_dataset(table(), uri)
    with pytest.raises(InvalidInputError) as info:
        lancelet.dataset(uri).to_table(filter="x / 0 = 1")
    cause = info.value.__cause__
    assert type(cause) is LanceletError, chain(info.value)
    assert str(cause) == "Divide by zero error"


def test_no_cause_without_an_underlying_error(tmp_path):
    """An error lancelet found itself (no library error below it) has no
    lancelet-made cause."""
    with pytest.raises(NotFoundError) as info:
        lancelet.dataset(str(tmp_path / "nothing"))
    assert info.value.__cause__ is None
