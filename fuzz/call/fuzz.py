#!/usr/bin/env python3
"""Whole-call mutation fuzzer of gencompact's public call (compactGeneration). See README.md here.

Every execution: a seed case (seeds.py), zero to three mutations of one of its files (mutate.py),
options sampled, one call in its own node process (driver.js) under an address-space cap and a
timeout, its peak RSS read; then the outcome classified:
  signal, abort (SIGABRT), hang (timeout), exit (non-zero exit without a result),
  rss (peak RSS above the idle process past 3 x batchBytes + 64 MiB, plus --rss-slack),
  internal (ERR_INTERNAL), untyped (an error without a known `code`),
  invalid-accepted (a success on an input the spec gives no reading: a deletion vector repeating a key),
  leftover (files in outDir after a failure, or not among the returned files after a success),
  unreadable (an output pyarrow cannot read), rows-differ (the outputs' rows, as a multiset, differ
  from pyarrow's reading of the inputs minus the deleted rows, deduplicated as dedupeBy says; only
  where pyarrow reads every input and delete file).
Findings are saved under OUT/findings/<signature>/<n>/ (the call's files, job.json, finding.json);
OUT/summary.json counts executions, classes and distinct signatures. Execution i is a function of
(--seed, i) alone: `--only i` replays it.
"""

import argparse
import collections
import datetime
import decimal
import hashlib
import json
import os
import random
import re
import resource
import shutil
import signal
import struct
import subprocess
import sys
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import pyarrow.parquet as pq  # noqa: E402

import cthrift  # noqa: E402
import mutate  # noqa: E402
import pqmodel  # noqa: E402
import seeds  # noqa: E402

KNOWN_CODES = {'ERR_INVALID_OPTIONS', 'ERR_INPUT_NOT_FOUND', 'ERR_INPUT_CORRUPT', 'ERR_SCHEMA_CONFLICT', 'ERR_IO',
               'ERR_ABORTED', 'ERR_VERIFY_FAILED', 'ERR_INTERNAL'}
MIB = 1 << 20


# ------------------------------------------------------------------ the oracle (pyarrow, pyroaring)

