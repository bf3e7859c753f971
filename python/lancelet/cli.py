"""The ``lancelet`` command-line tool.

    lancelet inspect URI [--version V] [--json]
    lancelet cat URI [--columns a,b] [--filter SQL] [--limit N] [--offset N]
                     [--version V] [--format table|csv|json] [--batch-size N]
    lancelet ns COMMAND ROOT [ID] ...   (directory namespaces, see cli_ns.py)

``inspect`` shows a dataset's versions, schema, fragments (data files,
deletion files), indices (type, column, fragments covered; for vector indices
the metric, partitions and quantizer), totals and
features; ``cat`` streams rows batch by batch
(nothing is materialized, so it works on datasets of any size).

Errors print one line on stderr and exit with 2 (bad input: unknown column,
bad filter, bad option) or 1 (anything else: missing dataset or version,
corrupt files, I/O); ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import base64
import csv
import datetime
import decimal
import json
import os
import sys
from typing import Any, Dict, Iterable, List, Optional, Sequence
from urllib.parse import unquote, urlparse

import pyarrow as pa

__all__ = ["main"]

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def _local_root(uri: str) -> Optional[str]:
    """The local directory behind ``uri``, or None for non-local stores."""
    if uri.startswith("file://"):
        return unquote(urlparse(uri).path)
    if "://" in uri:
        return None
    return uri


def _size(path: Optional[str]) -> Optional[int]:
    if path is None:
        return None
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def _dir_size(root: str) -> Optional[int]:
    total = 0
    try:
        for d, _, files in os.walk(root):
            for f in files:
                try:
                    total += os.lstat(os.path.join(d, f)).st_size
                except OSError:
                    pass
    except OSError:
        return None
    return total


def _file_version(major: int, minor: int) -> str:
    if (major, minor) == (0, 0):
        return "0.1"  # legacy files
    if (major, minor) == (0, 3):
        return "2.0"  # 2.0 as written by old releases
    return f"{major}.{minor}"


def _deletion_kind(path: str) -> str:
    if path.endswith(".bin"):
        return "bitmap"
    if path.endswith(".arrow"):
        return "arrow"
    return "unknown"


def _bytes(n: Optional[int]) -> str:
    if n is None:
        return "?"
    if n < 1024:
        return f"{n} B"
    v = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        v /= 1024
        if v < 1024 or unit == "TiB":
            return f"{v:.1f} {unit} ({n:,} B)"
    return f"{n:,} B"  # not reached


def _table(headers: Sequence[str], rows: List[Sequence[str]], right: Sequence[bool], indent: str = "  ") -> List[str]:
    """Aligned text table: numbers right-aligned, text left-aligned."""
    widths = [len(h) for h in headers]
    for r in rows:
        for i, c in enumerate(r):
            widths[i] = max(widths[i], len(c))

    def line(cells: Sequence[str]) -> str:
        out = [c.rjust(w) if rj else c.ljust(w) for c, w, rj in zip(cells, widths, right)]
        return (indent + "  ".join(out)).rstrip()

    return [line(headers)] + [line(r) for r in rows]


def _one_line(msg: str) -> str:
    return " ".join(str(msg).split())


# ---------------------------------------------------------------------------
# inspect
# ---------------------------------------------------------------------------
def _collect(ds: Any) -> Dict[str, Any]:
    """Everything ``inspect`` shows, as plain JSON-able values."""
    root = _local_root(ds.uri)
    tags_by_version: Dict[int, List[str]] = {}
    for name, t in sorted(ds.tags.list().items()):
        tags_by_version.setdefault(t["version"], []).append(name)

    versions = []
    for v in ds.versions():
        md = v.get("metadata") or {}
        rows: Optional[int]
        if "total_rows" in md:
            rows = int(md["total_rows"])
        else:
            try:
                rows = ds.checkout_version(v["version"]).count_rows()
            except Exception:
                rows = None
        ts = v["timestamp"]
        versions.append({
            "version": v["version"],
            "timestamp": ts.isoformat(sep=" ", timespec="milliseconds") if isinstance(ts, datetime.datetime) else str(ts),
            "rows": rows,
            "tags": tags_by_version.get(v["version"], []),
            "current": v["version"] == ds.version,
        })

    fragments = []
    tot = dict(fragments=0, data_files=0, physical_rows=0, deleted_rows=0, rows=0, data_bytes=0, deletion_files=0,
               deletion_bytes=0)
    sizes_known = True
    for f in ds.get_fragments():
        files = []
        for df in f.data_files():
            size = df.file_size_bytes
            if not size and root is not None and df.base_id is None:
                size = _size(os.path.join(root, "data", df.path))
            if size is None:
                sizes_known = False
            else:
                tot["data_bytes"] += size
            files.append({
                "path": df.path,
                "fields": list(df.fields),
                "file_version": _file_version(df.file_major_version, df.file_minor_version),
                "size_bytes": size,
            })
        deletion = None
        dpath = f.deletion_file()
        deleted = f.num_deletions
        if dpath:
            if not deleted:
                deleted = f.physical_rows - f.count_rows()
            dsize = _size(os.path.join(root, dpath)) if root is not None else None
            if dsize is None:
                sizes_known = False
            else:
                tot["deletion_bytes"] += dsize
            tot["deletion_files"] += 1
            deletion = {"path": dpath, "kind": _deletion_kind(dpath), "deleted_rows": deleted, "size_bytes": dsize}
        live = f.physical_rows - (deleted or 0)
        fragments.append({
            "id": f.fragment_id,
            "physical_rows": f.physical_rows,
            "rows": live,
            "data_files": files,
            "deletion_file": deletion,
        })
        tot["fragments"] += 1
        tot["data_files"] += len(files)
        tot["physical_rows"] += f.physical_rows
        tot["deleted_rows"] += deleted or 0
        tot["rows"] += live
    tot["bytes_on_disk"] = tot["data_bytes"] + tot["deletion_bytes"] if sizes_known else None
    tot["dataset_dir_bytes"] = _dir_size(root) if root is not None and os.path.isdir(root) else None

    # What the manifest's feature flags say, as far as the Python API shows them.
    features = []
    if tot["deletion_files"]:
        features.append("deletion_files")
    if ds.has_stable_row_ids:
        features.append("stable_row_ids")
    config = ds.config
    if config:
        features.append("table_config")

    indices = [{"name": i["name"], "type": i["type"], "columns": i["fields"], "uuid": i["uuid"],
                "fragments": sorted(i["fragment_ids"]), "dataset_version": i["version"]} for i in ds.list_indices()]
    for i in indices:
        if i["type"].startswith("IVF_"):
            i["vector"] = _vector_details(ds, i["name"])

    schema = ds.schema
    return {
        "uri": ds.uri,
        "version": ds.version,
        "latest_version": ds.latest_version,
        "stable_row_ids": ds.has_stable_row_ids,
        "features": features,
        "config": dict(sorted(config.items())),
        "versions": versions,
        "schema": [{"name": fld.name, "type": str(fld.type), "nullable": fld.nullable} for fld in schema],
        "schema_text": schema.to_string(show_field_metadata=False, show_schema_metadata=False),
        "fragments": fragments,
        "indices": indices,
        "totals": tot,
    }


def _vector_details(ds: Any, name: str) -> Dict[str, Any]:
    """Metric, partitions and quantizer of a vector index (its first delta:
    later deltas share the centroids), from ``index_statistics``."""
    first = ds.index_statistics(name)["indices"][0]
    sub = first.get("sub_index") or {}
    quantizer: Dict[str, Any] = {"type": sub.get("index_type")}
    if sub.get("index_type") == "PQ":
        quantizer.update(num_sub_vectors=sub.get("num_sub_vectors"), num_bits=sub.get("nbits"))
    elif sub.get("index_type") == "SQ":
        quantizer["num_bits"] = sub.get("num_bits")
    return {"metric": first.get("metric_type"), "num_partitions": first.get("num_partitions"),
            "partition_sizes": [p["size"] for p in first.get("partitions", [])], "quantizer": quantizer}


def _vector_cell(v: Dict[str, Any]) -> str:
    q = v["quantizer"]
    text = f"{v['metric']}, {v['num_partitions']} partitions"
    if q.get("type") == "PQ":
        text += f", PQ {q['num_sub_vectors']}x{q['num_bits']} bits"
    elif q.get("type") == "SQ":
        text += f", SQ {q['num_bits']} bits"
    return text


def _render(info: Dict[str, Any]) -> str:
    out: List[str] = []
    latest = info["latest_version"]
    out.append(f"Dataset  {info['uri']}")
    out.append(f"Version  {info['version']}" + (" (latest)" if info["version"] == latest else f" (latest is {latest})"))
    out.append(f"Stable row ids  {'yes' if info['stable_row_ids'] else 'no'}")
    out.append(f"Features  {', '.join(info['features']) or '-'}")
    if info["config"]:
        out.append("Config  " + ", ".join(f"{k}={v}" for k, v in info["config"].items()))

    out.append("")
    out.append(f"Versions ({len(info['versions'])}, * = shown)")
    rows = [[("*" if v["current"] else " ") + str(v["version"]), v["timestamp"],
             "?" if v["rows"] is None else f"{v['rows']:,}", ", ".join(v["tags"])] for v in info["versions"]]
    out += _table(["version", "timestamp", "rows", "tags"], rows, [True, False, True, False])

    out.append("")
    n = len(info["schema"])
    out.append(f"Schema ({n} field{'' if n == 1 else 's'})")
    out += ["  " + ln for ln in info["schema_text"].splitlines()]

    out.append("")
    out.append(f"Fragments ({len(info['fragments'])})")
    rows = []
    for f in info["fragments"]:
        d = f["deletion_file"]
        dcell = "-" if d is None else f"{d['kind']}: {d['deleted_rows']:,} deleted"
        first = [str(f["id"]), f"{f['physical_rows']:,}", f"{f['rows']:,}", dcell]
        if not f["data_files"]:
            rows.append(first + ["-", "", "", ""])
        for i, df in enumerate(f["data_files"]):
            lead = first if i == 0 else ["", "", "", ""]
            size = "?" if df["size_bytes"] is None else f"{df['size_bytes']:,}"
            rows.append(lead + [df["path"], df["file_version"], size, ",".join(map(str, df["fields"]))])
    out += _table(["id", "physical", "rows", "deletions", "data file", "ver", "bytes", "fields"], rows,
                  [True, True, True, False, False, False, True, False])
    dels = [f for f in info["fragments"] if f["deletion_file"]]
    if dels:
        out.append("")
        out.append("Deletion files")
        out += _table(["fragment", "kind", "deleted", "bytes", "path"],
                      [[str(f["id"]), f["deletion_file"]["kind"], f"{f['deletion_file']['deleted_rows']:,}",
                        "?" if f["deletion_file"]["size_bytes"] is None else f"{f['deletion_file']['size_bytes']:,}",
                        f["deletion_file"]["path"]] for f in dels],
                      [True, False, True, True, False])

    if info["indices"]:
        out.append("")
        out.append(f"Indices ({len(info['indices'])})")
        all_frags = {f["id"] for f in info["fragments"]}
        rows = []
        for i in info["indices"]:
            covered = [f for f in i["fragments"] if f in all_frags]
            missing = sorted(all_frags - set(i["fragments"]))
            cov = _ranges(covered) or "-"
            if missing and i["type"] != "FragmentReuse":
                cov += f"  (not: {_ranges(missing)})"
            details = _vector_cell(i["vector"]) if "vector" in i else "-"
            rows.append([i["name"], i["type"], ",".join(i["columns"]) or "-", details, cov, str(i["dataset_version"]),
                         i["uuid"]])
        out += _table(["name", "type", "column", "details", "fragments covered", "built at", "uuid"], rows,
                      [False, False, False, False, False, True, False])

    t = info["totals"]
    out.append("")
    out.append("Totals")
    lines = [
        ("rows", f"{t['rows']:,}  ({t['physical_rows']:,} physical, {t['deleted_rows']:,} deleted)"),
        ("fragments", f"{t['fragments']:,}"),
        ("data files", f"{t['data_files']:,}  {_bytes(t['data_bytes'])}"),
        ("deletion files", f"{t['deletion_files']:,}  {_bytes(t['deletion_bytes'])}"),
        ("bytes on disk", _bytes(t["bytes_on_disk"]) + "  (this version's data + deletion files)"),
    ]
    if t.get("dataset_dir_bytes") is not None:
        lines.append(("directory", _bytes(t["dataset_dir_bytes"]) + "  (all versions, manifests, indices)"))
    w = max(len(k) for k, _ in lines)
    out += [f"  {k.ljust(w)}  {v}" for k, v in lines]
    return "\n".join(out)


def _ranges(ids: List[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2,5``."""
    out: List[str] = []
    ids = sorted(ids)
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(out)


