"""Writer processes for tests/test_crash_soak.py (run as scripts).

``python crash_worker.py kill URI SEED VERSION STABLE``
    A lancelet writer doing create / append / insert / overwrite / delete /
    restore / tag in a seeded random loop until it is killed. Before each
    operation it prints ``{"begin": ...}`` with what the dataset must look
    like if the operation completes, after it ``{"ack": ...}``: one JSON line
    each, flushed, so the parent knows what was acknowledged when SIGKILL came.

``python crash_worker.py soak-lancelet|soak-pylance URI SEED WORKER COMMITS``
    One of several concurrent writers: appends rows with ids of its own
    range and deletes some of its own earlier rows, retrying on commit
    conflicts, and prints one ``{"ack": ...}`` line per commit.

Rows are ``id`` (int64), ``v = 3 * id``, ``s = f"s{id}"``, so a dataset's
content is summed up by its ids: see :func:`digest`.
"""
from __future__ import annotations

import hashlib
import json
import random
import sys
import time

import pyarrow as pa


def rows(ids) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([3 * i for i in ids], pa.int64()),
                     "s": pa.array([f"s{i}" for i in ids])})


def digest(ids) -> str:
    """Count and hash of a set of ids."""
    ids = sorted(ids)
    h = hashlib.sha1(pa.array(ids, pa.int64()).buffers()[1].to_pybytes() if ids else b"").hexdigest()[:16]
    return f"{len(ids)}:{h}"


def emit(**kw) -> None:
    print(json.dumps(kw), flush=True)


def kill_loop(uri: str, seed: int, version: str, stable: bool) -> None:
    import lancelet

    rng = random.Random(seed)
    content = {}  # version -> frozenset of ids
    next_id = 0

    def new_ids(n):
        nonlocal next_id
        out = range(next_id, next_id + n)
        next_id += n
        return out

    ids0 = frozenset(new_ids(rng.randint(500, 4000)))
    emit(begin="create", version=1, digest=digest(ids0))
    ds = lancelet.write_dataset(rows(sorted(ids0)), uri, max_rows_per_file=1500, data_storage_version=version,
                                enable_stable_row_ids=stable)
    content[ds.version] = ids0
    emit(ack="create", version=ds.version, digest=digest(ids0))
    tag_no = 0
    while True:
        ds = lancelet.dataset(uri)
        v, cur = ds.version, content[ds.version]
        op = rng.choices(["append", "insert", "overwrite", "delete", "restore", "tag"], [30, 15, 8, 22, 10, 15])[0]
        if op in ("append", "insert", "overwrite"):
            add = frozenset(new_ids(rng.randint(100, 6000)))
            after = add if op == "overwrite" else cur | add
            emit(begin=op, version=v + 1, digest=digest(after))
            if op == "insert":
                ds.insert(rows(sorted(add)))
            else:
                lancelet.write_dataset(rows(sorted(add)), uri, mode=op, max_rows_per_file=1500)
        elif op == "delete":
            m, r = rng.randint(2, 9), rng.randint(0, 8)
            gone = frozenset(i for i in cur if i % m == r % m)
            if not gone:
                continue
            after = cur - gone
            emit(begin=op, version=v + 1, digest=digest(after))
            ds.delete(f"id % {m} = {r % m}")
        elif op == "restore":
            old = rng.choice(sorted(content))
            after = content[old]
            emit(begin=op, version=v + 1, digest=digest(after), restored=old)
            ds.checkout_version(old).restore()
        else:
            tag_no += 1
            name = f"t{tag_no}"
            emit(begin=op, tag=name, version=v)
            ds.tags.create(name, v)
            emit(ack=op, tag=name, version=v)
            continue
        now = lancelet.dataset(uri).version
        assert now == v + 1, (op, v, now)
        content[now] = after
        emit(ack=op, version=now, digest=digest(after))


def soak(lib: str, uri: str, seed: int, worker: int, commits: int) -> None:
    rng = random.Random(seed * 1000 + worker)
    base = (worker + 1) * 10_000_000
    appended = []  # (lo, hi) ranges of own ids
    n = 0
    done = 0
    while done < commits:
        if appended and rng.random() < 0.3:
            lo, hi = rng.choice(appended)
            a = rng.randint(lo, hi - 1)
            b = min(hi, a + rng.randint(1, 200))
            pred = f"id >= {a} AND id < {b}"
            op = {"delete": [a, b]}
        else:
            k = rng.randint(50, 2000)
            lo, hi = base + n, base + n + k
            n += k
            op = {"append": [lo, hi]}
        for _attempt in range(200):
            try:
                if lib == "lancelet":
                    import lancelet
                    if "append" in op:
                        lancelet.write_dataset(rows(range(*op["append"])), uri, mode="append", max_rows_per_file=1000)
                    else:
                        lancelet.dataset(uri).delete(pred)
                else:
                    import lance
                    if "append" in op:
                        lance.write_dataset(rows(range(*op["append"])), uri, mode="append", max_rows_per_file=1000)
                    else:
                        lance.dataset(uri).delete(pred)
                break
            except Exception as e:
                text = f"{type(e).__name__}: {e}"
                if "onflict" not in text and "etry" not in text:
                    emit(error=text, worker=worker, lib=lib)
                    raise
                emit(conflict=text[:200], worker=worker, lib=lib)
                time.sleep(rng.random() * 0.05)
        else:
            raise RuntimeError(f"worker {worker}: gave up after 200 conflicts")
        if "append" in op:
            appended.append(tuple(op["append"]))
        done += 1
        emit(ack=op, worker=worker, lib=lib)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "kill":
        kill_loop(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5] == "1")
    else:
        soak(mode.split("-", 1)[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
