import AlbumStoreContract
import HTTPTestSupport
import Storage
import TestThreads
import Testing

extension AlbumStoreFactory {
    /// A fresh SQLite database file in a temporary directory (removed with the stores). Small
    /// buckets, so the contract's few hundred albums split, merge and renumber buckets.
    static let sqlite = sqlite("SQLite", keys: SQLiteAlbumStore.KeySpacing())

    /// The same with keys packed so tight that inserts keep re-spacing and renumbering them.
    static let sqliteTightKeys = sqlite(
        "SQLite, tight keys", keys: SQLiteAlbumStore.KeySpacing(positionGap: 4, positionLimit: 1024, bucketGap: 4))

    private static func sqlite(_ name: String, keys: SQLiteAlbumStore.KeySpacing) -> AlbumStoreFactory {
        AlbumStoreFactory(name) {
            let directory = try TemporaryDirectory()
            let store = try Fixtures.store(directory, bucketSize: 4, spacing: keys)
            return StoreUnderTest(albums: store, idempotency: store, settings: store, access: store, keeping: directory)
        }
    }
}

/// The AlbumStore contract and the facade's rules on SQLite, the reference store (LibraryTests
/// runs the same checks on the in-memory fake).
@Suite("Contract: SQLite store", .ownThreads)
struct SQLiteStoreContractTests {
    @Test(arguments: AlbumStoreContract.checks)
    func store(_ check: ContractCheck) throws {
        try check.run(.sqlite)
    }

    @Test(arguments: AlbumStoreContract.checks)
    func storeWithTightKeys(_ check: ContractCheck) throws {
        try check.run(.sqliteTightKeys)
    }

    @Test(arguments: FacadeRules.checks)
    func facade(_ check: ContractCheck) throws {
        try check.run(.sqlite)
    }
}
