import Crypto
import Essentials
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The cover cache directory could not be created or read (thrown when the service starts).
public struct CoverCacheOpenError: Error, Sendable, CustomStringConvertible {
    public let directory: String
    public let reason: String
    public var description: String { "cover cache directory \(directory): \(reason)" }
}

/// Cover images on disk, named by the SHA-256 of their URL, with a size limit and
/// least-recently-used eviction.
///
/// Layout of the cache directory (nothing else is written there):
/// - `<url hash>-<content hash prefix>.<ext>`: the image bytes; a new version gets a new name,
///   so a file being sent is never rewritten under a reader.
/// - `<url hash>.json`: its ``CoverCacheRecord``; its modification time is the last use, kept
///   for the LRU order across restarts (touched at most once a minute per entry).
/// - `.tmp-*`: writes in progress (see ``AtomicFile``), deleted at start.
/// - `.locks/<n>.lock` (n < 64): empty; their `flock`s serialise the fetches of one cover
///   across the processes sharing the directory (``CoverFetchLocks``); created once, never
///   deleted, never scanned or evicted. (`<url hash>.lock` files of earlier versions are
///   deleted at start when no one holds them.)
///
/// Several processes may share the directory: each keeps its own index, and a process that
/// holds a cover's fetch lock first adopts what another stored (``adopt(_:)``). Another
/// process may also evict or replace a cover this index points at: ``present(_:use:)`` notices
/// the missing image (ENOENT), drops the entry and adopts the other's copy if there is one.
///
/// The image is renamed into place before its record, and the record is removed before the
/// image, so a crash leaves at most an unreferenced image, which the next start deletes. A
/// record whose image is missing or of another size is dropped at start.
///
/// Sizes count image bytes. When a store passes `sizeLimit`, the least recently used entries
/// go until `trimRatio × sizeLimit` is left. Every disk error makes a store return nil
/// ("serve without caching"); nothing here crashes on a full disk.
final class CoverDiskCache: Sendable {
    private struct Slot {
        var record: CoverCacheRecord
        var lastUse: UInt64
        /// The clock's nanoseconds when a hit last touched the record's file.
        var persistedUse: UInt64
    }

    private struct Index {
        var slots: [String: Slot] = [:]
        var totalBytes = 0
        var tick: UInt64 = 0
    }

    /// How often a hit may touch its record's modification time.
    private static let usePersistInterval: UInt64 = Duration.seconds(60).nanoseconds

    let directory: String
    let trimRatio: Double
    private let index = Mutex(Index())
    /// Monotonic time for `persistedUse` (memory only; the record's mtime is the wall-clock use).
    private let clock: any MonotonicClock
    /// The size limit in force (changed at runtime by `setSizeLimit`).
    private let limit: Atomic<Int>
    /// Entries removed by the size limit (LRU), since the cache was opened.
    private let evictions = Atomic<Int>(0)
    /// The fetch locks (`.locks/` in the directory).
    let fetchLocks: CoverFetchLocks

    /// Opens (creating if needed) the cache in `directory` and reads its records.
    /// - Throws: ``CoverCacheOpenError`` when the directory cannot be created or listed.
    init(directory: String, sizeLimit: Int, trimRatio: Double, clock: any MonotonicClock) throws(CoverCacheOpenError) {
        self.clock = clock
        var directory = directory
        while directory.count > 1, directory.hasSuffix("/") { directory.removeLast() }
        self.directory = directory
        limit = Atomic(max(0, sizeLimit))
        self.trimRatio = min(1, max(0, trimRatio))
        let files = FileManager.default
        do {
            try files.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw CoverCacheOpenError(directory: directory, reason: "cannot be created (\(error.localizedDescription))")
        }
        let names: [String]
        do {
            names = try files.contentsOfDirectory(atPath: directory)
        } catch {
            throw CoverCacheOpenError(directory: directory, reason: "cannot be listed (\(error.localizedDescription))")
        }
        fetchLocks = CoverFetchLocks(cacheDirectory: directory)
        load(names)
    }

    var totalBytes: Int { index.withLock { $0.totalBytes } }
    var sizeLimit: Int { limit.load(ordering: .relaxed) }

