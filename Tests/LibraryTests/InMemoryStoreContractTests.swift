import AlbumStoreContract
import TestThreads
import Testing

/// The AlbumStore contract and the facade's rules on the in-memory stores (StorageTests runs
/// the same checks on SQLite).
@Suite("Contract: in-memory store", .ownThreads)
struct InMemoryStoreContractTests {
    @Test(arguments: AlbumStoreContract.checks)
    func store(_ check: ContractCheck) throws {
        try check.run(.inMemory)
    }

    @Test(arguments: FacadeRules.checks)
    func facade(_ check: ContractCheck) throws {
        try check.run(.inMemory)
    }
}
