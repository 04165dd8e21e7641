import Covers
import HTTPServer
import Library
import Storage

/// `GET /metrics`: the registry in the Prometheus text format, for a scraper.
struct MetricsRoutes {
    let metrics: Metrics

    func register(into routes: inout RouterBuilder) {
        // Inline: rendering only reads atomics and takes a few short in-memory locks.
        routes.add(.get, "/metrics", options: .inline) { [metrics] _, _ in
            HTTPResponse(contentType: Metrics.contentType, bytes: Array(metrics.render().utf8),
                         headers: ["Cache-Control": "no-store"])
        }
    }
}

/// The server's metrics besides the HTTP ones: gauges and counters sampled at scrape time
/// from the plain counters the other modules keep (they know nothing of Prometheus).
enum ServiceMetrics {
    static func register(
        in metrics: Metrics, connections: @escaping @Sendable () -> Int, events: EventHubs, covers: CoverService,
        pages: AlbumListRoute.PageCache, droppedStreams: @escaping @Sendable () -> Int = { 0 }
    ) {
        metrics.sampled("bluelibrary_http_open_connections", help: "Client connections open right now.", connections)
        metrics.sampled("bluelibrary_event_subscribers", help: "Event stream subscriptions open right now (a stream over several libraries counts once per library).") {
            events.subscriberCount
        }
        metrics.sampled("bluelibrary_event_hubs", help: "Event hubs kept (one per library with subscribers or recent events, and default's; an idle one goes after --event-hub-idle, a deleted library's at once).") {
            events.count
        }
        metrics.sampled("bluelibrary_event_hub_threads", help: "Threads the event hubs share for fan-out and heartbeats (started as needed, at most --event-threads).") {
            events.pool.threadCount
        }
        metrics.sampled("bluelibrary_event_hub_thread_limit", help: "The most threads the event hubs may use (--event-threads).") {
            events.pool.threadLimit
        }
        metrics.sampled("bluelibrary_event_streams_dropped_total",
                        help: "Event streams dropped because their unsent bytes, the server's queue plus the kernel's, passed --event-max-unsent.",
                        kind: .counter, droppedStreams)
        metrics.sampled("bluelibrary_event_fanout_batches_total", help: "Event fan-out rounds: each writes every event queued since the last round to each subscriber at once.",
                        kind: .counter) { events.statistics.batches }
        metrics.sampled("bluelibrary_event_fanout_events_total", help: "Events the fan-out rounds carried (each counted once).",
                        kind: .counter) { events.statistics.events }
        metrics.sampled("bluelibrary_event_fanout_deliveries_total", help: "Events times the subscribers they were written to.",
                        kind: .counter) { events.statistics.deliveries }
        metrics.sampled("bluelibrary_event_fanout_writes_total",
                        help: "Subscriber stream writes by the fan-out: one per subscriber per round, so below deliveries when rounds carry several events.",
                        kind: .counter) { events.statistics.writes }
        metrics.register("bluelibrary_event_fanout_cpu_seconds_total",
                         help: "CPU time the event loops spent queueing and sending fan-out rounds (divide by deliveries for the cost per subscriber and event).",
                         kind: .counter) { writer in
            let cpu = events.statistics.cpu.components
            writer.sample("", [], Double(cpu.seconds) + Double(cpu.attoseconds) / 1e18)
        }

        metrics.sampled("bluelibrary_cover_cache_hits_total", help: "Requests for original covers answered from the disk cache (sized variants: bluelibrary_cover_variants_total).",
                        kind: .counter) { covers.statistics.hits }
        metrics.sampled("bluelibrary_cover_cache_misses_total",
                        help: "Requests for original covers that found no cached copy (fetched, or a remembered failure).",
                        kind: .counter) { covers.statistics.misses }
        metrics.sampled("bluelibrary_cover_cache_evictions_total",
                        help: "Cached covers and sized variants removed to stay under the cache size limit.", kind: .counter) {
            covers.statistics.evictions
        }
        metrics.sampled("bluelibrary_cover_cache_bytes", help: "Bytes of cover images in the disk cache, sized variants included.") {
            covers.statistics.cachedBytes
        }
        metrics.sampled("bluelibrary_cover_cache_entries", help: "Original covers in the disk cache (sized variants not included).") {
            covers.statistics.cachedCovers
        }
        metrics.sampled("bluelibrary_cover_cache_variant_entries", help: "Sized cover variants in the disk cache.") {
            covers.statistics.cachedVariants
        }
        metrics.register(
            "bluelibrary_cover_upstream_fetches_total",
            help: "Cover fetches from upstreams by outcome: image, not-modified, or the failure reason.", kind: .counter
        ) { writer in
            for (outcome, count) in covers.statistics.fetches {
                writer.sample("", [("outcome", outcome)], count)
            }
        }
        metrics.register(
            "bluelibrary_cover_variants_total",
            help: "Sized cover variants (?size=) by outcome: made, cache-hit, or failed (a pixel bomb, a truncated or corrupt original).",
            kind: .counter
        ) { writer in
            let statistics = covers.statistics
            for (outcome, count) in [("made", statistics.variantsMade), ("cache-hit", statistics.variantHits),
                                     ("failed", statistics.variantFailures)] {
                writer.sample("", [("outcome", outcome)], count)
            }
        }

        metrics.sampled("bluelibrary_page_cache_hits_total", help: "GET /albums requests answered from a cached page (200 with it, or 304 against its ETag).",
                        kind: .counter) { pages.statistics.hits }
        metrics.sampled("bluelibrary_page_cache_misses_total",
                        help: "GET /albums pages read from the database (or joined to an identical read).",
                        kind: .counter) { pages.statistics.misses }
        metrics.sampled("bluelibrary_page_cache_entries", help: "GET /albums pages held in memory.") {
            pages.usage.entries
        }
    }
}

extension ServiceMetrics {
    /// The read lane (uncached list reads) and the worker queue: what they hold now and what
    /// they refused with 503 since start.
    static func register(in metrics: Metrics, server: HTTPServer, reads: ReadAdmission?) {
        if let reads {
            metrics.sampled("bluelibrary_read_lane_in_flight",
                            help: "Uncached list reads admitted to the read lane and not finished (running or waiting for a read thread).") {
                reads.statistics.inFlight
            }
            metrics.sampled("bluelibrary_read_lane_running", help: "Uncached list reads running on a read-lane thread.") {
                reads.statistics.running
            }
            metrics.register(
                "bluelibrary_read_lane_refused_total",
                help: "Uncached list reads answered 503 at once: queue-full (server-busy: every read thread busy and the read queue full) or client-limit (too-many-reads: the address had --max-reads-per-client in flight).",
                kind: .counter
            ) { writer in
                let statistics = reads.statistics
                writer.sample("", [("reason", "queue-full")], statistics.refusedQueueFull)
                writer.sample("", [("reason", "client-limit")], statistics.refusedClientLimit)
            }
        }
        // The server holds the router, which holds these metrics: held weakly, or neither (nor
        // the routes' stores) would ever be freed.
        metrics.sampled("bluelibrary_worker_queue_waiting", help: "Blocking work (writes, covers, other reads) waiting for a worker thread.") {
            [weak server] in server?.workerQueue.waiting ?? 0
        }
        metrics.sampled("bluelibrary_worker_queue_refused_total",
                        help: "Requests answered 503 server-busy because a pool's queue (--worker-queue, or the read lane's backstop) was full.",
                        kind: .counter) { [weak server] in server?.workerQueue.refused ?? 0 }
    }
}
