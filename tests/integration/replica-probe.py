# replica-probe.py OUTDIR: a test replica. It records its environment in OUTDIR/<task>.json,
# listens on its own advertised port, waits for every peer to listen, connects to each peer's
# advertised address, records the results, and then: the master exits 0 once every replica has
# reported; the others wait forever (the framework must tear them down).
import json, os, socket, sys, time

out = sys.argv[1]
cs = json.loads(os.environ["CLUSTER_SPEC"])
task = cs["task"]
name = "%s-%d" % (task["type"], task["index"])
me = cs["cluster"][task["type"]][task["index"]]
host, port = me.rsplit(":", 1)
srv = socket.socket()
srv.bind(("0.0.0.0", int(port)))  # fails if anything else holds the port
srv.listen(64)
record = {k: os.environ.get(k) for k in
          ("CLUSTER_SPEC", "TF_CONFIG", "CLOUD_ML_JOB_ID", "CLOUD_ML_TRIAL_ID", "MASTER_ADDR",
           "MASTER_PORT", "WORLD_SIZE", "RANK", "SLURMD_NODENAME", "SLURM_JOB_ID",
           "TRAINYARD_TASK_TOKEN", "DMLC_ROLE", "CLOUD_ML_HP_METRIC_TAG",
           "CLOUD_ML_HP_METRIC_FILE")}
record["argv"] = sys.argv[2:]
open(os.path.join(out, name + ".ready"), "w").close()
peers = [(r, i, a) for r, addrs in cs["cluster"].items() for i, a in enumerate(addrs)]
deadline = time.time() + 30
while not all(os.path.exists(os.path.join(out, "%s-%d.ready" % (r, i))) for r, i, _ in peers):
    if time.time() > deadline:
        sys.exit("peers never became ready")
    time.sleep(0.05)
reach = {}
for r, i, a in peers:
    h, p = a.rsplit(":", 1)
    try:
        socket.create_connection((h, int(p)), timeout=5).close()
        reach["%s-%d" % (r, i)] = True
    except OSError as e:
        reach["%s-%d" % (r, i)] = str(e)
record["reach"] = reach
tmp = os.path.join(out, name + ".tmp")
json.dump(record, open(tmp, "w"))
os.rename(tmp, os.path.join(out, name + ".json"))
if task["type"] != "master":
    while True:
        srv.accept()[0].close()
while len([f for f in os.listdir(out) if f.endswith(".json")]) < len(peers):
    if time.time() > deadline:
        sys.exit("peers never reported")
    time.sleep(0.05)
print("master: all %d replicas reported" % len(peers))
