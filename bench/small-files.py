#!/usr/bin/env python3
"""Many small overlapping inputs (issue "The bound at any file count"): N pyarrow files (default
settings: SNAPPY, dictionary on) of R rows each, one partition tuple, the files' `ts` ranges
overlapping as sessions interleave in a day. Every file is one session's flush: its rows in `ts`
order, spread over a window of the day that starts anywhere in it (`--span` of the day, default
the whole day: every file overlaps every other, the merge's worst case).

    python3 bench/small-files.py --files 10000 --rows 20 --seed 1 --out bench/data/small-10000
    -> writes part-00000.parquet ... and list.json ({ files, rows, params })

Columns: id (int64, unique), ts (timestamp us UTC), session (string, one of files / 4), kind
(string, 8 values), value (double), text (string, ~80 bytes, repeated phrases), field ids 1-6.
"""

import argparse
import json
import os
import random

import pyarrow as pa
import pyarrow.parquet as pq

DAY_US = 86_400_000_000
BASE_US = 1_796_083_200_000_000  # 2026-12-01T00:00:00Z
KINDS = ["user", "assistant", "tool_use", "tool_result", "system", "summary", "error", "progress"]
WORDS = "the of and to in is you that it he was for on are as with his they at be this have from".split()


def field(name, typ, fid):
    return pa.field(name, typ, metadata={b"PARQUET:field_id": str(fid).encode()})


SCHEMA = pa.schema([
    field("id", pa.int64(), 1),
    field("ts", pa.timestamp("us", tz="UTC"), 2),
    field("session", pa.string(), 3),
    field("kind", pa.string(), 4),
    field("value", pa.float64(), 5),
    field("text", pa.string(), 6),
])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, required=True)
    ap.add_argument("--rows", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--span", type=float, default=1.0, help="fraction of the day one file's rows cover")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)
    sessions = max(1, a.files // 4)
    files = []
    next_id = 0
    for i in range(a.files):
        span = int(DAY_US * a.span)
        start = rng.randrange(0, DAY_US - span + 1) if span < DAY_US else 0
        ts = sorted(BASE_US + start + rng.randrange(0, max(1, span)) for _ in range(a.rows))
        session = f"session-{rng.randrange(sessions):06d}"
        cols = {
            "id": list(range(next_id, next_id + a.rows)),
            "ts": ts,
            "session": [session] * a.rows,
            "kind": [rng.choice(KINDS) for _ in range(a.rows)],
            "value": [rng.random() * 1000 for _ in range(a.rows)],
            "text": [" ".join(rng.choice(WORDS) for _ in range(16)) for _ in range(a.rows)],
        }
        next_id += a.rows
        t = pa.table([pa.array(cols[f.name], f.type) for f in SCHEMA], schema=SCHEMA)
        p = os.path.abspath(os.path.join(a.out, f"part-{i:06d}.parquet"))
        pq.write_table(t, p)
        files.append(p)
    with open(os.path.join(a.out, "list.json"), "w") as fh:
        json.dump({"files": files, "rows": next_id, "params": vars(a)}, fh)


if __name__ == "__main__":
    main()
