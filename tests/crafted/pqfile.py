"""A Parquet file as bytes plus its parsed footer, with the edits tests/crafted/gen.py makes:
replace the footer (FileMetaData) or one page (header and body), moving every offset the footer
holds past the edit so the file stays consistent everywhere but in what the case changes.
Test tooling; nothing here is shipped.
"""

import struct

from thrift_compact import (BINARY, I32, I64, LIST, STRUCT, Field, Struct, parse_struct,
                            write_struct)

# FileMetaData
FMD_SCHEMA, FMD_NUM_ROWS, FMD_ROW_GROUPS, FMD_KV = 2, 3, 4, 5
# RowGroup
RG_COLUMNS, RG_TOTAL_BYTE_SIZE, RG_NUM_ROWS, RG_FILE_OFFSET, RG_TOTAL_COMPRESSED = 1, 2, 3, 5, 6
# ColumnChunk
CC_FILE_OFFSET, CC_META, CC_OFFSET_INDEX_OFFSET, CC_COLUMN_INDEX_OFFSET = 2, 3, 4, 6
# ColumnMetaData
CMD_TYPE, CMD_CODEC, CMD_NUM_VALUES, CMD_TOTAL_UNCOMPRESSED, CMD_TOTAL_COMPRESSED = 1, 4, 5, 6, 7
CMD_DATA_PAGE_OFFSET, CMD_INDEX_PAGE_OFFSET, CMD_DICT_PAGE_OFFSET, CMD_BLOOM_OFFSET = 9, 10, 11, 14
# PageHeader
PH_TYPE, PH_UNCOMPRESSED, PH_COMPRESSED, PH_CRC, PH_DATA, PH_DICT, PH_DATA_V2 = 1, 2, 3, 4, 5, 7, 8
DATA_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 2, 3
CODECS = {0: None, 1: "snappy", 2: "gzip", 6: "zstd"}


class Page:
    def __init__(self, pos, header, header_len, body):
        self.pos, self.header, self.header_len, self.body = pos, header, header_len, body

    @property
    def type(self):
        return self.header.get(PH_TYPE)

    @property
    def total_len(self):
        return self.header_len + len(self.body)


class PqFile:
    def __init__(self, data):
        data = bytes(data)
        assert data[:4] == b"PAR1" and data[-4:] == b"PAR1", "not a Parquet file"
        (flen,) = struct.unpack("<I", data[-8:-4])
        self.footer_start = len(data) - 8 - flen
        self.body = bytearray(data[:self.footer_start])
        self.meta, end = parse_struct(data, self.footer_start)
        assert end == len(data) - 8, "footer length disagrees with its struct"
        # round trip: what we write back is byte-identical to what we read
        assert write_struct(self.meta) == data[self.footer_start:-8], "footer does not round-trip"

    @classmethod
    def read(cls, path):
        with open(path, "rb") as f:
            return cls(f.read())

    def to_bytes(self):
        footer = write_struct(self.meta)
        return bytes(self.body) + footer + struct.pack("<I", len(footer)) + b"PAR1"

    def write(self, path):
        with open(path, "wb") as f:
            f.write(self.to_bytes())

    # ---- navigation

    def row_groups(self):
        return self.meta.get(FMD_ROW_GROUPS).items

    def schema(self):
        return self.meta.get(FMD_SCHEMA).items

    def chunk(self, rg, col):
        return self.row_groups()[rg].get(RG_COLUMNS).items[col]

    def column_index(self, name):
        """Index of the leaf column whose path is `name` (dotted)."""
        cols = self.row_groups()[0].get(RG_COLUMNS).items
        for i, c in enumerate(cols):
            path = b".".join(c.get(CC_META).get(3).items).decode()
            if path == name:
                return i
        raise KeyError(name)

    def pages(self, rg, col):
        md = self.chunk(rg, col).get(CC_META)
        start = md.get(CMD_DICT_PAGE_OFFSET)
        if start is None or start <= 0:
            start = md.get(CMD_DATA_PAGE_OFFSET)
        end = start + md.get(CMD_TOTAL_COMPRESSED)
        out, pos = [], start
        while pos < end:
            h, hend = parse_struct(self.body, pos)
            assert write_struct(h) == bytes(self.body[pos:hend]), "page header does not round-trip"
            n = h.get(PH_COMPRESSED)
            out.append(Page(pos, h, hend - pos, bytes(self.body[hend:hend + n])))
            pos = hend + n
        assert pos == end, "pages do not fill the column chunk"
        return out

    def codec(self, rg, col):
        return CODECS[self.chunk(rg, col).get(CC_META).get(CMD_CODEC)]

    # ---- edits

    def replace_page(self, rg, col, page, header, body):
        """Writes `header` + `body` in place of `page` (of column `col` in row group `rg`) and
        moves every footer offset past it by the change in length."""
        hbytes = write_struct(header)
        new = hbytes + bytes(body)
        old_end = page.pos + page.total_len
        delta = len(new) - page.total_len
        # the uncompressed totals count headers plus uncompressed sizes (a repeated size field:
        # its first occurrence, the one a writer would have written)
        first_unc = lambda h: next(f.value for f in h.fields if f.fid == PH_UNCOMPRESSED)
        unc_delta = len(hbytes) + first_unc(header) - page.header_len - first_unc(page.header)
        self.body[page.pos:old_end] = new
        if delta == 0 and unc_delta == 0:
            return
        for g, group in enumerate(self.row_groups()):
            if group.get(RG_FILE_OFFSET) is not None and group.get(RG_FILE_OFFSET) >= old_end:
                group.set(RG_FILE_OFFSET, group.get(RG_FILE_OFFSET) + delta)
            if g == rg:
                if group.has(RG_TOTAL_BYTE_SIZE):
                    group.set(RG_TOTAL_BYTE_SIZE, group.get(RG_TOTAL_BYTE_SIZE) + unc_delta)
                if group.has(RG_TOTAL_COMPRESSED):
                    group.set(RG_TOTAL_COMPRESSED, group.get(RG_TOTAL_COMPRESSED) + delta)
            for c, cc in enumerate(group.get(RG_COLUMNS).items):
                for fid in (CC_FILE_OFFSET, CC_OFFSET_INDEX_OFFSET, CC_COLUMN_INDEX_OFFSET):
                    if cc.has(fid) and cc.get(fid) >= old_end:
                        cc.set(fid, cc.get(fid) + delta)
                md = cc.get(CC_META)
                for fid in (CMD_DATA_PAGE_OFFSET, CMD_INDEX_PAGE_OFFSET, CMD_DICT_PAGE_OFFSET, CMD_BLOOM_OFFSET):
                    if md.has(fid) and md.get(fid) >= old_end:
                        md.set(fid, md.get(fid) + delta)
                if (g, c) == (rg, col):
                    md.set(CMD_TOTAL_COMPRESSED, md.get(CMD_TOTAL_COMPRESSED) + delta)
                    md.set(CMD_TOTAL_UNCOMPRESSED, md.get(CMD_TOTAL_UNCOMPRESSED) + unc_delta)


def kv_field(key, value):
    return Struct([Field(1, BINARY, key), Field(2, BINARY, value)])


__all__ = ["PqFile", "Page", "kv_field", "Field", "Struct", "I32", "I64", "BINARY", "LIST", "STRUCT"]
