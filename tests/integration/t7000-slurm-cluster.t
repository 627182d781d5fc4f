#!/bin/sh
# t7000-slurm-cluster: the simulated Slurm clusters of tests/lib/slurm-cluster.sh work: level 1
# (slurmd n1..n4 on 127.0.0.1) runs steps on four nodes and a 1+N hetjob batch job; level 2
# (network namespaces h1..h5 as hosts) gives tasks distinct hosts and addresses that reach each
# other over TCP. Both leave no process, namespace or /etc/netns entry behind.
. "$(dirname "$0")/../lib/test-lib.sh"
. "$TY_SOURCE_DIR/tests/lib/slurm-cluster.sh"

L1_TESTS="sinfo lists n1..n4 idle
srun -N 4 -n 4 runs one task on each of n1..n4
a 1+3 hetjob batch job runs master and workers on four nodes and completes
stop leaves no process of the cluster"
L2_TESTS="sinfo on h1 lists h2..h5 idle; the host netns got no interface
tasks on h2..h5 see their own hostnames and distinct 198.18.100.x addresses
a task on one host reaches a listener in a task on another host over TCP
stop leaves no process, namespace or /etc/netns entry"

skip_all() { # skip_all PREFIX REASON TESTS
  echo "$3" | while read -r t; do test_skip "$1: $t" "$2"; done
  test_count=$((test_count + $(echo "$3" | wc -l)))
}

L1_DIR='' L2_DIR=''
cleanup() {
  [ -n "$L1_DIR" ] && slurm_cluster_stop "$L1_DIR"
  [ -n "$L2_DIR" ] && slurm_netns_cluster_stop "$L2_DIR"
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

# ---- level 1 ----
if ! slurm_cluster_check; then
  skip_all "level 1" "$TY_SLURM_SKIP_REASON" "$L1_TESTS"
elif ! slurm_cluster_start "$TEST_DIR/slurm"; then
  export TY_SLURM_ERROR
  test_expect_success "level 1: the cluster starts" 'echo "$TY_SLURM_ERROR"; false'

else
  L1_DIR=$TY_SLURM_DIR
  echo "# level 1 started in ${TY_SLURM_START_SECONDS}s ($L1_DIR)"

  test_expect_success 'level 1: sinfo lists n1..n4 idle' '
    sinfo -N -h -o "%N %t" >sinfo.out &&
    cat sinfo.out &&
    test "$(awk "\$2 == \"idle\" { print \$1 }" sinfo.out | sort -u | tr "\n" " ")" = "n1 n2 n3 n4 "
  '

  test_expect_success 'level 1: srun -N 4 -n 4 runs one task on each of n1..n4' '
    srun -N 4 -n 4 -l sh -c "echo \$SLURMD_NODENAME \$SLURM_PROCID \$SLURM_NTASKS" >srun.out &&
    cat srun.out &&
    test "$(wc -l <srun.out)" -eq 4 &&
    test "$(awk "{ print \$2 }" srun.out | sort -u | tr "\n" " ")" = "n1 n2 n3 n4 " &&
    test "$(awk "{ print \$3 }" srun.out | sort -n | tr "\n" " ")" = "0 1 2 3 " &&
    test "$(awk "{ print \$4 }" srun.out | sort -u)" = 4
  '

  test_expect_success 'level 1: a 1+3 hetjob batch job runs master and workers on four nodes and completes' '
    cat >het.sh <<EOF &&
#!/bin/sh
#SBATCH -J ty-het
#SBATCH -o $TEST_DIR/het.out
#SBATCH -n 1
#SBATCH hetjob
#SBATCH -N 3 -n 3
srun --het-group=0,1 sh -c "echo task \\\$SLURM_PROCID \\\$SLURMD_NODENAME"
EOF
    id=$(sbatch --parsable het.sh) &&
    echo "job $id" &&
    wait_for 30 sh -c "scontrol -o show job $id | grep -q JobState=COMPLETED &&
      ! scontrol -o show job $id | grep -v -q JobState=COMPLETED" || {
      scontrol -o show job $id; cat het.out; false; } &&
    scontrol -o show job $id | grep -o "JobId=[0-9]* HetJobId=[0-9]* HetJobOffset=[0-9]*\|JobState=[A-Z]*\| NodeList=[^ ]*" &&
    test "$(scontrol -o show job $id | wc -l)" -eq 2 &&
    cat het.out &&
    test "$(grep -c "^task [0-3] n[1-4]$" het.out)" -eq 4 &&
    test "$(awk "{ print \$3 }" het.out | sort -u | wc -l)" -eq 4
  '

  slurm_cluster_stop "$L1_DIR"
  echo "# level 1 stopped in ${TY_SLURM_STOP_SECONDS}s"
  test_expect_success 'level 1: stop leaves no process of the cluster' '
    test -f "$L1_DIR/stopped" &&
    test "$(wc -l <"$L1_DIR/pids")" -eq 6 &&
    while read -r pid name start; do
      if _slurm_is $pid $start; then echo "$name ($pid) still runs"; exit 1; fi
    done <"$L1_DIR/pids" &&
    test -z "$(slurm_cluster_procs "$L1_DIR")"
  '
