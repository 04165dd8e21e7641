#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryClient
import Foundation

/// `bluelibrary sync --replica FILE [--url URL]`: creates the replica on first use, pushes its
/// queued changes, pulls the server's, checks that both now hold the same albums in the same
/// order, and prints what it did. Exit 0 when replica and server agree (changes the server would
/// not take are dropped, listed, and still exit 0: the agreement is what the code reports), 1
/// with the reason when the server cannot be reached, a request fails, or they still differ;
/// 2 for a usage mistake; 3 and 4 for a locked server's 401 and 429 (the queue kept).
enum SyncCommand {
    static let helpText = """
        Usage: bluelibrary sync [--replica FILE] [options]

        Brings an offline replica (see 'bluelibrary albums --help', --replica) and the server into
        agreement: creates FILE on first use (a full copy of the library), sends the changes queued
        in it oldest first (each with its own Idempotency-Key, so a retry never applies one twice),
        then applies the server's changes since the last sync (GET /changes; too far behind: a full
        reload), and compares both lists album by album. Changes the server would not take (an
        album deleted there meanwhile, fields it rejects) are dropped and listed.

        Exit status: 0 when replica and server agree; 1 when they do not, or the server could not
        be reached (the queued changes stay in FILE for the next sync); 2 for a usage mistake;
        3 the server is locked and the key (or token) is missing or wrong (401), 4 this address
        is locked out after too many wrong keys (429), 5 the key may not write to this library
        (403): nothing queued is lost or dropped, the line says how many changes stay queued
        and what to do.

        Options:
          --replica FILE   The replica (default: $BLUELIBRARY_REPLICA).
          --library ID     The library of a new replica (default: "default"); an existing FILE
                           keeps its own, and another ID is refused.
          --url URL        The server (default: $BLUELIBRARY_URL, else http://127.0.0.1:8080).
          --timeout SEC    Seconds to wait for each answer (default: $BLUELIBRARY_CLIENT_TIMEOUT,
                           else 10).
        \(ClientToken.optionsHelp)
          --json           Print what was done as JSON.
        """

    /// What one run did, as `--json` prints it.
    struct Outcome: Encodable {
        struct Dropped: Encodable {
            var kind: String
            var album: String
            var reason: String
        }

        var replica: String
        var library: String
        var created: Bool
        var pushed = 0
        /// Queued adds whose key an interrupted request held: found on the server / sent again.
        var adoptedAdds = 0
        var resentAdds = 0
        var dropped: [Dropped] = []
        var pulledChanges = 0
        var reloaded = false
        var version: Int64 = 0
        var albums = 0
        var agree = false
    }

    static func run(_ arguments: [String]) -> Never {
        var options = AlbumsCommand.Options(arguments, command: "sync")
        if arguments.first == "help" || options.flag("help") || options.flag("h") {
            print(helpText)
            exit(0)
        }
        guard let path = ReplicaAlbumsCommand.replicaPath(&options) else {
            fail("sync needs --replica FILE (or $BLUELIBRARY_REPLICA)")
        }
        let client = AlbumsCommand.connect(&options)
        let json = options.flag("json")
        let library = options.value("library")
        options.finish()

        let created = !FileManager.default.fileExists(atPath: path)
        let replica = ReplicaAlbumsCommand.open(path, library: library, client: client)
        var outcome = Outcome(replica: path, library: replica.library, created: created)
        do throws(ReplicaError) {
            let report = try ReplicaAlbumsCommand.wait { () async throws(ReplicaError) in try await replica.sync() }
            take(report, into: &outcome)
            // Another client may write between the pull and the comparison: pull again then.
            var difference = try compare(replica, client: client)
            for _ in 0..<3 where difference != nil {
                let again = try ReplicaAlbumsCommand.wait { () async throws(ReplicaError) in try await replica.sync() }
                take(again, into: &outcome)
                difference = try compare(replica, client: client)
            }
            outcome.albums = try ReplicaAlbumsCommand.wait { () async throws(ReplicaError) in try await replica.albums().count }
            outcome.agree = difference == nil
            printOutcome(outcome, json: json)
            if let difference { fail("replica and server still differ after sync: \(difference)", code: 1) }
        } catch {
            printOutcome(outcome, json: json)
            let pending = (try? ReplicaAlbumsCommand.wait { () async throws(ReplicaError) in try await replica.pendingCount() }) ?? 0
            let kept = pending == 0 ? "" : "; \(pending) queued change\(pending == 1 ? " stays" : "s stay") in \(path) for the next sync"
            if case let .client(clientError) = error, clientError.isAccessRefusal {
                // One line: what to do about the token (and its exit code), then what stays queued.
                ClientToken.end(with: clientError, prefix: "sync stopped: ", suffix: kept)
            }
            fail("sync failed: \(error.description)\(kept)", code: 1)
        }
        exit(0)
    }

