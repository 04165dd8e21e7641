import Library
import ServerRecords

/// The stores one database gives a server: albums, idempotency keys, the settings document,
/// the access records.
/// Made fresh (empty) for each check by an ``AlbumStoreFactory``.
public struct StoreUnderTest {
    public let albums: any AlbumStore
    public let idempotency: any IdempotencyStore
    public let settings: any SettingsStore
    public let access: any AccessStore
    /// Whatever must outlive the stores (a temporary directory holding the database file).
    private let owner: AnyObject?

    public init(albums: any AlbumStore, idempotency: any IdempotencyStore, settings: any SettingsStore,
                access: any AccessStore, keeping owner: AnyObject? = nil) {
        self.albums = albums
        self.idempotency = idempotency
        self.settings = settings
        self.access = access
        self.owner = owner
    }
}

/// Makes a fresh, empty ``StoreUnderTest`` for one check. Every store engine has one: the
/// in-memory store here (``inMemory``), SQLite in StorageTests, PostgreSQL next. A new engine
/// joins the contract with one factory and one `@Test(arguments: AlbumStoreContract.checks)`.
public struct AlbumStoreFactory: Sendable, CustomStringConvertible {
    public let description: String
    private let make: @Sendable () throws -> StoreUnderTest

    public init(_ name: String, make: @escaping @Sendable () throws -> StoreUnderTest) {
        description = name
        self.make = make
    }

    public func callAsFunction() throws -> StoreUnderTest { try make() }

    /// The in-memory stores (fakes for tests; they must agree with SQLite, the reference).
    public static let inMemory = AlbumStoreFactory("in-memory") {
        let idempotency = InMemoryIdempotencyStore()
        return StoreUnderTest(
            albums: InMemoryAlbumStore(idempotency: idempotency), idempotency: idempotency, settings: InMemorySettingsStore(),
            access: InMemoryAccessStore())
    }
}

/// One named check of a contract, run against the stores a factory makes. Checks are values
/// (not `@Test`s of their own) so that every engine's test target runs the same list:
/// `@Test(arguments: AlbumStoreContract.checks) func contract(_ check: ContractCheck) throws`.
public struct ContractCheck: Sendable, CustomStringConvertible {
    public let description: String
    private let body: @Sendable (AlbumStoreFactory) throws -> Void

    public init(_ name: String, _ body: @escaping @Sendable (AlbumStoreFactory) throws -> Void) {
        description = name
        self.body = body
    }

    public func run(_ factory: AlbumStoreFactory) throws {
        try body(factory)
    }
}
