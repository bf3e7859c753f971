"""NGRAM indices against pylance 14.

* the file lancelet writes equals pylance's for the same data (schema,
  field metadata, every token and posting list byte for byte), for each
  data storage version, with and without stable row ids, on string and
  large_string columns; the manifest entries agree;
* ``contains(col, 'sub')``, ``LIKE`` and ``starts_with`` answer as an
  unindexed scan through lancelet's and pylance's indices, and as pylance,
  for seeded random strings (ASCII words in mixed case, non-ASCII words,
  NULLs, empty and short strings) and random needles (present, absent,
  short, long, other case) inside random AND/OR/NOT trees; the plan lines
  are pylance's;
* a seeded random history (appends, deletes, updates, optimize_indices,
  compactions by either library) where every answer stays an unindexed
  scan's, with the index built by either library;
* listing, statistics, errors and damaged files.
"""
from __future__ import annotations

import os
import random
import shutil

import pyarrow as pa
import pytest
from test_indices import _entry_fields, assert_index_files_equal, index_files
from test_indices_random import random_filter as random_tree

import lancelet
from lancelet.exceptions import InvalidInputError

lance = pytest.importorskip("lance")

pytestmark = pytest.mark.pylance

WORDS = ["hello", "world", "Hello", "WORLD", "lance", "Lancelet", "index", "ngram", "trigram", "abc", "abcd", "xyz",
         "foo_bar", "foo-bar", "a1b2c3", "12345", "x", "ab", "café", "Café", "wörld", "straße", "naïve", "Ångström",
         "東京", "İstanbul", "ﬁne", "résumé", "ÆON", "½", "🙂smile", "ⱽⱽⱽ", "Ωmega", "über", "ÜBER"]


def make_strings(rng: random.Random, n: int) -> list:
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.06:
            out.append(None)
        elif r < 0.09:
            out.append("")
        elif r < 0.14:
            out.append(rng.choice(["a", "ab", "é", "ab c", "x y"]))
        else:
            k = rng.randrange(1, 6)
            out.append(rng.choice([" ", " ", "-", ", "]).join(rng.choice(WORDS) for _ in range(k)))
    return out


def make_table(n: int, seed: int = 1, start: int = 0) -> pa.Table:
    rng = random.Random(seed)
    return pa.table({
        "id": pa.array(range(start, start + n), pa.int64()),
        "s": pa.array(make_strings(rng, n), pa.string()),
        "ls": pa.array(make_strings(rng, n), pa.large_string()),
    })


def ids(t: pa.Table) -> list:
    return sorted(t["id"].to_pylist())