    /// Changes the size limit; when the cache is now over it, the least recently used entries
    /// go until `trimRatio` of the new limit is left (as after a store).
    func setSizeLimit(_ newLimit: Int) {
        let newLimit = max(0, newLimit)
        let victims = index.withLock { index -> [CoverCacheRecord] in
            limit.store(newLimit, ordering: .relaxed)
            return Self.chooseVictims(&index, keeping: nil, limit: newLimit, ratio: trimRatio)
        }
        if !victims.isEmpty { evictions.wrappingAdd(victims.count, ordering: .relaxed) }
        for victim in victims { removeFiles(of: victim) }
    }
    var count: Int { index.withLock { $0.slots.count } }
    var usage: (bytes: Int, count: Int) { index.withLock { ($0.totalBytes, $0.slots.count) } }
    /// How many entries are sized variants (keys `variant:...`); counted on demand (a walk of
    /// the index: for statistics, not for every request).
    var variantCount: Int { index.withLock { $0.slots.keys.lazy.filter { $0.hasPrefix("variant:") }.count } }
    var evictionCount: Int { evictions.load(ordering: .relaxed) }

    func path(of record: CoverCacheRecord) -> String { directory + "/" + record.file }

    /// The record for `url`, counted as a use (LRU).
    func lookup(_ url: String) -> CoverCacheRecord? {
        let now = clock.nanoseconds()
        let (record, persist) = index.withLock { index -> (CoverCacheRecord?, Bool) in
            guard var slot = index.slots[url] else { return (nil, false) }
            index.tick += 1
            slot.lastUse = index.tick
            let persist = now >= slot.persistedUse && now - slot.persistedUse >= Self.usePersistInterval
            if persist { slot.persistedUse = now }
            index.slots[url] = slot
            return (slot.record, persist)
        }
        if persist { _ = utimes(recordPath(url), nil) }
        return record
    }

    /// The record for `url` without counting a use.
    func peek(_ url: String) -> CoverCacheRecord? {
        index.withLock { $0.slots[url]?.record }
    }

    /// The record for `url` (a use when `use` is set, as ``lookup(_:)``) whose image is on disk.
    /// When another process sharing the directory removed the image (evicted or replaced the
    /// cover: `ENOENT`), the entry leaves this index (the files are the other process's now)
    /// and what the directory holds for `url` now is adopted, if anything (`adopted` is then
    /// true); nil when nothing is left, so the caller fetches again.
    func present(_ url: String, use: Bool) -> (record: CoverCacheRecord?, adopted: Bool) {
        guard let record = use ? lookup(url) : peek(url) else { return (nil, false) }
        guard access(path(of: record), F_OK) != 0, errno == ENOENT else { return (record, false) }
        forget(url, ifFile: record.file)
        if let adopted = adopt(url) { return (adopted, true) }
        return (peek(url), false)  // another thread of this service may have stored one meanwhile
    }

    /// Drops `url` from this index (only while it names `file`) without touching the files.
    private func forget(_ url: String, ifFile file: String) {
        index.withLock { index in
            guard let slot = index.slots[url], slot.record.file == file else { return }
            index.slots.removeValue(forKey: url)
            index.totalBytes -= slot.record.length
        }
    }

    /// Stores `bytes` for `url`, replacing an older version, then trims the cache.
    /// - Returns: the new record, or nil when the bytes could not be stored (disk full, the
    ///   directory gone, or an image larger than the whole cache).
    func store(
        url: String, bytes: [UInt8], format: ImageSignature, upstreamETag: String?, upstreamLastModified: String?,
        validatedAt: Date
    ) -> CoverCacheRecord? {
        store(url: url, bytes: bytes, mediaType: format.mediaType, fileExtension: CoverCacheRecord.fileExtension(for: format),
              upstreamETag: upstreamETag, upstreamLastModified: upstreamLastModified, validatedAt: validatedAt, source: nil)
    }

