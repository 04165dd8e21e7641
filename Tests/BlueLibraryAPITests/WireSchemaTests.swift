import BlueLibraryAPI
import Essentials
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// The wire contract held in one place: each `WireSchema` against `openapi.yaml`'s schema of the
/// same name (every field, its type, nullability, presence and bounds, both ways), and against
/// what the Codable types and the server's album encoder write. A field changed in one of them
/// fails here until the others follow.
@Suite(.ownThreads)
struct WireSchemaTests {
    /// `components/schemas` of openapi.yaml, read with PyYAML (which `scripts/test` installs).
    static func specSchemas() throws -> [String: Any] {
        let spec = NginxProxy.repositoryRoot.appendingPathComponent("openapi.yaml").path
        let outcome = try ChildProcess.run(
            "/usr/bin/env", ["python3", "-c", "import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)", spec],
            environment: ProcessInfo.processInfo.environment)
        try #require(outcome.status == 0, "python3 with PyYAML reads openapi.yaml: \(String(decoding: outcome.stderr, as: UTF8.self))")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(outcome.stdout)) as? [String: Any])
        let components = try #require(document["components"] as? [String: Any])
        return try #require(components["schemas"] as? [String: Any])
    }

    /// A property's JSON type and whether it may be null, through `$ref`, `allOf`, `anyOf` with
    /// `{"type": "null"}` and type lists with `"null"`.
    static func kind(of property: [String: Any], in schemas: [String: Any]) -> (kind: String?, nullable: Bool) {
        if let ref = property["$ref"] as? String, let name = ref.split(separator: "/").last,
           let target = schemas[String(name)] as? [String: Any] {
            return kind(of: target, in: schemas)
        }
        if let options = property["anyOf"] as? [[String: Any]] {
            let nullable = options.contains { ($0["type"] as? String) == "null" }
            let other = options.first { ($0["type"] as? String) != "null" }.map { kind(of: $0, in: schemas) }
            return (other?.kind, nullable || other?.nullable == true)
        }
        if let parts = property["allOf"] as? [[String: Any]], let first = parts.first {
            return kind(of: first, in: schemas)
        }
        if let types = property["type"] as? [String] {
            return (types.first { $0 != "null" }, types.contains("null"))
        }
        return (property["type"] as? String, false)
    }

    /// A bound of a property, through `$ref` and `anyOf`.
    static func bound(_ key: String, of property: [String: Any], in schemas: [String: Any]) -> Int? {
        if let value = property[key] as? Int { return value }
        if let ref = property["$ref"] as? String, let name = ref.split(separator: "/").last,
           let target = schemas[String(name)] as? [String: Any] {
            return bound(key, of: target, in: schemas)
        }
        for option in property["anyOf"] as? [[String: Any]] ?? [] {
            if let value = bound(key, of: option, in: schemas) { return value }
        }
        return nil
    }

    @Test(arguments: WireSchema.all.map(\.name))
    func theSpecDescribesEveryFieldAsTheWireModuleDoes(_ name: String) throws {
        let schemas = try Self.specSchemas()
        let wire = try #require(WireSchema.all.first { $0.name == name })
        let spec = try #require(schemas[name] as? [String: Any], "openapi.yaml has the schema \(name)")
        let properties = try #require(spec["properties"] as? [String: [String: Any]])
        let required = Set(spec["required"] as? [String] ?? [])
        #expect(Set(properties.keys) == Set(wire.fields.map(\.name)), "\(name): the same fields")
        #expect(required == Set(wire.fields.filter(\.required).map(\.name)), "\(name): the same required fields")
        for field in wire.fields {
            guard let property = properties[field.name] else { continue }
            let (kind, nullable) = Self.kind(of: property, in: schemas)
            #expect(kind == field.kind.rawValue, "\(name).\(field.name): type")
            #expect(nullable == field.nullable, "\(name).\(field.name): nullable")
            #expect(Self.bound("minLength", of: property, in: schemas) == field.length?.lowerBound, "\(name).\(field.name): minLength")
            #expect(Self.bound("maxLength", of: property, in: schemas) == field.maximumLength, "\(name).\(field.name): maxLength")
            #expect(Self.bound("minimum", of: property, in: schemas) == field.minimum, "\(name).\(field.name): minimum")
            #expect(Self.bound("maximum", of: property, in: schemas) == field.maximum, "\(name).\(field.name): maximum")
            #expect(Self.bound("minItems", of: property, in: schemas) == field.minimumItems, "\(name).\(field.name): minItems")
            #expect(Self.bound("maxItems", of: property, in: schemas) == field.maximumItems, "\(name).\(field.name): maxItems")
        }
    }

