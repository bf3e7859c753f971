"""Reading a manifest's index section straight from its bytes, with no
Lance library: tests compare what the two libraries wrote byte for byte.

A manifest file is sections of ``u32 LE length + protobuf bytes`` and a
16-byte footer whose first u64 is the offset of the Manifest section;
``Manifest.index_section`` (field 6) is the offset of the IndexSection
(repeated ``IndexMetadata`` = field 1)."""

from __future__ import annotations

import os
import struct
from typing import Dict, List, Optional, Tuple


def _varint(b: bytes, i: int) -> Tuple[int, int]:
    out = shift = 0
    while True:
        c = b[i]
        i += 1
        out |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return out, i


def fields(b: bytes) -> List[Tuple[int, object]]:
    """The (field number, value) pairs of a protobuf message, in order:
    varints as ints, length-delimited fields as bytes."""
    i, out = 0, []
    while i < len(b):
        key, i = _varint(b, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(b, i)
        elif wire == 2:
            n, i = _varint(b, i)
            value, i = b[i:i + n], i + n
        elif wire == 1:
            value, i = b[i:i + 8], i + 8
        elif wire == 5:
            value, i = b[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire}")
        out.append((number, value))
    return out


def packed_varints(v: bytes) -> List[int]:
    """The values of a packed repeated varint field."""
    out, i = [], 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(x)
    return out


def _section(b: bytes, pos: int) -> bytes:
    (n,) = struct.unpack_from("<I", b, pos)
    return b[pos + 4:pos + 4 + n]


def manifest_path(dataset: str, version: int) -> str:
    """The manifest file of ``version`` (V2 naming, else V1)."""
    v2 = os.path.join(dataset, "_versions", f"{2**64 - 1 - version:020d}.manifest")
    return v2 if os.path.exists(v2) else os.path.join(dataset, "_versions", f"{version}.manifest")


def latest_version(dataset: str) -> int:
    """The newest version in ``_versions/`` (V2 or V1 naming)."""
    versions = []
    for name in os.listdir(os.path.join(dataset, "_versions")):
        stem, ext = os.path.splitext(name)
        if ext == ".manifest" and stem.isdigit():
            n = int(stem)
            versions.append(2**64 - 1 - n if len(stem) == 20 else n)
    return max(versions)


def index_entries(dataset: str, version: Optional[int] = None) -> List[Dict[str, object]]:
    """The IndexMetadata entries of a version (default: the latest): uuid
    (hex), fields, name, dataset_version, fragment_bitmap (raw bytes),
    type_url, details (the details ``Any``'s value bytes), index_version,
    files (path, size)."""
    if version is None:
        version = latest_version(dataset)
    with open(manifest_path(dataset, version), "rb") as f:
        b = f.read()
    (pos,) = struct.unpack_from("<Q", b, len(b) - 16)
    manifest = fields(_section(b, pos))
    at = [v for n, v in manifest if n == 6]
    if not at:
        return []
    out = []
    for n, raw in fields(_section(b, at[0])):
        if n != 1:
            continue
        e: Dict[str, object] = {"fields": [], "files": []}
        for k, v in fields(raw):
            if k == 1:
                e["uuid"] = dict(fields(v)).get(1, b"").hex()
            elif k == 2:
                if isinstance(v, bytes):  # packed
                    e["fields"].extend(packed_varints(v))
                else:
                    e["fields"].append(v)
            elif k == 3:
                e["name"] = v.decode()
            elif k == 4:
                e["dataset_version"] = v
            elif k == 5:
                e["fragment_bitmap"] = v
            elif k == 6:
                details = dict(fields(v))
                e["type_url"] = details.get(1, b"").decode()
                e["details"] = bytes(details.get(2, b""))
            elif k == 7:
                e["index_version"] = v
            elif k == 10:
                f = dict(fields(v))
                e["files"].append((f.get(1, b"").decode(), f.get(2, 0)))
        out.append(e)
    return out


def comparable(entries: List[Dict[str, object]]) -> List[tuple]:
    """What two libraries must agree on (uuids, creation times and file
    sizes aside): name, fields, dataset_version, index_version, type_url
    and the fragment bitmap's bytes, sorted by name."""
    return sorted((e.get("name"), tuple(e["fields"]), e.get("dataset_version"), e.get("index_version"), e.get("type_url"),
                   e.get("fragment_bitmap", b"")) for e in entries)
