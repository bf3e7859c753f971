# Re-verifies (on build1.py fixtures): partition assignment, PQ codebook layout + transposed residual codes, SQ formula.
import sys, os, json, numpy as np
sys.path.insert(0, '.'); import pb
from lance.file import LanceFileReader
vecs = np.load('vecs.npy')
def files(t):
    d = f'ds_{t}/_indices/' + os.listdir(f'ds_{t}/_indices')[0]
    return LanceFileReader(d + '/auxiliary.idx'), LanceFileReader(d + '/index.idx')
def rid(r): return (r >> 32) * 2000 + (r & 0xffffffff)   # 2 fragments of 2000 rows
# PQ
a, x = files('IVF_PQ'); at = a.read_all().to_table(); iv = pb.ivf(a.read_global_buffer(1))
ivx = pb.ivf(x.read_global_buffer(1)); C = np.frombuffer(ivx['centroids_tensor']['data'], np.float32).reshape(ivx['centroids_tensor']['shape'])
f = {ff: vv for ff, w, vv in pb.fields(a.read_global_buffer(2))}; M, sd = 4, 8
CB = np.frombuffer(f[3], np.float32).reshape(M, 256, sd)              # sub-vector major
r = rid(at['_rowid'].to_numpy()); codes = np.stack(at['__pq_code'].to_numpy(zero_copy_only=False)).astype(int)
T = np.zeros_like(codes)
for o, l in zip(iv['offsets'], iv['lengths']): T[o:o+l] = codes[o:o+l].reshape(-1).reshape(M, l).T   # undo per-partition transpose
part = np.repeat(np.arange(len(iv['lengths'])), iv['lengths'])
print('assignment = argmin L2:', (((vecs[r][:, None] - C[None])**2).sum(-1).argmin(1) == part).mean())
res = vecs[r] - C[part]
enc = np.stack([np.argmin(((CB[j][None] - res[:, None, j*sd:(j+1)*sd])**2).sum(-1), 1) for j in range(M)], 1)
print('PQ residual codes match:', (enc == T).all(1).mean())
# SQ
a, x = files('IVF_SQ'); at = a.read_all().to_table()
sm = json.loads(json.loads(at.schema.metadata[b'storage_metadata'])[0]); s, e = sm['bounds']['start'], sm['bounds']['end']
r = rid(at['_rowid'].to_numpy()); codes = np.stack(at['__sq_code'].to_numpy(zero_copy_only=False)).astype(int)
print('SQ floor((v-s)*255/(e-s)) match:', (np.clip(np.floor((vecs[r].astype(np.float64) - s) * 255 / (e - s)), 0, 255) == codes).mean())
