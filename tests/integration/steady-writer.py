# steady-writer.py SECONDS DIR: a replica that writes numbered lines as fast as it can for
# SECONDS, 20 at a time (each flushed), then "<task> LAST <count>". A worker then makes
# DIR/<task>; the master writes its LAST line only once every worker's is there (at most 60 s),
# so that the job, which ends with the master, ends after every replica wrote its own: for the
# log tests of several replicas writing at once (t5155).
import json
import os
import sys
import time

tf = json.loads(os.environ.get("TF_CONFIG", "{}"))
task = tf.get("task", {})
name = ("%s-%s" % (task.get("type"), task.get("index"))).encode()
done = sys.argv[2]
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
    workers = len(tf.get("cluster", {}).get("worker", []))
    deadline = time.time() + 60
    while len(os.listdir(done)) < workers and time.time() < deadline:
        time.sleep(0.05)
out.write(b"%s LAST %d\n" % (name, i))
out.flush()
if task.get("type") == "worker":
    open(os.path.join(done, name.decode()), "w").close()