    /// A valid value of `field` of `length` characters (a URL for `coverUrl`).
    static func text(_ field: WireSchema.Field, length: Int) -> String {
        guard field.name == "coverUrl" else { return String(repeating: "x", count: length) }
        let prefix = "https://example.com/"
        return prefix + String(repeating: "a", count: max(0, length - prefix.count))
    }

    /// Whether a request decoder takes `object`, with the fields' rules probed one at a time on a
    /// valid `base`: absence (refused where required), `null` (taken where nullable), a value of
    /// the wrong JSON type, the length and value bounds and one past them, and an unknown key.
    static func probeDecodingRules(_ schema: WireSchema, base: [String: Any], accepts: ([UInt8]) -> Bool) throws {
        func decodes(_ object: [String: Any]) throws -> Bool {
            accepts(Array(try JSONSerialization.data(withJSONObject: object)))
        }
        func with(_ name: String, _ value: Any?) -> [String: Any] {
            var object = base
            object[name] = value
            return object
        }
        #expect(try decodes(base), "\(schema.name): the base body is valid")
        #expect(try !decodes(with("colour", "blue")), "\(schema.name): an unknown key is refused")
        for field in schema.fields {
            let name = "\(schema.name).\(field.name)"
            #expect(try decodes(with(field.name, nil)) == !field.required, "\(name): absent")
            #expect(try decodes(with(field.name, NSNull())) == field.nullable, "\(name): null")
            #expect(try !decodes(with(field.name, true)), "\(name): a boolean")
            switch field.kind {
            case .string:
                #expect(try !decodes(with(field.name, 12)), "\(name): a number")
                if let length = field.length {
                    #expect(try decodes(with(field.name, text(field, length: length.lowerBound))), "\(name): shortest")
                    #expect(try !decodes(with(field.name, text(field, length: length.lowerBound - 1))), "\(name): too short")
                }
                if let maximum = field.maximumLength {
                    #expect(try decodes(with(field.name, text(field, length: maximum))), "\(name): longest")
                    #expect(try !decodes(with(field.name, text(field, length: maximum + 1))), "\(name): too long")
                }
            case .integer:
                #expect(try !decodes(with(field.name, 1.5)), "\(name): a fraction")
                if let minimum = field.minimum {
                    #expect(try decodes(with(field.name, minimum)), "\(name): smallest")
                    #expect(try !decodes(with(field.name, minimum - 1)), "\(name): too small")
                }
                if let maximum = field.maximum {
                    #expect(try decodes(with(field.name, maximum)), "\(name): largest")
                    #expect(try !decodes(with(field.name, maximum + 1)), "\(name): too large")
                }
            case .boolean, .array, .object:
                Issue.record("\(name): no probe for a \(field.kind.rawValue) field yet")
            }
        }
    }

    /// The album bodies' decoders take exactly what `AlbumInput` and `AlbumPatch` describe (and
    /// so, through the test above, what openapi.yaml says).
    @Test func theAlbumBodyDecodersFollowTheirSchemas() throws {
        try Self.probeDecodingRules(.albumInput, base: ["title": "T", "artist": "A"]) { bytes in
            // A negative index is decoded as it is, for the route to refuse (400, not 422).
            guard let request = try? AlbumAddRequest.decode(json: bytes) else { return false }
            return (request.index ?? 0) >= 0
        }
        try Self.probeDecodingRules(.albumPatch, base: ["year": 1999]) { bytes in
            (try? AlbumPatch.decode(json: bytes)) != nil
        }
    }