def _cmd_inspect(args: argparse.Namespace) -> int:
    import lancelet

    ds = lancelet.dataset(args.uri, version=args.version, storage_options=_storage_options(args))
    info = _collect(ds)
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        print(_render(info))
    return EXIT_OK


# ---------------------------------------------------------------------------
# cat
# ---------------------------------------------------------------------------
def _jsonable(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if v == v and v not in (float("inf"), float("-inf")) else str(v)
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        # maps come out of pyarrow as lists of (key, value) tuples
        return [_jsonable(x) for x in v]
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, (decimal.Decimal, datetime.timedelta)):
        return str(v)
    return str(v)


def _text(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (bytes, bytearray)):
        return "0x" + bytes(v).hex()
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(_jsonable(v), separators=(",", ":"))
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    return str(v)


def _columns_of(batch: pa.RecordBatch) -> List[List[Any]]:
    return [col.to_pylist() for col in batch.columns]


class _TableWriter:
    """Aligned text table, streamed: column widths are fixed by the header and
    the first rows; wider text later on is cut with an ellipsis (numbers are
    never cut, they push their row's later cells right instead)."""

    MAX_WIDTH = 40
    SAMPLE = 1000

    def __init__(self, out: Any) -> None:
        self.out = out
        self.widths: Optional[List[int]] = None
        self.right: List[bool] = []

    @staticmethod
    def _clean(s: str) -> str:
        return s.replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")

    def _cut(self, s: str, w: int) -> str:
        return s if len(s) <= w else s[: max(w - 1, 0)] + "…"

    def header(self, schema: pa.Schema, head: List[pa.RecordBatch]) -> None:
        names = [f.name for f in schema]
        cols: List[List[Any]] = [[] for _ in names]
        for b in head:
            for acc, col in zip(cols, _columns_of(b)):
                acc.extend(col)
        self.right = [pa.types.is_integer(f.type) or pa.types.is_floating(f.type) or pa.types.is_decimal(f.type)
                      for f in schema]
        self.widths = []
        for name, col in zip(names, cols):
            w = max([len(name)] + [len(self._clean(_text(v))) for v in col[: self.SAMPLE]])
            self.widths.append(min(w, max(self.MAX_WIDTH, len(name))))
        self._line(names, header=True)
        self.out.write("  ".join("-" * w for w in self.widths) + "\n")

    def _line(self, cells: Sequence[str], header: bool = False) -> None:
        assert self.widths is not None
        parts = []
        for c, w, rj in zip(cells, self.widths, self.right):
            c = self._clean(c) if rj else self._cut(self._clean(c), w)
            parts.append(c.rjust(w) if rj and not header else c.ljust(w))
        self.out.write("  ".join(parts).rstrip() + "\n")

    def batch(self, batch: pa.RecordBatch) -> None:
        cols = _columns_of(batch)
        for i in range(batch.num_rows):
            self._line([_text(c[i]) for c in cols])


