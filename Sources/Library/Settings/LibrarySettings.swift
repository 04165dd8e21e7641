import BlueLibraryAPI
import Foundation

/// The server's settings document: typed, versioned (`schemaVersion`), stored as JSON.
///
/// Every field has a default, so a fresh database (nothing stored) and an older stored
/// document (fields it did not know yet) both decode to a complete document. When the layout
/// changes, `currentSchemaVersion` grows and `SettingsMigration` learns to upgrade the older
/// stored form; stored keys are a contract, so a field is renamed only through a migration.
public struct LibrarySettings: Sendable, Equatable, Codable {
    /// The layout this build writes. v1 (the first stored form) named the access fields after
    /// the seed's `PassCodeSettings` and had no `protectReads` nor `paging`; see `SettingsMigration`.
    public static let currentSchemaVersion = 2

    public var schemaVersion: Int
    public var access: Access
    public var covers: Covers
    public var undo: Undo
    public var paging: Paging
    public var sorting: Sorting

    public init(
        access: Access = Access(), covers: Covers = Covers(), undo: Undo = Undo(), paging: Paging = Paging(),
        sorting: Sorting = Sorting()
    ) {
        self.schemaVersion = Self.currentSchemaVersion
        self.access = access
        self.covers = covers
        self.undo = undo
        self.paging = paging
        self.sorting = sorting
    }

    /// Every field at its default.
    public static let defaults = LibrarySettings()

    /// The passcode lock (write protection) and its lockout.
    public struct Access: Sendable, Equatable, Codable {
        /// Mutating requests and `GET /settings` need `Authorization: Bearer <token>`.
        public var passcodeEnabled: Bool = false
        /// Failed attempts from one client address within `checkIntervalSeconds` before it is locked out.
        public var attemptLimit: Int = 5
        /// The window failures are counted in, and how long a lockout lasts.
        public var checkIntervalSeconds: Int = 300
        /// Album and cover reads need the token too.
        public var protectReads: Bool = false

        public init(passcodeEnabled: Bool = false, attemptLimit: Int = 5, checkIntervalSeconds: Int = 300, protectReads: Bool = false) {
            self.passcodeEnabled = passcodeEnabled
            self.attemptLimit = attemptLimit
            self.checkIntervalSeconds = checkIntervalSeconds
            self.protectReads = protectReads
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let d = Access()
            passcodeEnabled = try c.decodeIfPresent(Bool.self, forKey: .passcodeEnabled) ?? d.passcodeEnabled
            attemptLimit = try c.decodeIfPresent(Int.self, forKey: .attemptLimit) ?? d.attemptLimit
            checkIntervalSeconds = try c.decodeIfPresent(Int.self, forKey: .checkIntervalSeconds) ?? d.checkIntervalSeconds
            protectReads = try c.decodeIfPresent(Bool.self, forKey: .protectReads) ?? d.protectReads
        }
    }

    /// The cover cache and fetcher.
    public struct Covers: Sendable, Equatable, Codable {
        public var cacheSizeLimitBytes: Int = 512 * 1024 * 1024
        public var fetchTimeoutSeconds: Int = 10
        /// How long a cached cover is served before it is fetched again.
        public var freshnessSeconds: Int = 7 * 24 * 3600
        /// Hosts or CIDR ranges the fetcher may reach although they are internal.
        public var allowList: [String] = []

        public init(cacheSizeLimitBytes: Int = 512 * 1024 * 1024, fetchTimeoutSeconds: Int = 10,
                    freshnessSeconds: Int = 7 * 24 * 3600, allowList: [String] = []) {
            self.cacheSizeLimitBytes = cacheSizeLimitBytes
            self.fetchTimeoutSeconds = fetchTimeoutSeconds
            self.freshnessSeconds = freshnessSeconds
            self.allowList = allowList
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let d = Covers()
            cacheSizeLimitBytes = try c.decodeIfPresent(Int.self, forKey: .cacheSizeLimitBytes) ?? d.cacheSizeLimitBytes
            fetchTimeoutSeconds = try c.decodeIfPresent(Int.self, forKey: .fetchTimeoutSeconds) ?? d.fetchTimeoutSeconds
            freshnessSeconds = try c.decodeIfPresent(Int.self, forKey: .freshnessSeconds) ?? d.freshnessSeconds
            allowList = try c.decodeIfPresent([String].self, forKey: .allowList) ?? d.allowList
        }
    }

    public struct Undo: Sendable, Equatable, Codable {
        /// Undo commands kept (0 disables undo).
        public var depth: Int = 100

        public init(depth: Int = 100) { self.depth = depth }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            depth = try c.decodeIfPresent(Int.self, forKey: .depth) ?? Undo().depth
        }
    }

    public struct Paging: Sendable, Equatable, Codable {
        /// `limit` when a list request names none.
        public var defaultLimit: Int = 50
        /// The largest `limit` a list request may ask for.
        public var maxLimit: Int = 500

        public init(defaultLimit: Int = 50, maxLimit: Int = 500) {
            self.defaultLimit = defaultLimit
            self.maxLimit = maxLimit
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let d = Paging()
            defaultLimit = try c.decodeIfPresent(Int.self, forKey: .defaultLimit) ?? d.defaultLimit
            maxLimit = try c.decodeIfPresent(Int.self, forKey: .maxLimit) ?? d.maxLimit
        }
    }

    /// How value sorts order text.
    public struct Sorting: Sendable, Equatable, Codable {
        /// The leading words an artist sort ignores ("The Beatles" sorts as "Beatles"), as
        /// written; compared folded (`SortArticles`). Changing them remakes every library's
        /// artist keys (`SortKeyRebuild` in the server).
        public var ignoredArticles: [String] = ["The", "A", "An"]

        public init(ignoredArticles: [String] = ["The", "A", "An"]) {
            self.ignoredArticles = ignoredArticles
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            ignoredArticles = try c.decodeIfPresent([String].self, forKey: .ignoredArticles) ?? Sorting().ignoredArticles
        }

        /// The articles as the stores compare them.
        public var articles: SortArticles { SortArticles(ignoredArticles) }
    }

    enum CodingKeys: String, CodingKey { case schemaVersion, access, covers, undo, paging, sorting }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        schemaVersion = try c.decodeIfPresent(Int.self, forKey: .schemaVersion) ?? Self.currentSchemaVersion
        access = try c.decodeIfPresent(Access.self, forKey: .access) ?? Access()
        covers = try c.decodeIfPresent(Covers.self, forKey: .covers) ?? Covers()
        undo = try c.decodeIfPresent(Undo.self, forKey: .undo) ?? Undo()
        paging = try c.decodeIfPresent(Paging.self, forKey: .paging) ?? Paging()
        sorting = try c.decodeIfPresent(Sorting.self, forKey: .sorting) ?? Sorting()
    }

    /// The stored form: compact JSON with sorted keys.
    public func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding plain ints, bools and strings cannot fail.
        return Array((try? encoder.encode(self)) ?? Data("{}".utf8))
    }
}