def needle(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.45:
        w = rng.choice(WORDS)
        if len(w) > 3 and rng.random() < 0.6:
            a = rng.randrange(0, len(w) - 2)
            w = w[a:rng.randrange(a + 3, len(w) + 1)]
        if rng.random() < 0.2:
            w = w.swapcase()
        return w
    if r < 0.6:
        return rng.choice(["zzq", "qqq", "helloworld", "ngrams", "ÉLL", "wor", "wör", "ell", "o w", "lo W", "ss", "sse"])
    if r < 0.75:
        return rng.choice(["a", "ab", "é", "l", "12"])
    return " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 3)))


def quoted(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def leaf(rng: random.Random, hi: int) -> str:
    col = rng.choice(["s", "s", "ls"])
    w = needle(rng)
    choices = [
        lambda: f"contains({col}, {quoted(w)})",
        lambda: f"contains({col}, {quoted(w)})",
        lambda: f"{col} LIKE {quoted('%' + w + '%')}",
        lambda: f"{col} LIKE {quoted(w + '%')}",
        lambda: f"starts_with({col}, {quoted(w)})",
        lambda: f"{col} IS NULL",
        lambda: f"id {rng.choice(['<', '>=', '='])} {rng.randrange(-5, hi)}",
        lambda: f"{col} = {quoted(rng.choice(WORDS))}",
    ]
    return rng.choice(choices)()


def random_filter(rng: random.Random, hi: int) -> str:
    return random_tree(rng, hi, leaf=leaf)


def check(path: str, rng: random.Random, step: str, n: int = 25, hi: int = 3000) -> int:
    ds, pl = lancelet.dataset(path), lance.dataset(path)
    used = 0
    for _ in range(n):
        flt = random_filter(rng, hi)
        want = ds.to_table(filter=flt, use_scalar_index=False)
        got = ds.to_table(filter=flt)
        assert ids(got) == ids(want), f"{step}: {flt}: {got.num_rows} rows with indices, {want.num_rows} without"
        assert ds.count_rows(filter=flt) == want.num_rows, f"{step}: count_rows({flt})"
        theirs = pl.to_table(filter=flt)
        assert ids(theirs) == ids(want), f"{step}: {flt}: pylance gives {theirs.num_rows} rows, lancelet {want.num_rows}"
        used += "ScalarIndexQuery" in ds.scanner(filter=flt).explain_plan()
    return used


def build_both(tmp_path, version="2.1", stable=False, n=1500, per_file=400):
    base = tmp_path / "base"
    lance.write_dataset(make_table(n), str(base), max_rows_per_file=per_file, data_storage_version=version,
                        enable_stable_row_ids=stable)
    lance.dataset(str(base)).delete("id % 17 = 0")
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    shutil.copytree(base, ours)
    shutil.copytree(base, theirs)
    for col in ("s", "ls"):
        lancelet.dataset(str(ours)).create_scalar_index(col, "NGRAM")
        lance.dataset(str(theirs)).create_scalar_index(col, "NGRAM")
    return str(ours), str(theirs)


def plan_lines(ds, flt):
    return [ln.strip() for ln in ds.scanner(filter=flt).explain_plan().splitlines() if "ScalarIndexQuery" in ln]


@pytest.mark.parametrize("stable", [False, True], ids=["addresses", "stable"])
@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_files_equal_pylance(tmp_path, version, stable):
    ours, theirs = build_both(tmp_path, version, stable, n=600, per_file=250)
    for name in ("s_idx", "ls_idx"):
        a, b = index_files(ours, name), index_files(theirs, name)
        assert list(a) == ["ngram_postings.lance"]
        assert_index_files_equal(a, b, "NGRAM")
        fa = a["ngram_postings.lance"].read_all().to_table().schema
        fb = b["ngram_postings.lance"].read_all().to_table().schema
        assert [f.metadata for f in fa] == [f.metadata for f in fb]
        assert _entry_fields(ours, name) == _entry_fields(theirs, name), name
    rng = random.Random(7 + stable)
    for _ in range(40):
        flt = random_filter(rng, 600)
        want = ids(lancelet.dataset(theirs).to_table(filter=flt, use_scalar_index=False))
        for path in (ours, theirs):
            pl, ld = lance.dataset(path), lancelet.dataset(path)
            assert ids(pl.to_table(filter=flt)) == want, (flt, path)
            assert ids(ld.to_table(filter=flt)) == want, (flt, path)
            assert plan_lines(ld, flt) == plan_lines(pl, flt), (flt, path)


def test_every_character_folds_as_pylance(tmp_path):
    """One row per character the tokenizer folds (and some it does not),
    between ASCII letters: the token sets equal pylance's."""
    chars = [chr(c) for c in list(range(0xA0, 0x250)) + list(range(0x1D00, 0x1F00)) + list(range(0x2070, 0x2200))
             + list(range(0x2460, 0x2500)) + list(range(0xFB00, 0xFB07)) + list(range(0xFF10, 0xFF5B))
             + [0x1D400, 0x1D41A, 0x1F130, 0x1FBF0, 0x130, 0x212A, 0x3A3]]
    rows = [f"xa{c}bq{c}{c}7" for c in chars] + [c * 3 for c in chars]
    t = pa.table({"id": pa.array(range(len(rows)), pa.int64()), "s": rows})
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    lance.write_dataset(t, ours)
    lance.write_dataset(t, theirs)
    lancelet.dataset(ours).create_scalar_index("s", "NGRAM")
    lance.dataset(theirs).create_scalar_index("s", "NGRAM")
    assert_index_files_equal(index_files(ours, "s_idx"), index_files(theirs, "s_idx"), "NGRAM")


FIXED = ["Hello World", "hello there", "Café au lait", "abc", "ab", None, "xyz-123 HELLO!", "wörld", "", "a b c d",
         "éab", "foo_bar baz", "straße"]
FIXED_FILTERS = [
    "contains(s, 'ell')", "contains(s, 'ELL')", "contains(s, 'lo W')", "contains(s, 'caf')", "contains(s, 'wor')",
    "contains(s, 'orld')", "contains(s, 'a b')", "contains(s, 'wör')", "contains(s, 'ab')", "contains(s, '')",
    "contains(s, 'éa')", "contains(s, 'éab')", "contains(s, 'ell') AND id > 2", "contains(s, 'ell') OR id > 8",
    "NOT contains(s, 'ell')", "contains(s,'ell') OR contains(s,'wor')", "contains(s,'ell') AND contains(s,'wor')",
    "(contains(s,'ell') OR contains(s,'xyz')) AND id > 2", "contains(s, 'ell') OR s IS NULL", "contains(s, 'sse')",
    "s LIKE '%ell%'", "s LIKE 'hel%'", "s LIKE '%ld'", "s ILIKE '%ell%'", "s NOT LIKE '%ell%'", "s LIKE '%e_l%'",
    "s LIKE '%abc'", "s LIKE 'abc%def'", "s LIKE '%hel%lo%'", "s LIKE 'ab%'", "s LIKE '%a.c%'", "s LIKE '%a b%'",
    "s LIKE 'hel_o%'", "s LIKE '%*ell%'", "s LIKE '%wör%'", "s LIKE '%ab%cd%'", "s LIKE 'abc'", "s LIKE '_ell%'",
    "s LIKE '%ell%' AND id > 0", "id > 0 AND s LIKE '%ell%'", "s LIKE '%ell%' OR contains(s,'xyz')",
    "s LIKE '%ell%' AND s LIKE '%llo%'", "contains(s, 'ell') AND s LIKE '%llo%'", "starts_with(s, 'hel')",
    "s LIKE '%ell%' AND id > 0 AND contains(s,'llo')", "contains(s, 'zzzzzz')", "contains(s, 'Caf')",
    "contains(s, 'é a')", "s IS NULL", "s = 'abc' OR contains(s,'ell')", "contains(s, 'ell') IS NULL",
    "contains(s, 'hello world')", "s LIKE '%ab\\_c%'", "s LIKE '%o_b%'", "contains(s, 'o_b')",
    "contains(s, 'ell') = true", "(contains(s, 'ell') OR contains(s, 'wor')) = true", "contains(s, 'a''b')",
]


@pytest.mark.parametrize("builder", ["lancelet", "pylance"])
def test_fixed_filters_and_plans(tmp_path, builder):
    path = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"id": pa.array(range(len(FIXED)), pa.int32()), "s": FIXED}), path)
    (lancelet if builder == "lancelet" else lance).dataset(path).create_scalar_index("s", "NGRAM")
    pl, ld = lance.dataset(path), lancelet.dataset(path)
    used = 0
    for flt in FIXED_FILTERS:
        want = ids(pl.to_table(filter=flt, use_scalar_index=False))
        assert ids(pl.to_table(filter=flt)) == want, flt
        assert ids(ld.to_table(filter=flt)) == want, flt
        assert ids(ld.to_table(filter=flt, use_scalar_index=False)) == want, flt
        assert plan_lines(ld, flt) == plan_lines(pl, flt), flt
        used += bool(plan_lines(ld, flt))
    assert used > 20
    # LIKE stays to apply on top (pylance's refine_filter keeps it), contains does not
    assert "refine_filter=--" in ld.scanner(filter="contains(s, 'ell')").explain_plan()
    assert "refine_filter=s LIKE" in ld.scanner(filter="s LIKE '%ell%'").explain_plan()


