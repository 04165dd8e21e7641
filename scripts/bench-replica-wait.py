#!/usr/bin/env python3
"""Read-your-writes through a read replica: the latency of a read that must see the client's own
write (it sends the BlueLibrary-Position its write was handed, so a replica that has not replayed
that far is waited for, up to BLUELIBRARY_REPLICA_WAIT, else the primary answers), against the
same read with no position (any replica within the lag limit answers at once).

Usage: bench-replica-wait.py HOST PORT [--rounds N]

Each round: POST /albums, then GET /albums?limit=50 with the position the POST was handed
("after-own-write"), then the same GET with no position ("no-position"), then DELETE the album
(the library keeps its size). Prints TSV: scenario, reads, p50_ms, p99_ms, mean_ms.
"""
import argparse
import http.client
import json
import statistics
import sys
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()
    connection = http.client.HTTPConnection(args.host, args.port, timeout=30)

    def request(method, path, body=None, headers=None):
        headers = dict(headers or {})
        if body is not None:
            headers["Content-Type"] = "application/json"
        start = time.perf_counter()
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        data = response.read()
        elapsed = (time.perf_counter() - start) * 1000
        if response.status >= 300:
            sys.exit("%s %s answered %d: %s" % (method, path, response.status, data[:300]))
        return response, data, elapsed

    timings = {"after-own-write": [], "no-position": []}
    for round_ in range(args.rounds):
        created, data, _ = request("POST", "/albums", json.dumps({"title": "Wait %d" % round_, "artist": "Bench"}))
        position = created.getheader("BlueLibrary-Position")
        if not position:
            sys.exit("the write handed out no BlueLibrary-Position: is the server reading from a replica?")
        album = json.loads(data)["id"]
        _, _, own = request("GET", "/albums?limit=50&r=%d" % round_, headers={"BlueLibrary-Position": position})
        _, _, fresh = request("GET", "/albums?limit=50&f=%d" % round_)
        timings["after-own-write"].append(own)
        timings["no-position"].append(fresh)
        request("DELETE", "/albums/%s" % album)
    for scenario, values in timings.items():
        values.sort()
        print("%s\t%d\t%.3f\t%.3f\t%.3f" % (scenario, len(values), values[len(values) // 2], values[int(len(values) * 0.99)],
                                           statistics.mean(values)))


if __name__ == "__main__":
    main()
