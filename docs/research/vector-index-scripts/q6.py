import lance, numpy as np, pyarrow as pa, shutil, re, os, sys
vecs=np.load('big64.npy')
def build(name, n, nlist):
    p=f'/tmp/vecres/{name}'
    if not os.path.exists(p):
        ds=lance.write_dataset(pa.table({"id":np.arange(n),"vec":pa.FixedSizeListArray.from_arrays(pa.array(vecs[:n].reshape(-1)),16)}),p)
        ds.create_index("vec","IVF_FLAT",num_partitions=nlist)
    return lance.dataset(p)
q=np.random.default_rng(0).standard_normal(16).astype(np.float32)
for name,n,nlist in [('p16',32768,16),('p128',32768,128),('p256',32768,256),('p64s',8192,64),('p32s',4096,32)]:
    ds=build(name,n,nlist)
    row=[]
    for k in [1,2,5,10,11,20,50,100,200,500,1000]:
        s=ds.scanner(nearest={"column":"vec","q":q,"k":k}, columns=["id"]).analyze_plan()
        row.append((k,int(re.search(r'ANNSubIndex.*?partitions_searched=(\d+)', s).group(1))))
    print(name, n, nlist, row)
