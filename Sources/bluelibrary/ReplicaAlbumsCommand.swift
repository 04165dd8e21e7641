#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryClient
import Dispatch
import Foundation
import Synchronization

/// `bluelibrary albums <command> --replica FILE` (or `$BLUELIBRARY_REPLICA`): the same commands
/// on a `LibraryReplica`, so they work with the server down. `list` reads the replica through
/// `AlbumListModel(replica:)`; `add`, `delete` and `move` change it at once and queue the change
/// for `bluelibrary sync`; `undo` takes back the newest queued change. Output as without
/// `--replica`, with "(queued)" after a change; a note on stderr says how many changes wait for
/// a sync. Failures exit 1, usage mistakes 2.
enum ReplicaAlbumsCommand {
    /// `--replica FILE`, else a non-empty `$BLUELIBRARY_REPLICA`, else nil.
    static func replicaPath(_ options: inout AlbumsCommand.Options) -> String? {
        if let path = options.value("replica") {
            guard !path.isEmpty else { fail("--replica needs a file name") }
            return path
        }
        let environment = ProcessInfo.processInfo.environment["BLUELIBRARY_REPLICA"] ?? ""
        return environment.isEmpty ? nil : environment
    }

    /// Opens (creating) the replica at `path`, of `--library` when given, else of the library the
    /// file holds (a new file: the default library). Exits 1 when that fails.
    static func open(_ path: String, library: String?, client: BlueLibraryClient) -> LibraryReplica {
        do throws(ReplicaError) {
            return try LibraryReplica(path: path, client: client, library: library)
        } catch {
            fail(error.description, code: 1)
        }
    }

    static func run(_ subcommand: String, options: AlbumsCommand.Options, client: BlueLibraryClient, json: Bool, path: String) -> Never {
        var options = options
        if options.value("client") != nil {
            fail("--client does not apply to a replica (it names the server's per-client state); leave it out or drop --replica")
        }
        let replica = open(path, library: options.value("library"), client: client)
        let queued = json ? "" : " (queued; send it with: bluelibrary sync --replica \(path))"
        switch subcommand {
        case "list":
            let query = options.pageQuery()
            let all = options.flag("all")
            options.finish()
            AlbumsCommand.perform { () throws(BlueLibraryClientError) in
                try AlbumsCommand.list(client, query: query, all: all, json: json, moreCommand: "bluelibrary albums list --replica \(path)",
                                       replica: replica)
                noteUnsynced(replica, path: path)
            }
        case "add":
            guard let title = options.value("title"), let artist = options.value("artist") else {
                fail("albums add needs --title and --artist")
            }
            let input = AlbumInput(title: title, artist: artist, genre: options.value("genre"), year: options.int("year"),
                                   coverUrl: options.value("cover-url"))
            let index = options.int("index")
            options.finish()
            let album = perform { () async throws(ReplicaError) in try await replica.add(input, at: index) }
            if json { AlbumsCommand.printJSON(album) } else { print("Added \(AlbumsCommand.describe(album))\(queued).") }
        case "delete":
            let index = options.int("at")
            let id = options.positional()
            options.finish()
            guard (index == nil) != (id == nil) else { fail("albums delete needs an album id or --at INDEX (one of them)") }
            var target = id ?? ""
            if let index {
                let albums = perform { () async throws(ReplicaError) in try await replica.albums() }
                guard albums.indices.contains(index) else {
                    fail("there is no album at index \(index) in \(path): it holds \(albums.count) (indexes from 0)", code: 1)
                }
                target = albums[index].id
            }
            let album = perform { [target] () async throws(ReplicaError) in try await replica.delete(id: target) }
            if json { AlbumsCommand.printJSON(album) } else { print("Deleted \(AlbumsCommand.describe(album))\(queued).") }
        case "move":
            let index = options.int("index")
            if options.value("to-library") != nil {
                fail("albums move --to-library needs the server: a replica holds one library; drop --replica to move between libraries")
            }
            guard let id = options.positional() else { fail("albums move needs an album id") }
            options.finish()
            guard let index else { fail("albums move needs --index I") }
            let album = perform { () async throws(ReplicaError) in try await replica.move(id: id, to: index) }
            if json { AlbumsCommand.printJSON(album) } else { print("Moved \(AlbumsCommand.describe(album))\(queued).") }
        case "undo":
            options.finish()
            let operation = perform { () async throws(ReplicaError) in try await replica.undoLastPending() }
            guard let operation else {
                fail("nothing is queued in \(path) to take back; changes already synced are undone on the server: "
                     + "run 'bluelibrary albums undo' without --replica", code: 1)
            }
            if json {
                AlbumsCommand.printJSON(["undone": operation.kind, "album": operation.albumID])
            } else {
                print("Took back the queued \(operation.kind) of album \(operation.albumID); it will not be sent.")
            }
        default:
            fail("unknown albums command '\(subcommand)'; try 'bluelibrary albums --help'")
        }
        exit(0)
    }

    /// After a list: on stderr, how many changes wait for a sync, or that the file never synced.
    static func noteUnsynced(_ replica: LibraryReplica, path: String) {
        let state = try? wait { () async throws(ReplicaError) in (try await replica.pendingCount(), try await replica.hasLoaded()) }
        guard let (pending, loaded) = state else { return }
        var notes: [String] = []
        if !loaded { notes.append("\(path) has not been synced yet, so it holds only the albums added to it") }
        if pending > 0 { notes.append("\(pending) change\(pending == 1 ? "" : "s") queued, not yet on the server") }
        guard !notes.isEmpty else { return }
        FileHandle.standardError.write(Data("bluelibrary: \(notes.joined(separator: "; ")) (send: bluelibrary sync --replica \(path))\n".utf8))
    }

    /// `body`'s result; exits 1 with its error on stderr when it fails.
    static func perform<T: Sendable>(_ body: @escaping @Sendable () async throws(ReplicaError) -> T) -> T {
        do throws(ReplicaError) {
            return try wait(body)
        } catch {
            fail(error.description, code: 1)
        }
    }

    /// Runs `body` in a task and blocks this thread (the command's, never one of the task's)
    /// until it ends.
    static func wait<T: Sendable>(_ body: @escaping @Sendable () async throws(ReplicaError) -> T) throws(ReplicaError) -> T {
        let outcome = Outcome<T>()
        Task {
            do throws(ReplicaError) {
                outcome.set(.success(try await body()))
            } catch {
                outcome.set(.failure(error))
            }
        }
        return try outcome.wait().get()
    }

    /// The result of a task, handed to the thread that waits for it.
    final class Outcome<T: Sendable>: Sendable {
        private let value = Mutex<Result<T, ReplicaError>?>(nil)
        private let done = DispatchSemaphore(value: 0)

        func set(_ result: Result<T, ReplicaError>) {
            value.withLock { $0 = result }
            done.signal()
        }

        func wait() -> Result<T, ReplicaError> {
            done.wait()
            return value.withLock { $0! }
        }
    }
}
