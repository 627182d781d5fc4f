# steady-writer.py SECONDS: a replica that writes numbered lines as fast as it can for SECONDS,
# 20 at a time (each flushed), then "<task> LAST <count>" (the master 3 s later, so that the
# job ends after every replica's): for the log tests of several replicas writing at once
# (t5155).
import json
import os
import sys
import time

task = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {})
name = ("%s-%s" % (task.get("type"), task.get("index"))).encode()
out = sys.stdout.buffer
end = time.time() + float(sys.argv[1])
i = 0
while time.time() < end:
    for _ in range(20):
        out.write(b"%s seq %d pad\n" % (name, i))
        out.flush()
        i += 1
    time.sleep(0.001)
if task.get("type") in ("master", "chief"):
    # the master's end ends the job: the workers, started a moment later, write their LAST
    # lines first
    time.sleep(3)
out.write(b"%s LAST %d\n" % (name, i))
out.flush()
