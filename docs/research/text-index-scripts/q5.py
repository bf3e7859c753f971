import lance, pyarrow as pa, shutil
from bm25 import *
docs = ["quick brown fox", "quick dog", "lazy dog", "dog dog", "cat", "brown cat"]
D = [['quick','brown','fox'],['quick','dog'],['lazi','dog'],['dog','dog'],['cat'],['brown','cat']]
shutil.rmtree("/tmp/ftsres/q5", ignore_errors=True)
ds = lance.write_dataset(pa.table({"id": pa.array(range(6), pa.int32()), "text": docs}), "/tmp/ftsres/q5")
ds.create_scalar_index("text", "INVERTED")
A = ["dog quick cat cat cat cat cat cat", "fox fox", "bird bird bird bird bird", "the and"]
DA = [['dog','quick','cat','cat','cat','cat','cat','cat'],['fox','fox'],['bird']*5]
ds = lance.write_dataset(pa.table({"id": pa.array(range(6,10), pa.int32()), "text": A}), "/tmp/ftsres/q5", mode="append")
def run(q, **kw):
    t = ds.to_table(full_text_query=q, columns=["id"], **kw)
    return [(i, float(s)) for i,s in zip(t["id"].to_pylist(), t["_score"].to_pylist())]
for q,qt in [("dog",['dog']),("fox",['fox']),("bird",['bird']),("quick dog",['quick','dog'])]:
    print(q, run(q))
    print("  idx-only", [(i,float(s)) for i,s in score(qt, D)])
    print("  combined-all", [(i,float(s)) for i,s in score(qt, D+DA)])
