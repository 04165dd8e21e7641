#!/usr/bin/env python3
"""Helpers for the idle-1000 and startup-1m rows of scripts/bench.

  bench-idle.py idle HOST PORT SERVER_PID [--connections N] [--hold S]
      Opens N keep-alive connections, sends one GET /healthz on each (all must answer 200),
      leaves them idle for S seconds, then reads VmRSS / VmHWM from /proc/SERVER_PID/status
      while they are still open, and finally checks that every connection is still open and
      served (a second GET /healthz on each). Prints one TSV line:
        opened ok_first rss_kib hwm_kib ok_after open_s idle_s first_error

  bench-idle.py startup PORT [--timeout S] [--log FILE] -- COMMAND...
      Starts COMMAND (the server, environment inherited), polls GET /readyz on 127.0.0.1:PORT
      (a new connection per try, 1 ms apart) until it answers 200, then stops the process
      (SIGTERM). The server's stdout and stderr go to FILE (default /dev/null). Prints one TSV line: ms_to_ready tries hwm_kib_at_ready
"""
import os, resource, signal, socket, subprocess, sys, time

REQ = b"GET /healthz HTTP/1.1\r\nHost: bench\r\n\r\n"


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = n if hard == resource.RLIM_INFINITY else min(n, hard)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def read_response(s, buf=b""):
    """Reads one HTTP/1.1 response (Content-Length framed); returns (status, rest)."""
    while b"\r\n\r\n" not in buf:
        d = s.recv(65536)
        if not d:
            raise ConnectionError("closed before response head")
        buf += d
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    clen = 0
    for l in lines[1:]:
        k, _, v = l.partition(b":")
        if k.strip().lower() == b"content-length":
            clen = int(v.strip())
    while len(rest) < clen:
        d = s.recv(65536)
        if not d:
            raise ConnectionError("closed inside body")
        rest += d
    return status, rest[clen:]


def proc_status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0])
    return out


def round_trip_all(socks):
    """Sends GET /healthz on every socket, then reads every answer; returns (ok, first_error)."""
    ok, first = 0, ""
    for s in socks:
        try:
            s.sendall(REQ)
        except OSError as e:
            first = first or "send: %s" % e
    for s in socks:
        try:
            st, _ = read_response(s)
            if st == 200:
                ok += 1
            else:
                first = first or "status %d" % st
        except (OSError, ValueError, IndexError) as e:
            first = first or "recv: %s" % e
    return ok, first


def idle(args):
    host, port, pid = args[0], int(args[1]), int(args[2])
    n, hold = 1000, 3.0
    i = 3
    while i < len(args):
        if args[i] == "--connections": n = int(args[i + 1]); i += 2
        elif args[i] == "--hold": hold = float(args[i + 1]); i += 2
        else: sys.exit("unknown option %s" % args[i])
    raise_nofile(n + 64)
    t0 = time.monotonic()
    socks, first = [], ""
    for _ in range(n):
        s = socket.create_connection((host, port), timeout=10)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        socks.append(s)
    ok1, e1 = round_trip_all(socks)
    first = first or e1
    open_s = time.monotonic() - t0
    time.sleep(hold)                      # all N connections open and idle
    st = proc_status(pid)
    t1 = time.monotonic()
    ok2, e2 = round_trip_all(socks)       # still open and served after the idle period?
    first = first or (e2 and "after idle: " + e2)
    idle_s = t1 - t0 - open_s
    for s in socks:
        s.close()
    print("%d\t%d\t%d\t%d\t%d\t%.3f\t%.3f\t%s" % (len(socks), ok1, st.get("VmRSS", 0), st.get("VmHWM", 0), ok2,
                                                 open_s, idle_s, first.replace("\t", " ")))


def startup(args):
    port = int(args[0]); timeout = 30.0; logf = "/dev/null"
    i = 1
    while args[i] != "--":
        if args[i] == "--timeout": timeout = float(args[i + 1]); i += 2
        elif args[i] == "--log": logf = args[i + 1]; i += 2
        else: sys.exit("unknown option %s" % args[i])
    cmd = args[i + 1:]
    req = b"GET /readyz HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n"
    log = open(logf, "wb")
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    tries, ms, hwm = 0, None, 0
    try:
        while time.monotonic() - t0 < timeout:
            if p.poll() is not None:
                sys.exit("server exited with %s before /readyz answered 200" % p.returncode)
            tries += 1
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                    s.sendall(req)
                    st, _ = read_response(s)
                    if st == 200:
                        ms = (time.monotonic() - t0) * 1000
                        break
            except (OSError, ValueError, IndexError):
                pass
            time.sleep(0.001)
        try:
            hwm = proc_status(p.pid).get("VmHWM", 0)
        except OSError:
            pass
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill(); p.wait()
    if ms is None:
        sys.exit("/readyz did not answer 200 within %.0f s" % timeout)
    print("%.1f\t%d\t%d" % (ms, tries, hwm))


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in ("idle", "startup"):
        sys.exit(__doc__)
    {"idle": idle, "startup": startup}[sys.argv[1]](sys.argv[2:])
