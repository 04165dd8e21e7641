#if canImport(Glibc)
import Glibc
import CLinux
#endif

/// The process's open-file limit (RLIMIT_NOFILE): every connection costs a descriptor.
enum DescriptorLimit {
    /// Descriptors a server needs besides its connections: standard streams, each loop's
    /// epoll, eventfd and listener, and what the application opens (database, files sent).
    static let headroom = 64

    /// Raises the soft limit to the hard limit (as nginx's `worker_rlimit_nofile` would be
    /// set by hand; the soft limit is often 1,024 while the hard one is far higher) and
    /// returns the soft limit in force afterwards; nil if it cannot be read.
    static func raiseSoftLimitToHardLimit() -> Int? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            // An unlimited hard limit is refused for RLIMIT_NOFILE (EPERM above fs.nr_open):
            // then the soft limit stays as it was.
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        // rlim_t.max is RLIM_INFINITY.
        return limit.rlim_cur == rlim_t.max ? Int.max : Int(clamping: limit.rlim_cur)
    }

    /// A warning when `maxConnections` cannot be reached under `limit`, else nil.
    static func warning(maxConnections: Int, limit: Int?) -> String? {
        guard let limit, maxConnections > limit - headroom else { return nil }
        return "maxConnections (\(maxConnections)) is above what the open-file limit (\(limit)) allows: "
            + "past about \(max(0, limit - headroom)) connections accept fails with EMFILE and new clients wait "
            + "in the listen backlog; raise the limit (ulimit -n, LimitNOFILE=) or lower maxConnections"
    }
}
