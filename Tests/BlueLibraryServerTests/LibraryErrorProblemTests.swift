@testable import BlueLibraryAPI
import HTTPServer
import Library
import TestThreads
import Testing

@testable import BlueLibraryServer

/// A domain refusal's problem, and the same refusal as a route frames its request
/// (`LibraryError.inContext`): what a handler throws when it calls the facade directly.
@Suite(.ownThreads) struct LibraryErrorProblemTests {
    static let invalidName = LibraryError.invalid(ValidationFailure([FieldError(field: "name", message: "name must not be empty")]))

    @Test func refusalsHaveTheirProblemAndStorageFailuresHaveNone() throws {
        let missing = try #require(LibraryError.libraryNotFound(LibraryID(rawValue: "jazz")).problem)
        #expect(missing.status == .notFound && missing.type == "urn:bluelibrary:problem:library-not-found")
        let invalid = try #require(Self.invalidName.problem)
        #expect(invalid.status == .unprocessableContent && invalid.title == "Invalid album" && invalid.errors.map(\.field) == ["name"])
        #expect(LibraryError.indexOutOfRange(index: -1, count: 3).problem?.status == .badRequest)
        struct Broken: Error {}
        #expect(LibraryError.storage(UnderlyingError(Broken())).problem == nil)
        #expect(LibraryError.outputFailed(UnderlyingError(Broken())).problem == nil)
    }

    @Test func aRouteTitlesItsInvalidValuesAndNamesTheFieldThatNamedAMissingResource() throws {
        let titled = try #require(Self.invalidName.inContext(invalidTitle: "Invalid library") as? HTTPError)
        #expect(titled.status == .unprocessableContent && titled.title == "Invalid library" && titled.errors.map(\.field) == ["name"])
        // Only an invalid value takes the title.
        let untitled = try #require(LibraryError.undoStackEmpty.inContext(invalidTitle: "Invalid library") as? HTTPError)
        #expect(untitled.status == .conflict && untitled.title == "Nothing to undo")

        let named = try #require(LibraryError.indexOutOfRange(index: 9, count: 3).inContext(field: "index") as? HTTPError)
        #expect(named.status == .unprocessableContent && named.errors.map(\.field) == ["index"] && named.errors.first?.message == named.detail)
        // A negative index is a bad value already (400), not a missing one: unchanged.
        let negative = try #require(LibraryError.indexOutOfRange(index: -1, count: 3).inContext(field: "index") as? HTTPError)
        #expect(negative.status == .badRequest && negative.errors.isEmpty)

        struct Broken: Error {}
        let failure = LibraryError.storage(UnderlyingError(Broken()))
        #expect(failure.inContext(invalidTitle: "Invalid view", field: "library") as? LibraryError == failure, "a storage failure stays one")
    }
}
