"""Blob columns: ``Dataset.take_blobs`` and the file-like ``BlobFile``.

A ``BlobFile`` holds where one blob's bytes are (a data file, a sidecar
``.blob`` file or an external object, an offset and a size); every read is a
ranged read of that object, with an optional read-ahead buffer for
sequential reads, as pylance's."""

from __future__ import annotations

import io
from typing import Any, List, Optional, Tuple

from lancelet import _args, _native
from lancelet.exceptions import InvalidInputError

DEFAULT_BLOB_BUFFER_SIZE = 512 * 1024
_HANDLINGS = ("all_binary", "blobs_descriptions", "all_descriptions")


def check_blob_handling(value: Optional[str]) -> str:
    """pylance's ``blob_handling`` values; ``None`` is its default."""
    if value is None:
        return "blobs_descriptions"
    if not isinstance(value, str) or value not in _HANDLINGS:
        raise InvalidInputError(f"blob_handling must be one of {', '.join(map(repr, _HANDLINGS))}, got {value!r}")
    return value


class BlobFile(io.RawIOBase):
    """One blob as a read-only, seekable binary file. ``read_range`` and
    ``read_ranges`` neither use the read-ahead buffer nor move the cursor."""

    def __init__(self, inner: Any, buffer_size: int = DEFAULT_BLOB_BUFFER_SIZE) -> None:
        super().__init__()
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, int):
            raise TypeError(f"buffer_size must be an int, got {type(buffer_size).__name__}")
        if buffer_size < 0:
            raise ValueError("buffer_size must be non-negative")
        self._inner = inner
        self._size = inner.size()
        self._pos = 0
        self._buffer_size = buffer_size
        self._buf = b""
        self._buf_start = 0

    def size(self) -> int:
        """The blob's size in bytes."""
        return self._size

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        self._check_open()
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._check_open()
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self._size + offset
        else:
            raise ValueError(f"Invalid whence: {whence}")
        if pos < 0:
            raise ValueError(f"negative seek value {pos}")
        self._pos = pos
        return pos

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on closed file")

    def _read_at(self, pos: int, n: int) -> bytes:
        end = min(pos + n, self._size)
        if pos >= end:
            return b""
        b0, b1 = self._buf_start, self._buf_start + len(self._buf)
        if b0 <= pos and end <= b1:
            return self._buf[pos - b0:end - b0]
        want = end - pos
        if want < self._buffer_size:
            self._buf = self._inner.read_range(pos, self._buffer_size)
            self._buf_start = pos
            return self._buf[:want]
        return self._inner.read_range(pos, want)

    def read(self, size: Optional[int] = -1) -> bytes:
        self._check_open()
        if size is None or size < 0:
            return self.readall()
        out = self._read_at(self._pos, size)
        self._pos += len(out)
        return out

    def readall(self) -> bytes:
        self._check_open()
        if self._pos >= self._size:
            return b""
        out = self._inner.read_range(self._pos, self._size - self._pos)
        self._pos += len(out)
        return out

    def readinto(self, b: Any) -> int:
        data = self.read(len(memoryview(b).cast("B")))
        memoryview(b).cast("B")[:len(data)] = data
        return len(data)

    def read_range(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset`` of the blob (cursor unchanged)."""
        self._check_open()
        if offset < 0 or length < 0:
            raise ValueError("offset and length must be non-negative")
        if offset + length > self._size:
            raise ValueError(f"range {offset}+{length} extends beyond the blob ({self._size} bytes)")
        return self._inner.read_range(offset, length)

    def read_ranges(self, ranges: List[Tuple[int, int]]) -> List[bytes]:
        """One payload per ``(offset, length)`` range, in order."""
        return [self.read_range(o, n) for o, n in ranges]

    def __repr__(self) -> str:
        return f"<BlobFile size={self._size}>"


def take_blobs(ds: Any, blob_column: str, ids: Any = None, addresses: Any = None, indices: Any = None, *,
               buffer_size: int = DEFAULT_BLOB_BUFFER_SIZE) -> List[Optional[BlobFile]]:
    given = [(k, v) for k, v in (("ids", ids), ("addresses", addresses), ("indices", indices)) if v is not None]
    if len(given) != 1:
        raise InvalidInputError("take_blobs: exactly one of ids, addresses or indices must be given")
    kind, values = given[0]
    if hasattr(values, "to_pylist"):
        values = values.to_pylist()
    rows = [_args.integer(v, kind) for v in values]
    if any(v < 0 for v in rows):
        raise InvalidInputError(f"take_blobs: {kind} must be non-negative")
    natives = _native.take_blobs(ds._native, blob_column, kind, rows)
    return [None if n is None else BlobFile(n, buffer_size) for n in natives]
