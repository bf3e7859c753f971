"""INVERTED (full-text search) indices built by lancelet, checked against
pylance 14.

* the files lancelet writes equal pylance's for the same data and options:
  names, Arrow schemas with their metadata, and every decoded value (doc
  ids, token counts, the FST token map, posting blocks, block max scores,
  impacts, positions);
* pylance opens lancelet's index and its ``full_text_query`` answers (rows,
  order, ``_score`` within 1e-4) equal those on pylance's own index, for
  seeded corpora and several option sets, with several partitions too;
* the manifest entry (type URL, details bytes, ``index_version``, files)
  and pylance's listing and statistics agree;
* bad options and columns raise InvalidInputError naming the parameter and
  commit nothing.
"""
from __future__ import annotations

import glob
import json
import os
import random
import shutil
import struct

import pyarrow as pa
import pytest
from manifest_raw import index_entries
from test_fts_tokenizer import random_doc

import lancelet
from lancelet.exceptions import InvalidInputError

lance = pytest.importorskip("lance")
from lance.file import LanceFileReader  # noqa: E402
from lance.query import FullTextOperator, MatchQuery, PhraseQuery  # noqa: E402

pytestmark = pytest.mark.pylance

VOCAB = ("apple banana cherry dog elephant fox grape house ice jungle kite lemon mango night ocean "
         "piano queen river sun tree umbrella violin water xylophone yellow zebra running runs ran "
         "the a of and is").split()


def zipf_doc(rng: random.Random) -> str | None:
    if rng.random() < 0.03:
        return None
    n = rng.randint(1, 40)
    return " ".join(VOCAB[min(int(rng.paretovariate(1.1)) - 1, len(VOCAB) - 1)] if rng.random() < 0.8
                    else rng.choice(VOCAB) for _ in range(n))


def corpus(seed: int, n: int, kind: str = "zipf") -> list:
    rng = random.Random(seed)
    return [zipf_doc(rng) if kind == "zipf" else random_doc(rng) for _ in range(n)]


def make_pair(tmp_path, docs: list, rows_per_file: int = 10_000, **write_kw):
    """The same table twice (ids and text), as two datasets."""
    t = pa.table({"id": pa.array(range(len(docs)), pa.int64()), "text": pa.array(docs, pa.string())})
    a, b = str(tmp_path / "pl"), str(tmp_path / "ll")
    for uri in (a, b):
        shutil.rmtree(uri, ignore_errors=True)
        lance.write_dataset(t, uri, max_rows_per_file=rows_per_file, **write_kw)
    return a, b


def build_both(tmp_path, docs, options, **write_kw):
    a, b = make_pair(tmp_path, docs, **write_kw)
    lance.dataset(a).create_scalar_index("text", "INVERTED", **options)
    lancelet.dataset(b).create_scalar_index("text", "INVERTED", **options)
    return a, b


def index_dir(uri: str) -> str:
    ds = lance.dataset(uri)
    (idx,) = [i for i in ds.list_indices() if i["name"] == "text_idx"]
    return f"{uri}/_indices/{idx['uuid']}/"


def read(path: str) -> pa.Table:
    return LanceFileReader(path).read_all().to_table()


def assert_files_equal(a: str, b: str):
    da, db = index_dir(a), index_dir(b)
    names = sorted(os.listdir(da))
    assert names == sorted(os.listdir(db))
    for name in names:
        ta, tb = read(da + name), read(db + name)
        ra, rb = LanceFileReader(da + name).metadata(), LanceFileReader(db + name).metadata()
        assert (ra.major_version, ra.minor_version) == (rb.major_version, rb.minor_version), name
        assert ta.schema.equals(tb.schema, check_metadata=True), (name, ta.schema, tb.schema)
        if name.endswith("_tokens.lance"):
            fa = dict(lancelet._native.fts_token_set(ta["_token_fst_bytes"][0].as_py()))
            fb = dict(lancelet._native.fts_token_set(tb["_token_fst_bytes"][0].as_py()))
            assert fa == fb, name
            ta, tb = ta.drop(["_token_fst_bytes"]), tb.drop(["_token_fst_bytes"])
        if name.endswith("_invert.lance"):
            # Block and token maximum scores may differ from pylance's in the
            # last bit (f32 rounding of the same BM25 formula); everything
            # else is byte-equal.
            for xa, xb in zip(ta["_posting"].to_pylist(), tb["_posting"].to_pylist()):
                assert len(xa) == len(xb), name
                for ba, bb in zip(xa, xb):
                    assert ba[4:] == bb[4:], name
                    sa, sb = struct.unpack("<f", ba[:4])[0], struct.unpack("<f", bb[:4])[0]
                    assert abs(sa - sb) <= 1e-6 * max(1.0, abs(sa)), (name, sa, sb)
            for sa, sb in zip(ta["_max_score"].to_pylist(), tb["_max_score"].to_pylist()):
                assert abs(sa - sb) <= 1e-6 * max(1.0, abs(sa)), (name, sa, sb)
            ta, tb = ta.drop(["_posting", "_max_score"]), tb.drop(["_posting", "_max_score"])
        for col in ta.column_names:
            assert ta[col].equals(tb[col]), (name, col)


