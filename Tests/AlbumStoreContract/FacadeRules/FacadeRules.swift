/// The facade's rules (index rules, undo, saved state, versions and events, paging, the change
/// feed, archive export and import), checked against any store: the same checks LibraryTests
/// runs on the in-memory store and StorageTests on SQLite, so a rule that only holds on the
/// fake fails on the real store. Rules that need to look inside the store (a failed commit,
/// transaction counts) stay in LibraryTests, on the in-memory store.
public enum FacadeRules {
    /// Every check, in a stable order.
    public static var checks: [ContractCheck] {
        mutationRules + insertionIndexRules + undoRules + savedStateRules + versionAndEventRules + pagingRules
            + changeFeedRules + archiveRules + catalogRules + moveBetweenLibrariesRules + viewRules + walkRules
            + viewOffsetRules + sortKeyRules + batchRules + batchMoveRules
    }
}
