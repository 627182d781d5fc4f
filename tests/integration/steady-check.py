# steady-check.py FILE REPLICAS: FILE (`jobs stream-logs` output) has every line of the
# REPLICAS steady-writer.py replicas exactly once, each replica's in order; prints what is
# wrong and exits 1 otherwise.
import re
import sys

seqs, last = {}, {}
for raw in open(sys.argv[1], "rb"):
    msg = raw.rstrip(b"\n").decode("utf-8", "replace").split("\t", 4)[-1]
    m = re.match(r"(\S+) seq (\d+) pad$", msg)
    if m:
        seqs.setdefault(m.group(1), []).append(int(m.group(2)))
    m = re.match(r"(\S+) LAST (\d+)$", msg)
    if m:
        last.setdefault(m.group(1), []).append(int(m.group(2)))
bad = []
if len(last) != int(sys.argv[2]):
    bad.append("LAST lines of %s" % sorted(last))
for name, n in sorted(last.items()):
    got = seqs.get(name, [])
    if n != [len(got)] or got != list(range(len(got))):
        missing = sorted(set(range(n[0])) - set(got))
        bad.append("%s: %d lines of %s, %d missing (%s...), %d repeated, in order: %s" % (
            name, len(got), n, len(missing), missing[:5], len(got) - len(set(got)), got == sorted(got)))
print("\n".join(bad) or "every line once, in order: %s" % {k: v[0] for k, v in last.items()})
sys.exit(1 if bad else 0)
