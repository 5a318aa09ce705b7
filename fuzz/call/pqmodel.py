"""A Parquet file as the fuzzer edits it: the footer as a generic Thrift tree, every column chunk as
its pages (header tree + payload bytes), and a rebuild that lays the pages out again and moves the
footer's offsets and sizes with them (so an edited page header or payload is still found where the
footer says). Page payloads are decompressed and recompressed with the chunk's codec (pyarrow's
codecs) so an edit reaches the decoders behind them.
"""

import struct

import pyarrow as pa

import cthrift as T

CODECS = {0: None, 1: 'snappy', 2: 'gzip', 4: 'brotli', 6: 'zstd', 7: 'lz4_raw'}
DATA_PAGE, INDEX_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 1, 2, 3


class Page:
    __slots__ = ('header', 'payload', 'old_offset')

    def __init__(self, header, payload, old_offset):
        self.header, self.payload, self.old_offset = header, payload, old_offset


class Chunk:
    __slots__ = ('rg', 'col', 'start', 'end', 'pages', 'codec', 'max_def', 'max_rep', 'meta')

    def __init__(self, rg, col, start, end, pages, codec, meta):
        self.rg, self.col, self.start, self.end, self.pages, self.codec, self.meta = rg, col, start, end, pages, codec, meta
        self.max_def = self.max_rep = 0


def leaf_levels(schema_items):
    """[(max_def, max_rep)] per leaf, in order, from the flattened schema list."""
    out = []
    pos = [1]  # skip the root

    def walk(d, r, n):
        for _ in range(n):
            if pos[0] >= len(schema_items):
                return
            el = schema_items[pos[0]]
            pos[0] += 1
            rep = el.value(3, 0) if isinstance(el, T.Struct) else 0
            dd = d + (1 if rep in (1, 2) else 0)
            rr = r + (1 if rep == 2 else 0)
            kids = el.value(5, 0) if isinstance(el, T.Struct) else 0
            if isinstance(kids, int) and 0 < kids < 10_000:
                walk(dd, rr, kids)
            else:
                out.append((dd, rr))

    root = schema_items[0] if schema_items else None
    n = root.value(5, 0) if isinstance(root, T.Struct) else 0
    walk(0, 0, n if isinstance(n, int) and 0 <= n < 10_000 else 0)
    return out


