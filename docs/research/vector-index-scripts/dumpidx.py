import sys, os, json, lance, pyarrow as pa, numpy as np
sys.path.insert(0, '/tmp/vecres'); import pb
from lance.file import LanceFileReader
def dump_file(path, nrows=3):
    r = LanceFileReader(path)
    md = r.metadata()
    print(f"== {os.path.basename(path)} size={os.path.getsize(path)} rows={r.num_rows()} major/minor={md.major_version}.{md.minor_version}")
    tbl = r.read_all().to_table()
    print("schema:", tbl.schema.remove_metadata())
    meta = tbl.schema.metadata or {}
    for k, v in meta.items():
        vs = v.decode(errors='replace')
        print(f"  meta {k.decode()!r} = {vs[:1500]}{'...' if len(vs)>1500 else ''}")
    print("  global buffers:", [(i, gb.position, gb.size) for i, gb in enumerate(md.global_buffers)])
    for i in range(len(md.global_buffers)):
        if i == 0: continue
        b = r.read_global_buffer(i)
        print(f"  gbuf[{i}] len={len(b)} head={b[:48].hex()}")
        try: print('   pb:', pb.dump(b, indent=2, maxbytes=24))
        except Exception as e: print('   (not pb)', e)
    if tbl.num_rows:
        print("  first rows:", {c: [str(x)[:80] for x in tbl.column(c).slice(0,nrows).to_pylist()] for c in tbl.column_names})
    return tbl, meta
if __name__ == '__main__':
    ds = sys.argv[1]
    for im in pb.index_section(ds):
        print('--- IndexMetadata', len(im), 'bytes'); print(pb.dump(im))
    for u in os.listdir(ds + '/_indices'):
        for f in sorted(os.listdir(ds + '/_indices/' + u)):
            dump_file(f"{ds}/_indices/{u}/{f}")
