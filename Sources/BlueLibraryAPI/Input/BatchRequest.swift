/// `POST /batch`: several changes to one library (and moves out of it to others) in one
/// request and one transaction.
///
/// ```json
/// {"atomic": true, "operations": [
///   {"op": "add", "album": {"title": "Low", "artist": "David Bowie"}, "index": 0},
///   {"op": "update", "ref": 0, "patch": {"year": 1977}},
///   {"op": "update", "id": "01HZY8Q6V9T3X2K7M4N5P6R7S8", "patch": {"genre": "Rock"}, "ifMatch": "\"5f2c…\""},
///   {"op": "move", "id": "01HZY8Q6V9T3X2K7M4N5P6R7S8", "index": 3},
///   {"op": "move", "ref": 0, "library": "jazz"},
///   {"op": "delete", "id": "01HZY8Q6V9T3X2K7M4N5P6R7S8"},
///   {"op": "delete", "index": 2}
/// ]}
/// ```
///
/// Rules: every operation is read with the rules of the single request it stands for (`album`
/// as `POST /albums`, `patch` as `PATCH /albums/{id}`, `index` as a move's or a delete's, a
/// move's `library` and `index` as `POST /albums/{id}/move` reads them: `index` is required
/// unless `library` is given); an
/// operation names its album by `id`, or by `ref`: the index of an earlier `add` in the same
/// batch (whose id the client cannot know yet); a delete may name an `index` instead. Every
/// problem of every operation is reported at once, each field named with its operation
/// (`operations[3].patch.year`), and then nothing is applied.
public struct BatchRequest: Sendable, Equatable {
    /// One operation as sent.
    public enum Operation: Sendable, Equatable {
        case add(AlbumInput, index: Int?)
        case update(Target, AlbumPatch, ifMatch: String?)
        case move(Target, index: Int)
        /// A move with `library` (`POST /albums/{id}/move` with a `library`): to another library
        /// at `index` there (nil appends), or, naming the batch's own library, within it (nil:
        /// the last position). The id is checked by the library id rules, not looked up.
        case moveTo(Target, library: String, index: Int?)
        case delete(Target, ifMatch: String?)
    }

    /// How an operation names its album.
    public enum Target: Sendable, Equatable {
        case id(String)
        /// The album that the earlier operation with this index added.
        case ref(Int)
        /// The album at this index (deletes only).
        case index(Int)
    }

    public var operations: [Operation]
    /// All or nothing (the default); false applies each operation that its rules allow and
    /// reports the others.
    public var atomic: Bool

    public init(operations: [Operation], atomic: Bool = true) {
        self.operations = operations
        self.atomic = atomic
    }

    /// The most operations one batch may hold.
    public static let maxOperations = 1000

    public static let example = #"{"operations": [{"op": "add", "album": {"title": "Low", "artist": "David Bowie"}}]}"#