class PFile:
    def __init__(self, data):
        self.data = bytes(data)
        if len(data) < 12 or data[:4] != b'PAR1' or data[-4:] != b'PAR1':
            raise ValueError('not parquet')
        n = struct.unpack('<I', data[-8:-4])[0]
        self.footer_start = len(data) - 8 - n
        if self.footer_start < 4:
            raise ValueError('footer length')
        self.footer, end = T.read_struct(data, self.footer_start)
        self.chunks = []
        rgs = self.footer.value(4)
        levels = []
        schema = self.footer.value(2)
        if isinstance(schema, T.List):
            levels = leaf_levels(schema.items)
        if not isinstance(rgs, T.List):
            return
        for ri, rg in enumerate(rgs.items):
            cols = rg.value(1) if isinstance(rg, T.Struct) else None
            if not isinstance(cols, T.List):
                continue
            for ci, cc in enumerate(cols.items):
                md = cc.value(3) if isinstance(cc, T.Struct) else None
                if not isinstance(md, T.Struct):
                    continue
                dpo, dio, size = md.value(9), md.value(11), md.value(7)
                if not isinstance(dpo, int) or not isinstance(size, int):
                    continue
                start = dio if isinstance(dio, int) and 0 < dio < dpo else dpo
                end = start + size
                if start < 4 or end > self.footer_start:
                    continue
                pages = []
                pos = start
                try:
                    while pos < end:
                        h, hend = T.read_struct(data, pos)
                        csz = h.value(3)
                        if not isinstance(csz, int) or csz < 0 or hend + csz > end:
                            raise T.ThriftError('page size')
                        pages.append(Page(h, data[hend:hend + csz], pos))
                        pos = hend + csz
                except (T.ThriftError, RecursionError):
                    continue
                ch = Chunk(ri, ci, start, end, pages, md.value(4, 0), md)
                if ci < len(levels):
                    ch.max_def, ch.max_rep = levels[ci]
                self.chunks.append(ch)
        self.chunks.sort(key=lambda c: c.start)
        # drop overlapping chunks (a writer's or our own doing): they are kept as raw bytes
        kept, last = [], 4
        for c in self.chunks:
            if c.start >= last:
                kept.append(c)
                last = c.end
        self.chunks = kept

    def rebuild(self, fix_offsets=True):
        """The file with every chunk's pages written again and the footer's offsets moved with them."""
        out = bytearray(b'PAR1')
        pos = 4
        moves = {}  # old offset -> new offset (page starts, chunk starts)
        segs = []  # (old_start, old_end, new_start) of copied raw bytes
        sizes = {}  # (rg, col) -> (delta compressed, delta uncompressed)
        for c in self.chunks:
            if c.start > pos:
                segs.append((pos, c.start, len(out)))
                out += self.data[pos:c.start]
            new_start = len(out)
            moves[c.start] = new_start
            du = 0
            for pg in c.pages:
                moves[pg.old_offset] = len(out)
                hb = T.dumps(pg.header)
                out += hb
                out += pg.payload
                us = pg.header.value(2, 0)
                du += len(hb) + (us if isinstance(us, int) else 0)
            old_u = 0
            sizes[(c.rg, c.col)] = (len(out) - new_start) - (c.end - c.start), du
            pos = c.end
        if self.footer_start > pos:
            segs.append((pos, self.footer_start, len(out)))
            out += self.data[pos:self.footer_start]

        def move(o):
            if not isinstance(o, int):
                return o
            if o in moves:
                return moves[o]
            for a, b, n in segs:
                if a <= o < b:
                    return n + (o - a)
            if o >= self.footer_start:
                return o + (len(out) - self.footer_start)
            return o

        if fix_offsets:
            rgs = self.footer.value(4)
            for ri, rg in enumerate(rgs.items if isinstance(rgs, T.List) else []):
                if not isinstance(rg, T.Struct):
                    continue
                rg_delta = 0
                cols = rg.value(1)
                for ci, cc in enumerate(cols.items if isinstance(cols, T.List) else []):
                    if not isinstance(cc, T.Struct):
                        continue
                    for f in cc.fields:
                        if f.fid in (2, 4, 6) and f.ttype == T.I64:
                            f.value = move(f.value)
                    md = cc.value(3)
                    if not isinstance(md, T.Struct):
                        continue
                    for f in md.fields:
                        if f.fid in (9, 10, 11, 14) and f.ttype == T.I64:
                            f.value = move(f.value)
                    if (ri, ci) in sizes:
                        dc, new_u = sizes[(ri, ci)]
                        rg_delta += dc
                        for f in md.fields:
                            if f.fid == 7 and isinstance(f.value, int):
                                f.value += dc
                            if f.fid == 6 and isinstance(f.value, int):
                                f.value = new_u
                for f in rg.fields:
                    if f.fid == 5 and f.ttype == T.I64:
                        f.value = move(f.value)
                    if f.fid == 7 and isinstance(f.value, int):
                        f.value += rg_delta
        return bytes(out)

    def write(self, body, footer_bytes=None):
        fb = T.dumps(self.footer) if footer_bytes is None else footer_bytes
        return body + fb + struct.pack('<I', len(fb)) + b'PAR1'

    def to_bytes(self):
        return self.write(self.rebuild())


def decompress(codec, payload, size):
    name = CODECS.get(codec, 'x')
    if name is None:
        return bytes(payload)
    if name == 'x':
        raise ValueError(f'codec {codec}')
    return pa.Codec(name).decompress(payload, decompressed_size=size).to_pybytes()


def compress(codec, data):
    name = CODECS.get(codec, 'x')
    if name is None:
        return bytes(data)
    return pa.Codec(name).compress(data, asbytes=True)
