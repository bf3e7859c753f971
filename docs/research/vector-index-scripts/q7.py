import lance, numpy as np, re
ds=lance.dataset('/tmp/vecres/p256')
q=np.random.default_rng(0).standard_normal(16).astype(np.float32)
row=[]
for k in [100,101,110,120,150,175,200,250,300,400,500,700,1000,1500,2000,3000,5000,10000]:
    s=ds.scanner(nearest={"column":"vec","q":q,"k":k}, columns=["id"]).analyze_plan()
    row.append((k,int(re.search(r'ANNSubIndex.*?partitions_searched=(\d+)', s).group(1))))
print(row)