@pytest.mark.parametrize("stable", [False, True], ids=["addresses", "stable"])
def test_random_history(tmp_path, stable):
    rng = random.Random(98 + stable)
    path = str(tmp_path / "ds")
    lance.write_dataset(make_table(1500, seed=3), path, max_rows_per_file=500, data_storage_version="2.1",
                        enable_stable_row_ids=stable)
    lance.dataset(path).delete("id % 11 = 4")
    ds = lancelet.dataset(path)
    ds.create_scalar_index("s", "NGRAM")
    ds.create_scalar_index("ls", "NGRAM")
    assert check(path, rng, "created") > 0
    ds.insert(make_table(300, seed=5, start=2000))
    assert check(path, rng, "append") > 0
    ds.delete("id % 7 = 3 OR contains(s, 'xyz')")
    check(path, rng, "delete")
    lance.dataset(path).update({"s": "upper(s)"}, where="id < 200 OR id > 2200")
    check(path, rng, "pylance update of the indexed column")
    lancelet.dataset(path).update({"ls": "'hello café'"}, where="id % 9 = 1")
    check(path, rng, "lancelet update of the indexed column")
    ds = lancelet.dataset(path)
    ds.optimize.optimize_indices()
    assert check(path, rng, "optimize_indices") > 0
    lance.dataset(path).optimize.compact_files(target_rows_per_fragment=800)
    assert check(path, rng, "pylance compaction") > 0
    lancelet.dataset(path).insert(make_table(200, seed=6, start=3000))
    lancelet.dataset(path).delete("id % 5 = 1")
    ds = lancelet.dataset(path)
    ds.optimize.compact_files(target_rows_per_fragment=1200)
    assert check(path, rng, "lancelet compaction") > 0
    lance.dataset(path).optimize.optimize_indices()
    assert check(path, rng, "pylance optimize_indices") > 0
    # pylance-built indices used by lancelet through the same steps
    pl = lance.dataset(path)
    pl.create_scalar_index("s", "NGRAM")
    pl.create_scalar_index("ls", "NGRAM")
    assert check(path, rng, "pylance rebuilt") > 0
    lance.dataset(path).insert(make_table(200, seed=8, start=5000))
    check(path, rng, "pylance append")
    lancelet.dataset(path).optimize.compact_files(target_rows_per_fragment=4000)
    assert check(path, rng, "lancelet compaction of pylance's index") > 0
    lancelet.dataset(path).optimize.optimize_indices()
    assert check(path, rng, "lancelet optimize of pylance's index") > 0


