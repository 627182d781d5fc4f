#!/usr/bin/env python3
# check-layers.py: check that every #include "..." in src/ points down the layers of
# docs/internals/layers.md. The build already refuses a wrong-way include (each library sees
# only the headers of the areas it depends on); this says which rule a change broke, in words,
# and also covers the programs' folders. Exit 0 when clean, 1 with one line per violation.
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

# What each part may include besides itself, lowest first (see docs/internals/layers.md).
ALLOWED = {
    "util": [],
    "lib/job": ["util"],
    "lib/admit": ["util", "lib/job"],
    "lib/plan": ["util", "lib/job"],
    "lib/logs": ["util"],
    "lib/store": ["util", "lib/job"],
    "lib/tuning": ["util", "lib/job"],
    "lib/run": ["util", "lib/job", "lib/plan", "lib/logs", "lib/tuning"],
    # A runtime sees the runtime interface and what it is made of, never another runtime.
    "lib/exec/process": ["util", "lib/job", "lib/plan", "lib/logs", "lib/run"],
    "lib/exec/container": ["util", "lib/job", "lib/plan", "lib/logs", "lib/run"],
    "lib/exec/slurm": ["util", "lib/job", "lib/plan", "lib/logs", "lib/run"],
    "lib/exec": ["util", "lib/job", "lib/plan", "lib/logs", "lib/run",
                 "lib/exec/process", "lib/exec/container", "lib/exec/slurm"],
    # The service never sees a runtime: it starts supervisors.
    "trainyardd": ["util", "lib/job", "lib/admit", "lib/plan", "lib/logs", "lib/store", "lib/tuning",
                   "lib/run"],
    "trainyard-supervisor": ["util", "lib/job", "lib/admit", "lib/plan", "lib/logs", "lib/store",
                             "lib/tuning", "lib/run", "lib/exec"],
    "trainyard": ["util", "lib/job", "lib/admit", "lib/plan", "lib/logs", "lib/store", "lib/tuning",
                  "lib/run", "lib/exec"],
    "trainyard-task": ["util", "lib/job", "lib/plan", "lib/logs", "lib/tuning", "lib/run",
                       "lib/exec", "lib/exec/process", "lib/exec/container",
                       "lib/exec/slurm"],
    # The process runtime's cgroup guardian, exec'd by it: nothing but util.
    "trainyard-guardian": ["util"],
}
# A runtime's public header (the one the programs may include through lib/exec).
PUBLIC = {"process.h": "lib/exec/process", "container.h": "lib/exec/container",
          "slurm.h": "lib/exec/slurm"}
GENERATED = {"ty-config.h"}


def part_of(path):
    rel = os.path.relpath(path, os.path.join(ROOT, "src"))
    d = os.path.dirname(rel)
    return d


def main():
    headers = {}
    sources = []
    for dirpath, _, names in os.walk(os.path.join(ROOT, "src")):
        for n in names:
            if n.endswith((".c", ".h")):
                p = os.path.join(dirpath, n)
                sources.append(p)
                if n.endswith(".h"):
                    headers.setdefault(n, []).append(part_of(p))
    bad = []
    for name, parts in headers.items():
        if len(parts) > 1:
            bad.append(f"header {name} exists in {', '.join(parts)}: names must be unique")
    for p in sorted(sources):
        part = part_of(p)
        if part not in ALLOWED:
            bad.append(f"{os.path.relpath(p, ROOT)}: folder src/{part} has no layer rule "
                       "in scripts/check-layers.py")
            continue
        allowed = set(ALLOWED[part]) | {part}
        with open(p, encoding="utf-8") as f:
            for no, line in enumerate(f, 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m or m.group(1) in GENERATED:
                    continue
                h = os.path.basename(m.group(1))
                where = headers.get(h)
                if not where:
                    bad.append(f"{os.path.relpath(p, ROOT)}:{no}: {h} is not a header of src/")
                    continue
                target = where[0]
                ok = target in allowed
                # Programs reach a runtime through lib/exec: its public header only.
                if not ok and "lib/exec" in allowed and PUBLIC.get(h) == target:
                    ok = True
                if not ok:
                    bad.append(f"{os.path.relpath(p, ROOT)}:{no}: includes {h} of src/{target}, "
                               f"which src/{part} may not use (it may use: "
                               f"{', '.join('src/' + a for a in ALLOWED[part]) or 'nothing'})")
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
