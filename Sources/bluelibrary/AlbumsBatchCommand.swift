import BlueLibraryClient
import Foundation

/// `bluelibrary albums update` (the fields of one album) and `bluelibrary albums apply FILE`
/// (many changes in one `POST /batch`: one transaction, one undo step).
enum AlbumsBatchCommand {
    static let helpLines = """
          update  ID | --at INDEX [--title T] [--artist A] [--genre G] [--year Y] [--cover-url U]
                  [--clear genre|year|coverUrl]... [--if-match ETAG] [--json]
                  Change fields of one album (by id, or the album at INDEX as read just before);
                  with --if-match, only while the album still has that ETag.
          apply   FILE [--no-atomic] [--json]
                  Apply the operations in FILE (JSON lines, one operation per line, as
                  POST /batch takes them; '-' reads stdin) in one step: all or none, or with
                  --no-atomic each that its rules allow. One 'albums undo' takes them back.
        """

    /// `albums update`: a merge patch of the fields given (`--clear` sends null).
    static func update(_ client: BlueLibraryClient, library: String, json: Bool, options: inout AlbumsCommand.Options)
        -> Result<Void, BlueLibraryClientError>
    {
        let index = options.int("at")
        var cleared: Set<AlbumPatchInput.ClearableField> = []
        while let field = options.value("clear") {
            guard let clearable = AlbumPatchInput.ClearableField(rawValue: field) else {
                fail("--clear takes genre, year or coverUrl (got \(field))")
            }
            cleared.insert(clearable)
        }
        let patch = AlbumPatchInput(title: options.value("title"), artist: options.value("artist"), genre: options.value("genre"),
                                    year: options.int("year"), coverUrl: options.value("cover-url"), clearing: cleared)
        let ifMatch = options.value("if-match")
        let id = options.positional()
        options.finish()
        guard (index == nil) != (id == nil) else { fail("albums update needs an album id or --at INDEX (one of them)") }
        guard patch != AlbumPatchInput() else {
            fail("albums update needs a field to change: --title, --artist, --genre, --year, --cover-url or --clear")
        }
        return Result { () throws(BlueLibraryClientError) in
            var target = id ?? ""
            if let index { target = try client.album(at: index, in: .library(library)).id }
            let album = try client.update(id: target, patch, in: library, ifMatch: ifMatch)
            if json { AlbumsCommand.printJSON(album) } else { print("Updated \(AlbumsCommand.describe(album)).") }
        }
    }

    /// `albums apply FILE`: every non-empty line is one operation; a line that is not one JSON
    /// object is refused here, naming the line, before anything is sent. The server's refusal of
    /// operation k is printed with the line it came from.
    static func apply(_ client: BlueLibraryClient, library: String, json: Bool, options: inout AlbumsCommand.Options)
        -> Result<Void, BlueLibraryClientError>
    {
        let atomic = !options.flag("no-atomic")
        guard let file = options.positional() else { fail("albums apply needs the file of operations (JSON lines; - for stdin)") }
        options.finish()
        let text: Data
        do {
            text = file == "-" ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: file))
        } catch {
            fail("cannot read \(file): \(error.localizedDescription)")
        }
        var operations: [Data] = []
        var lines: [Int] = []
        for (number, line) in text.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            let trimmed = Data(line).trimmingWhitespace()
            guard !trimmed.isEmpty else { continue }
            guard (try? JSONSerialization.jsonObject(with: trimmed)) is [String: Any] else {
                fail("\(file):\(number + 1): not one JSON object; each line is one operation like {\"op\": \"delete\", \"id\": \"...\"}",
                     code: 1)
            }
            operations.append(trimmed)
            lines.append(number + 1)
        }
        guard !operations.isEmpty else { fail("\(file) holds no operations") }
        guard operations.count <= BlueLibraryClient.maxBatchOperations else {
            fail("\(file) holds \(operations.count) operations; one batch takes at most \(BlueLibraryClient.maxBatchOperations): split the file")
        }
        return Result { () throws(BlueLibraryClientError) in
            let answer: BatchAnswer
            do throws(BlueLibraryClientError) {
                answer = try client.batch(json: operations, atomic: atomic, in: library, idempotencyKey: UUID().uuidString)
            } catch {
                try AlbumsCommand.failListingFields(error) { "\(file)\(line(of: $0.field, lines)): \($0.message)" }
            }
            if json {
                AlbumsCommand.printJSON(answer)
                return
            }
            for result in answer.results where !result.isApplied {
                let reason = result.problem?.description ?? "status \(result.status)"
                let line = lines.indices.contains(result.operation) ? ":\(lines[result.operation])" : ""
                FileHandle.standardError.write(Data("\(file)\(line): refused: \(reason)\n".utf8))
            }
            let others = (answer.destinations ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key) at \($0.value)" }
            let moved = others.isEmpty ? "" : " (albums moved to " + others.joined(separator: ", ") + ")"
            print("Applied \(answer.applied) of \(answer.results.count) operations; the library is at version \(answer.version)\(moved).")
        }
    }

    /// `:N` for a field named `operations[k]...`: the line operation k came from.
    private static func line(of field: String, _ lines: [Int]) -> String {
        guard field.hasPrefix("operations["), let end = field.firstIndex(of: "]"),
            let number = Int(field[field.index(field.startIndex, offsetBy: 11)..<end]), lines.indices.contains(number)
        else { return "" }
        return ":\(lines[number])"
    }
}

extension Data {
    /// Without leading and trailing ASCII whitespace (a line's `\r`, indentation).
    fileprivate func trimmingWhitespace() -> Data {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return Data() }
        return self[first...last]
    }
}
