import Foundation
import HTTPTestSupport

/// Load that runs while a test breaks something: `writers` threads add albums
/// (`POST /albums`), `readers` threads read pages (`GET /albums?limit=20`), each on its own
/// keep-alive connection to `port`, one request at a time, until `stop()`. Every answer (or
/// transport failure) is kept, so the test can say what each request got and which writes were
/// acknowledged. After a 5xx or no answer a client waits a little before its next request (as a
/// client honouring Retry-After would), so an outage is not a busy loop.
final class BackgroundLoad: Sendable {
    enum Kind: Sendable { case write, read }

    struct Outcome: Sendable, CustomStringConvertible {
        var kind: Kind
        /// nil: no answer (connection refused, reset or timed out).
        var status: Int?
        var retryAfter: String?
        /// The new album's id, for an acknowledged write.
        var id: String?
        var failure: String?
        var description: String { "\(kind) \(status.map(String.init) ?? "no answer")\(failure.map { ": \($0)" } ?? "")" }
    }

    private let outcomes = Locked<[Outcome]>([])
    private let running = Locked(true)
    private let group = DispatchGroup()

    init(port: Int, writers: Int, readers: Int, receiveTimeout: Double = 15) {
        for client in 0..<(writers + readers) {
            group.enter()
            let kind: Kind = client < writers ? .write : .read
            Thread.detachNewThread { [self] in
                defer { group.leave() }
                let connection = KeepAliveClient(port: port, receiveTimeout: receiveTimeout)
                var number = 0
                while running.value {
                    number += 1
                    let outcome = Self.send(kind, number: number, client: client, on: connection)
                    outcomes.withLock { $0.append(outcome) }
                    if (outcome.status ?? 500) >= 500 { Thread.sleep(forTimeInterval: 0.02) }
                }
            }
        }
    }

    private static func send(_ kind: Kind, number: Int, client: Int, on connection: KeepAliveClient) -> Outcome {
        do {
            switch kind {
            case .write:
                let response = try connection.request("POST", "/albums", json: #"{"title": "load \#(client)-\#(number)", "artist": "Background"}"#)
                let id = response.status == 201 ? KeepAliveClient.object(response)?["id"] as? String : nil
                return Outcome(kind: kind, status: response.status, retryAfter: response.header("Retry-After"), id: id)
            case .read:
                let response = try connection.request("GET", "/albums?limit=20")
                return Outcome(kind: kind, status: response.status, retryAfter: response.header("Retry-After"))
            }
        } catch {
            return Outcome(kind: kind, status: nil, failure: "\(error)")
        }
    }

    /// The outcomes so far.
    var results: [Outcome] { outcomes.value }

    /// How many requests of `kind` got `status` so far.
    func count(_ kind: Kind, status: Int) -> Int { outcomes.withLock { $0.filter { $0.kind == kind && $0.status == status }.count } }

    /// Stops every client (each finishes the request it is in) and returns every outcome.
    func stop() -> [Outcome] {
        running.withLock { $0 = false }
        group.wait()
        return results
    }
}
