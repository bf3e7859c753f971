import numpy as np
f=np.float32
K1=f(1.2); B=f(0.75)
def idf(n, N):
    N=f(N); n=f(n)
    return f(np.log(f((N-n+f(0.5))/(n+f(0.5))+f(1.0))))
def docw(tf, dl, avgdl):
    tf=f(tf); dl=f(dl)
    norm = K1*(f(1.0)-B+B*dl/avgdl)
    return f((K1+f(1.0))*tf/(tf+norm))
def score(tokens_q, docs_tokens, N=None, total=None):
    """docs_tokens: list of token lists. returns {doc: score} OR-match"""
    N = N or len(docs_tokens); total = total or sum(len(d) for d in docs_tokens)
    avgdl = f(f(total)/f(N))
    out={}
    for q in tokens_q:
        n = sum(1 for d in docs_tokens if q in d)
        if n==0: continue
        w = idf(n,N)
        for i,d in enumerate(docs_tokens):
            if q in d:
                out[i] = f(out.get(i,f(0)) + w*docw(d.count(q), len(d), avgdl))
    return sorted(out.items(), key=lambda x:-x[1])
