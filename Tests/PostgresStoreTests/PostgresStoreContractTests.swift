import AlbumStoreContract
import HTTPTestSupport
import Postgres
import Storage
import TestThreads
import Testing

extension AlbumStoreFactory {
    /// A fresh database on the test cluster (`PostgresServer.shared()`), its own pool, the album
    /// store and the server records on it. Small buckets, so the contract's few hundred albums
    /// split, merge and renumber buckets, as on SQLite.
    static let postgres = postgres("PostgreSQL", keys: SparseKeySpacing())

    /// The same with keys packed so tight that inserts keep re-spacing and renumbering them.
    static let postgresTightKeys = postgres(
        "PostgreSQL, tight keys", keys: SparseKeySpacing(positionGap: 4, positionLimit: 1024, bucketGap: 4))

    private static func postgres(_ name: String, keys: SparseKeySpacing) -> AlbumStoreFactory {
        AlbumStoreFactory(name) {
            let pool = PostgresPool(PostgresPool.Configuration(url: try PostgresServer.shared().makeDatabase(), size: 4))
            let store = try PostgresAlbumStore(
                pool: pool, configuration: PostgresAlbumStore.Configuration(bucketSize: 4, keySpacing: keys))
            let records = PostgresServerRecords(pool: pool)
            return StoreUnderTest(albums: store, idempotency: records, settings: records, access: records)
        }
    }
}

/// The AlbumStore contract and the facade's rules on PostgreSQL: the same checks as SQLite's
/// (`SQLiteStoreContractTests`), unchanged.
@Suite("Contract: PostgreSQL store", .ownThreads)
struct PostgresStoreContractTests {
    @Test(arguments: AlbumStoreContract.checks)
    func store(_ check: ContractCheck) throws {
        try check.run(.postgres)
    }

    @Test(arguments: AlbumStoreContract.checks)
    func storeWithTightKeys(_ check: ContractCheck) throws {
        try check.run(.postgresTightKeys)
    }

    @Test(arguments: FacadeRules.checks)
    func facade(_ check: ContractCheck) throws {
        try check.run(.postgres)
    }
}
