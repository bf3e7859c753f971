import lance, pyarrow as pa, shutil
from lance.query import *
shutil.rmtree("/tmp/ftsres/q6", ignore_errors=True)
ds = lance.write_dataset(pa.table({"id": pa.array(range(300), pa.int32()), "text": ["dog cat"]*300}), "/tmp/ftsres/q6", max_rows_per_file=100)
ds.create_scalar_index("text", "INVERTED")
for lim in [5, 10, None]:
    t = ds.to_table(full_text_query="dog", columns=["id"], limit=lim)
    print(lim, t.num_rows, t["id"].to_pylist()[:12])
t = ds.to_table(full_text_query="dog", columns=["id"], limit=5, with_row_id=True); print(t.to_pydict())
t=ds.to_table(full_text_query="dog", columns=["id"]); print(t["id"].to_pylist()[-15:])
print(ds.scanner(full_text_query="dog", columns=["id"], limit=5).explain_plan(verbose=True))
print(ds.scanner(full_text_query="dog", columns=["id"], limit=5, filter="id > 3", prefilter=True).explain_plan(verbose=True))
print(ds.scanner(full_text_query="dog", columns=["id"], limit=5, filter="id > 3").explain_plan(verbose=True))
print(ds.scanner(full_text_query=PhraseQuery("dog cat","text"), limit=5).explain_plan(verbose=True))
print(ds.scanner(full_text_query=BooleanQuery([(Occur.MUST, MatchQuery("dog","text")),(Occur.MUST_NOT, MatchQuery("cat","text"))]), limit=5).explain_plan(verbose=True))
print(ds.scanner(full_text_query=BoostQuery(MatchQuery("dog","text"), MatchQuery("cat","text")), limit=5).explain_plan(verbose=True))
ds2 = lance.write_dataset(pa.table({"id": pa.array([1000], pa.int32()), "text": ["dog"]}), "/tmp/ftsres/q6", mode="append")
print(ds2.scanner(full_text_query="dog", columns=["id"], limit=5).explain_plan(verbose=True))
print(ds2.scanner(full_text_query=MatchQuery("dog","text", operator=FullTextOperator.AND), columns=["id"]).explain_plan(verbose=True))