def test_maintenance_like_pylance(tmp_path):
    """append keeps the old coverage (new rows scanned); optimize covers
    everything in one new file; a compaction by either library remaps the
    index onto the new fragments (new uuid), as pylance does; with
    ``defer_index_remap`` the fragment reuse index keeps it usable."""
    path = str(tmp_path / "ds")
    lance.write_dataset(make_table(900), path, max_rows_per_file=300)
    ds = lancelet.dataset(path)
    ds.create_scalar_index("s", "NGRAM")
    ds.insert(pa.table({"id": pa.array([5003, 5004], pa.int64()), "s": ["zebra crossing", None],
                        "ls": pa.array(["a", "b"], pa.large_string())}))
    plan = ds.scanner(filter="contains(s, 'zebra')").explain_plan()
    assert "ScalarIndexQuery: query=[contains(s, Utf8(\"zebra\"))]@s_idx(NGram)" in plan
    assert ds.to_table(filter="contains(s, 'zebra')")["id"].to_pylist() == [5003]
    before = {i["name"]: i for i in ds.list_indices()}
    assert sorted(before["s_idx"]["fragment_ids"]) == [0, 1, 2]
    st = lance.dataset(path).index_statistics("s_idx")
    assert st["num_unindexed_fragments"] == 1 and st["num_unindexed_rows"] == 2
    ds.optimize.optimize_indices()
    after = {i["name"]: i for i in ds.list_indices()}
    assert sorted(after["s_idx"]["fragment_ids"]) == [0, 1, 2, 3]
    assert after["s_idx"]["uuid"] != before["s_idx"]["uuid"]
    assert lance.dataset(path).to_table(filter="contains(s, 'zebra')")["id"].to_pylist() == [5003]
    for k, lib in enumerate((lancelet, lance)):
        old = {i["name"]: i["uuid"] for i in lance.dataset(path).list_indices()}
        lancelet.dataset(path).delete(f"id % 10 = {k}")
        lib.dataset(path).optimize.compact_files(target_rows_per_fragment=5000)
        assert len(lance.dataset(path).get_fragments()) == 1
        frags = {f.fragment_id for f in lance.dataset(path).get_fragments()}
        for lib2 in (lance, lancelet):
            listed = {i["name"]: i for i in lib2.dataset(path).list_indices()}
            assert set(listed["s_idx"]["fragment_ids"]) == frags, (k, lib2)
            assert listed["s_idx"]["uuid"] != old["s_idx"]
            plan = lib2.dataset(path).scanner(filter="contains(s, 'zebra')").explain_plan()
            assert "@s_idx(NGram)" in plan
            got = lib2.dataset(path).to_table(filter="contains(s, 'zebra')")
            assert ids(got) == [5003] + [6000 + j for j in range(k)], (k, lib2)
        lancelet.dataset(path).insert(pa.table({"id": pa.array([6000 + k], pa.int64()), "s": ["zebras"],
                                                "ls": pa.array(["c"], pa.large_string())}))
        lancelet.dataset(path).optimize.optimize_indices()
    # deferred remap (fragment reuse index) by pylance
    lance.dataset(path).insert(make_table(100, seed=9, start=8000))
    lance.dataset(path).optimize.compact_files(target_rows_per_fragment=5000, defer_index_remap=True)
    rng = random.Random(5)
    check(path, rng, "deferred remap", n=20)


