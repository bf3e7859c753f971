import lance, numpy as np, re
ds=lance.dataset('/tmp/vecres/big64')
def searched(q, nn):
    s=ds.scanner(nearest={"column":"vec","q":q, **nn}, columns=["id"]).analyze_plan()
    return int(re.search(r'ANNSubIndex.*?partitions_searched=(\d+)', s).group(1))
qs=[np.random.default_rng(s).standard_normal(16).astype(np.float32) for s in range(4)]
print('effort  k=1..')
for e in [None,0.0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0]:
    row=[]
    for k in [1,10,50,100,500,1000]:
        nn={"k":k}
        if e is not None: nn["search_effort"]=e
        row.append('/'.join(str(searched(q,nn)) for q in qs[:2]))
    print(e, row)
