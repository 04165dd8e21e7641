import Essentials
import HTTPServer
import Library
import Synchronization

/// One `GET /events?library=a&library=b` stream over several libraries' hubs.
///
/// Rules (the wire format):
/// - Each event's `data` gains `"library": "<id>"` (events of the library list, `album.*`,
///   `library.*` and `state.*`; server-wide ones such as `settings.changed`, which come from
///   `default`'s hub, are sent as they are).
/// - Each event's `id:` is the version vector of the stream: `<lib>:<version>` for every
///   library of the stream, comma-separated, in the order the libraries were asked for
///   (`id: default:12,jazz:3`). It is the newest version of each library the stream has
///   delivered (or the library's version when the stream began).
/// - On reconnect the client sends that id as `Last-Event-ID`: each library resumes after its
///   own version (missed events replayed); a library the id does not name, or whose gap can no
///   longer be replayed, starts with its own `library.outdated` (with `"library"`), as on the
///   single-library stream. Events of different libraries are not ordered with each other.
/// - One `: subscribed` comment once every library is subscribed; one `server.shutdown` at the
///   end, once every library's hub has shut down (so each has sent what it still held: a hub
///   may hold events for a moment to send them together).
/// - A library of the stream deleted ends the whole stream (a complete response, no event):
///   the client reconnects without it (naming it again is 422).
final class MultiLibraryEventStream: Sendable {
    private let writer: HTTPStreamWriter
    private let order: [LibraryID]
    /// The newest version delivered per library, under the lock that also orders the writes.
    private let versions: Mutex<[LibraryID: Int64]>
    private let ended = Atomic<Bool>(false)
    /// Hubs of the stream that have not shut down yet.
    private let running: Atomic<Int>

    init(writer: HTTPStreamWriter, libraries: [LibraryID]) {
        self.writer = writer
        order = libraries
        versions = Mutex([:])
        running = Atomic(libraries.count)
    }

    /// The most libraries one stream may name.
    static let maxLibraries = 32

    /// Subscribes to every hub (`hubs` in the order of the libraries), resuming from the
    /// vector `lastEventID` where it names a library; `backfills` are the change feed's events
    /// for libraries whose version in the vector is older than their hub keeps.
    func start(hubs: [(LibraryID, EventHub)], lastEventID: String?, backfills: [LibraryID: EventHub.Backfill] = [:]) {
        let resumeAt = lastEventID.map(Self.parse)
        for (position, (library, hub)) in hubs.enumerated() {
            let resume: EventHub.Resume
            switch resumeAt {
            case nil: resume = .fresh
            case let vector?: resume = vector[library].map { .after($0) } ?? .unknown(lastEventID ?? "")
            }
            let member = Member(stream: self, library: library, primary: position == 0)
            guard let latest = hub.subscribe(member, resume: resume, lastEventID: lastEventID, announce: false, backfill: backfills[library])
            else {
                // The server is shutting down (or the library was just deleted, which has
                // ended the stream already): the hubs not subscribed yet never will be.
                end()
                return
            }
            versions.withLock { versions in
                // A replayed or outdated frame already set it; otherwise the hub's version now.
                if versions[library] == nil { versions[library] = latest }
            }
        }
        writer.write(EventHub.subscribedFrame)
    }

    /// `a:1,b:2` → [a: 1, b: 2]; malformed parts name nothing (those libraries start outdated).
    static func parse(_ text: String) -> [LibraryID: Int64] {
        var vector: [LibraryID: Int64] = [:]
        for part in text.trimmingASCIIWhitespace().split(separator: ",") {
            let pieces = part.split(separator: ":", maxSplits: 1)
            guard pieces.count == 2, let version = Int64(pieces[1]) else { continue }
            vector[LibraryID(rawValue: String(pieces[0]))] = version
        }
        return vector
    }

    /// Whether `name` is an event about a library's list (its data gets `"library"`).
    static func isLibraryEvent(_ name: String) -> Bool {
        name.hasPrefix("album.") || name.hasPrefix("library.") || name.hasPrefix("state.")
    }

    /// `{"id":...}` → `{"library":"jazz","id":...}` (`{}` → `{"library":"jazz"}`).
    static func withLibrary(_ json: String, _ library: LibraryID) -> String {
        guard json.hasPrefix("{") else { return json }
        let field = "\"library\":" + JSONString.quoted(library.rawValue)
        let rest = json.dropFirst()
        return "{" + field + (rest.hasPrefix("}") ? "" : ",") + rest
    }

    /// Rewrites one library's frames (each with the vector as of that frame) and writes them
    /// in one go.
    fileprivate func send(_ frames: [EventHub.Frame], from library: LibraryID) -> Bool {
        return versions.withLock { versions in
            var bytes: [UInt8] = []
            for frame in frames {
                let json = Self.isLibraryEvent(frame.name) ? Self.withLibrary(frame.json, library) : frame.json
                versions[library] = max(versions[library] ?? frame.version, frame.version)
                // A library whose version is not known yet (its subscription is being made) is
                // left out: resuming from this id starts it with `library.outdated`, never with
                // a guess.
                let id = order.compactMap { library in versions[library].map { "\(library.rawValue):\($0)" } }.joined(separator: ",")
                bytes += EventHub.frame(id: id, name: frame.name, json: json)
            }
            return writer.write(bytes)
        }
    }

    /// One hub has shut down; the stream ends with the last.
    fileprivate func hubShutDown() {
        if running.wrappingSubtract(1, ordering: .acquiringAndReleasing).newValue <= 0 { end() }
    }

    /// One library of the stream was deleted: the stream ends (once), without an event.
    fileprivate func libraryDeleted() {
        guard !ended.exchange(true, ordering: .acquiringAndReleasing) else { return }
        writer.finish()
    }

    /// `server.shutdown`, then the end of the stream (once).
    private func end() {
        guard !ended.exchange(true, ordering: .acquiringAndReleasing) else { return }
        writer.write(EventHub.shutdownFrame)
        writer.finish()
    }

    /// The stream as one hub's subscriber.
    struct Member: EventStreamSink {
        let stream: MultiLibraryEventStream
        let library: LibraryID
        /// Only the first library's hub sends heartbeats (one per interval is enough).
        let primary: Bool

        var sharedWriter: HTTPStreamWriter? { nil }
        func send(_ frames: [EventHub.Frame]) -> Bool { stream.send(frames, from: library) }
        func comment(_ bytes: [UInt8]) { stream.writer.write(bytes) }
        func heartbeat() { if primary { stream.writer.write(EventHub.heartbeatFrame) } }
        func serverShutdown() { stream.hubShutDown() }
        func libraryDeleted() { stream.libraryDeleted() }
        func onClose(_ handler: @escaping @Sendable () -> Void) { stream.writer.onClose(handler) }
    }
}