def canon(v):
    if isinstance(v, bytes):
        return 'b:' + v.hex()
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time, datetime.timedelta, decimal.Decimal)):
        return f'{type(v).__name__}:{v.isoformat() if hasattr(v, "isoformat") else v}'
    if isinstance(v, dict):
        return {k: canon(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [canon(x) for x in v]
    return v


def plain_type(t):
    """A column's type with the encodings a reader may choose erased (dictionary, large, view)."""
    import pyarrow as pa
    if pa.types.is_dictionary(t):
        return plain_type(t.value_type)
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return pa.list_(t.value_field.with_type(plain_type(t.value_type)))
    return t


def rows_of(t):
    """The table's rows as dicts; temporal columns as integers (any value converts), so a value
    Python's datetime cannot hold still compares."""
    import pyarrow as pa
    cols = {}
    for name, col in zip(t.column_names, t.columns):
        ty = col.type
        if pa.types.is_dictionary(ty):
            col = col.cast(ty.value_type)
            ty = ty.value_type
        if pa.types.is_timestamp(ty) or pa.types.is_duration(ty) or pa.types.is_time64(ty):
            col = col.cast(pa.int64())
        elif pa.types.is_date32(ty) or pa.types.is_time32(ty):
            col = col.cast(pa.int32())
        elif pa.types.is_date64(ty):
            col = col.cast(pa.int64())
        cols[name] = col.to_pylist()
    names = list(cols)
    return [dict(zip(names, vals)) for vals in zip(*cols.values())] if names else []


def row_line(row, names):
    return json.dumps([canon(row[n]) for n in names], separators=(',', ':'))


def field_ids(schema):
    out = {}
    for f in schema:
        md = f.metadata or {}
        if b'PARQUET:field_id' in md:
            out[int(md[b'PARQUET:field_id'])] = f.name
    return out


class InvalidBySpec(ValueError):
    """An input the spec gives no reading and a call must reject (a deletion vector whose 64-bit
    Roaring map repeats a key or lists keys out of order: Iceberg's Puffin spec, issue 41)."""


def dv_positions(d):
    from pyroaring import BitMap64
    with open(d['path'], 'rb') as f:
        f.seek(d['offset'])
        blob = f.read(d['length'])
    n = struct.unpack('>I', blob[:4])[0]
    if len(blob) != n + 8 or blob[4:8] != seeds.DV_MAGIC:
        raise ValueError('DV framing')
    if struct.unpack('>I', blob[4 + n:8 + n])[0] != zlib.crc32(blob[4:4 + n]) & 0xFFFFFFFF:
        raise ValueError('DV CRC')
    body = blob[8:4 + n]
    # the spec: keys strictly ascending, one bitmap per key (a map breaking it has no reading)
    cnt = struct.unpack('<Q', body[:8])[0]
    pos, last = 8, -1
    from pyroaring import BitMap
    for _ in range(cnt):
        key = struct.unpack('<I', body[pos:pos + 4])[0]
        if key <= last:
            raise InvalidBySpec(f'deletion vector keys not strictly ascending ({last} then {key})')
        last = key
        bm = BitMap.deserialize(body[pos + 4:])
        pos += 4 + len(bm.serialize())
    if pos != len(body):
        raise ValueError('DV trailing bytes')
    return BitMap64.deserialize(body)


def repeated_dictionary_value(path, table):
    """The name of a column pyarrow reads as an Arrow dictionary from a chunk whose dictionary page
    repeats a value, else None. The format does not forbid a repeat; DuckDB and parquet-rs read the
    indices by position, but pyarrow's dictionary reader keeps one entry per distinct value and
    every later index then names the next value: there is no single reading to compare with."""
    import pyarrow as pa
    dict_columns = {f.name for f in table.schema if pa.types.is_dictionary(f.type)}
    if not dict_columns:
        return None
    with open(path, 'rb') as fh:
        model = pqmodel.PFile(fh.read())
    for c in model.chunks:
        names = c.meta.value(3)
        name = names.items[0] if isinstance(names, cthrift.List) and names.items else None
        name = name.decode(errors='replace') if isinstance(name, bytes) else name
        if c.meta.value(1) != 6 or name not in dict_columns:  # BYTE_ARRAY only
            continue
        for pg in c.pages:
            dh = pg.header.value(7)
            if pg.header.value(1) != pqmodel.DICTIONARY_PAGE or not isinstance(dh, cthrift.Struct):
                continue
            try:
                raw = pqmodel.decompress(c.codec, pg.payload, pg.header.value(2, 0))
            except Exception:
                continue
            seen, pos = set(), 0
            for _ in range(max(0, min(dh.value(1, 0), len(raw) // 4))):
                if pos + 4 > len(raw):
                    break
                n = struct.unpack('<I', raw[pos:pos + 4])[0]
                v = raw[pos + 4:pos + 4 + n]
                pos += 4 + n
                if v in seen:
                    return name
                seen.add(v)
    return None


def read_plain(path):
    """pyarrow's reading of `path` with its `ARROW:schema` left out (a copy in memory): the
    Parquet columns' own types, dictionaries decoded by position."""
    import pyarrow as pa
    with open(path, 'rb') as fh:
        data = fh.read()
    n = struct.unpack('<I', data[-8:-4])[0]
    footer, _ = cthrift.read_struct(data, len(data) - 8 - n)
    kv = footer.value(5)
    if isinstance(kv, cthrift.List):
        kv.items = [e for e in kv.items if not (isinstance(e, cthrift.Struct) and e.value(1) == b'ARROW:schema')]
    fb = cthrift.dumps(footer)
    return pq.read_table(pa.BufferReader(data[:len(data) - 8 - n] + fb + struct.pack('<I', len(fb)) + b'PAR1'))


def expected_rows(files, dedupe):
    """(column names, Counter of row lines, read without ARROW:schema) as pyarrow reads the inputs
    minus their deletes, or (None, reason) where some input has no reading. Where a dictionary
    page repeats a value (repeated_dictionary_value), every input is read without its
    `ARROW:schema` (and the outputs too, by classify)."""
    names = None
    schema0 = None
    lines = []
    seen = set()
    dcache = {}
    tables = []
    for inp in files:
        try:
            tables.append(pq.read_table(inp['path']))
        except Exception as e:
            return None, f'pyarrow cannot read {os.path.basename(inp["path"])}: {str(e)[:120]}'
    plain_read = False
    for inp, t in zip(files, tables):
        try:
            plain_read = plain_read or repeated_dictionary_value(inp['path'], t) is not None
        except (ValueError, cthrift.ThriftError, RecursionError):
            pass
    if plain_read:
        try:
            tables = [read_plain(inp['path']) for inp in files]
        except Exception as e:
            return None, f'pyarrow cannot read a copy without ARROW:schema: {str(e)[:120]}'
    for inp, t in zip(files, tables):
        s = t.schema.remove_metadata()
        if schema0 is None:
            schema0, names = s, t.column_names
        elif not s.equals(schema0):
            return None, 'inputs differ in schema'
        loc = inp.get('location', inp['path'])
        from pyroaring import BitMap64
        deleted = BitMap64()
        eq_sets = []
        try:
            for d in inp.get('deletes', []):
                if d['kind'] == 'position':
                    if d['path'] not in dcache:
                        dcache[d['path']] = pq.read_table(d['path']).to_pylist()
                    deleted |= BitMap64([r['pos'] for r in dcache[d['path']] if r['file_path'] == loc and r['pos'] is not None and r['pos'] >= 0])
                elif d['kind'] == 'deletion-vector':
                    deleted |= dv_positions(d)
                else:
                    dt = pq.read_table(d['path'])
                    dids, tids = field_ids(dt.schema), field_ids(t.schema)
                    cols = [(dids[i], tids[i]) for i in d['fieldIds']]
                    eq_sets.append(([c[1] for c in cols], {json.dumps([canon(r[c[0]]) for c in cols]) for r in dt.to_pylist()}))
        except InvalidBySpec as e:
            return None, f'INVALID: {e}'
        except Exception as e:
            return None, f'delete file has no reading: {type(e).__name__} {str(e)[:100]}'
        try:
            trows = rows_of(t)
        except Exception as e:
            return None, f'pyarrow reads {os.path.basename(inp["path"])} but its values do not convert: {str(e)[:100]}'
        for i, r in enumerate(trows):
            if i in deleted:
                continue
            if any(json.dumps([canon(r[c]) for c in cs]) in st for cs, st in eq_sets):
                continue
            if dedupe:
                k = r.get(dedupe)
                if k is not None:
                    kk = json.dumps(canon(k))
                    if kk in seen:
                        continue
                    seen.add(kk)
            lines.append(row_line(r, names))
    return [(n, str(plain_type(schema0.field(n).type))) for n in names], collections.Counter(lines), plain_read


# ------------------------------------------------------------------ one call

def limit(as_bytes):
    def f():
        resource.setrlimit(resource.RLIMIT_AS, (as_bytes, as_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.setsid()
    return f


def vm_hwm(pid):
    try:
        with open(f'/proc/{pid}/status') as f:
            m = re.search(r'^VmHWM:\s+(\d+) kB', f.read(), re.M)
            return int(m.group(1)) * 1024 if m else 0
    except OSError:
        return 0


def run_call(cfg, files, opts, workdir):
    job = os.path.join(workdir, 'job.json')
    res = os.path.join(workdir, 'result.json')
    with open(job, 'w') as f:
        json.dump({'files': files, 'opts': opts}, f)
    if os.path.exists(res):
        os.unlink(res)
    env = dict(os.environ)
    env.update(cfg['env'])
    t0 = time.monotonic()
    errf = open(os.path.join(workdir, 'stderr.txt'), 'wb+')
    p = subprocess.Popen(['node', cfg.get('driver', os.path.join(HERE, 'driver.js')), job, res], stdout=subprocess.DEVNULL, stderr=errf,
                         env=env, preexec_fn=limit(cfg['as_bytes']))
    hwm, hung = 0, False
    while True:
        try:
            p.wait(timeout=0.02)
            break
        except subprocess.TimeoutExpired:
            hwm = max(hwm, vm_hwm(p.pid))
            if time.monotonic() - t0 > cfg['timeout']:
                hung = True
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                break
    elapsed = time.monotonic() - t0
    errf.seek(0)
    stderr = errf.read().decode('utf8', 'replace')
    errf.close()
    result = None
    if os.path.exists(res):
        try:
            with open(res) as f:
                result = json.load(f)
        except ValueError:
            result = None
    return {'rc': p.returncode, 'hung': hung, 'elapsed': elapsed, 'hwm': hwm, 'stderr': stderr[:200_000], 'result': result}


def crash_line(stderr):
    """What a dying process said: the allocation failure, panic or fatal error line, and the first
    backtrace frame in parquet / arrow / gencompact code (where it was asked for)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    head = next((ln for ln in lines if re.search(r'memory allocation of|panicked at|FATAL|fatal|Segmentation|overflow', ln)),
                lines[-1] if lines else '')
    head = re.sub(r'^memory allocation of \d+(memory allocation of)', r'\1', head)
    frame = next((m.group(1) for ln in lines for m in [re.match(r'\d+: ((?:parquet|arrow\w*|gencompact)::\S+)', ln)] if m), '')
    frame = re.sub(r'<[^<>]*>', '', re.sub(r'<[^<>]*>', '', frame))
    return f'{head[:160]}{" at " + frame[:120] if frame else ""}'


def classify(cfg, case_files, opts, out, oracle):
    """[(class, detail)] for one call's outcome; oracle() gives the expected rows lazily."""
    found = []
    res = out['result']
    if out['hung']:
        return [('hang', f'no end within {cfg["timeout"]} s')]
    if out['rc'] is not None and out['rc'] < 0:
        sig = -out['rc']
        return [('abort' if sig == signal.SIGABRT else 'signal', f'{signal.Signals(sig).name}: {crash_line(out["stderr"])}')]
    if res is None:
        tail = [ln for ln in out['stderr'].splitlines() if ln.strip()][-1:] or ['']
        return [('exit', f'exit {out["rc"]} without a result: {tail[0][:200]}')]
    bb = opts.get('batchBytes', 32 * MIB)
    rise = res['rssPeak'] - res['rssIdle']
    bound = 3 * bb + 64 * MIB
    if rise > bound + cfg['rss_slack']:
        found.append(('rss', f'peak RSS {rise / MIB:.0f} MiB above idle, bound {bound / MIB:.0f} MiB'))
    out_dir = opts['outDir']
    left = sorted(os.listdir(out_dir)) if os.path.isdir(out_dir) else []
    if not res['ok']:
        code = res.get('code')
        if code not in KNOWN_CODES:
            found.append(('untyped', f'{res.get("name")} without a known code ({code!r}): {res.get("message", "")[:200]}'))
        elif code == 'ERR_INTERNAL':
            found.append(('internal', res.get('message', '')[:300]))
        if left:
            found.append(('leftover', f'{len(left)} files left in outDir after {code}: {left[:5]}'))
        return found
    outs = res['files']
    stray = [x for x in left if os.path.join(out_dir, x) not in outs]
    if stray:
        found.append(('leftover', f'files in outDir beside the returned ones: {stray[:5]}'))
    tables = []
    for pth in outs:
        try:
            tables.append(pq.read_table(pth))
        except Exception as e:
            found.append(('unreadable', f'{os.path.basename(pth)}: {str(e)[:200]}'))
            return found
    expected = oracle()
    exp_names, exp = expected[0], expected[1]
    out['oracle'] = 'compared' if exp_names is not None else exp
    if exp_names is None:
        if exp.startswith('INVALID: '):
            found.append(('invalid-accepted', exp[len('INVALID: '):]))
        return found
    if expected[2]:
        out['oracle'] = 'compared without ARROW:schema (a dictionary page repeats a value)'
        tables = [read_plain(pth) for pth in outs]
    got = collections.Counter()
    exp_cols = exp_names
    exp_names = [n for n, _ in exp_cols]
    for t in tables:
        cols = sorted((n, str(plain_type(t.schema.field(n).type))) for n in t.column_names)
        if cols != sorted(exp_cols):
            found.append(('rows-differ', f'columns {cols} != the inputs\' {sorted(exp_cols)}'))
            return found
        got.update(row_line(r, exp_names) for r in rows_of(t))
    if got != exp:
        missing = exp - got
        extra = got - exp
        found.append(('rows-differ', f'{sum(missing.values())} rows missing, {sum(extra.values())} extra '
                                     f'(expected {sum(exp.values())}, wrote {sum(got.values())}); '
                                     f'missing e.g. {list(missing)[:1]}; extra e.g. {list(extra)[:1]}'))
    return found


# ------------------------------------------------------------------ options

def sample_opts(rng, case, out_dir):
    o = {'outDir': out_dir}
    r = rng.random
    if r() < 0.6:
        o['batchBytes'] = rng.choice([1024, 2048, 4096, 65536, 1 << 20, 8 << 20])
    if r() < 0.3:
        o['batchRows'] = rng.choice([1, 7, 64, 1000])
    o['threads'] = rng.choice([1, 2])
    if case['sortable'] and r() < 0.4:
        cols = rng.sample(case['sortable'], rng.choice([1, 1, 2]))
        o['sortBy'] = [{'column': c, **({'descending': True} if r() < 0.3 else {}), **({'nullsFirst': r() < 0.5} if r() < 0.3 else {})} for c in cols]
    if case['partition'] and r() < 0.3:
        c = rng.choice(case['partition'])
        o['partitionBy'] = [{'column': c, **({'transform': 'day'} if c in ('ts', 'd') and r() < 0.5 else {})}]
    if case['dedupe'] and r() < 0.25:
        o['dedupeBy'] = case['dedupe']
    if r() < 0.2:
        o['targetFileBytes'] = rng.choice([4096, 65536])
    if r() < 0.2:
        o['compression'] = rng.choice(['zstd', 'snappy', 'gzip', 'lz4', 'none'])
    return o


# ------------------------------------------------------------------ the campaign

def signature(cls, detail, desc):
    if cls == 'rows-differ':
        d = ' + '.join(desc) or 'unmutated'
    elif cls in ('abort', 'signal', 'exit'):
        d = detail
    elif cls in ('leftover', 'unreadable', 'hang', 'rss'):
        d = ''
    else:
        d = detail
    d = re.sub(r'/[^\s:\'",)]+', '<path>', d)
    d = re.sub(r'\d+', 'N', d)
    d = re.sub(r'\s+', ' ', d)[:110]
    return f'{cls}: {d}'.strip()


def slug(s):
    return re.sub(r'[^A-Za-z0-9]+', '-', s)[:80].strip('-') + '-' + hashlib.sha1(s.encode()).hexdigest()[:8]


def prepare(rng, case, cur, nmut):
    """Copies the case's files under cur (mutating up to nmut of them); returns (files, descriptions)."""
    files = json.loads(json.dumps(case['files']))
    desc = []
    paths = []
    for f in files:
        if f['path'] not in paths:
            paths.append(f['path'])
        for d in f.get('deletes', []):
            if d['path'] not in paths:
                paths.append(d['path'])
    newpath = {p: os.path.join(cur, os.path.basename(p)) for p in paths}
    content = {}
    for p in paths:
        with open(p, 'rb') as fh:
            content[p] = fh.read()
    for _ in range(nmut):
        data_paths = [f['path'] for f in case['files']]
        del_paths = [p for p in paths if p not in data_paths]
        target = rng.choice(del_paths) if del_paths and rng.random() < 0.35 else rng.choice(data_paths)
        data = content[target]
        if target.endswith('.puffin') and rng.random() < 0.85:
            srcs = [d for f in files for d in f.get('deletes', []) if d['path'] == target]
            src = rng.choice(srcs)
            r = mutate.m_dv(rng, data, None, src)
            if r is None:
                continue
            content[target], nsrc, dsc = r
            shift = nsrc['length'] - src['length']
            off = src['offset']
            for f in files:
                for d in f.get('deletes', []):
                    if d['path'] == target and d['offset'] == off:
                        d['length'] = nsrc['length']
                    elif d['path'] == target and d['offset'] > off:
                        d['offset'] += shift
            desc.append(f'{os.path.basename(target)}: {dsc}')
            continue
        weights = mutate.PARQUET_MUTATIONS
        fn = rng.choices([w[0] for w in weights], [w[1] for w in weights])[0]
        r = fn(rng, data, CTX)
        if r is None:
            r = mutate.m_bitflip(rng, data, CTX)
        content[target], dsc = r
        desc.append(f'{os.path.basename(target)}: {dsc}')
    for p in paths:
        with open(newpath[p], 'wb') as fh:
            fh.write(content[p])
    for f in files:
        f['path'] = newpath[f['path']]
        for d in f.get('deletes', []):
            d['path'] = newpath[d['path']]
    return files, desc


CTX = {'pool': []}


def save_finding(cfg, sig, n, case, files, opts, out, classes, desc, index):
    d = os.path.join(cfg['out'], 'findings', slug(sig), str(n))
    os.makedirs(d, exist_ok=True)
    rel = {}
    for f in files:
        for p in [f['path']] + [x['path'] for x in f.get('deletes', [])]:
            if p not in rel:
                shutil.copy(p, os.path.join(d, os.path.basename(p)))
                rel[p] = os.path.basename(p)
    jf = json.loads(json.dumps(files))
    for f in jf:
        f['path'] = rel[f['path']]
        for x in f.get('deletes', []):
            x['path'] = rel[x['path']]
    o = dict(opts, outDir='out')
    with open(os.path.join(d, 'job.json'), 'w') as fh:
        json.dump({'files': jf, 'opts': o}, fh, indent=1)
    with open(os.path.join(d, 'finding.json'), 'w') as fh:
        json.dump({'signature': sig, 'classes': classes, 'case': case['name'], 'mutations': desc, 'execution': index,
                   'seed': cfg['seed'], 'elapsedS': round(out['elapsed'], 2), 'rc': out['rc'], 'result': out['result'],
                   'rssRiseMiB': (out['result']['rssPeak'] - out['result']['rssIdle']) / MIB if out['result'] else None,
                   'polledPeakRssMiB': out['hwm'] / MIB,
                   'stderr': out['stderr'] if len(out['stderr']) < 6000 else out['stderr'][:3000] + '\n[...]\n' + out['stderr'][-3000:]}, fh, indent=1)


def execute(cfg, cases, index):
    """Execution `index`: (case, files, opts, descriptions, outcome, classes)."""
    rng = random.Random(f'{cfg["seed"]}:{index}')
    cur = os.path.join(cfg['out'], 'work', 'cur')
    shutil.rmtree(cur, ignore_errors=True)
    os.makedirs(cur)
    if index < len(cfg['baseline']):
        ci, opts_base = cfg['baseline'][index]
        case = cases[ci]
        files, desc = prepare(rng, case, cur, 0)
        opts = dict(opts_base, outDir=os.path.join(cur, 'out'))
    else:
        case = rng.choices(cases, [case_weight(c) for c in cases])[0]
        nmut = rng.choices([0, 1, 2, 3], [5, 65, 20, 10])[0]
        files, desc = prepare(rng, case, cur, nmut)
        opts = sample_opts(rng, case, os.path.join(cur, 'out'))
    memo = {}

    def oracle():
        if 'v' not in memo:
            memo['v'] = expected_rows(files, opts.get('dedupeBy'))
        return memo['v']

    out = run_call(cfg, files, opts, cur)
    classes = classify(cfg, files, opts, out, oracle)
    return case, files, opts, desc, out, classes


def case_weight(c):
    n = c['name']
    return 3 if 'delta' in n else 2 if ('nested' in n or n.startswith('ice') or 'arrow' in n or n.startswith('duck')) else 1


def baseline_list(cases):
    """Every seed unmutated with default options, and once more with one of the option shapes issue
    50 names (in turn): sortBy with batchBytes 1024, partitionBy with 65536, dedupeBy with
    batchRows 7 and a small targetFileBytes."""
    out = []
    for i, c in enumerate(cases):
        out.append((i, {}))
        shapes = []
        if c['sortable']:
            shapes.append({'sortBy': [{'column': c['sortable'][1 % len(c['sortable'])]}], 'batchBytes': 1024, 'threads': 1})
        if c['partition']:
            shapes.append({'partitionBy': [{'column': c['partition'][0]}], 'batchBytes': 65536, 'threads': 2})
        if c['dedupe']:
            shapes.append({'dedupeBy': c['dedupe'], 'batchRows': 7, 'targetFileBytes': 4096})
        if shapes and c.get('allShapes'):
            out.extend((i, sh) for sh in shapes + [dict(shapes[0], batchBytes=2048)])
        elif shapes:
            out.append((i, shapes[i % len(shapes)]))
    return out


SELFTEST_DRIVERS = {
    'abort': "process.abort()",
    'hang': "setInterval(() => {}, 1000)",
    'signal': "process.kill(process.pid, 'SIGSEGV')",
    'untyped': "w({ ok: false, code: undefined, message: 'x', name: 'TypeError' })",
    'internal': "w({ ok: false, code: 'ERR_INTERNAL', message: 'panic', name: 'Error' })",
    'leftover': "require('fs').mkdirSync(job.opts.outDir, { recursive: true }); "
                "require('fs').writeFileSync(job.opts.outDir + '/x.parquet.tmp', 'x'); "
                "w({ ok: false, code: 'ERR_INPUT_CORRUPT', message: 'bad', name: 'Error' })",
    'rss': "w({ ok: false, code: 'ERR_INPUT_CORRUPT', message: 'bad', name: 'Error' }, 1 << 30)",
    'rows-differ': "w({ ok: true, files: [process.env.CALLFUZZ_FAKE_OUT] })",
    'invalid-accepted': "w({ ok: true, files: [] })",
    'unreadable': "require('fs').mkdirSync(job.opts.outDir, { recursive: true }); "
                  "require('fs').writeFileSync(job.opts.outDir + '/o.parquet', 'PAR1 not parquet PAR1'); "
                  "w({ ok: true, files: [job.opts.outDir + '/o.parquet'] })",
}


def selftest(out_dir):
    """Each class the campaign reports, raised on purpose (a fake driver per class, an output with a
    row dropped), so a campaign that finds nothing is known able to find something. Prints
    {class: classes found}; exit 1 when one is missed."""
    cases = seeds.make(os.path.join(out_dir, 'seeds'), 1)
    case = next(c for c in cases if c['name'] == 'ice-mixed')
    cur = os.path.join(out_dir, 'cur')
    got = {}
    for cls, body in SELFTEST_DRIVERS.items():
        shutil.rmtree(cur, ignore_errors=True)
        os.makedirs(cur)
        files, _ = prepare(random.Random(0), case, cur, 0)
        if cls == 'invalid-accepted':  # a deletion vector listing key 0 twice
            from pyroaring import BitMap
            one = struct.pack('<I', 0) + BitMap([1, 2, 3]).serialize()
            inner = seeds.DV_MAGIC + struct.pack('<Q', 2) + one + struct.pack('<I', 0) + BitMap([5]).serialize()
            blob = struct.pack('>I', len(inner)) + inner + struct.pack('>I', zlib.crc32(inner) & 0xFFFFFFFF)
            dvp = os.path.join(cur, 'twice.puffin')
            with open(dvp, 'wb') as fh:
                fh.write(b'PFA1' + blob)
            files = [{**files[0], 'deletes': [{'kind': 'deletion-vector', 'path': dvp, 'offset': 4, 'length': len(blob)}]}]
        # an output holding the first input's rows but one (the other inputs' rows missing too)
        fake = os.path.join(cur, 'fake-out.parquet')
        pq.write_table(pq.read_table(files[0]['path']).slice(1), fake)
        drv = os.path.join(cur, 'drv.js')
        with open(drv, 'w') as fh:
            fh.write("const fs = require('fs'); const job = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));\n"
                     "const w = (o, extra = 0) => { fs.writeFileSync(process.argv[3], JSON.stringify({ rssIdle: 0, rssPeak: extra, ...o })); process.exit(0) };\n"
                     + body + "\n")
        cfg = {'timeout': 2, 'as_bytes': 6 << 30, 'rss_slack': 64 * MIB, 'env': {'CALLFUZZ_FAKE_OUT': fake}, 'driver': drv}
        opts = {'outDir': os.path.join(cur, 'out')}
        o = run_call(cfg, files, opts, cur)
        got[cls] = [c for c, _ in classify(cfg, files, opts, o, lambda: expected_rows(files, None))]
    print(json.dumps(got))
    return all(cls in found for cls, found in got.items())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--out', default=os.environ.get('CALLFUZZ_OUT', '/tmp/callfuzz'))
    ap.add_argument('--seed', type=int, default=int(os.environ.get('CALLFUZZ_SEED', '1')))
    ap.add_argument('--time', type=float, default=float(os.environ.get('CALLFUZZ_TIME', '60')), help='seconds to run')
    ap.add_argument('--execs', type=int, default=int(os.environ.get('CALLFUZZ_EXECS', '0')), help='stop after this many (0: time only)')
    ap.add_argument('--timeout', type=float, default=float(os.environ.get('CALLFUZZ_TIMEOUT', '20')), help='seconds per call (hang)')
    ap.add_argument('--as-gib', type=float, default=float(os.environ.get('CALLFUZZ_AS_GIB', '6')), help='address-space cap per call')
    ap.add_argument('--rss-slack', type=float, default=float(os.environ.get('CALLFUZZ_RSS_SLACK_MIB', '64')),
                    help='MiB over 3 x batchBytes + 64 MiB before a call counts as rss (the allocators\' kept blocks)')
    ap.add_argument('--min-mutated', type=int, default=int(os.environ.get('CALLFUZZ_MIN_MUTATED', '0')),
                    help='run past --time until this many mutated executions are done (a slow machine still fuzzes)')
    ap.add_argument('--keep', type=int, default=3, help='examples saved per signature')
    ap.add_argument('--only', type=int, default=None, help='run execution i alone (replay)')
    ap.add_argument('--no-baseline', action='store_true', help='skip the unmutated seeds')
    ap.add_argument('--selftest', action='store_true', help='raise every class on purpose and check it is reported')
    a = ap.parse_args(argv)
    if a.selftest:
        ok = selftest(os.path.join(a.out, 'selftest'))
        sys.exit(0 if ok else 1)

    addon = os.environ.get('GENCOMPACT_ADDON')
    test_build = os.path.join(HERE, '..', '..', 'target', 'test-addon', 'gencompact.linux-x64-gnu.node')
    env = {}
    if not addon and not os.environ.get('NAPI_RS_NATIVE_LIBRARY_PATH') and os.path.exists(test_build):
        env['GENCOMPACT_ADDON'] = os.path.abspath(test_build)
    shutil.rmtree(os.path.join(a.out, 'findings'), ignore_errors=True)
    os.makedirs(a.out, exist_ok=True)
    cases = seeds.make(os.path.join(a.out, 'seeds'), a.seed)
    for c in cases:
        for f in c['files']:
            with open(f['path'], 'rb') as fh:
                CTX['pool'].append(fh.read())
    cfg = {'out': a.out, 'seed': a.seed, 'timeout': a.timeout, 'as_bytes': int(a.as_gib * (1 << 30)),
           'rss_slack': a.rss_slack * MIB, 'env': env, 'baseline': [] if a.no_baseline else baseline_list(cases)}
    seed_hash = {f['path']: hashlib.sha256(open(f['path'], 'rb').read()).hexdigest() for c in cases for f in c['files']}

    t0 = time.monotonic()
    counts = collections.Counter()
    codes = collections.Counter()
    sigs = collections.OrderedDict()
    compared = execs = 0
    fuzzer_errors = collections.Counter()
    indices = [a.only] if a.only is not None else None
    log = open(os.path.join(a.out, 'executions.jsonl'), 'w')
    i = 0
    while True:
        if indices is not None:
            if not indices:
                break
            i = indices.pop()
        elif (a.execs and execs >= a.execs) or (not a.execs and time.monotonic() - t0 > a.time
                                                   and execs - len(cfg['baseline']) >= a.min_mutated):
            break
        try:
            case, files, opts, desc, out, classes = execute(cfg, cases, i)
        except Exception as e:  # the fuzzer's own bug (a mutation it cannot write): counted, not a finding
            import traceback
            fuzzer_errors[f'{type(e).__name__}: {e}'[:120]] += 1
            print(f'[{i}] fuzzer error: {traceback.format_exc()}', file=sys.stderr)
            i += 1
            continue
        execs += 1
        res = out['result']
        codes['ok' if res and res['ok'] else (res or {}).get('code') or 'none'] += 1
        if str(out.get('oracle')).startswith('compared'):
            compared += 1
        log.write(json.dumps({'i': i, 'case': case['name'], 'mutations': desc, 'opts': {k: v for k, v in opts.items() if k != 'outDir'},
                              'outcome': 'ok' if res and res['ok'] else (res or {}).get('code'),
                              'message': (res or {}).get('message', '')[:160] if res and not res['ok'] else None,
                              'oracle': out.get('oracle'), 'classes': [c for c, _ in classes],
                              'seconds': round(out['elapsed'], 2)}) + '\n')
        log.flush()
        for cls, detail in classes:
            counts[cls] += 1
            sig = signature(cls, detail, desc)
            ent = sigs.setdefault(sig, {'class': cls, 'count': 0, 'first': i, 'case': case['name'], 'detail': detail,
                                        'mutations': desc, 'opts': {k: v for k, v in opts.items() if k != 'outDir'}})
            ent['count'] += 1
            if ent['count'] <= a.keep:
                save_finding(cfg, sig, ent['count'], case, files, opts, out, classes, desc, i)
            if a.only is not None or os.environ.get('CALLFUZZ_VERBOSE'):
                print(f'[{i}] {cls}: {detail[:200]} | {case["name"]} | {desc}', file=sys.stderr)
        if a.only is not None:
            print(json.dumps({'index': i, 'case': case['name'], 'mutations': desc, 'opts': opts, 'classes': classes,
                              'result': res, 'elapsed': out['elapsed'], 'oracle': out.get('oracle')}, indent=1, default=str))
        i += 1
    changed = [p for p, h in seed_hash.items() if hashlib.sha256(open(p, 'rb').read()).hexdigest() != h]
    if changed:
        counts['input-modified'] += len(changed)
        sigs['input-modified'] = {'class': 'input-modified', 'count': len(changed), 'detail': changed[:5]}
    summary = {'seed': a.seed, 'executions': execs, 'baselineExecutions': min(execs, len(cfg['baseline'])), 'baselineTotal': len(cfg['baseline']),
               'seconds': round(time.monotonic() - t0, 1), 'rowsCompared': compared, 'outcomes': dict(codes),
               'classes': dict(counts), 'distinct': len(sigs), 'fuzzerErrors': dict(fuzzer_errors), 'findings': list(sigs.items())}
    with open(os.path.join(a.out, 'summary.json'), 'w') as fh:
        json.dump(summary, fh, indent=1, default=str)
    print(json.dumps({k: v for k, v in summary.items() if k != 'findings'}, default=str))
    for s, e in sigs.items():
        print(f'  {e["count"]:5d}  {s}', file=sys.stderr)
    return summary


if __name__ == '__main__':
    main()
