"""Tiny raw protobuf decoder + manifest index-section reader (for research)."""
import struct, os, glob, json

def varint(b, i):
    r = s = 0
    while True:
        c = b[i]; i += 1
        r |= (c & 0x7f) << s; s += 7
        if c < 0x80: return r, i

def fields(b):
    """yield (field_no, wire_type, value) ; value is int for varint/fixed, bytes for len-delimited"""
    i = 0; out = []
    while i < len(b):
        k, i = varint(b, i); f, w = k >> 3, k & 7
        if w == 0: v, i = varint(b, i)
        elif w == 1: v = struct.unpack_from('<Q', b, i)[0]; i += 8
        elif w == 5: v = struct.unpack_from('<I', b, i)[0]; i += 4
        elif w == 2:
            n, i = varint(b, i); v = bytes(b[i:i+n]); i += n
        else: raise ValueError(f"wire {w}")
        out.append((f, w, v))
    return out

def dump(b, indent=0, depth=0, maxbytes=64):
    """Best-effort recursive dump."""
    pad = '  ' * indent
    lines = []
    for f, w, v in fields(b):
        if w == 2:
            sub = None
            if depth < 6 and len(v) > 0:
                try:
                    fs = fields(v)
                    if all(ff > 0 and ff < 1000 for ff, _, _ in fs): sub = v
                except Exception: pass
            try: s = v.decode('utf8'); printable = all(32 <= ord(c) < 127 for c in s)
            except Exception: printable = False
            if printable and len(v) > 0:
                lines.append(f"{pad}{f}: {s!r}")
            elif sub is not None:
                lines.append(f"{pad}{f}: {{")
                lines.append(dump(v, indent+1, depth+1, maxbytes))
                lines.append(f"{pad}}}")
            else:
                lines.append(f"{pad}{f}: bytes[{len(v)}] {v[:maxbytes].hex()}{'...' if len(v)>maxbytes else ''}")
        elif w == 5:
            lines.append(f"{pad}{f}: fixed32 {v} (f32 {struct.unpack('<f', struct.pack('<I', v))[0]})")
        elif w == 1:
            lines.append(f"{pad}{f}: fixed64 {v} (f64 {struct.unpack('<d', struct.pack('<Q', v))[0]})")
        else:
            lines.append(f"{pad}{f}: {v}")
    return '\n'.join(lines)

def manifest_bytes(ds_path, version=None):
    vs = sorted(glob.glob(os.path.join(ds_path, '_versions', '*.manifest')))
    if version is None:
        # pick highest version number
        def vnum(p):
            n = os.path.basename(p).split('.')[0]
            return int(n)
        # v2 naming: u64::MAX - version
        nums = [(vnum(p), p) for p in vs]
        if any(n > 10**15 for n, _ in nums):
            p = min(nums)[1]
        else:
            p = max(nums)[1]
    else:
        p = version
    data = open(p, 'rb').read()
    pos = struct.unpack_from('<Q', data, len(data) - 16)[0]
    n = struct.unpack_from('<I', data, pos)[0]
    man = data[pos+4:pos+4+n]
    return data, man, p

def index_section(ds_path, version=None):
    data, man, p = manifest_bytes(ds_path, version)
    idx_off = None
    for f, w, v in fields(man):
        if f == 6: idx_off = v
    if idx_off is None: return []
    n = struct.unpack_from('<I', data, idx_off)[0]
    sec = data[idx_off+4: idx_off+4+n]
    return [v for f, w, v in fields(sec) if f == 1]

if __name__ == '__main__':
    import sys
    for im in index_section(sys.argv[1]):
        print('--- IndexMetadata', len(im), 'bytes'); print(dump(im))

def packed_varints(b):
    out = []; i = 0
    while i < len(b):
        v, i = varint(b, i); out.append(v)
    return out

def vid(b):
    """VectorIndexDetails decode (field numbers observed)"""
    d = {}
    for f, w, v in fields(b):
        if f == 9:
            kv = {ff: vv.decode() for ff, ww, vv in fields(v)}
            d.setdefault('9:params', {})[kv.get(1)] = kv.get(2)
        elif w == 2:
            d[f] = {ff: vv for ff, ww, vv in fields(v)} if v else {}
        else:
            d[f] = v
    return d

def index_meta(b):
    d = {}
    for f, w, v in fields(b):
        if f == 1: d['1:uuid'] = fields(v)[0][2].hex()
        elif f == 2: d['2:fields'] = packed_varints(v) if w == 2 else [v]
        elif f == 3: d['3:name'] = v.decode()
        elif f == 4: d['4:dataset_version'] = v
        elif f == 5: d['5:fragment_bitmap'] = v.hex()
        elif f == 6:
            a = {ff: vv for ff, ww, vv in fields(v)}
            d['6:details.type_url'] = a[1].decode()
            d['6:details.value_hex'] = a.get(2, b'').hex()
            if b'VectorIndexDetails' in a[1]: d['6:details'] = vid(a.get(2, b''))
        elif f == 7: d['7:index_version'] = v
        elif f == 8: d['8:created_at'] = v
        elif f == 10: d.setdefault('10:files', []).append({ff: (vv.decode() if ww == 2 else vv) for ff, ww, vv in fields(v)})
        else: d[f] = v
    return d

def ivf(b):
    d = {}
    for f, w, v in fields(b):
        if f == 2: d['offsets'] = packed_varints(v)
        elif f == 3: d['lengths'] = packed_varints(v)
        elif f == 4:
            t = {}
            for ff, ww, vv in fields(v):
                if ff == 1: t['data_type'] = vv
                elif ff == 2: t['shape'] = packed_varints(vv)
                elif ff == 3: t['data_len'] = len(vv); t['data'] = vv
            d['centroids_tensor'] = t
        elif f == 5: d['loss'] = struct.unpack('<d', struct.pack('<Q', v))[0]
        else: d[f] = v
    return d
