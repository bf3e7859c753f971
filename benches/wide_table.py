"""The wide table of issue 16 and the filters its benchmarks run.

A click-stream shape mixing every kind of column users filter and fetch:

- ``event_id`` int64, sorted, random gaps of 1-25 (mean 13), so
  ``event_id < x`` selects a prefix of the table;
- ``kind`` one of 40 category words with chosen frequencies: ``click``
  50 %, ``view`` 10 %, ``purchase`` 1 %, ``refund`` 0.01 %, the other 36
  share the rest (``abc`` never occurs);
- ``ts`` timestamp[us], increasing with ``event_id``;
- ``score`` float64, exponential (mean 4.3), 10 % nulls;
- ``count`` int32 uniform in [0, 600);
- ``text`` 3-12 words of short English-like text; four planted words occur
  in chosen fractions of the rows (``zebra`` 0.01 %, ``quartz`` 1 %,
  ``apple`` 10 %, ``river`` 50 %), no other word contains them;
- ``emb`` fixed_size_list<float32, 64>.

Generation is seeded and streamed in batches (:func:`batches`), so a
4M-row write can be fed from a ``RecordBatchReader`` without holding the
table. :func:`filters` gives, for each filter family (sorted key, string
equality, LIKE, numeric range, conjunction), one SQL filter per target
selectivity (0, 0.01 %, 1 %, 10 %, 50 %), with the thresholds of the
sorted key and the range taken from the distribution's quantiles.
"""

from __future__ import annotations

import math
from typing import Iterator, List, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

DIM = 64
SELECTIVITIES = [0.0, 0.0001, 0.01, 0.1, 0.5]
SEL_NAMES = ["0", "0.01%", "1%", "10%", "50%"]
KINDS_FIXED = {"click": 0.5, "view": 0.1, "purchase": 0.01, "refund": 0.0001}
PLANTED = {"zebra": 0.0001, "quartz": 0.01, "apple": 0.1, "river": 0.5}
MEAN_GAP = 13.0
SCORE_MEAN = 4.3
SCORE_NULLS = 0.10
COUNT_MAX = 600

SCHEMA = pa.schema([
    ("event_id", pa.int64()),
    ("kind", pa.string()),
    ("ts", pa.timestamp("us")),
    ("score", pa.float64()),
    ("count", pa.int32()),
    ("text", pa.string()),
    ("emb", pa.list_(pa.float32(), DIM)),
])


def _words(rng: np.random.Generator, n: int, avoid: List[str]) -> np.ndarray:
    """``n`` distinct pronounceable lowercase words of 2-9 letters, none
    containing a word of ``avoid``."""
    cons, vows = list("bcdfghjklmnprstvw"), list("aeiou")
    out = set()
    while len(out) < n:
        k = int(rng.integers(1, 5))
        w = "".join(cons[rng.integers(len(cons))] + vows[rng.integers(len(vows))] for _ in range(k))
        w = w[: int(rng.integers(2, 10))]
        if not any(a in w for a in avoid):
            out.add(w)
    return np.array(sorted(out))


