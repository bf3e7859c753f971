import lance, pyarrow as pa, shutil, glob, json
from bm25 import *
import lance.file as lf
from lance.query import *
docs = ["the quick brown fox jumps over the lazy dog", "a quick brown dog", "foxes are running quickly",
        "the lazy cat sleeps", "dog dog dog", "café résumé naïve", "", None, "the and of"]
D = [['quick','brown','fox','jump','lazi','dog'],['quick','brown','dog'],['fox','run','quick'],['lazi','cat','sleep'],['dog']*3,['cafe','resume','naiv']]
shutil.rmtree("/tmp/ftsres/q2", ignore_errors=True)
ds = lance.write_dataset(pa.table({"id": pa.array(range(len(docs)), pa.int32()), "text": docs}), "/tmp/ftsres/q2", max_rows_per_file=4)
print("frags", [f.fragment_id for f in ds.get_fragments()])
ds.create_scalar_index("text", "INVERTED")
d = glob.glob("/tmp/ftsres/q2/_indices/*/")[0]
print(lf.LanceFileReader(d+"part_0_docs.lance").read_all().to_table().to_pydict())
def run(q, **kw):
    t = ds.to_table(full_text_query=q, columns=["id"], **kw)
    return list(zip(t["id"].to_pylist(), [float(x) for x in t["_score"].to_pylist()]))
print("dog", run("dog"))
print("py", [(i, float(s)) for i,s in score(['dog'], D)])
