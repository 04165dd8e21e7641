#!/usr/bin/env python3
"""Event fan-out: one client's write rate with N `GET /events` subscribers reading,
as a ratio to the same client's rate with none, measured in one run on one server process.

    scripts/bench-fanout.py --bin BIN --subscribers 1000 [--duration S] [--readers PROGRAM]
                            [--cpu-server 1] [--cpu-clients 0] [--min-ratio 0.8] [--out FILE]

1. A server on a fresh data directory (seeded), one event loop, no access log, pinned to
   --cpu-server; --max-connections is raised to N + 64 (the default 10,000 would refuse the
   10,001st connection) and the open-file limit to the hard limit (the server raises its soft
   limit itself).
2. The writer (this process, pinned to --cpu-clients): POST /albums one after another on one
   keep-alive connection for S seconds: requests/s and p50/p99. First with no subscriber.
3. The subscribers: N streams held by one C process (scripts/bench-sse-readers.c, on the
   client CPU), each reading everything and counting `album.added` events. Then the writer
   again for S seconds.
4. Checked: every subscriber got every event written while it was subscribed (else the row
   fails). Reported: the ratio (target >= --min-ratio), the server's RSS before and after the
   subscribers (per subscriber), its CPU per write without and with them, the fan-out's own
   counters from /metrics (rounds, events per write, loop CPU per delivery = cost per
   subscriber and event) and the extra server CPU per delivery.
A binary without the fan-out counters (an older build) is measured the same way; the counter
columns are then empty.
"""
import argparse, http.client, json, os, re, resource, socket, statistics, subprocess, sys, time

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close(); return port

def proc_status(pid, key):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])  # kB
    return 0

def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