def _cmd_cat(args: argparse.Namespace) -> int:
    import lancelet

    columns = None
    if args.columns is not None:
        columns = [c.strip() for c in args.columns.split(",") if c.strip()]
        if not columns:
            raise _Usage("--columns needs at least one column name")
    ds = lancelet.dataset(args.uri, version=args.version, storage_options=_storage_options(args))
    if columns is not None:
        names = set(ds.schema.names)
        unknown = [c for c in columns if c not in names and c.split(".")[0] not in names]
        if unknown:
            raise _Usage(f"no column {unknown[0]!r} in the dataset (columns: {', '.join(ds.schema.names)})")
    scanner = ds.scanner(columns=columns, filter=args.filter, limit=args.limit, offset=args.offset,
                         batch_size=args.batch_size)
    batches: Iterable[pa.RecordBatch] = scanner.to_batches()
    out = sys.stdout
    n = 0
    if args.format == "table":
        # Column widths come from the first rows (up to _TableWriter.SAMPLE),
        # buffered before anything is printed; the rest streams.
        it = iter(batches)
        head: List[pa.RecordBatch] = []
        while sum(b.num_rows for b in head) < _TableWriter.SAMPLE:
            b = next(it, None)
            if b is None:
                break
            head.append(b)
        schema = head[0].schema if head else scanner.projected_schema
        tw = _TableWriter(out)
        tw.header(schema, head)
        for b in head:
            tw.batch(b)
            n += b.num_rows
        for b in it:
            tw.batch(b)
            n += b.num_rows
        if args.count:
            print(f"({n:,} rows)", file=sys.stderr)
    elif args.format == "csv":
        w = csv.writer(out, lineterminator="\n")
        wrote_header = False
        for b in batches:
            if not wrote_header:
                w.writerow(b.schema.names)
                wrote_header = True
            cols = _columns_of(b)
            for i in range(b.num_rows):
                w.writerow(["" if c[i] is None else _text(c[i]) for c in cols])
            n += b.num_rows
        if not wrote_header:
            w.writerow(scanner.projected_schema.names)
    else:  # json lines
        for b in batches:
            names = b.schema.names
            cols = _columns_of(b)
            for i in range(b.num_rows):
                out.write(json.dumps({k: _jsonable(c[i]) for k, c in zip(names, cols)}, ensure_ascii=False) + "\n")
            n += b.num_rows
    out.flush()
    return EXIT_OK


