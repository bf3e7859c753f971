import lance, pyarrow as pa, shutil
from lance.query import *
from bm25 import *
docs = ["apple", "apply", "ample", "maple", "apples and apple", "applesauce", "banana"]
shutil.rmtree("/tmp/ftsres/q8", ignore_errors=True)
ds = lance.write_dataset(pa.table({"id": pa.array(range(len(docs)), pa.int32()), "text": docs, "n": pa.array(range(len(docs)))}), "/tmp/ftsres/q8")
ds.create_scalar_index("text", "INVERTED", stem=False)
def run(q, **kw):
    try:
        t = ds.to_table(full_text_query=q, columns=["id"], **kw)
        return [(i, round(float(s),6)) for i,s in zip(t["id"].to_pylist(), t["_score"].to_pylist())]
    except Exception as e: return "ERR %s: %s" % (type(e).__name__, str(e)[:300])
for q in [MatchQuery("apple","text", fuzziness=1), MatchQuery("apple","text", fuzziness=2), MatchQuery("apple","text", fuzziness=1, max_expansions=1),
          MatchQuery("apple","text", fuzziness=2, prefix_length=3), MatchQuery("aple","text", fuzziness=None), MatchQuery("applesauc","text", fuzziness=None), MatchQuery("apple","text", fuzziness=None),
          MatchQuery("apple banana", "text", fuzziness=1, operator=FullTextOperator.AND)]:
    print(q.inner if hasattr(q,'inner') else q, run(q))
D = [['apple'],['apply'],['ample'],['maple'],['apples','apple'],['applesauce'],['banana']]
print("hand apple+apply+ample (fuzz1):", [(i,round(float(s),6)) for i,s in score(['apple','apply','ample'], D)])
print("hand apple|apply|ample|maple|apples (fuzz2):", [(i,round(float(s),6)) for i,s in score(['apple','apply','ample','maple','apples'], D)])
# errors
for kw in [dict(full_text_query={"columns":["n"], "query":"x"}), dict(full_text_query=MatchQuery("x","nosuch"))]:
    print(kw, run(kw.pop("full_text_query")))
for args in [("n","INVERTED",{}), ("text","INVERTED",{"base_tokenizer":"bogus"}), ("text","INVERTED",{"language":"Klingon"}), ("text","INVERTED",{"bogus_opt":1}), ("n","NGRAM",{}), ("text","INVERTED",{"block_size":64})]:
    try: ds.create_scalar_index(args[0], args[1], name="e_idx", **args[2]); print(args, "OK?!", lance.dataset("/tmp/ftsres/q8").list_indices()[-1]["name"])
    except Exception as e: print(args, "ERR %s: %s" % (type(e).__name__, str(e)[:250]))
ds2 = lance.write_dataset(pa.table({"a": ["x y"]}), "/tmp/ftsres/q8b", mode="overwrite")
try: print(ds2.to_table(full_text_query="x"))
except Exception as e: print("no index:", type(e).__name__, str(e)[:250])
