import lance, math
ds = lance.dataset("/tmp/ftsres/inv1")
for q in ["dog", "quick dog", "lazy", "the", "quickly foxes", "cafe", "café", "zzz"]:
    t = ds.to_table(full_text_query=q, columns=["id","text"], with_row_id=True)
    print(repr(q), list(zip(t["id"].to_pylist(), [round(x,7) for x in t["_score"].to_pylist()])))
print(ds.to_table(full_text_query="dog").schema)
