#!/usr/bin/env python3
"""Writes the fuzz targets' committed seeds (fuzz/seeds/<target>/) — the byte layouts are
those of fuzz/targets.rs. Regression seeds found by fuzzing (crash-*) are committed beside them
as libFuzzer saved them and are not written here."""
import os
import struct

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'seeds')


def put(target, name, data):
    os.makedirs(os.path.join(here, target), exist_ok=True)
    with open(os.path.join(here, target, name), 'wb') as f:
        f.write(bytes(data))


def mode(shape, read_size):
    return shape | (read_size << 2)


seed8 = struct.pack('<Q', 0x5EED)

# snappy: raw streams ("abcd" then a copy of 8 bytes 4 back), read 1 byte and 4096 at a time
raw = [12, 0x0c] + list(b'abcd') + [0x11, 4]
put('snappy', 'raw-copy-1', [mode(0, 0)] + raw)
put('snappy', 'raw-copy-1-4096', [mode(1, 3)] + raw)
# a 4 MiB text and a 6 MiB one (one byte XORed) encoded by snap
put('snappy', 'large-4mib', [mode(2, 3), 0] + list(seed8))
put('snappy', 'large-6mib-edited', [mode(2, 5), 255] + list(seed8) + list(struct.pack('<I', 3_000_000)) + [0x40])
# elements: a 201-byte literal, a 4 MiB run, then a copy 2 MiB back (past the 128 KiB window:
# the reader decodes the stream whole)
program = [7, 0, 0, 0, 50, 1, 4, 0, 255, 3 | (10 << 3), 0x00, 0x80]
put('snappy', 'program-far-reference', [mode(3, 3)] + program)

# lz4: "abcd", a match 4 back, then the last literals "wxyz"; 12 bytes declared
block = [0x40] + list(b'abcd') + [4, 0] + [0x40] + list(b'wxyz')
put('lz4', 'raw-sequence', [mode(0, 0), 12, 0, 0] + block)
put('lz4', 'large-4mib', [mode(2, 3), 0] + list(seed8))
# sequences of 640 literals and a 516 KB match 600 back, nine of them (4.6 MB), last literals
op = [0xFF, 10, 0x58, 0x02]
put('lz4', 'program-long-matches', [mode(3, 4), 9, 0, 0x30] + op * 9)

# spill frames: a run of 11 values in chunks of 4 read back; the same with two edits; an empty
# file declaring no rows
content = [0x14] + list(b'alpha,beta,,gamma,delta,epsilon,zeta,eta,theta,iota,kappa')
put('spill_frames', 'run-round-trip', [1] + content)
put('spill_frames', 'run-two-edits', [1 | (2 << 1)] + content + list(struct.pack('<I', 40)) + [0x55] + list(struct.pack('<I', 90)) + [0x01])
put('spill_frames', 'empty-file', [0])

# puffin: bitmaps under keys 0, 1, 6 (scattered values, a range, both optimised); an empty map;
# a broken CRC
ops = [0, 1, 20, 16, 1, 2, 3, 4, 5, 7, 9, 200]
put('puffin', 'three-keys', [1, 0, 7] + ops)
put('puffin', 'empty-map', [0] + [0] * 8)
put('puffin', 'broken-crc', [1 | 6 | (2 << 3), 0, 7] + ops)

# issue 41's fifth input, rebuilt: the far reference makes the reader decode the stream whole,
# and the preamble declares 0xFFFFFFFF bytes (lie 255)
put('snappy', 'issue41-far-reference-declares-4gib', [mode(3, 3), 7, 0, 255] + program[3:])