fi

# ---- level 2 ----
if ! slurm_netns_cluster_check; then
  skip_all "level 2" "$TY_SLURM_SKIP_REASON" "$L2_TESTS"
else
  # names of the host netns interfaces (other tests may add some meanwhile: compare names)
  host_links() { ip -o link show | awk -F": " "{ sub(/@.*/, \"\", \$2); print \$2 }" | sort; }
  host_links >"$TEST_DIR/links-before"
  if ! slurm_netns_cluster_start "$TEST_DIR/slurm-netns"; then
    export TY_SLURM_ERROR
    test_expect_success "level 2: the cluster starts" 'echo "$TY_SLURM_ERROR"; false'

  else
    L2_DIR=$TY_SLURM_NETNS_DIR
    echo "# level 2 started in ${TY_SLURM_NETNS_START_SECONDS}s ($L2_DIR, namespaces $TY_SLURM_NETNS_PREFIX-*)"

    test_expect_success 'level 2: sinfo on h1 lists h2..h5 idle; the host netns got no interface' '
      slurm_netns_run sinfo -N -h -o "%N %t" >sinfo.out &&
      cat sinfo.out &&
      test "$(awk "\$2 == \"idle\" { print \$1 }" sinfo.out | sort -u | tr "\n" " ")" = "h2 h3 h4 h5 " &&
      host_links | comm -13 "$TEST_DIR/links-before" - >new-links &&
      ! grep -E "^(br0|p[1-5]|eth0)$" new-links &&
      test "$(slurm_netns_run hostname)" = h1 &&
      slurm_netns_run getent hosts h5 | grep -q "^198\.18\.100\.5 "
    '

    test_expect_success 'level 2: tasks on h2..h5 see their own hostnames and distinct 198.18.100.x addresses' '
      slurm_netns_run srun -N 4 -n 4 -l sh -c "echo \$SLURMD_NODENAME \$(hostname) \$(ip -4 -o addr show dev eth0 | awk \"{ print \\\$4 }\")" >ips.out &&
      cat ips.out &&
      test "$(wc -l <ips.out)" -eq 4 &&
      awk "\$2 != \$3 { exit 1 }" ips.out &&
      test "$(awk "{ print \$2 }" ips.out | sort -u | tr "\n" " ")" = "h2 h3 h4 h5 " &&
      test "$(awk "{ print \$4 }" ips.out | sort -u | tr "\n" " ")" = "198.18.100.2/24 198.18.100.3/24 198.18.100.4/24 198.18.100.5/24 " &&
      awk "{ sub(/\/24/, \"\", \$4); if (\$4 != \"198.18.100.\" substr(\$2, 2)) exit 1 }" ips.out
    '

    test_expect_success 'level 2: a task on one host reaches a listener in a task on another host over TCP' '
      cat >tcp.py <<\EOF &&
import os, socket, sys, time
rank, n = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
me, server, port = socket.gethostname(), sys.argv[1], 5555
if rank == 0:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port)); s.listen(8); s.settimeout(20)
    for _ in range(n - 1):
        c, addr = s.accept()
        print("server %s got [%s] from %s" % (me, c.recv(100).decode(), addr[0]))
        c.sendall(("pong from " + me).encode()); c.close()
else:
    deadline = time.time() + 20
    while True:
        try:
            c = socket.create_connection((server, port), timeout=2); break
        except OSError:
            if time.time() > deadline: raise
            time.sleep(0.1)
    c.sendall(("ping from " + me).encode())
    print("client %s %s -> %s %s: %s" % (me, c.getsockname()[0], server, c.getpeername()[0], c.recv(100).decode()))
EOF
      slurm_netns_run srun -N 4 -n 4 sh -c "exec $PYTHON tcp.py \$(scontrol show hostnames \"\$SLURM_STEP_NODELIST\" | head -1)" >tcp.out &&
      cat tcp.out &&
      test "$(grep -c "^server h2 got \[ping from h[3-5]\] from 198\.18\.100\.[3-5]$" tcp.out)" -eq 3 &&
      test "$(grep -c "^client h[3-5] 198\.18\.100\.[3-5] -> h2 198\.18\.100\.2: pong from h2$" tcp.out)" -eq 3 &&
      test "$(grep "^server" tcp.out | awk "{ print \$NF }" | sort -u | wc -l)" -eq 3
    '

    slurm_netns_cluster_stop "$L2_DIR"
    echo "# level 2 stopped in ${TY_SLURM_NETNS_STOP_SECONDS}s"
    test_expect_success 'level 2: stop leaves no process, namespace or /etc/netns entry' '
      test -f "$L2_DIR/stopped" &&
      test -z "$(slurm_cluster_procs "$L2_DIR")" &&
      while read -r pid name start; do
        if _slurm_is $pid $start; then echo "$name ($pid) still runs"; exit 1; fi
      done <"$L2_DIR/pids" &&
      ! ip netns list | grep -F "$TY_SLURM_NETNS_PREFIX-" &&
      ! ls -d /etc/netns/$TY_SLURM_NETNS_PREFIX-* 2>/dev/null
    '
  fi
fi

test_done