    private static func take(_ report: SyncReport, into outcome: inout Outcome) {
        outcome.pushed += report.pushed
        outcome.adoptedAdds += report.adoptedAdds
        outcome.resentAdds += report.resentAdds
        outcome.dropped += report.dropped.map { Outcome.Dropped(kind: $0.operation.kind, album: $0.operation.albumID, reason: $0.reason) }
        outcome.pulledChanges += report.pulledChanges
        outcome.reloaded = outcome.reloaded || report.reloaded
        outcome.version = report.version
    }

    /// Nil when the replica (with nothing queued) holds exactly the server's albums (ids,
    /// order, fields); else the first difference.
    static func compare(_ replica: LibraryReplica, client: BlueLibraryClient) throws(ReplicaError) -> String? {
        let (local, pending) = try ReplicaAlbumsCommand.wait { () async throws(ReplicaError) in
            (try await replica.albums(), try await replica.pendingCount())
        }
        if pending > 0 { return "\(pending) change\(pending == 1 ? " is" : "s are") still queued" }
        let remote: [AlbumResource]
        do throws(BlueLibraryClientError) {
            remote = try allAlbums(client, library: replica.library)
        } catch {
            throw .client(error)
        }
        if local.count != remote.count { return "the replica holds \(local.count) albums, the server \(remote.count)" }
        for (mine, theirs) in zip(local, remote) where plain(mine) != plain(theirs) {
            return mine.id == theirs.id
                ? "album \(mine.id) at index \(mine.index ?? 0) has other fields on the server"
                : "at index \(mine.index ?? 0) the replica has album \(mine.id), the server \(theirs.id)"
        }
        return nil
    }

    /// Every album of `library` in order (every page of 500).
    static func allAlbums(_ client: BlueLibraryClient, library: String) throws(BlueLibraryClientError) -> [AlbumResource] {
        var query = AlbumPageQuery(limit: 500)
        var albums: [AlbumResource] = []
        while true {
            let page = try client.list(query, in: .library(library))
            albums += page.items
            guard let next = page.next else { return albums }
            query = query.continuing(at: next)
        }
    }

    private static func plain(_ album: AlbumResource) -> AlbumResource {
        var album = album
        album.library = nil
        return album
    }

    private static func printOutcome(_ outcome: Outcome, json: Bool) {
        if json {
            AlbumsCommand.printJSON(outcome)
            return
        }
        if outcome.created { print("Created \(outcome.replica), the replica of library \(outcome.library).") }
        print("Pushed \(outcome.pushed) queued change\(outcome.pushed == 1 ? "" : "s").")
        if outcome.adoptedAdds > 0 {
            print("Found \(outcome.adoptedAdds) interrupted add\(outcome.adoptedAdds == 1 ? "" : "s") on the server (taken as done).")
        }
        if outcome.resentAdds > 0 {
            print("Sent \(outcome.resentAdds) interrupted add\(outcome.resentAdds == 1 ? "" : "s") again under a new key (not on the server).")
        }
        for dropped in outcome.dropped {
            print("Dropped the \(dropped.kind) of album \(dropped.album): \(dropped.reason)")
        }
        let reload = outcome.reloaded ? " (a full reload)" : ""
        print("Pulled \(outcome.pulledChanges) change\(outcome.pulledChanges == 1 ? "" : "s") from the server\(reload); at version \(outcome.version).")
        if outcome.agree { print("Replica and server agree: \(outcome.albums) album\(outcome.albums == 1 ? "" : "s").") }
    }
}
