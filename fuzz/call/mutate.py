"""Mutations of the whole-call fuzzer. Each takes (rng, bytes, ctx) and returns (bytes, description)
or None when it does not apply; ctx holds the other seeds' bytes (for splices).

Structure-aware ones parse the file (pqmodel) and edit the Thrift footer or a page header as a
generic tree (a value set to 0 / -1 / i32::MAX / 2^40 ..., a field repeated under the same or
another wire type, a wire type changed, a field dropped, a list's declared length changed, an
over-long varint), or decompress a page's payload, edit what the decoders read first (a DELTA
header's counts, an RLE run header, a level buffer's length, a dictionary page's values) and
recompress it with the chunk's codec, fixing the page header's sizes and the footer's offsets.
"""

import json
import struct
import zlib

import cthrift as T
import pqmodel as M

I32MAX = (1 << 31) - 1
INTERESTING = [0, -1, 1, 2, 7, 255, 1 << 15, I32MAX, I32MAX, -(1 << 31), 1 << 31, 1 << 30, 1 << 32, 1 << 40, 1 << 40,
               (1 << 63) - 1, -(1 << 63)]


def pick_int(rng, old=None):
    r = rng.random()
    if isinstance(old, int) and r < 0.3:
        return rng.choice([old + 1, old - 1, old * 2, old // 2, old * 1000 + 7, old + rng.randrange(-16, 17)])
    return rng.choice(INTERESTING)


def overlong(n):
    """n's varint, padded with a redundant continuation byte pair."""
    v = bytearray(T.varint(n))
    v[-1] |= 0x80
    return bytes(v) + b'\x80\x00'


# fields the fuzzer prefers in the footer (FileMetaData paths, '[]' a list item)
HOT = {
    (1,), (3,), (2, '[]', 1), (2, '[]', 2), (2, '[]', 3), (2, '[]', 4), (2, '[]', 5), (2, '[]', 6), (2, '[]', 10),
    (2,), (4,), (4, '[]', 1), (4, '[]', 2), (4, '[]', 3), (4, '[]', 1, '[]', 3),
    (4, '[]', 1, '[]', 3, 1), (4, '[]', 1, '[]', 3, 2), (4, '[]', 1, '[]', 3, 3), (4, '[]', 1, '[]', 3, 4),
    (4, '[]', 1, '[]', 3, 5), (4, '[]', 1, '[]', 3, 6), (4, '[]', 1, '[]', 3, 7), (4, '[]', 1, '[]', 3, 9),
    (4, '[]', 1, '[]', 3, 11), (5,), (5, '[]', 1), (5, '[]', 2),
}


def mutate_tree(rng, root, hot=None):
    """Edits one node of a Thrift tree in place; returns a description."""
    nodes = [(p, f, par) for p, f, par in T.walk(root) if par is not None]
    lists = [(p, lst) for p, lst, par in T.walk(root) if par is None and isinstance(lst, T.List)]
    if not nodes:
        return None
    if hot and rng.random() < 0.75:
        hn = [n for n in nodes if n[0] in hot]
        if hn:
            nodes = hn
    if lists and rng.random() < 0.15:
        p, lst = rng.choice(lists)
        r = rng.random()
        if r < 0.3 and lst.items:
            lst.items.append(lst.items[rng.randrange(len(lst.items))])
            return f'list {p}: an item repeated'
        if r < 0.5 and lst.items:
            del lst.items[rng.randrange(len(lst.items))]
            return f'list {p}: an item dropped'
        if r < 0.7:
            if lst.wtype is None:
                lst.wtype = lst.etype
            lst.etype = rng.choice([T.I32, T.I64, T.BINARY, T.STRUCT, T.LIST, T.TRUE])
            return f'list {p}: element type -> {T.NAMES.get(lst.etype)}'
        lst.declared = rng.choice([0, len(lst.items) + 1, max(len(lst.items) - 1, 0), I32MAX, 1 << 20])
        return f'list {p}: declared length {lst.declared} (holds {len(lst.items)})'
    p, f, par = rng.choice(nodes)
    r = rng.random()
    idx = par.fields.index(f)
    if f.ttype not in T.INT_TYPES:
        r = 0.45 + r * 0.55  # no value edit: repeat, retype, drop, binary, swap
    if f.ttype in T.INT_TYPES and r < 0.4:
        old = f.value
        f.value = pick_int(rng, old)
        if f.ttype == T.I32 and not -(1 << 31) <= f.value < (1 << 31) and rng.random() < 0.5:
            f.ttype = T.I64
        return f'field {p} ({T.NAMES[f.ttype]}): {old} -> {f.value}'
    if r < 0.72:
        # repeat the field: same wire type or another, after or before it
        t = f.ttype if rng.random() < 0.4 else rng.choice([T.I32, T.I64, T.BINARY, T.LIST, T.SET, T.STRUCT, T.TRUE, T.I16, T.BYTE])
        if t in T.INT_TYPES:
            v = pick_int(rng, f.value if isinstance(f.value, int) else None)
            if t == T.BYTE:
                v = max(-128, min(127, v))
            elif t == T.I16:
                v = max(-32768, min(32767, v))
            elif t == T.I32:
                v = max(-(1 << 31), min(I32MAX, v))
        elif t == T.BINARY:
            v = rng.choice([b'', b'x', b'\xff' * 9, f.value if isinstance(f.value, bytes) else b'dup'])
        elif t in (T.LIST, T.SET):
            v = f.value if isinstance(f.value, T.List) and t == f.ttype else T.List(T.I32, [pick_int(rng) & 0x7FFFFFFF for _ in range(rng.randrange(3))])
        elif t == T.STRUCT:
            v = f.value if isinstance(f.value, T.Struct) and rng.random() < 0.5 else T.Struct()
        else:
            v = rng.random() < 0.5
        if t == f.ttype and rng.random() < 0.3:
            import copy
            v = copy.deepcopy(f.value)
        nf = T.Field(f.fid, t, v)
        par.fields.insert(idx + (1 if rng.random() < 0.7 else 0), nf)
        return f'field {p} repeated as {T.NAMES.get(t)} {v if not isinstance(v, (T.Struct, T.List)) else type(v).__name__}'
    if r < 0.8:
        old = f.ttype
        if f.ttype == T.LIST:
            f.ttype = T.SET
        elif f.ttype == T.SET:
            f.ttype = T.LIST
        elif f.ttype == T.I32:
            f.ttype = rng.choice([T.I64, T.I16, T.BINARY])
            if f.ttype == T.BINARY:
                f.value = T.Raw(T.varint(3) + b'abc')
        elif f.ttype == T.I64:
            f.ttype = T.I32
        else:
            f.ttype = rng.choice([T.I32, T.I64, T.BINARY, T.STRUCT])
            f.value = {T.I32: 0, T.I64: 1 << 40, T.BINARY: b'', T.STRUCT: T.Struct()}[f.ttype]
        return f'field {p}: wire type {T.NAMES.get(old)} -> {T.NAMES.get(f.ttype)}'
    if r < 0.87:
        del par.fields[idx]
        return f'field {p} dropped'
    if r < 0.93 and f.ttype in T.INT_TYPES and isinstance(f.value, int):
        f.value = T.Raw(overlong(((f.value << 1) ^ (f.value >> 63)) & ((1 << 64) - 1)))
        return f'field {p}: over-long varint'
    if f.ttype == T.BINARY and isinstance(f.value, bytes):
        old = f.value
        f.value = rng.choice([b'', old[:-1], old + b'\x00', bytes(rng.randrange(256) for _ in range(len(old))), old * 2])
        if rng.random() < 0.2:
            f.value = T.Raw(T.varint(len(old) + rng.choice([1, 100, 1 << 20])) + old)
            return f'field {p}: binary length lies'
        return f'field {p}: binary changed'
    if rng.random() < 0.5 and len(par.fields) > 1:
        j = rng.randrange(len(par.fields))
        par.fields[idx], par.fields[j] = par.fields[j], par.fields[idx]
        return f'field {p}: swapped with another field (order)'
    del par.fields[idx]
    return f'field {p} dropped'


def _model(data):
    try:
        return M.PFile(data)
    except (ValueError, T.ThriftError, RecursionError, struct.error):
        return None


def m_footer(rng, data, ctx):
    m = _model(data)
    if m is None:
        return None
    desc = mutate_tree(rng, m.footer, HOT)
    if desc is None:
        return None
    return m.write(m.rebuild(fix_offsets=False)), 'footer: ' + desc


PH_HOT = {(1,), (2,), (3,), (5, 1), (5, 2), (5, 3), (5, 4), (7, 1), (7, 2), (8, 1), (8, 2), (8, 3), (8, 4), (8, 5), (8, 6), (8, 7)}


def m_page_header(rng, data, ctx):
    m = _model(data)
    if m is None or not m.chunks:
        return None
    c = rng.choice(m.chunks)
    if not c.pages:
        return None
    dicts = [pg for pg in c.pages if pg.header.value(1) == M.DICTIONARY_PAGE]
    pg = rng.choice(dicts) if dicts and rng.random() < 0.4 else rng.choice(c.pages)
    desc = mutate_tree(rng, pg.header, PH_HOT)
    if desc is None:
        return None
    return m.to_bytes(), f'page header (rg {c.rg}, col {c.col}, page at {pg.old_offset}): {desc}'


def _values_starts(c, pg, raw, levels_len):
    """Candidate offsets of the values section in a decompressed page."""
    t = pg.header.value(1)
    if t == M.DATA_PAGE_V2 or t == M.DICTIONARY_PAGE:
        return [0]
    pos, starts = 0, []
    for present in (c.max_rep > 0, c.max_def > 0):
        if present:
            if pos + 4 > len(raw):
                return [0]
            pos += 4 + struct.unpack('<I', raw[pos:pos + 4])[0]
    starts.append(pos)
    return starts


def _edit_varints(rng, buf, at, desc):
    """Replaces one of the first four varints from `at` with an interesting value."""
    vals = []
    p = at
    for _ in range(4):
        s = p
        while p < len(buf) and buf[p] & 0x80:
            p += 1
        p += 1
        if p > len(buf):
            break
        vals.append((s, p))
    if not vals:
        return None, desc
    k = rng.choices(range(len(vals)), [3, 1, 4, 1][:len(vals)])[0]  # DELTA: block size, miniblocks, count, first
    s, e = vals[k]
    v = rng.choice([0, 1, 3, I32MAX, 1 << 31, 1 << 32, 1 << 40, 1 << 40, (1 << 62), 1 << 20, 0x7FFFFFFF << 1])
    return bytes(buf[:s]) + T.varint(v) + bytes(buf[e:]), f'{desc}: varint #{k} at +{s - at} -> {v}'


def m_page_payload(rng, data, ctx):
    m = _model(data)
    if m is None or not m.chunks:
        return None
    def interest(ch):
        encs = ch.meta.value(2)
        e = set(encs.items) if isinstance(encs, T.List) else set()
        return 6 if e & {5, 6, 7} else 3 if e & {2, 8, 9} else 1
    c = rng.choices(m.chunks, [interest(ch) for ch in m.chunks])[0]
    pages = [pg for pg in c.pages if pg.header.value(1) in (M.DATA_PAGE, M.DATA_PAGE_V2, M.DICTIONARY_PAGE)]
    if not pages:
        return None
    pg = rng.choice(pages)
    t = pg.header.value(1)
    usize = pg.header.value(2, 0)
    pre = b''
    body = pg.payload
    compressed = True
    if t == M.DATA_PAGE_V2:
        v2 = pg.header.value(8)
        if not isinstance(v2, T.Struct):
            return None
        ll = v2.value(5, 0) + v2.value(6, 0)
        if not 0 <= ll <= len(body):
            return None
        pre, body = body[:ll], body[ll:]
        compressed = v2.value(7, True)
        usize -= ll
    try:
        raw = M.decompress(c.codec, body, usize) if compressed else bytes(body)
    except Exception:
        return None
    enc = None
    if t == M.DATA_PAGE:
        enc = pg.header.value(5).value(2) if isinstance(pg.header.value(5), T.Struct) else None
    elif t == M.DATA_PAGE_V2:
        enc = pg.header.value(8).value(4)
    starts = _values_starts(c, pg, raw, len(pre))
    at = rng.choice(starts)
    r = rng.random()
    what = f'page payload (rg {c.rg}, col {c.col}, type {t}, encoding {enc}, codec {c.codec})'
    if r < 0.55 and at < len(raw) and t != M.DICTIONARY_PAGE:
        if enc in (8, 2):  # RLE_DICTIONARY / PLAIN_DICTIONARY: bit width byte, then runs
            if rng.random() < 0.3:
                raw = raw[:at] + bytes([rng.choice([0, 1, 31, 32, 33, 64, 255])]) + raw[at + 1:]
                what += ': dictionary index bit width changed'
            else:
                raw, what = _edit_varints(rng, raw, at + 1, what + ' RLE run header')
        else:  # DELTA headers (block size, miniblocks, total count, first value) and others
            raw, what = _edit_varints(rng, raw, at, what + ' values header')
        if raw is None:
            return None
    elif r < 0.62 and t == M.DATA_PAGE and (c.max_def or c.max_rep) and len(raw) >= 4:
        v = rng.choice([0, 1, len(raw), len(raw) - 3, I32MAX, 0xFFFFFFFF])
        raw = struct.pack('<I', v) + raw[4:]
        what += f': level buffer length -> {v}'
    elif r < 0.7 and t == M.DATA_PAGE_V2 and len(pre) > 0:
        pre = bytes(b ^ (1 << rng.randrange(8)) if rng.random() < 0.2 else b for b in pre)
        what += ': level bytes flipped'
    elif r < 0.8 and raw:
        raw = bytearray(raw)
        for _ in range(rng.randrange(1, 6)):
            raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
        raw = bytes(raw)
        what += ': decompressed bits flipped'
    elif r < 0.9 and raw:
        raw = raw[:rng.randrange(len(raw))]
        what += ': decompressed payload truncated'
    else:
        raw = raw + raw[:rng.randrange(1, 64)]
        what += ': decompressed payload extended'
    body = M.compress(c.codec, raw) if compressed else raw
    pg.payload = pre + body
    lie = rng.random() < 0.1
    pg.header.fields = [f for f in pg.header.fields if f.fid != 4]  # crc
    for f in pg.header.fields:
        if f.fid == 2 and not lie:
            f.value = len(pre) + len(raw)
        if f.fid == 3:
            f.value = len(pg.payload)
    return m.to_bytes(), what + (' (header keeps the old uncompressed size)' if lie else '')


def m_bitflip(rng, data, ctx):
    b = bytearray(data)
    n = rng.choice([1, 1, 2, 4, 8, 32])
    region = 'anywhere'
    lo, hi = 0, len(b)
    if rng.random() < 0.5 and len(b) > 12:
        fl = struct.unpack('<I', b[-8:-4])[0]
        if 0 < fl < len(b) - 8:
            lo, hi, region = len(b) - 8 - fl, len(b) - 8, 'footer'
    for _ in range(n):
        i = rng.randrange(lo, hi)
        if rng.random() < 0.3:
            b[i] = rng.choice([0, 0xFF, 0x7F, 0x80])
        else:
            b[i] ^= 1 << rng.randrange(8)
    return bytes(b), f'{n} bytes flipped ({region})'


def m_truncate(rng, data, ctx):
    if len(data) < 2:
        return None
    r = rng.random()
    if r < 0.4:
        n = rng.randrange(len(data))
        return data[:n], f'truncated to {n} bytes'
    # cut bytes out of the middle, keep the tail (footer) where it is
    if len(data) < 16:
        return None
    a = rng.randrange(4, len(data) - 8)
    n = rng.randrange(1, min(512, len(data) - a))
    return data[:a] + data[a + n:], f'{n} bytes cut at {a}'


def m_splice(rng, data, ctx):
    other = rng.choice(ctx['pool'])
    if not other or not data:
        return None
    a = rng.randrange(len(data))
    b = rng.randrange(len(other))
    n = rng.randrange(1, min(4096, len(other) - b) + 1)
    if rng.random() < 0.5:
        return data[:a] + other[b:b + n] + data[a + n:], f'{n} bytes at {a} replaced from another seed'
    return data[:a] + other[b:b + n] + data[a:], f'{n} bytes from another seed inserted at {a}'


PARQUET_MUTATIONS = [(m_footer, 30), (m_page_header, 20), (m_page_payload, 25), (m_bitflip, 12), (m_truncate, 5), (m_splice, 8)]


# ------------------------------------------------------------------ Puffin / deletion vectors

def m_dv(rng, data, ctx, src):
    """Edits the deletion-vector blob `src` (offset, length) of a Puffin file; most edits re-frame
    it (length prefix and CRC-32 right) so they reach the bitmap reader. Returns (bytes, src', desc)."""
    off, ln = src['offset'], src['length']
    blob = data[off:off + ln]
    if len(blob) < 12:
        return None
    body = blob[8:-4]  # the portable 64-bit roaring map
    r = rng.random()
    desc = None
    try:
        nmaps = struct.unpack('<Q', body[:8])[0]
    except struct.error:
        return None
    maps = body[8:]
    if r < 0.2 and nmaps >= 1:
        # the first (key, bitmap) pair repeated: the same key twice
        from pyroaring import BitMap
        key = body[8:12]
        bm = BitMap.deserialize(body[12:])
        first = key + bm.serialize()
        extra = BitMap([5, 9, 1000])
        tail = first if rng.random() < 0.5 else key + extra.serialize()
        body = struct.pack('<Q', nmaps + 1) + first + tail + body[12 + len(bm.serialize()):]
        desc = 'roaring map: key repeated'
    elif r < 0.35:
        body = struct.pack('<Q', rng.choice([0, nmaps + 1, 1 << 32, (1 << 64) - 1])) + maps
        desc = 'roaring map: bitmap count changed'
    elif r < 0.5:
        from pyroaring import BitMap64
        n = rng.choice([1 << 16, 1 << 20, 1 << 24])
        bm = BitMap64()
        bm.add_range(0, n)
        for k in range(rng.randrange(1, 4)):
            bm.add_range((k + 1) << 32, ((k + 1) << 32) + n)
        body = bm.serialize()
        desc = f'roaring map: large runs ({n} positions per key)'
    elif r < 0.8 and len(body) > 8:
        b = bytearray(body)
        for _ in range(rng.randrange(1, 4)):
            i = rng.randrange(8, len(b))
            b[i] = rng.choice([0, 0xFF, b[i] ^ (1 << rng.randrange(8))])
        body = bytes(b)
        desc = 'roaring map: bytes changed'
    else:
        b = bytearray(blob)
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
        return bytes(data[:off]) + bytes(b) + bytes(data[off + ln:]), dict(src), f'DV blob byte {i} flipped (framing unchanged)'
    inner = b'\xd1\xd3\x39\x64' + body
    nb = struct.pack('>I', len(inner)) + inner + struct.pack('>I', zlib.crc32(inner) & 0xFFFFFFFF)
    out = bytes(data[:off]) + nb + bytes(data[off + ln:])
    nsrc = dict(src, length=len(nb))
    # the Puffin footer's blob offsets and lengths follow the edit
    try:
        tail = out[-12:]
        plen = struct.unpack('<i', tail[:4])[0]
        fstart = len(out) - 12 - plen
        meta = json.loads(out[fstart:fstart + plen])
        shift = len(nb) - ln
        for bl in meta['blobs']:
            if bl['offset'] == off:
                bl['length'] = len(nb)
                if rng.random() < 0.3:
                    bl['properties']['cardinality'] = str(rng.choice([0, 1, 1 << 40]))
                    desc += '; cardinality changed'
            elif bl['offset'] > off:
                bl['offset'] += shift
        pl = json.dumps(meta).encode()
        out = out[:fstart] + pl + struct.pack('<i', len(pl)) + tail[4:]
    except Exception:
        pass
    return out, nsrc, desc + ' (re-framed, CRC right)'