class Generator:
    """Seeded row source: :meth:`batch` makes rows ``start .. start + n`` of
    the table (the same rows whatever the batch boundaries)."""

    def __init__(self, seed: int = 16):
        rng = np.random.default_rng(seed)
        self.seed = seed
        words = _words(rng, 2000, list(PLANTED) + ["abc"])
        rng.shuffle(words)
        self.vocab = words
        self.words = pa.array(list(words) + list(PLANTED), pa.string())
        # Zipf-like word weights, as in English text.
        w = 1.0 / np.arange(1, len(words) + 1) ** 1.05
        self.word_p = w / w.sum()
        others = [x for x in _words(rng, 200, list(KINDS_FIXED) + ["abc"]) if len(x) >= 4][:36]
        self.kinds = np.array(list(KINDS_FIXED) + others)
        rest = (1.0 - sum(KINDS_FIXED.values())) / len(others)
        self.kind_p = np.array(list(KINDS_FIXED.values()) + [rest] * len(others))

    def _text(self, rng: np.random.Generator, n: int) -> pa.Array:
        """3-12 vocabulary words per row, plus each planted word (at a random
        place) in its fraction of the rows; built column-wise."""
        nw = rng.integers(3, 13, n)
        width = 12 + len(PLANTED)
        ids = rng.choice(len(self.vocab), (n, width), p=self.word_p)
        ids[np.arange(width)[None, :] >= nw[:, None]] = -1
        rows = np.arange(n)
        for j, p in enumerate(PLANTED.values()):
            hit = rows[rng.random(n) < p]
            end = nw[hit]
            pos = (rng.random(len(hit)) * (end + 1)).astype(np.int64)
            ids[hit, end] = ids[hit, pos]
            ids[hit, pos] = len(self.vocab) + j
            nw[hit] += 1
        flat = ids[ids >= 0]
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(nw, out=offsets[1:])
        words = self.words.take(pa.array(flat))
        return pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), words), " ")

    def batch(self, start: int, n: int) -> pa.RecordBatch:
        rng = np.random.default_rng([self.seed, start])
        # event_id: the sum of all earlier gaps is not known per batch, so the
        # gaps are drawn so that row i's id is i * MEAN_GAP plus a bounded
        # jitter (still strictly increasing).
        base = (np.arange(start, start + n, dtype=np.int64) * int(MEAN_GAP))
        event_id = base + rng.integers(0, int(MEAN_GAP) - 1, n)
        kind = self.kinds[rng.choice(len(self.kinds), n, p=self.kind_p)]
        ts = (1_700_000_000_000_000 + event_id * 37_000).astype("datetime64[us]")
        score = rng.exponential(SCORE_MEAN, n)
        score_mask = rng.random(n) < SCORE_NULLS
        count = rng.integers(0, COUNT_MAX, n, dtype=np.int32)
        text = self._text(rng, n)
        emb = rng.standard_normal(n * DIM, dtype=np.float32)
        return pa.record_batch([
            pa.array(event_id),
            pa.array(kind, pa.string()),
            pa.array(ts, pa.timestamp("us")),
            pa.array(score, mask=score_mask),
            pa.array(count),
            text,
            pa.FixedSizeListArray.from_arrays(pa.array(emb), DIM),
        ], schema=SCHEMA)


def batches(rows: int, batch_rows: int = 65536, seed: int = 16) -> Iterator[pa.RecordBatch]:
    """The table's rows as a stream of batches."""
    g = Generator(seed)
    for s in range(0, rows, batch_rows):
        yield g.batch(s, min(batch_rows, rows - s))


def reader(rows: int, batch_rows: int = 65536, seed: int = 16) -> pa.RecordBatchReader:
    """The table as a ``RecordBatchReader`` (nothing held in memory)."""
    return pa.RecordBatchReader.from_batches(SCHEMA, batches(rows, batch_rows, seed))


def table(rows: int, seed: int = 16) -> pa.Table:
    return pa.Table.from_batches(list(batches(rows, seed=seed)), SCHEMA)


def filters(rows: int) -> List[Tuple[str, str, str]]:
    """(family, target selectivity, SQL) for every benchmarked filter."""
    out = []

    def key(s: float) -> str:
        # row i has event_id in [13 i, 13 i + 11]: ids below 13 k select k rows
        return f"event_id < {int(round(s * rows)) * int(MEAN_GAP)}"

    kinds = {0.0: "abc", 0.0001: "refund", 0.01: "purchase", 0.1: "view", 0.5: "click"}
    words = {0.0: "xylophone", **{p: w for w, p in PLANTED.items()}}

    def score(s: float) -> str:
        if s == 0:
            return "score > 1000"
        return f"score > {SCORE_MEAN * math.log((1 - SCORE_NULLS) / s):.4f}"

    # conjunctions of independent columns: count < c selects c / 600
    conj = {
        0.0: "count < 12 AND kind = 'abc'",
        0.0001: "count < 6 AND kind = 'purchase'",
        0.01: "count < 60 AND kind = 'view'",
        0.1: "count < 120 AND kind = 'click'",
        0.5: "count < 360 AND kind <> 'view' AND score IS NOT NULL",
    }
    for s, name in zip(SELECTIVITIES, SEL_NAMES):
        out.append(("sorted key", name, key(s)))
        out.append(("string =", name, f"kind = '{kinds[s]}'"))
        out.append(("LIKE", name, f"text LIKE '%{words[s]}%'"))
        out.append(("range", name, score(s)))
        out.append(("AND", name, conj[s]))
    return out
