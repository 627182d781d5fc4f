#!/usr/bin/env python3
"""bench/container-exit/exitfile-floor.py SOCK EXIT_DIR ID NETWORK OUT_DIR

The floor of bench/container-exit's "exit file, then removal" row: the least a client of the
engine's API can do for a job whose end is recorded after its container and network are gone,
knowing of the exit at once from conmon's exit file. Watches EXIT_DIR with inotify (before the
container starts: prints "ready" once it watches), and when the file of container ID appears,
DELETEs the container (?force=1), then NETWORK, over SOCK (one HTTP/1.1 connection kept open,
made before the exit). Writes the wall-clock times (CLOCK_REALTIME, seconds with
microseconds) to OUT_DIR: exitfile (the file seen), ctr_rm (the container's DELETE answered),
end (the network's DELETE answered)."""
import ctypes
import http.client
import os
import select
import socket
import struct
import sys
import time

IN_CLOSE_WRITE, IN_MOVED_TO = 0x8, 0x80


class UnixConn(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("d", timeout=60)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


def delete(conn, path):
    conn.request("DELETE", path)
    r = conn.getresponse()
    r.read()
    return r.status


def main():
    sock, exit_dir, cid, net, out = sys.argv[1:6]
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(0)
    if fd < 0 or libc.inotify_add_watch(fd, exit_dir.encode(), IN_CLOSE_WRITE | IN_MOVED_TO) < 0:
        sys.exit("cannot watch " + exit_dir)
    conn = UnixConn(sock)
    conn.connect()
    print("ready", flush=True)
    seen = os.path.exists(os.path.join(exit_dir, cid))
    deadline = time.monotonic() + 30
    while not seen and time.monotonic() < deadline:
        if not select.select([fd], [], [], 1)[0]:
            continue
        buf = os.read(fd, 65536)
        i = 0
        while i < len(buf):
            _, _, _, n = struct.unpack_from("iIII", buf, i)
            name = buf[i + 16 : i + 16 + n].rstrip(b"\0").decode()
            i += 16 + n
            seen = seen or name == cid
    if not seen:
        sys.exit("no exit file for " + cid)
    t_file = time.time()
    s1 = delete(conn, "/v1.41/containers/%s?force=1" % cid)
    t_rm = time.time()
    s2 = delete(conn, "/v1.41/networks/" + net)
    t_end = time.time()
    for name, t in (("exitfile", t_file), ("ctr_rm", t_rm), ("end", t_end)):
        with open(os.path.join(out, name), "w") as f:
            f.write("%.6f\n" % t)
    if s1 not in (200, 204) or s2 not in (200, 204):
        sys.exit("DELETE answered %d, %d" % (s1, s2))


if __name__ == "__main__":
    main()