def test_listing_and_statistics(tmp_path):
    ours, theirs = build_both(tmp_path, n=500)
    for path in (ours, theirs):
        ld, pl = lancelet.dataset(path), lance.dataset(path)
        mine = {i["name"]: (i["type"], i["fields"], sorted(i["fragment_ids"])) for i in ld.list_indices()}
        want = {i["name"]: (i["type"], i["fields"], sorted(i["fragment_ids"])) for i in pl.list_indices()}
        assert mine == want
        assert {v[0] for v in mine.values()} == {"NGram"}
        d1 = {d.name: (d.type_url, d.num_rows_indexed, list(d.fields), list(d.field_names), d.total_size_bytes)
              for d in ld.describe_indices()}
        d2 = {d.name: (d.type_url, d.num_rows_indexed, list(d.fields), list(d.field_names), d.total_size_bytes)
              for d in pl.describe_indices()}
        assert d1 == d2
        for name in mine:
            a, b = ld.index_statistics(name), pl.index_statistics(name)
            a.pop("updated_at_timestamp_ms")
            b.pop("updated_at_timestamp_ms")
            assert a == b, name
            assert list(a["indices"][0]) == ["num_ngrams"]


def test_errors_commit_nothing(tmp_path):
    path = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"n": pa.array([1, 2, 3], pa.int64()), "b": pa.array([b"a", b"b", b"c"]),
                                  "s": ["abc", "bcd", None]}), path)
    ds = lancelet.dataset(path)
    v = ds.version
    with pytest.raises(InvalidInputError, match=r"NGRAM index column n must be a string"):
        ds.create_scalar_index("n", "NGRAM")
    with pytest.raises(InvalidInputError, match=r"column \"b\""):
        ds.create_scalar_index("b", "NGRAM")
    with pytest.raises(InvalidInputError, match="does not take 'rows_per_zone' for NGRAM"):
        ds.create_scalar_index("s", "NGRAM", rows_per_zone=3)
    with pytest.raises(InvalidInputError, match="unknown index type"):
        ds.create_scalar_index("s", "NGRAMS")
    assert lancelet.dataset(path).version == v
    assert not os.path.isdir(os.path.join(path, "_indices")) or os.listdir(os.path.join(path, "_indices")) == []
    with pytest.raises(Exception) as e:
        lance.dataset(path).create_scalar_index("n", "NGRAM")
    assert "NGRAM index column n must be a string" in str(e.value)


def test_corrupt_index_file(tmp_path):
    """Damaged posting lists and files raise CorruptFileError (never a
    panic; a flip the format cannot detect may only lose candidates)."""
    from lancelet.exceptions import CorruptFileError, LanceletError
    path = str(tmp_path / "ds")
    lance.write_dataset(make_table(400), path)
    ds = lancelet.dataset(path)
    ds.create_scalar_index("s", "NGRAM")
    [entry] = ds.list_indices()
    rel = os.path.join("_indices", entry["uuid"], "ngram_postings.lance")
    good = open(os.path.join(path, rel), "rb").read()
    flt = "contains(s, 'hello') OR contains(s, 'world')"
    want = ids(ds.to_table(filter=flt, use_scalar_index=False))

    def damaged(tag, data):
        # opened indices are cached by directory: every damage gets its own copy
        p = str(tmp_path / tag)
        shutil.copytree(path, p)
        open(os.path.join(p, rel), "wb").write(bytes(data))
        return lancelet.dataset(p)

    rng = random.Random(3)
    for trial in range(12):
        data = bytearray(good)
        for _ in range(1 + trial):
            data[rng.randrange(0, len(data) - 40)] ^= 1 << rng.randrange(0, 8)
        try:
            got = ids(damaged(f"flip{trial}", data).to_table(filter=flt))
        except LanceletError:
            continue
        assert set(got) <= set(want)
    with pytest.raises(CorruptFileError):
        damaged("cut", good[: len(good) // 2]).to_table(filter=flt)
    # a posting list cut short inside a valid file
    from lance.file import LanceFileReader, LanceFileWriter
    t = LanceFileReader(os.path.join(path, rel)).read_all().to_table()
    lists = t["posting_list"].to_pylist()
    lists[1] = lists[1][:-3]
    p = str(tmp_path / "short")
    shutil.copytree(path, p)
    os.remove(os.path.join(p, rel))
    schema = t.schema
    with LanceFileWriter(os.path.join(p, rel), schema) as w:
        w.write_batch(pa.table({"tokens": t["tokens"], "posting_list": pa.array(lists, pa.binary())}, schema=schema))
    toks = t["tokens"].to_pylist()
    # the damaged token is hit by a needle holding it
    A = "0123456789abcdefghijklmnopqrstuvwxyz"
    tok = toks[1]
    word = "".join(A[(tok // 37 ** k) % 37 - 1] for k in (2, 1, 0))
    with pytest.raises(CorruptFileError, match="posting list"):
        lancelet.dataset(p).to_table(filter=f"contains(s, '{word}')")
    assert ids(damaged("good", good).to_table(filter=flt)) == want