    /// The keys a value's JSON object has, and the JSON object itself.
    static func object(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    static func encoded(_ value: some Encodable) throws -> [String: Any] {
        try object(Array(try JSONEncoder().encode(value)))
    }

    static let album = AlbumResource(
        id: "01HZY3G6W3K9V9Q8X7C5B4N2M1", title: "Blue \"Train\"", artist: "John Coltrane", genre: "Jazz", year: nil,
        coverUrl: "https://example.com/a.png", createdAt: "2024-01-02T03:04:05.678Z", updatedAt: "2024-01-02T03:04:05.679Z")

    @Test func theAlbumEncoderAndTheCodableFormWriteTheSchemasFieldsInItsOrder() throws {
        var bytes: [UInt8] = []
        let album = Self.album
        AlbumJSON.append(
            id: album.id, title: album.title, artist: album.artist, genre: album.genre, year: album.year, coverUrl: album.coverUrl,
            createdAt: try #require(album.createdDate), updatedAt: try #require(album.updatedDate), to: &bytes)
        // The server's bytes decode to the same resource, and carry exactly the schema's keys in its order.
        #expect(try JSONDecoder().decode(AlbumResource.self, from: Data(bytes)) == album)
        let text = String(decoding: bytes, as: UTF8.self)
        let positions = WireSchema.album.fields.map { text.range(of: "\"\($0.name)\":")?.lowerBound }
        #expect(!positions.contains(nil), "every field is written: \(text)")
        #expect(positions.compactMap { $0 } == positions.compactMap { $0 }.sorted(), "in the schema's order: \(text)")
        #expect(Set(try Self.object(bytes).keys) == Set(WireSchema.album.fields.map(\.name)))
        #expect(try Self.object(bytes)["year"] is NSNull, "an absent year is null")
        // The Codable form: the same keys (null included), `index` and `library` only when known.
        #expect(Set(try Self.encoded(album).keys) == Set(WireSchema.album.fields.map(\.name)))
        var indexed = album
        indexed.index = 3
        indexed.library = "jazz"
        #expect(Set(try Self.encoded(indexed).keys) == Set(WireSchema.album.fields.map(\.name) + ["index", "library"]))
        #expect(AlbumField.albumFields.map(\.rawValue) == WireSchema.album.fields.map(\.name))
    }

    @Test func theOtherResourcesWriteTheirSchemasFields() throws {
        func names(_ schema: WireSchema, optional: Bool = true) -> Set<String> {
            Set(schema.fields.filter { optional || $0.required }.map(\.name))
        }
        let page = AlbumPageResource(items: [Self.album], next: nil, version: 7, total: 1)
        #expect(Set(try Self.encoded(page).keys) == names(.albumPage))
        #expect(Set(try Self.encoded(AlbumPageResource(items: [], next: "c", version: 1)).keys) == names(.albumPage, optional: false))
        let library = LibraryResource(id: "jazz", name: "Jazz", albumCount: 0, version: 0)
        #expect(Set(try Self.encoded(library).keys) == names(.library))
        let undo = try JSONDecoder().decode(UndoStatusResource.self, from: Data(#"{"depth":0,"canUndo":false,"next":null}"#.utf8))
        #expect(Set(try Self.encoded(undo).keys) == names(.undoStatus))
        let state = try JSONDecoder().decode(
            SavedStateResource.self, from: Data(#"{"client":"web","currentAlbumIndex":0,"albumID":null,"updatedAt":null}"#.utf8))
        #expect(Set(try Self.encoded(state).keys) == names(.savedState))
    }

    /// The web app's side of the contract: the add form sends exactly `AlbumInput`'s fields
    /// (form.js `FIELDS`), and every field it reads off an album (`item.x`) is one the server sends.
    @Test func theWebAppUsesTheWireFields() throws {
        let app = NginxProxy.repositoryRoot.appendingPathComponent("Sources/BlueLibraryServer/Resources/app")
        let form = try String(contentsOf: app.appendingPathComponent("form.js"), encoding: .utf8)
        let list = try #require(form.firstMatch(of: /const FIELDS = \[([^\]]*)\]/)?.1, "form.js lists its FIELDS")
        let fields = list.split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: " '\"")) }
        #expect(fields == WireSchema.albumInput.fields.map(\.name))
        var read: Set<String> = []
        for file in try FileManager.default.contentsOfDirectory(atPath: app.path) where file.hasSuffix(".js") {
            let text = try String(contentsOf: app.appendingPathComponent(file), encoding: .utf8)
            for match in text.matches(of: /\bitem\.([A-Za-z]+)/) { read.insert(String(match.1)) }
        }
        #expect(!read.isEmpty)
        #expect(read.isSubset(of: AlbumField.allCases.map(\.rawValue)), "fields the app reads that no album has: \(read.subtracting(AlbumField.allCases.map(\.rawValue)))")
    }
}