    /// Decodes and validates a batch.
    ///
    /// Read with the archive's streaming `JSONScanner` (members straight from the bytes, no
    /// Foundation objects per field): a batch of 1,000 operations is read in a small part of
    /// the time `JSONSerialization` takes.
    ///
    /// - Throws: `BodyError.malformed` for bad syntax or a body that is not an object;
    ///   `BodyError.invalid` listing every problem of every operation; `.negativeIndex` never
    ///   (a negative index in a batch is a field problem like any other, so it is named).
    public static func decode(json bytes: [UInt8]) throws(BodyError) -> BatchRequest {
        guard bytes.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }) else {
            throw .malformed("the batch is empty; send a JSON object like \(example)")
        }
        let document: ScannedBatch
        do {
            document = try bytes.withUnsafeBufferPointer { buffer throws(JSONSyntaxError) in try ScannedBatch(buffer) }
        } catch {
            throw .malformed("the batch is not valid JSON (\(error)); check quotes, commas and brackets")
        }
        guard let top = document.top else {
            throw .malformed("the batch must be a JSON object like \(example), not \(document.topKind.kindDescription)")
        }
        var reader = JSONFieldReader(members: top)
        reader.rejectUnknownKeys(known: ["atomic", "operations"])
        var atomic = true
        if let value = reader.nonNullValue("atomic", expected: "true or false") {
            if case .bool(let flag) = value { atomic = flag } else { reader.fail("atomic", "must be true or false, not \(value.kindDescription)") }
        }
        var errors = reader.errors
        var operations: [Operation] = []
        switch (reader.value("operations"), document.operations) {
        case (nil, _):
            errors.append(FieldError(field: "operations", message: "operations is required: a list of 1 to \(maxOperations) operations"))
        case let (_, list?) where (1...maxOperations).contains(list.count):
            let read = list.enumerated().map { number, element in self.read(element, number: number, errors: &errors) }
            for (number, operation) in read.enumerated() {
                guard let operation else { continue }
                if let ref = operation.target?.ref, case .add? = read[ref] {} else if let ref = operation.target?.ref {
                    let path = "operations[\(number)].ref"
                    errors.append(FieldError(field: path, message: "\(path) must name an earlier add of this batch (operation \(ref) is not one)"))
                }
                operations.append(operation)
            }
        case let (_, list?):
            errors.append(FieldError(
                field: "operations",
                message: "operations must hold 1 to \(maxOperations) operations (got \(list.count)); split a longer list into several batches"))
        case let (value?, nil):
            errors.append(FieldError(field: "operations", message: "operations must be a list, not \(value.kindDescription)"))
        }
        guard errors.isEmpty else { throw .invalid(ValidationFailure(errors)) }
        return BatchRequest(operations: operations, atomic: atomic)
    }

    private static let kinds = ["add", "update", "move", "delete"]

    private static func read(_ element: ScannedBatch.Element, number: Int, errors: inout [FieldError]) -> Operation? {
        let path = "operations[\(number)]"
        guard let object = element.members else {
            errors.append(FieldError(field: path, message: "\(path) must be an object like {\"op\": \"add\", \"album\": {...}}, not \(element.kind.kindDescription)"))
            return nil
        }
        var reader = JSONFieldReader(members: object, path: path + ".")
        guard let op = reader.nonNullValue("op", expected: "one of " + kinds.joined(separator: ", ")) else {
            if case .absent = reader.field("op") { reader.fail("op", "is required: one of " + kinds.joined(separator: ", ")) }
            errors += reader.errors
            return nil
        }
        let kind = reader.string("op", op, hint: "one of " + kinds.joined(separator: ", "))
        var operation: Operation?
        switch kind {
        case "add"?:
            reader.rejectUnknownKeys(known: ["op", "album", "index"])
            let index = optionalIndex(&reader)
            if let album = nested("album", in: element, &reader) {
                var fields = JSONFieldReader(members: album, path: path + ".album.")
                fields.rejectUnknownKeys(known: AlbumInput.fieldNames, readOnly: AlbumInput.serverFieldNames)
                let input = AlbumInput.read(from: &fields)
                errors += fields.errors
                if let input { operation = .add(input, index: index) }
            }
        case "update"?:
            reader.rejectUnknownKeys(known: ["op", "id", "ref", "patch", "ifMatch"])
            let target = self.target(&reader, number: number, allowIndex: false)
            let ifMatch = optionalString("ifMatch", &reader)
            if let patchObject = nested("patch", in: element, &reader) {
                var fields = JSONFieldReader(members: patchObject, path: path + ".patch.")
                let patch = AlbumPatch.read(from: &fields)
                errors += fields.errors
                if fields.errors.isEmpty, let target { operation = .update(target, patch, ifMatch: ifMatch) }
            }
        case "move"?:
            reader.rejectUnknownKeys(known: ["op", "id", "ref", "index", "library"])
            let target = self.target(&reader, number: number, allowIndex: false)
            let index = optionalIndex(&reader)
            let library = optionalLibrary(&reader)
            if index == nil, library == nil, case .absent = reader.field("index"), case .absent = reader.field("library") {
                reader.fail("index", "is required: the position to move the album to (or name a \"library\" to move it to)")
            }
            if let target, let library {
                operation = .moveTo(target, library: library, index: index)
            } else if let target, let index {
                operation = .move(target, index: index)
            }
        case "delete"?:
            reader.rejectUnknownKeys(known: ["op", "id", "ref", "index", "ifMatch"])
            let target = self.target(&reader, number: number, allowIndex: true)
            let ifMatch = optionalString("ifMatch", &reader)
            if let target { operation = .delete(target, ifMatch: ifMatch) }
        case let other?:
            reader.fail("op", "must be one of " + kinds.joined(separator: ", ") + " (got \"\(other.prefix(40))\")")
        case nil:
            break
        }
        errors += reader.errors
        return reader.errors.isEmpty ? operation : nil
    }

    /// The nested object `key` (`album`, `patch`), required.
    private static func nested(_ key: String, in element: ScannedBatch.Element, _ reader: inout JSONFieldReader) -> [JSONMember]? {
        if let members = element.objects.last(where: { $0.key == key })?.members { return members }
        switch reader.field(key) {
        case .absent: reader.fail(key, "is required: an object with the album's fields")
        case .null: reader.fail(key, "must be an object, not null")
        case .value(let value): reader.fail(key, "must be an object, not \(value.kindDescription)")
        }
        return nil
    }

    /// An optional position `index`; a negative one is a named field problem here.
    private static func optionalIndex(_ reader: inout JSONFieldReader) -> Int? {
        guard let value = reader.nonNullValue("index", expected: IntegerRules.wholeNumber(IntegerRules.positions)) else { return nil }
        return reader.integer("index", value, in: IntegerRules.positions)
    }

    /// An optional `library` to move to: a library id (checked by the id rules only).
    private static func optionalLibrary(_ reader: inout JSONFieldReader) -> String? {
        let hint = "a library id like \"jazz\""
        guard let value = reader.nonNullValue("library", expected: hint), let text = reader.string("library", value, hint: hint) else {
            return nil
        }
        if let reason = CatalogLimits.idProblem(text) {
            reader.fail("library", "is not a valid library id: \(reason)")
            return nil
        }
        return text
    }

    private static func optionalString(_ key: String, _ reader: inout JSONFieldReader) -> String? {
        guard let value = reader.nonNullValue(key, expected: "a string") else { return nil }
        return reader.string(key, value, hint: "a string (an ETag, quotes included, as the album's ETag header gives it)")
    }

    /// Exactly one of `id`, `ref` (an earlier add of this batch) and, for a delete, `index`.
    private static func target(_ reader: inout JSONFieldReader, number: Int, allowIndex: Bool) -> Target? {
        let keys = ["id", "ref"] + (allowIndex ? ["index"] : [])
        let present = keys.filter { if case .absent = reader.field($0) { false } else { true } }
        guard present.count == 1, let key = present.first else {
            let names = allowIndex ? "id, ref or index" : "id or ref"
            reader.fail(present.first ?? "id", present.isEmpty
                ? "is required: name the album with one of \(names) (ref: the index of an earlier add in this batch)"
                : "cannot be sent with \(present.dropFirst().joined(separator: ", ")); name the album with one of \(names)")
            return nil
        }
        switch key {
        case "id":
            guard let value = reader.nonNullValue("id", expected: "an album id") else { return nil }
            return reader.string("id", value, hint: "an album id").map(Target.id)
        case "ref":
            guard let value = reader.nonNullValue("ref", expected: "the index of an earlier add"),
                let ref = reader.integer("ref", value, in: IntegerRules.positions)
            else { return nil }
            guard ref < number else {
                reader.fail("ref", "must name an earlier operation of this batch (this is operation \(number))")
                return nil
            }
            return .ref(ref)
        default:
            guard let value = reader.nonNullValue("index", expected: IntegerRules.wholeNumber(IntegerRules.positions)) else { return nil }
            return reader.integer("index", value, in: IntegerRules.positions).map(Target.index)
        }
    }
}