    /// Stores `bytes` under `key` (a URL, or a variant's key) with the given type and file
    /// extension (one ``CoverCacheRecord/isCacheFileName(_:)`` accepts); see the overload above.
    func store(
        url: String, bytes: [UInt8], mediaType: String, fileExtension: String, upstreamETag: String?,
        upstreamLastModified: String?, validatedAt: Date, source: String?
    ) -> CoverCacheRecord? {
        guard bytes.count <= sizeLimit else { return nil }
        let urlHash = Self.urlHash(url)
        let contentHash = SHA256.hex(SHA256.hash(bytes))
        let record = CoverCacheRecord(
            url: url, file: "\(urlHash)-\(contentHash.prefix(16)).\(fileExtension)",
            mediaType: mediaType, length: bytes.count, contentHash: contentHash, upstreamETag: upstreamETag,
            upstreamLastModified: upstreamLastModified, validatedAt: validatedAt, source: source)
        do {
            try AtomicFile.write(bytes, to: path(of: record), directory: directory)
        } catch {
            return nil
        }
        guard writeRecord(record) else {
            if peek(url)?.file != record.file { unlink(path(of: record)) }
            return nil
        }
        let (replaced, victims) = index.withLock { index -> (CoverCacheRecord?, [CoverCacheRecord]) in
            index.tick += 1
            let old = index.slots.updateValue(
                Slot(record: record, lastUse: index.tick, persistedUse: clock.nanoseconds()), forKey: url)
            index.totalBytes += record.length - (old?.record.length ?? 0)
            return (old?.record, Self.chooseVictims(&index, keeping: url, limit: limit.load(ordering: .relaxed), ratio: trimRatio))
        }
        if !victims.isEmpty { evictions.wrappingAdd(victims.count, ordering: .relaxed) }
        if let replaced, replaced.file != record.file { unlink(path(of: replaced)) }
        for victim in victims { removeFiles(of: victim) }
        return record
    }

    /// Records that the upstream confirmed the copy of `url` (a 304), keeping or updating
    /// its validators. Returns nil when nothing is cached for `url` any more.
    func refresh(url: String, validatedAt: Date, upstreamETag: String?, upstreamLastModified: String?) -> CoverCacheRecord? {
        guard var record = peek(url) else { return nil }
        record.validatedAt = validatedAt
        if let upstreamETag { record.upstreamETag = upstreamETag }
        if let upstreamLastModified { record.upstreamLastModified = upstreamLastModified }
        // A record that cannot be rewritten is still right in memory; it is only staler on disk.
        _ = writeRecord(record)
        return index.withLock { index -> CoverCacheRecord? in
            guard var slot = index.slots[url], slot.record.file == record.file else { return index.slots[url]?.record }
            slot.record = record
            index.slots[url] = slot
            return record
        }
    }

    /// Removes the copy of `url`, if any (only if it is stored in `file`, when given).
    func remove(_ url: String, ifFile file: String? = nil) {
        let removed = index.withLock { index -> CoverCacheRecord? in
            guard let slot = index.slots[url], file == nil || slot.record.file == file else { return nil }
            index.slots.removeValue(forKey: url)
            index.totalBytes -= slot.record.length
            return slot.record
        }
        if let removed { removeFiles(of: removed) }
    }

    /// Takes the cross-process fetch lock of `url`, waiting at most `timeout` while another
    /// process holds it; nil when it did not come free in time (the fetch runs unlocked).
    func lockFetch(_ url: String, timeout: Duration) -> CoverFetchLock? {
        fetchLocks.lock(stripe: CoverFetchLocks.stripe(ofURLHash: Self.urlHash(url)), timeout: timeout)
    }

    /// The record another process sharing the directory stored for `url`, taken into this
    /// index (replacing what it had, whose file the other process has replaced); nil when the
    /// directory has none, or only the one this index already has.
    func adopt(_ url: String) -> CoverCacheRecord? {
        guard let record = Self.readRecord(at: recordPath(url), directory: directory), record.url == url,
              record != peek(url)
        else { return nil }
        let victims = index.withLock { index -> [CoverCacheRecord] in
            index.tick += 1
            let old = index.slots.updateValue(
                Slot(record: record, lastUse: index.tick, persistedUse: clock.nanoseconds()), forKey: url)
            index.totalBytes += record.length - (old?.record.length ?? 0)
            return Self.chooseVictims(&index, keeping: url, limit: limit.load(ordering: .relaxed), ratio: trimRatio)
        }
        if !victims.isEmpty { evictions.wrappingAdd(victims.count, ordering: .relaxed) }
        for victim in victims { removeFiles(of: victim) }
        return record
    }

    static func urlHash(_ url: String) -> String { SHA256.hex(SHA256.hash(Array(url.utf8))) }

    private func recordPath(_ url: String) -> String { directory + "/" + Self.urlHash(url) + ".json" }

