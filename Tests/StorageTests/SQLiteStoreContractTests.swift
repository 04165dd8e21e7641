import AlbumStoreContract
import Storage
import Testing

extension AlbumStoreFactory {
    /// A fresh SQLite database file in a temporary directory (removed with the stores). Small
    /// buckets, so the contract's few hundred albums split, merge and renumber buckets.
    static let sqlite = AlbumStoreFactory("SQLite") {
        let directory = try TemporaryDirectory()
        let store = try Fixtures.store(directory, bucketSize: 4)
        return StoreUnderTest(albums: store, idempotency: store, settings: store, keeping: directory)
    }
}

/// The AlbumStore contract and the facade's rules on SQLite, the reference store (LibraryTests
/// runs the same checks on the in-memory fake).
@Suite("Contract: SQLite store")
struct SQLiteStoreContractTests {
    @Test(arguments: AlbumStoreContract.checks)
    func store(_ check: ContractCheck) throws {
        try check.run(.sqlite)
    }

    @Test(arguments: FacadeRules.checks)
    func facade(_ check: ContractCheck) throws {
        try check.run(.sqlite)
    }
}