extension BatchRequest.Operation {
    /// The album the operation names; nil for an add.
    public var target: BatchRequest.Target? {
        switch self {
        case .add: nil
        case let .update(target, _, _), let .move(target, _), let .moveTo(target, _, _), let .delete(target, _): target
        }
    }
}

extension BatchRequest.Target {
    /// The earlier add named by `ref`.
    public var ref: Int? {
        if case let .ref(operation) = self { return operation }
        return nil
    }
}

/// A batch body as `JSONScanner` reads it: the top object's members, and the members of each
/// operation and of its object-valued members (`album`, `patch`), to the depth the rules read.
struct ScannedBatch {
    struct Element {
        /// Nil when the element is not an object.
        var members: [JSONMember]?
        var kind: JSONFieldValue
        /// The members of its members that are objects, by key, in document order.
        var objects: [(key: String, members: [JSONMember])] = []
    }

    /// Nil when the document is not an object.
    var top: [JSONMember]?
    var topKind: JSONFieldValue = .object
    /// The elements of `operations` when it is a list (the last one, if the key repeats).
    var operations: [Element]?

    init(_ buffer: UnsafeBufferPointer<UInt8>) throws(JSONSyntaxError) {
        var scanner = JSONScanner(buffer)
        guard try scanner.peekKind() == .object else {
            topKind = try scanner.readValue()
            try scanner.finish()
            return
        }
        try scanner.beginObject()
        var top: [JSONMember] = []
        while let key = try scanner.nextKey() {
            if key == "operations", try scanner.peekKind() == .array {
                try scanner.beginArray()
                var elements: [Element] = []
                while try scanner.nextElement() {
                    elements.append(try Self.element(&scanner))
                }
                operations = elements
                top.append(JSONMember(key: key, value: .array))
            } else {
                if key == "operations" { operations = nil }  // a repeated key: the last counts
                top.append(JSONMember(key: key, value: try scanner.readValue()))
            }
        }
        try scanner.finish()
        self.top = top
    }

    private static func element(_ scanner: inout JSONScanner) throws(JSONSyntaxError) -> Element {
        guard try scanner.peekKind() == .object else { return Element(members: nil, kind: try scanner.readValue()) }
        try scanner.beginObject()
        var element = Element(members: [], kind: .object)
        while let key = try scanner.nextKey() {
            if try scanner.peekKind() == .object {
                try scanner.beginObject()
                var members: [JSONMember] = []
                while let inner = try scanner.nextKey() {
                    members.append(JSONMember(key: inner, value: try scanner.readValue()))
                }
                element.objects.append((key, members))
                element.members?.append(JSONMember(key: key, value: .object))
            } else {
                element.objects.removeAll { $0.key == key }  // a repeated key: the last counts
                element.members?.append(JSONMember(key: key, value: try scanner.readValue()))
            }
        }
        return element
    }
}
