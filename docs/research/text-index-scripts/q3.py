import lance, pyarrow as pa, shutil, glob, json
from bm25 import *
from lance.query import *
docs = ["the quick brown fox jumps over the lazy dog", "a quick brown dog", "foxes are running quickly",
        "the lazy cat sleeps", "dog dog dog", "café résumé naïve", "brown dogs and quick foxes", "lazy brown fox"]
shutil.rmtree("/tmp/ftsres/q3", ignore_errors=True)
ds = lance.write_dataset(pa.table({"id": pa.array(range(len(docs)), pa.int32()), "text": docs, "title": ["fox"]*4+["dog"]*4}), "/tmp/ftsres/q3")
ds.create_scalar_index("text", "INVERTED", with_position=True)
ds.create_scalar_index("title", "INVERTED")
def run(q, **kw):
    try:
        t = ds.to_table(full_text_query=q, columns=["id"], **kw)
        return [(i, round(float(s),6)) for i,s in zip(t["id"].to_pylist(), t["_score"].to_pylist())]
    except Exception as e: return "ERR "+str(e)[:200]
Q = {
 "str 'quick dog'": "quick dog",
 "dict": {"columns":["text"], "query":"quick dog"},
 "Match OR": MatchQuery("quick dog", "text"),
 "Match AND": MatchQuery("quick dog", "text", operator=FullTextOperator.AND),
 "Match boost2": MatchQuery("quick dog", "text", boost=2.0),
 "Match fuzzy1 'quik'": MatchQuery("quik", "text", fuzziness=1),
 "Match fuzzy None 'quik'": MatchQuery("quik", "text", fuzziness=None),
 "Match fuzzy 'brwn dg'": MatchQuery("brwn dg", "text", fuzziness=1),
 "Match prefix_length": MatchQuery("quik", "text", fuzziness=1, prefix_length=3),
 "Match 'the'": MatchQuery("the", "text"),
 "Phrase 'brown fox'": PhraseQuery("brown fox", "text"),
 "Phrase 'quick fox'": PhraseQuery("quick fox", "text"),
 "Phrase 'quick fox' slop1": PhraseQuery("quick fox", "text", slop=1),
 "Phrase 'quick brown' ": PhraseQuery("quick brown", "text"),
 "Phrase 'fox lazy' slop3": PhraseQuery("fox lazy", "text", slop=3),
 "Phrase 'fox lazy' slop2": PhraseQuery("fox lazy", "text", slop=2),
 "Phrase 'fox jumps over the lazy'": PhraseQuery("fox jumps over the lazy", "text"),
 "Phrase 'lazy fox' slop5": PhraseQuery("dog lazy", "text", slop=5),
 "Bool must quick, should dog": BooleanQuery([(Occur.MUST, MatchQuery("quick","text")), (Occur.SHOULD, MatchQuery("dog","text"))]),
 "Bool should quick, should dog": BooleanQuery([(Occur.SHOULD, MatchQuery("quick","text")), (Occur.SHOULD, MatchQuery("dog","text"))]),
 "Bool must quick, must_not dog": BooleanQuery([(Occur.MUST, MatchQuery("quick","text")), (Occur.MUST_NOT, MatchQuery("dog","text"))]),
 "Bool should quick, must_not dog": BooleanQuery([(Occur.SHOULD, MatchQuery("quick","text")), (Occur.MUST_NOT, MatchQuery("dog","text"))]),
 "Boost pos quick neg dog": BoostQuery(MatchQuery("quick","text"), MatchQuery("dog","text")),
 "Boost pos quick neg dog 0.2": BoostQuery(MatchQuery("quick","text"), MatchQuery("dog","text"), negative_boost=0.2),
 "MultiMatch fox [text,title]": MultiMatchQuery("fox", ["text","title"]),
 "MultiMatch fox boosts": MultiMatchQuery("fox", ["text","title"], boosts=[1.0, 2.0]),
 "MultiMatch dict": {"columns":["text","title"], "query":"fox"},
 "Match fox title": MatchQuery("fox","title"),
 "Match fox text": MatchQuery("fox","text"),
}
for k,q in Q.items(): print(f"{k:40s}", run(q))
print("limit2", run("quick dog", limit=2))
print("filter prefilter", run("quick dog", filter="id > 1", prefilter=True))
print("filter postfilter", run("quick dog", filter="id > 1", prefilter=False, limit=2))
print("prefilter limit2", run("quick dog", filter="id > 1", prefilter=True, limit=2))
