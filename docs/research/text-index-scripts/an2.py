import pickle, glob, lance.file as lf, collections
docs = pickle.load(open("inv2.pkl","rb"))
toks = [d.split() for d in docs]
lens = [len(t) for t in toks]
t = lf.LanceFileReader(glob.glob("/tmp/ftsres/inv2/_indices/*/part_0_invert.lance")[0]).read_all().to_table()
# token order? figure out by length
vocab = ["alpha","beta","gamma","delta","omega"]
post = {w: [(i, tk.count(w)) for i,tk in enumerate(toks) if w in tk] for w in vocab}
for w in vocab: print(w, len(post[w]))
def frontier(entries):
    # entries (freq,len); keep pareto: for each freq the min len, keep those where len strictly increases with freq
    best = {}
    for f,l in entries: best[f] = min(best.get(f,1<<30), l)
    out=[]; 
    for f in sorted(best, reverse=True):
        if not out or best[f] < out[-1][1]: out.append((f,best[f]))
    return sorted(out)
for i in range(t.num_rows):
    L = t.column("_length")[i].as_py()
    w = [w for w in vocab if len(post[w])==L]
    print(i, w, [b.hex() for b in t.column("_impacts")[i].as_py()])
    if len(w)!=1: continue
    p = post[w[0]]
    blocks = [p[j:j+128] for j in range(0,len(p),128)]
    for b in blocks+[p]:
        print("   last", b[-1][0], frontier([(f,lens[d]) for d,f in b]))