# ---------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------
class _Usage(Exception):
    """A problem with the command line (exit code 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _Usage(message)


def _non_negative(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {s!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {s!r}")
    return v


def _positive(s: str) -> int:
    v = _non_negative(s)
    if v == 0:
        raise argparse.ArgumentTypeError("expected a positive integer, got 0")
    return v


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="lancelet", description="Inspect and read Lance datasets with lancelet.")
    p.add_argument("--debug", action="store_true", help="show full tracebacks on errors")
    p.add_argument("-V", "--lancelet-version", action="store_true", help="print lancelet's version and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    pi = sub.add_parser("inspect", help="versions, schema, fragments, files and totals of a dataset")
    pi.add_argument("uri", help="dataset path or URI (file://, s3://, memory://)")
    _add_storage_option(pi)
    pi.add_argument("--version", help="version number or tag (default: latest)")
    pi.add_argument("--json", action="store_true", help="machine-readable JSON output")
    pi.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    pi.set_defaults(func=_cmd_inspect)

    pc = sub.add_parser("cat", help="print rows (streamed)")
    pc.add_argument("uri", help="dataset path or URI (file://, s3://, memory://)")
    _add_storage_option(pc)
    pc.add_argument("--columns", help="comma-separated column names (default: all)")
    pc.add_argument("--filter", help="SQL filter, e.g. \"x > 5 AND s IS NOT NULL\"")
    pc.add_argument("--limit", type=_non_negative, help="at most N rows")
    pc.add_argument("--offset", type=_non_negative, help="skip the first N rows")
    pc.add_argument("--version", help="version number or tag (default: latest)")
    pc.add_argument("--format", choices=["table", "csv", "json"], default="table",
                    help="output format (json: one object per line)")
    pc.add_argument("--batch-size", type=_positive, default=4096, help="rows per batch read (default 4096)")
    pc.add_argument("--count", action="store_true", help="table format: print the row count on stderr")
    pc.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    pc.set_defaults(func=_cmd_cat)

    from lancelet.cli_ns import add_parser as add_ns_parser

    add_ns_parser(sub, _Parser)
    return p


def _exit_code(e: BaseException) -> int:
    from lancelet.exceptions import InvalidInputError

    if isinstance(e, (_Usage, InvalidInputError)):
        return EXIT_USAGE
    return EXIT_ERROR


def _describe(e: BaseException) -> str:
    from lancelet.exceptions import LanceletError

    msg = _one_line(str(e)) or type(e).__name__
    if isinstance(e, (LanceletError, _Usage)):
        return msg
    return f"{type(e).__name__}: {msg}"


def _add_storage_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--storage-option", action="append", default=[], metavar="KEY=VALUE",
                   help="object store option as in pylance's storage_options (repeatable), "
                        "e.g. aws_endpoint=http://127.0.0.1:9000; AWS_* environment variables apply too")


def _storage_options(args: argparse.Namespace) -> Optional[dict]:
    out = {}
    for item in args.storage_option:
        key, sep, value = item.partition("=")
        if not sep or not key:
            from lancelet.exceptions import InvalidInputError
            raise InvalidInputError(f"--storage-option expects KEY=VALUE, got {item!r}")
        out[key] = value
    return out or None


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the ``lancelet`` command; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    try:
        p = _parser()
        try:
            args = p.parse_args(argv)
        except SystemExit as e:  # --help
            return int(e.code or 0) if not isinstance(e.code, str) else EXIT_USAGE
        if args.lancelet_version:
            from lancelet import __version__
            print(f"lancelet {__version__}")
            return EXIT_OK
        if not getattr(args, "command", None):
            p.print_help(sys.stderr)
            return EXIT_USAGE
        return args.func(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `lancelet cat ... | head`: stop quietly; keep Python from complaining at exit.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return EXIT_OK
    except Exception as e:
        if debug:
            raise
        sys.stdout.flush()
        cmd = f"lancelet {argv[0]}" if argv and argv[0] in ("inspect", "cat", "ns") else "lancelet"
        print(f"{cmd}: error: {_describe(e)}", file=sys.stderr)
        return _exit_code(e)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
