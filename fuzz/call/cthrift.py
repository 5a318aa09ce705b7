"""A generic Thrift compact-protocol reader and writer (test tooling for the whole-call fuzzer).

A struct is read into a `Struct`: its fields in wire order, each a `Field(fid, ttype, value)`,
without a schema, so a mutation can edit any value, repeat or drop a field, change a wire type or a
list's declared length, and write the struct back byte for byte (an unmodified struct written back
is the same bytes, save a long-form field header written by a writer where the short form fits).
"""

STOP, TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(13)
INT_TYPES = (BYTE, I16, I32, I64)
NAMES = {TRUE: 'true', FALSE: 'false', BYTE: 'i8', I16: 'i16', I32: 'i32', I64: 'i64', DOUBLE: 'double',
         BINARY: 'binary', LIST: 'list', SET: 'set', MAP: 'map', STRUCT: 'struct'}
MAX_DEPTH = 64


class ThriftError(Exception):
    pass


class Field:
    __slots__ = ('fid', 'ttype', 'value')

    def __init__(self, fid, ttype, value):
        self.fid, self.ttype, self.value = fid, ttype, value

    def __repr__(self):
        return f'Field({self.fid}, {NAMES.get(self.ttype, self.ttype)}, {self.value!r})'


class Struct:
    __slots__ = ('fields',)

    def __init__(self, fields=None):
        self.fields = fields if fields is not None else []

    def get(self, fid):
        """The last field with this id (what a last-wins reader takes), or None."""
        for f in reversed(self.fields):
            if f.fid == fid:
                return f
        return None

    def value(self, fid, default=None):
        f = self.get(fid)
        return default if f is None else f.value

    def __repr__(self):
        return f'Struct({self.fields!r})'


class List:
    """A list or set: element type, items, and a declared length (None: the items' count); `wtype`,
    when set, is the type the items are written as (a header that lies about its element type)."""
    __slots__ = ('etype', 'items', 'declared', 'wtype')

    def __init__(self, etype, items, declared=None):
        self.etype, self.items, self.declared, self.wtype = etype, items, declared, None

    def __repr__(self):
        return f'List({NAMES.get(self.etype, self.etype)}, {self.items!r})'


class Map:
    __slots__ = ('ktype', 'vtype', 'items', 'declared')

    def __init__(self, ktype, vtype, items, declared=None):
        self.ktype, self.vtype, self.items, self.declared = ktype, vtype, items, declared


class Raw:
    """Bytes written verbatim in place of a value (an over-long varint, a lying length)."""
    __slots__ = ('data',)

    def __init__(self, data):
        self.data = bytes(data)

    def __repr__(self):
        return f'Raw({self.data.hex()})'


# ------------------------------------------------------------------ reading

class Reader:
    def __init__(self, buf, pos=0):
        self.buf, self.pos = buf, pos

    def byte(self):
        if self.pos >= len(self.buf):
            raise ThriftError('eof')
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def varint(self):
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 70:
                raise ThriftError('varint too long')

    def zigzag(self):
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def take(self, n):
        if n < 0 or self.pos + n > len(self.buf):
            raise ThriftError('binary past the end')
        out = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return out

    def value(self, ttype, depth):
        if depth > MAX_DEPTH:
            raise ThriftError('too deep')
        if ttype in (TRUE, FALSE):  # inside a list: one byte
            return self.byte() == 1
        if ttype == BYTE:
            b = self.byte()
            return b - 256 if b > 127 else b
        if ttype in (I16, I32, I64):
            return self.zigzag()
        if ttype == DOUBLE:
            import struct
            return struct.unpack('<d', self.take(8))[0]
        if ttype == BINARY:
            return self.take(self.varint())
        if ttype in (LIST, SET):
            h = self.byte()
            n, et = h >> 4, h & 0x0F
            if n == 15:
                n = self.varint()
            if n > len(self.buf):
                raise ThriftError('list longer than the buffer')
            return List(et, [self.value(et, depth + 1) for _ in range(n)])
        if ttype == MAP:
            n = self.varint()
            if n == 0:
                return Map(0, 0, [])
            if n > len(self.buf):
                raise ThriftError('map longer than the buffer')
            h = self.byte()
            kt, vt = h >> 4, h & 0x0F
            return Map(kt, vt, [(self.value(kt, depth + 1), self.value(vt, depth + 1)) for _ in range(n)])
        if ttype == STRUCT:
            return self.struct(depth + 1)
        raise ThriftError(f'unknown type {ttype}')

    def struct(self, depth=0):
        s = Struct()
        last = 0
        while True:
            h = self.byte()
            t = h & 0x0F
            if t == STOP:
                return s
            d = h >> 4
            fid = last + d if d else self.zigzag()
            last = fid
            if t in (TRUE, FALSE):
                s.fields.append(Field(fid, t, t == TRUE))
            else:
                s.fields.append(Field(fid, t, self.value(t, depth)))


