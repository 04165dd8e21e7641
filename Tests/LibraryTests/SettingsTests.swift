import Foundation
import Synchronization
import TestThreads
import Testing
@testable import Library
import AlbumStoreContract

@Suite(.ownThreads) struct SettingsTests {
    @Test func defaultsWhenNothingIsStored() throws {
        let store = InMemorySettingsStore()
        let service = try SettingsService(store: store)
        let settings = service.current
        #expect(settings == LibrarySettings.defaults)
        #expect(settings.schemaVersion == LibrarySettings.currentSchemaVersion)
        #expect(settings.access.passcodeEnabled == false)
        #expect(settings.access.attemptLimit == 5)
        #expect(settings.access.checkIntervalSeconds == 300)
        #expect(settings.access.protectReads == false)
        #expect(settings.covers.allowList.isEmpty)
        #expect(settings.undo.depth == 100)
        #expect(settings.paging.defaultLimit == 50 && settings.paging.maxLimit == 500)
        #expect(store.saves == 0, "reading defaults writes nothing")
    }

    @Test func partialDocumentGetsDefaultsForMissingFields() throws {
        let service = try SettingsService(store: InMemorySettingsStore(#"{"schemaVersion": 2, "undo": {"depth": 7}}"#))
        #expect(service.current.undo.depth == 7)
        #expect(service.current.paging == LibrarySettings.Paging())
    }

    @Test func patchAppliesAndNullResetsToDefault() throws {
        let store = InMemorySettingsStore()
        let service = try SettingsService(store: store)
        let changes = Mutex<[(LibrarySettings, LibrarySettings)]>([])
        service.observe { old, new in changes.withLock { $0.append((old, new)) } }
        var next = try service.update(patch: Array(#"{"undo": {"depth": 3}, "covers": {"allowList": ["10.0.0.0/8"]}}"#.utf8))
        #expect(next.undo.depth == 3 && next.covers.allowList == ["10.0.0.0/8"])
        next = try service.update(patch: Array(#"{"undo": {"depth": null}, "covers": null}"#.utf8))
        #expect(next.undo.depth == 100 && next.covers == LibrarySettings.Covers())
        #expect(changes.withLock { $0.count } == 2)
        #expect(try SettingsService(store: store).current == next, "stored")
    }

    @Test func invalidPatchNamesEveryFieldAndAppliesNothing() throws {
        let store = InMemorySettingsStore()
        let service = try SettingsService(store: store)
        let patch = #"""
            {"undo": {"depth": -1}, "paging": {"maxLimit": "lots", "defaultLimit": 20},
             "access": {"attemptLimt": 3, "passcodeEnabled": 1}, "covers": {"allowList": ["ok", ""]},
             "schemaVersion": 9, "colors": {}}
            """#
        do {
            _ = try service.update(patch: Array(patch.utf8))
            Issue.record("expected a validation failure")
        } catch let error as LibraryError {
            guard case let .invalid(failure) = error else { Issue.record("\(error)"); return }
            #expect(Set(failure.fields) == ["undo.depth", "paging.maxLimit", "access.attemptLimt", "access.passcodeEnabled",
                                            "covers.allowList[1]", "schemaVersion", "colors"])
            #expect(failure.errors.first { $0.field == "access.attemptLimt" }?.message.contains("did you mean attemptLimit") == true)
        }
        #expect(service.current == LibrarySettings.defaults)
        #expect(store.saves == 0)
    }

    @Test func crossFieldRule() throws {
        let service = try SettingsService(store: InMemorySettingsStore())
        #expect(throws: LibraryError.self) {
            try service.update(patch: Array(#"{"paging": {"defaultLimit": 200, "maxLimit": 100}}"#.utf8))
        }
        #expect(service.current.paging == LibrarySettings.Paging())
    }

    @Test func malformedPatch() throws {
        let service = try SettingsService(store: InMemorySettingsStore())
        for body in ["", "[1]", "{nope"] {
            do {
                _ = try service.update(patch: Array(body.utf8))
                Issue.record("accepted \(body)")
            } catch let error as LibraryError {
                guard case .malformed = error else { Issue.record("\(error)"); continue }
            }
        }
    }

    @Test func migratesVersion1AndStoresTheUpgrade() throws {
        // The first stored form, keyed like the seed's PassCodeSettings.
        let v1 = #"{"schemaVersion": 1, "access": {"isPassCodeEnabled": true, "attemptCount": 3, "checkInterval": 90.5}, "undo": {"depth": 12}}"#
        let store = InMemorySettingsStore(v1)
        let service = try SettingsService(store: store)
        #expect(service.upgradedFrom == 1)
        let settings = service.current
        #expect(settings.schemaVersion == 2)
        #expect(settings.access == LibrarySettings.Access(passcodeEnabled: true, attemptLimit: 3, checkIntervalSeconds: 91, protectReads: false))
        #expect(settings.undo.depth == 12)
        #expect(settings.paging == LibrarySettings.Paging())
        #expect(store.saves == 1)
        #expect(store.text?.contains(#""schemaVersion":2"#) == true)
        #expect(store.text?.contains("attemptCount") == false)
        // Without a schemaVersion the document is v1 too.
        #expect(try SettingsMigration.decode(stored: Array(#"{"access": {"attemptCount": 9}}"#.utf8)).settings.access.attemptLimit == 9)
    }

    @Test func refusesANewerVersion() {
        #expect(throws: LibraryError.self) {
            _ = try SettingsService(store: InMemorySettingsStore(#"{"schemaVersion": 99}"#))
        }
    }
}

/// Two services over one store (a server and `bluelibrary token set`): neither may overwrite
/// the other's change with a stale copy of the settings.
@Suite(.ownThreads) struct SettingsStaleWriteTests {
    @Test func aPatchIsAppliedToTheStoredDocumentNotAStaleCopy() throws {
        let store = InMemorySettingsStore()
        let server = try SettingsService(store: store)
        let commandLine = try SettingsService(store: store)
        try commandLine.modify { $0.access.passcodeEnabled = true }
        #expect(!server.current.access.passcodeEnabled, "the server has not looked yet")
        _ = try server.update(patch: Array(#"{"undo": {"depth": 7}}"#.utf8))
        let stored = try SettingsService(store: store).current
        #expect(stored.access.passcodeEnabled, "the lock was not overwritten")
        #expect(stored.undo.depth == 7)
        #expect(server.current.access.passcodeEnabled, "the server learned the stored lock")
    }

    @Test func reloadPicksUpAChangeMadeElsewhere() throws {
        let store = InMemorySettingsStore()
        let server = try SettingsService(store: store)
        try SettingsService(store: store).modify { $0.access.passcodeEnabled = true }
        #expect(!server.passcodeEnabled)
        try server.reload()
        #expect(server.passcodeEnabled)
    }
}