def queries(rng: random.Random, n: int = 12) -> list:
    words = VOCAB + ["runner", "Apples", "FOX", "zzz", "the"]
    out = []
    for _ in range(n):
        out.append(" ".join(rng.choice(words) for _ in range(rng.randint(1, 3))))
    return out


def search(uri: str, q, **kw) -> list:
    t = lance.dataset(uri).to_table(full_text_query=q, columns=["id"], **kw)
    return list(zip(t["id"].to_pylist(), t["_score"].to_pylist()))


def assert_same_results(a: str, b: str, q, **kw):
    """Same rows in the same order with the same scores; rows of equal
    score may come in another order (pylance returns ties in heap order,
    which follows its block-max traversal)."""
    ra, rb = search(a, q, **kw), search(b, q, **kw)
    key = lambda r: (-round(r[1], 5), r[0])  # noqa: E731
    assert sorted(ra, key=key) == sorted(rb, key=key) or [i for i, _ in sorted(ra, key=key)] == \
        [i for i, _ in sorted(rb, key=key)], (q, ra[:10], rb[:10])
    for (_, sa), (_, sb) in zip(ra, rb):
        assert abs(sa - sb) <= 1e-4 * max(1.0, abs(sa)), (q, sa, sb)


OPTIONS = [
    {},
    {"with_position": True},
    {"stem": False, "remove_stop_words": False},
    {"base_tokenizer": "whitespace", "lower_case": False},
    {"base_tokenizer": "ngram"},
    {"language": "French", "ascii_folding": False, "max_token_length": 8},
    {"custom_stop_words": ["fox", "dog"], "with_position": True},
]


@pytest.mark.parametrize("case", range(len(OPTIONS)))
def test_files_and_search_equal_pylance(tmp_path, case):
    options = OPTIONS[case]
    docs = corpus(100 + case, 700, "zipf" if case % 2 == 0 else "random")
    a, b = build_both(tmp_path, docs, options, rows_per_file=300)
    assert_files_equal(a, b)
    rng = random.Random(case)
    for q in queries(rng):
        assert_same_results(a, b, q)
        assert_same_results(a, b, q, limit=5)
    if options.get("with_position"):
        for q in ["apple banana", "fox grape", "the dog", "running runs"]:
            assert_same_results(a, b, PhraseQuery(q, "text"))
            assert_same_results(a, b, PhraseQuery(q, "text", slop=2))


def index_entry(uri: str, name: str = "text_idx") -> dict:
    """The manifest's IndexMetadata of ``name``: type URL, details bytes,
    index_version, file names."""
    for e in index_entries(uri):
        if e["name"] == name:
            return {"type_url": e["type_url"], "details": e["details"], "index_version": e["index_version"],
                    "files": [f for f, _ in e["files"]]}
    raise KeyError(name)


@pytest.mark.parametrize("options", [{}, {"with_position": True, "max_token_length": 20, "language": "French"},
                                     {"base_tokenizer": "ngram", "prefix_only": True, "max_token_length": None}])
def test_manifest_entry_and_listing(tmp_path, options):
    docs = corpus(7, 200)
    a, b = build_both(tmp_path, docs, options)
    ea, eb = index_entry(a), index_entry(b)
    assert ea == eb
    assert ea["type_url"] == "/lance.table.InvertedIndexDetails" and ea["index_version"] == 2
    la, lb = lance.dataset(a).list_indices(), lance.dataset(b).list_indices()
    assert [(i["type"], i["fields"], sorted(i["fragment_ids"])) for i in la] == \
        [(i["type"], i["fields"], sorted(i["fragment_ids"])) for i in lb]
    sa, sb = lance.dataset(a).stats.index_stats("text_idx"), lance.dataset(b).stats.index_stats("text_idx")
    for k in ("index_type", "num_indices", "indices", "num_indexed_fragments", "num_indexed_rows",
              "num_unindexed_rows"):
        assert sa[k] == sb[k], k