def read_struct(buf, pos=0):
    """(Struct, end position)."""
    r = Reader(buf, pos)
    s = r.struct()
    return s, r.pos


# ------------------------------------------------------------------ writing

def varint(n):
    n &= (1 << 70) - 1  # negative values: as a writer that does not check would emit them
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def zigzag(n):
    return varint((n << 1) ^ (n >> 69)) if n < 0 else varint(n << 1)


def write_value(out, ttype, v):
    if isinstance(v, Raw):
        out += v.data
    elif ttype in (TRUE, FALSE):
        out.append(1 if v else 2)
    elif ttype == BYTE:
        out.append(int(v) & 0xFF)
    elif ttype in (I16, I32, I64):
        out += zigzag(int(v))
    elif ttype == DOUBLE:
        import struct
        out += struct.pack('<d', float(v))
    elif ttype == BINARY:
        out += varint(len(v)) + v
    elif ttype in (LIST, SET):
        n = len(v.items) if v.declared is None else v.declared
        if n < 15:
            out.append((n << 4) | (v.etype & 0x0F))
        else:
            out.append(0xF0 | (v.etype & 0x0F))
            out += varint(n)
        for x in v.items:
            write_value(out, v.etype if v.wtype is None else v.wtype, x)
    elif ttype == MAP:
        n = len(v.items) if v.declared is None else v.declared
        out += varint(n)
        if n:
            out.append(((v.ktype & 0x0F) << 4) | (v.vtype & 0x0F))
        for k, x in v.items:
            write_value(out, v.ktype, k)
            write_value(out, v.vtype, x)
    elif ttype == STRUCT:
        write_struct(out, v)
    else:
        raise ThriftError(f'cannot write type {ttype}')


def write_struct(out, s):
    last = 0
    for f in s.fields:
        t = f.ttype
        if t in (TRUE, FALSE) and isinstance(f.value, bool):
            t = TRUE if f.value else FALSE
        d = f.fid - last
        if 0 < d <= 15:
            out.append((d << 4) | t)
        else:
            out.append(t)
            out += zigzag(f.fid)
        last = f.fid
        if t not in (TRUE, FALSE) or isinstance(f.value, Raw):
            write_value(out, t, f.value)
    out.append(STOP)
    return out


def dumps(s):
    return bytes(write_struct(bytearray(), s))


def walk(node, path=()):
    """Every (path, container, index-or-Field) in a tree: yields (path, Field, parent Struct) for
    fields, and (path, List, None) for lists, depth first."""
    if isinstance(node, Struct):
        for f in node.fields:
            p = path + (f.fid,)
            yield p, f, node
            yield from walk(f.value, p)
    elif isinstance(node, List):
        yield path, node, None
        for i, x in enumerate(node.items):
            yield from walk(x, path + ('[]',))
    elif isinstance(node, Map):
        for k, x in node.items:
            yield from walk(x, path + ('{}',))
