"""Thrift compact protocol: a reader that keeps every field as written (order, id, wire type,
repeats) and a writer that writes back exactly that, so a footer or page header can be edited by
exact changes (a field repeated, a wire type changed, a value replaced) and written again.
Test tooling for tests/crafted/gen.py; nothing here is shipped.

Types (the compact protocol's wire type nibbles): 1/2 bool true/false, 3 i8, 4 i16, 5 i32, 6 i64,
7 double, 8 binary, 9 list, 10 set, 11 map, 12 struct.
"""

BOOL_TRUE, BOOL_FALSE, I8, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(1, 13)


class Field:
    """One field as it appears on the wire: `ttype` is its wire type (for bools, 1 or 2)."""

    __slots__ = ("fid", "ttype", "value")

    def __init__(self, fid, ttype, value):
        self.fid, self.ttype, self.value = fid, ttype, value

    def __repr__(self):
        return f"Field({self.fid}, {self.ttype}, {self.value!r})"


class Struct:
    """A struct as its fields in wire order (a repeated id stays repeated)."""

    def __init__(self, fields=None):
        self.fields = list(fields or [])

    def get(self, fid, default=None):
        """The last occurrence of `fid` (what a reader that lets the last win sees)."""
        found = [f for f in self.fields if f.fid == fid]
        return found[-1].value if found else default

    def field(self, fid):
        found = [f for f in self.fields if f.fid == fid]
        if len(found) != 1:
            raise KeyError(f"field {fid} occurs {len(found)} times")
        return found[0]

    def set(self, fid, value):
        """Replaces the value of the only occurrence of `fid`, keeping its wire type."""
        self.field(fid).value = value

    def has(self, fid):
        return any(f.fid == fid for f in self.fields)

    def __repr__(self):
        return f"Struct({self.fields!r})"


class Seq:
    """A list or set: `ttype` LIST or SET, elements of wire type `etype`."""

    def __init__(self, ttype, etype, items):
        self.ttype, self.etype, self.items = ttype, etype, list(items)

    def __repr__(self):
        return f"Seq({self.ttype}, {self.etype}, {self.items!r})"


class Map:
    def __init__(self, ktype, vtype, items):
        self.ktype, self.vtype, self.items = ktype, vtype, list(items)


# ---------------------------------------------------------------- reading

class Reader:
    def __init__(self, buf, pos=0):
        self.buf, self.pos = buf, pos

    def byte(self):
        if self.pos >= len(self.buf):
            raise ValueError("thrift: out of data")
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def varint(self):
        v, shift = 0, 0
        while True:
            b = self.byte()
            v |= (b & 0x7F) << shift
            if not b & 0x80:
                return v
            shift += 7

    def zigzag(self):
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def value(self, t):
        if t in (BOOL_TRUE, BOOL_FALSE):
            # inside a list or set a bool is one byte (1 true, 2 false)
            return self.byte() == 1
        if t == I8:
            b = self.byte()
            return b - 256 if b > 127 else b
        if t in (I16, I32, I64):
            return self.zigzag()
        if t == DOUBLE:
            v = self.buf[self.pos:self.pos + 8]
            self.pos += 8
            return bytes(v)
        if t == BINARY:
            n = self.varint()
            v = bytes(self.buf[self.pos:self.pos + n])
            if len(v) != n:
                raise ValueError("thrift: binary past the end")
            self.pos += n
            return v
        if t in (LIST, SET):
            h = self.byte()
            size, et = h >> 4, h & 0x0F
            if size == 15:
                size = self.varint()
            return Seq(t, et, [self.value(et) for _ in range(size)])
        if t == MAP:
            size = self.varint()
            if size == 0:
                return Map(0, 0, [])
            kv = self.byte()
            kt, vt = kv >> 4, kv & 0x0F
            return Map(kt, vt, [(self.value(kt), self.value(vt)) for _ in range(size)])
        if t == STRUCT:
            return self.struct()
        raise ValueError(f"thrift: unknown wire type {t} at {self.pos}")

    def struct(self):
        out, last = Struct(), 0
        while True:
            h = self.byte()
            if h == 0:
                return out
            delta, t = h >> 4, h & 0x0F
            fid = last + delta if delta else self.zigzag()
            last = fid
            if t in (BOOL_TRUE, BOOL_FALSE):
                out.fields.append(Field(fid, t, t == BOOL_TRUE))
            else:
                out.fields.append(Field(fid, t, self.value(t)))


def parse_struct(buf, pos=0):
    """(Struct, end position) of the struct starting at `pos`."""
    r = Reader(buf, pos)
    s = r.struct()
    return s, r.pos


# ---------------------------------------------------------------- writing

def varint(v):
    if v < 0:
        raise ValueError("varint of a negative number")
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def zigzag(v):
    return varint((v << 1) ^ (v >> 63)) if -(1 << 63) <= v < (1 << 63) else varint((v << 1) ^ -(v < 0))


def write_value(t, v):
    if t in (BOOL_TRUE, BOOL_FALSE):
        return bytes([1 if v else 2])
    if t == I8:
        return bytes([v & 0xFF])
    if t in (I16, I32, I64):
        return zigzag(v)
    if t == DOUBLE:
        return bytes(v)
    if t == BINARY:
        return varint(len(v)) + bytes(v)
    if t in (LIST, SET):
        n = len(v.items)
        head = bytes([(n << 4) | v.etype]) if n < 15 else bytes([0xF0 | v.etype]) + varint(n)
        return head + b"".join(write_value(v.etype, x) for x in v.items)
    if t == MAP:
        if not v.items:
            return b"\x00"
        return varint(len(v.items)) + bytes([(v.ktype << 4) | v.vtype]) + b"".join(
            write_value(v.ktype, k) + write_value(v.vtype, x) for k, x in v.items)
    if t == STRUCT:
        return write_struct(v)
    raise ValueError(f"thrift: unknown wire type {t}")


def write_struct(s):
    out, last = bytearray(), 0
    for f in s.fields:
        t = f.ttype
        if t in (BOOL_TRUE, BOOL_FALSE):
            t = BOOL_TRUE if f.value else BOOL_FALSE
        delta = f.fid - last
        if 0 < delta <= 15:
            out.append((delta << 4) | t)
        else:
            # the long form: a zero delta, then the id as a zigzag i16 (how a repeat or a
            # backward jump must be written)
            out.append(t)
            out += zigzag(f.fid)
        last = f.fid
        if t not in (BOOL_TRUE, BOOL_FALSE):
            out += write_value(t, f.value)
    out.append(0)
    return bytes(out)