    private func writeRecord(_ record: CoverCacheRecord) -> Bool {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        guard let data = try? encoder.encode(record) else { return false }
        do {
            try AtomicFile.write(Array(data), to: recordPath(record.url), directory: directory)
            return true
        } catch {
            return false
        }
    }

    /// Record first: a crash in between leaves an unreferenced image, never a record without one.
    private func removeFiles(of record: CoverCacheRecord) {
        unlink(recordPath(record.url))
        unlink(path(of: record))
    }

    /// The record stored at `path` if it is whole and names an image of its size in
    /// `directory` (what `load` accepts).
    private static func readRecord(at path: String, directory: String) -> CoverCacheRecord? {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        guard let data = FileManager.default.contents(atPath: path),
              let record = try? decoder.decode(CoverCacheRecord.self, from: data),
              path.hasSuffix("/" + urlHash(record.url) + ".json"),
              CoverCacheRecord.isCacheFileName(record.file), record.file.hasPrefix(urlHash(record.url)),
              let imageSize = fileSize(directory + "/" + record.file), imageSize == record.length
        else { return nil }
        return record
    }

    /// Least recently used first, never `keeping`, until `ratio × limit` is left.
    private static func chooseVictims(_ index: inout Index, keeping: String?, limit: Int, ratio: Double) -> [CoverCacheRecord] {
        guard index.totalBytes > limit else { return [] }
        let target = Int(Double(limit) * ratio)
        var victims: [CoverCacheRecord] = []
        for (url, slot) in index.slots.sorted(by: { $0.value.lastUse < $1.value.lastUse }) {
            guard index.totalBytes > target else { break }
            guard url != keeping else { continue }
            index.slots.removeValue(forKey: url)
            index.totalBytes -= slot.record.length
            victims.append(slot.record)
        }
        return victims
    }

    /// Reads the records found at start; deletes leftovers of interrupted writes and images
    /// no record refers to. Files of other shapes are left alone.
    private func load(_ names: [String]) {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        var found: [(record: CoverCacheRecord, used: Double)] = []
        var referenced = Set<String>()
        for name in names where name.hasSuffix(".json") {
            let path = directory + "/" + name
            guard let data = FileManager.default.contents(atPath: path),
                  let record = try? decoder.decode(CoverCacheRecord.self, from: data),
                  name == Self.urlHash(record.url) + ".json",
                  CoverCacheRecord.isCacheFileName(record.file), record.file.hasPrefix(Self.urlHash(record.url)),
                  let imageSize = Self.fileSize(directory + "/" + record.file), imageSize == record.length
            else {
                if name.count == 64 + 5 { unlink(path) }
                continue
            }
            referenced.insert(record.file)
            found.append((record, Self.modificationTime(path) ?? 0))
        }
        for name in names {
            let path = directory + "/" + name
            if name.hasPrefix(AtomicFile.temporaryPrefix) {
                // Another process sharing the directory may be writing it (it holds its lock).
                if !Self.isLocked(path) { unlink(path) }
            } else if CoverCacheRecord.isCacheFileName(name), !referenced.contains(name) {
                // Stored by another process whose record is not written yet: it holds the
                // cover's fetch lock until then.
                if !fetchLocks.isLocked(stripe: CoverFetchLocks.stripe(ofURLHash: name.prefix(64))) { unlink(path) }
            } else if name.utf8.count == 64 + 5, name.hasSuffix(".lock"), !Self.isLocked(path) {
                unlink(path)  // a per-URL lock file of an earlier version
            }
        }
        let victims = index.withLock { index -> [CoverCacheRecord] in
            for (record, _) in found.sorted(by: { $0.used < $1.used }) {
                index.tick += 1
                index.slots[record.url] = Slot(record: record, lastUse: index.tick, persistedUse: clock.nanoseconds())
                index.totalBytes += record.length
            }
            return Self.chooseVictims(&index, keeping: "", limit: sizeLimit, ratio: trimRatio)
        }
        for victim in victims { removeFiles(of: victim) }
    }

    /// Whether another open file (another process's, or another service's) holds an `flock`
    /// on `path` now; false when the file does not exist.
    static func isLocked(_ path: String) -> Bool {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return flock(descriptor, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK
    }

    private static func fileSize(_ path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int(info.st_size)
    }

    private static func modificationTime(_ path: String) -> Double? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
    }
}
