#!/usr/bin/env python3
"""Runs one command (call.js) as a child under an address-space limit and a timeout, and prints one
JSON line: its exit code or signal, whether it timed out, its peak RSS as the OS measured it
(getrusage of the waited child, so also for a child that aborted) and its stdout's last line.
    python3 run.py <timeout seconds> <address-space limit bytes> <command...>
The limit keeps a file that asks for terabytes from taking the machine: the request fails and the
process aborts, which is what a test must not see."""
import json
import resource
import signal
import subprocess
import sys

timeout, limit, cmd = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]


def cap():
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=cap)
timed_out = False
try:
    out, err = p.communicate(timeout=timeout)
except subprocess.TimeoutExpired:
    timed_out = True
    p.kill()
    out, err = p.communicate()
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
lines = out.decode(errors="replace").strip().splitlines()
try:
    outcome = json.loads(lines[-1]) if lines else None
except ValueError:
    outcome = None
rc = p.returncode
print(json.dumps({
    "exitCode": rc if rc >= 0 else None,
    "signal": signal.Signals(-rc).name if rc < 0 and not timed_out else None,
    "timedOut": timed_out,
    "maxRssBytes": ru.ru_maxrss * 1024,
    "outcome": outcome,
    "stderr": err.decode(errors="replace")[-2000:],
}))