@pytest.mark.parametrize("version", ["2.0", "2.1", "legacy"])
def test_file_versions_and_stable_row_ids(tmp_path, version):
    docs = corpus(9, 300, "random")
    kw = {"data_storage_version": version}
    if version == "2.1":
        kw["enable_stable_row_ids"] = True
    a, b = build_both(tmp_path, docs, {}, rows_per_file=100, **kw)
    assert_files_equal(a, b)
    for q in ["fox", "quick brown dog", "café", "running"]:
        assert_same_results(a, b, q)


@pytest.mark.slow
def test_several_partitions(tmp_path):
    """A small memory budget cuts partitions; pylance scores with the
    statistics of all of them, so its answers equal those of its own
    one-partition index."""
    docs = corpus(11, 20000)
    a, b = make_pair(tmp_path, docs, rows_per_file=5000)
    lance.dataset(a).create_scalar_index("text", "INVERTED")
    lancelet.dataset(b).create_scalar_index("text", "INVERTED", memory_limit=1)
    meta = read(index_dir(b) + "metadata.lance").schema.metadata
    parts = json.loads(meta[b"partitions"])
    assert len(parts) > 1
    assert sorted(os.listdir(index_dir(b))) == sorted(
        ["metadata.lance"] + [f"part_{p}_{k}.lance" for p in parts for k in ("docs", "invert", "tokens")])
    for q in queries(random.Random(3), 8):
        ra, rb = search(a, q), search(b, q)
        assert sorted(i for i, _ in ra) == sorted(i for i, _ in rb), q
        da, db = dict(ra), dict(rb)
        assert all(abs(da[i] - db[i]) <= 1e-4 * max(1.0, da[i]) for i in da), q


def test_search_after_append_and_delete(tmp_path):
    docs = corpus(13, 400)
    a, b = build_both(tmp_path, docs, {"with_position": True})
    more = pa.table({"id": pa.array(range(400, 450), pa.int64()), "text": pa.array(corpus(14, 50), pa.string())})
    for uri in (a, b):
        lance.write_dataset(more, uri, mode="append")
        lance.dataset(uri).delete("id % 7 = 0")
    for q in ["apple", "fox grape", "ocean river sun"]:
        assert_same_results(a, b, q)
        assert_same_results(a, b, MatchQuery(q, "text", operator=FullTextOperator.AND))


@pytest.mark.parametrize("kwargs,needle", [
    ({"bogus_opt": 1}, "bogus_opt"),
    ({"base_tokenizer": "bogus"}, "base_tokenizer"),
    ({"language": "Klingon"}, "language"),
    ({"block_size": 64}, "block_size"),
    ({"stem": "yes"}, "stem"),
    ({"language": "Greek"}, "remove_stop_words"),
    ({"min_ngram_length": 0, "base_tokenizer": "ngram"}, "min_ngram_length"),
    ({"format_version": 3}, "format_version"),
])
def test_bad_options(tmp_path, kwargs, needle):
    _, b = make_pair(tmp_path, corpus(1, 20))
    ds = lancelet.dataset(b)
    v = ds.version
    with pytest.raises(InvalidInputError, match=needle):
        ds.create_scalar_index("text", "INVERTED", **kwargs)
    assert lancelet.dataset(b).version == v
    assert not glob.glob(f"{b}/_indices/*")


def test_non_string_column(tmp_path):
    _, b = make_pair(tmp_path, corpus(1, 20))
    ds = lancelet.dataset(b)
    with pytest.raises(InvalidInputError, match="must be string"):
        ds.create_scalar_index("id", "FTS")
    assert lancelet.dataset(b).version == ds.version
    assert not glob.glob(f"{b}/_indices/*")


def test_fts_alias_and_replace(tmp_path):
    a, b = make_pair(tmp_path, corpus(2, 100))
    ds = lancelet.dataset(b)
    ds.create_scalar_index("text", "FTS", name="t")
    ds.create_scalar_index("text", "INVERTED", name="t", with_position=True)
    (idx,) = lance.dataset(b).list_indices()
    assert (idx["name"], idx["type"]) == ("t", "Inverted")
    lance.dataset(a).create_scalar_index("text", "INVERTED", name="t", with_position=True)
    assert_same_results(a, b, PhraseQuery("apple banana", "text"))