def metrics(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/metrics"); text = conn.getresponse().read().decode(); conn.close()
    values = {}
    for line in text.splitlines():
        m = re.match(r"^(bluelibrary_event_[a-z_]+) ([0-9.e+-]+)$", line)
        if m: values[m.group(1)] = float(m.group(2))
    return values

def write_for(port, seconds, label):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    latencies = []
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        body = json.dumps({"title": f"{label} {n}", "artist": "Fan-out bench"})
        start = time.perf_counter()
        conn.request("POST", "/albums", body, {"Content-Type": "application/json"})
        response = conn.getresponse(); response.read()
        latencies.append(time.perf_counter() - start)
        if response.status != 201: sys.exit(f"POST /albums answered {response.status}")
        n += 1
    conn.close()
    latencies.sort()
    p = lambda q: latencies[min(len(latencies) - 1, int(q * (len(latencies) - 1)))] * 1000
    return n, n / seconds, p(0.5), p(0.99)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--subscribers", type=int, default=1000)
    ap.add_argument("--duration", type=float, default=5)
    ap.add_argument("--readers", required=True, help="the compiled bench-sse-readers")
    ap.add_argument("--dir", default=".bench/fanout")
    ap.add_argument("--cpu-server", default="1")
    ap.add_argument("--cpu-clients", default="0")
    ap.add_argument("--min-ratio", type=float, default=0.8)
    ap.add_argument("--out", default=None, help="append one tab-separated result row here")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    os.sched_setaffinity(0, {int(c) for c in args.cpu_clients.split(",")})

    data = os.path.join(args.dir, f"data-{args.subscribers}")
    subprocess.run(["rm", "-rf", data], check=True); os.makedirs(data)
    port = free_port()
    env = dict(os.environ, BLUELIBRARY_ACCESS_LOG="off", BLUELIBRARY_EVENT_LOOPS=os.environ.get("BLUELIBRARY_EVENT_LOOPS", "1"),
               BLUELIBRARY_DATA_DIR=data, BLUELIBRARY_PORT=str(port), BLUELIBRARY_LOG_LEVEL="warning",
               BLUELIBRARY_MAX_CONNECTIONS=str(args.subscribers + 64))
    log = open(os.path.join(args.dir, f"server-{args.subscribers}.log"), "w")
    server = subprocess.Popen(["taskset", "-c", args.cpu_server, args.bin, "serve"], env=env, stdout=log, stderr=log)
    readers = None
    try:
        for _ in range(300):
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=1); c.request("GET", "/healthz")
                if c.getresponse().status == 200: break
            except OSError: time.sleep(0.05)
        else: sys.exit("server did not start")
        write_for(port, 1, "warm-up")
        rss_idle = proc_status(server.pid, "VmRSS")
        cpu0 = cpu_seconds(server.pid)
        n0, rate0, p50_0, p99_0 = write_for(port, args.duration, "alone")
        cpu_alone = (cpu_seconds(server.pid) - cpu0) / n0

        started = time.perf_counter()
        readers = subprocess.Popen(["taskset", "-c", args.cpu_clients, args.readers, str(port), str(args.subscribers), "/events"],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        ready = readers.stdout.readline().split()
        if ready[:1] != ["ready"] or int(ready[1]) != args.subscribers:
            sys.exit(f"the readers connected {ready}")
        deadline = time.time() + 120
        while metrics(port).get("bluelibrary_event_subscribers", 0) < args.subscribers:
            if time.time() > deadline: sys.exit("the subscribers did not all subscribe")
            time.sleep(0.1)
        subscribe_seconds = time.perf_counter() - started
        rss_subscribed = proc_status(server.pid, "VmRSS")

        def stats():
            readers.stdin.write("stats\n"); readers.stdin.flush()
            return dict(kv.split("=") for kv in readers.stdout.readline().split())

        before = metrics(port)
        cpu1 = cpu_seconds(server.pid)
        n1, rate1, p50_1, p99_1 = write_for(port, args.duration, "watched")
        cpu_watched_total = cpu_seconds(server.pid) - cpu1
        # Every subscriber gets every event (the fan-out may hold the last ones for a moment).
        deadline = time.time() + 30
        while True:
            s = stats()
            if int(s["min"]) >= n1 or time.time() > deadline: break
            time.sleep(0.1)
        # The writer stopped: what is left of the server's CPU went to the last rounds.
        cpu_watched_total = cpu_seconds(server.pid) - cpu1
        after = metrics(port)
        # Delivery delay of one event (POST answered -> every subscriber has it, polled every
        # 2 ms): right after another one (the round's pause applies), and after 1 s of quiet.
        def delivery(label):
            have = int(stats()["min"])
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("POST", "/albums", json.dumps({"title": label, "artist": "Fan-out bench"}), {"Content-Type": "application/json"})
            conn.getresponse().read(); conn.close()
            acked = time.perf_counter()
            while int(stats()["min"]) <= have and time.perf_counter() - acked < 10: time.sleep(0.002)
            return (time.perf_counter() - acked) * 1000
        busy = []
        for i in range(3):
            delivery(f"pair {i} a")
            busy.append(delivery(f"pair {i} b"))
        quiet = []
        for i in range(3):
            time.sleep(1)
            quiet.append(delivery(f"quiet {i}"))
        final = stats()
        delivered_ok = (int(s["min"]) == n1 and int(s["max"]) == n1 and int(final["min"]) == int(final["max"]) == n1 + 9
                        and int(final["open"]) == args.subscribers)
        rss_peak = proc_status(server.pid, "VmHWM")
        d = lambda k: after.get(k, 0) - before.get(k, 0)
        deliveries = d("bluelibrary_event_fanout_deliveries_total")
        writes = d("bluelibrary_event_fanout_writes_total")
        rounds = d("bluelibrary_event_fanout_batches_total")
        events = d("bluelibrary_event_fanout_events_total")
        loop_cpu = d("bluelibrary_event_fanout_cpu_seconds_total")
        ratio = rate1 / rate0
        extra_cpu_per_delivery = (cpu_watched_total - cpu_alone * n1) / max(1, deliveries or n1 * args.subscribers)
        row = {
            "subscribers": args.subscribers, "seconds": args.duration,
            "rate_alone": round(rate0, 1), "rate_watched": round(rate1, 1), "ratio": round(ratio, 3),
            "p50_alone_ms": round(p50_0, 3), "p99_alone_ms": round(p99_0, 3),
            "p50_watched_ms": round(p50_1, 3), "p99_watched_ms": round(p99_1, 3),
            "every_event_delivered": delivered_ok, "events_per_subscriber": s["min"] + "-" + s["max"],
            "rss_idle_mib": round(rss_idle / 1024, 1), "rss_subscribed_mib": round(rss_subscribed / 1024, 1),
            "rss_per_subscriber_kib": round((rss_subscribed - rss_idle) / args.subscribers, 2),
            "rss_peak_mib": round(rss_peak / 1024, 1), "subscribe_seconds": round(subscribe_seconds, 2),
            "server_cpu_ms_per_write_alone": round(cpu_alone * 1000, 3),
            "server_cpu_ms_per_write_watched": round(cpu_watched_total / n1 * 1000, 3),
            "rounds": int(rounds), "events": int(events), "deliveries": int(deliveries), "writes": int(writes),
            "events_per_write": round(deliveries / writes, 2) if writes else "",
            "loop_cpu_us_per_delivery": round(loop_cpu / deliveries * 1e6, 3) if deliveries else "",
            "extra_server_cpu_us_per_delivery": round(extra_cpu_per_delivery * 1e6, 3),
            "delivery_ms_after_an_event": [round(x, 1) for x in busy],
            "delivery_ms_after_quiet": [round(x, 1) for x in quiet],
        }
        target = "met" if ratio >= args.min_ratio and delivered_ok else "NOT met"
        print(f"fanout-{args.subscribers}: one writer {rate0:.0f}/s alone, {rate1:.0f}/s with {args.subscribers} subscribers reading "
              f"= {ratio:.2f}x (target >= {args.min_ratio}x: {target}); p99 {p99_0:.2f} -> {p99_1:.2f} ms")
        print(f"  every subscriber got every event: {delivered_ok} ({s['min']}-{s['max']} album.added each, {n1} written); "
              f"open streams {s['open']}")
        print(f"  server RSS {rss_idle/1024:.1f} MiB idle -> {rss_subscribed/1024:.1f} MiB with {args.subscribers} subscribers "
              f"({row['rss_per_subscriber_kib']} KiB each), peak {rss_peak/1024:.1f} MiB; subscribing took {subscribe_seconds:.2f} s")
        if deliveries:
            print(f"  fan-out: {int(rounds)} rounds for {int(events)} events, {int(deliveries)} deliveries in {int(writes)} writes "
                  f"({row['events_per_write']} events per write); loop CPU {row['loop_cpu_us_per_delivery']} us per subscriber and event")
        print(f"  one event's delivery to every subscriber: {', '.join('%.0f' % x for x in busy)} ms right after another event; "
              f"{', '.join('%.0f' % x for x in quiet)} ms after 1 s of quiet")
        print(f"  server CPU per write {row['server_cpu_ms_per_write_alone']} ms alone, {row['server_cpu_ms_per_write_watched']} ms watched "
              f"({row['extra_server_cpu_us_per_delivery']} us extra per subscriber and event)")
        if args.out:
            with open(args.out, "a") as f: f.write(json.dumps(row) + "\n")
        return 0 if target == "met" else 1
    finally:
        if readers:
            try: readers.stdin.write("quit\n"); readers.stdin.flush()
            except OSError: pass
            readers.wait(timeout=30)
        server.terminate()
        try: server.wait(timeout=30)
        except subprocess.TimeoutExpired: server.kill()

if __name__ == "__main__":
    sys.exit(main())
