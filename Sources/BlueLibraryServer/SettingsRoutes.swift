import BlueLibraryAPI
import HTTPServer
import Library

/// `GET /settings` and `PATCH /settings` (JSON merge patch, validated as a whole, `If-Match`).
///
/// The ETag is the hash of the compact document, whatever `?pretty` asks for, so a tag from a
/// pretty GET works in `If-Match` too. With the passcode lock on, both need the token
/// (`AuthMiddleware`).
struct SettingsRoutes {
    let settings: SettingsService
    /// Extra whole-document rules (the lock cannot be enabled before a token is stored).
    let validate: @Sendable (LibrarySettings) -> [FieldError]

    static func etag(_ value: LibrarySettings) -> String {
        ETag.strong(for: value.encoded())
    }

    /// `Cache-Control: no-cache`, on the 200 and its 304 alike (RFC 9110 §15.4.5): the document
    /// holds no secret (the token's hash is never in it), so a client may keep it and
    /// revalidate with its ETag, which is what the ETag is for; no-cache makes every use ask
    /// the server, where the token is checked (and a shared cache never stores an answer to a
    /// request with `Authorization`, RFC 9111 §3.5).
    static func response(_ value: LibrarySettings, pretty: Bool) throws -> HTTPResponse {
        try JSONBody.response(value, pretty: pretty, headers: ["ETag": etag(value), "Cache-Control": "no-cache"])
    }

    func register(into routes: inout RouterBuilder) {
        routes.add(.get, "/settings") { [settings] request, _ in
            try ConditionalGET.respond(to: request, with: Self.response(settings.current, pretty: request.wantsPretty))
        }
        // A PATCH commits through the single SQLite writer: never on an event loop.
        routes.add(.patch, "/settings", options: .workerPool) { [settings, validate] request, _ in
            try RequestInput.requireJSON(request)
            let ifMatch = request.headers["If-Match"]
            // The access settings this request was let in under: the stored ones may be newer.
            let seen = settings.current
            let updated: LibrarySettings
            do {
                updated = try settings.update(
                    patch: request.body,
                    precondition: { current in
                        // The lock changed elsewhere (`bluelibrary token set`) after this request
                        // was checked: refused, and the server now knows (the service adopted it).
                        if current.access.passcodeEnabled, !seen.access.passcodeEnabled {
                            throw HTTPError(
                                .conflict,
                                detail: "Write protection was enabled outside this request (e.g. by 'bluelibrary token set'); retry with the token.",
                                type: "urn:bluelibrary:problem:access-changed", title: "Write protection changed")
                        }
                        // If-Match compares strongly (RFC 9110 §13.1.1): a weak tag never matches.
                        if let ifMatch, !ETag.strongList(ifMatch, matches: Self.etag(current)) {
                            throw HTTPError(
                                .preconditionFailed,
                                detail: "The settings changed since you read them (If-Match \(ifMatch) is not \(Self.etag(current))); GET /settings and retry.",
                                type: "urn:bluelibrary:problem:precondition-failed", title: "Settings changed")
                        }
                    },
                    validate: validate)
            } catch let error as LibraryError {
                throw error.inContext(invalidTitle: "Invalid settings")
            }
            return try Self.response(updated, pretty: request.wantsPretty)
        }
    }

    /// The dotted paths of the fields that differ (for the `settings.changed` event).
    static func changedFields(_ old: LibrarySettings, _ new: LibrarySettings) -> [String] {
        var paths: [String] = []
        if old.access.passcodeEnabled != new.access.passcodeEnabled { paths.append("access.passcodeEnabled") }
        if old.access.attemptLimit != new.access.attemptLimit { paths.append("access.attemptLimit") }
        if old.access.checkIntervalSeconds != new.access.checkIntervalSeconds { paths.append("access.checkIntervalSeconds") }
        if old.access.protectReads != new.access.protectReads { paths.append("access.protectReads") }
        if old.covers.cacheSizeLimitBytes != new.covers.cacheSizeLimitBytes { paths.append("covers.cacheSizeLimitBytes") }
        if old.covers.fetchTimeoutSeconds != new.covers.fetchTimeoutSeconds { paths.append("covers.fetchTimeoutSeconds") }
        if old.covers.freshnessSeconds != new.covers.freshnessSeconds { paths.append("covers.freshnessSeconds") }
        if old.covers.allowList != new.covers.allowList { paths.append("covers.allowList") }
        if old.undo.depth != new.undo.depth { paths.append("undo.depth") }
        if old.paging.defaultLimit != new.paging.defaultLimit { paths.append("paging.defaultLimit") }
        if old.paging.maxLimit != new.paging.maxLimit { paths.append("paging.maxLimit") }
        if old.sorting.ignoredArticles != new.sorting.ignoredArticles { paths.append("sorting.ignoredArticles") }
        return paths
    }

    /// `{"schemaVersion": 2, "etag": "...", "changed": ["undo.depth"]}`: names only, no values
    /// (events are readable without the token).
    static func eventJSON(_ old: LibrarySettings, _ new: LibrarySettings) -> String {
        let changed = changedFields(old, new).map { "\"\($0)\"" }.joined(separator: ",")
        let tag = etag(new).replacingOccurrences(of: "\"", with: "\\\"")
        return #"{"schemaVersion":\#(new.schemaVersion),"etag":"\#(tag)","changed":[\#(changed)]}"#
    }
}
