import BlueLibraryClient
import Foundation

/// `bluelibrary albums export --csv [FILE]` and `bluelibrary albums import FILE.csv`: a
/// library's albums as a CSV file and back, through `GET /albums?format=csv` and
/// `POST /albums/import` (the whole file in one step: all of it or, on a bad row, none; one
/// `albums undo` takes it back).
enum AlbumsCSVCommand {
    static let helpLines = """
          export  --csv [FILE] [--sort S] [--q TEXT] [--artist A] [--genre G]
                  Every album (filtered and sorted as asked) as CSV into FILE, or to stdout.
          import  FILE.csv [--index I] [--json]
                  Add the albums of a CSV file (at index I, or at the end) in one step:
                  all of them or, when a row is bad, none (each bad line is listed).
        """

    /// `albums export`: the flag `--csv` names the format (the only one for now, so a later
    /// format does not change what a script's command means).
    static func export(_ client: BlueLibraryClient, library: String, options: inout AlbumsCommand.Options)
        -> Result<Void, BlueLibraryClientError>
    {
        guard options.flag("csv") else { fail("albums export needs --csv (the format of the file)") }
        var query = options.pageQuery()
        query.limit = nil
        let file = options.positional()
        options.finish()
        return Result { () throws(BlueLibraryClientError) in
            let bytes = try client.exportCSV(query, from: .library(library))
            guard let file, file != "-" else {
                FileHandle.standardOutput.write(bytes)
                return
            }
            do {
                try bytes.write(to: URL(fileURLWithPath: file), options: .atomic)
            } catch {
                fail("cannot write \(file): \(error.localizedDescription)")
            }
            FileHandle.standardError.write(Data("Wrote \(bytes.count) bytes to \(file).\n".utf8))
        }
    }

    /// `albums import FILE.csv`: one request with a fresh `Idempotency-Key`, so a retry by the
    /// transport never adds the file twice.
    static func importFile(_ client: BlueLibraryClient, library: String, json: Bool, options: inout AlbumsCommand.Options)
        -> Result<Void, BlueLibraryClientError>
    {
        let index = options.int("index")
        guard let file = options.positional() else { fail("albums import needs the CSV file to read") }
        options.finish()
        let bytes: Data
        do {
            bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        } catch {
            fail("cannot read \(file): \(error.localizedDescription)")
        }
        return Result { () throws(BlueLibraryClientError) in
            let result: CSVImportResultResource
            do throws(BlueLibraryClientError) {
                result = try client.importCSV(bytes, into: .library(library), at: index, idempotencyKey: UUID().uuidString)
            } catch {
                try AlbumsCommand.failListingFields(error) { "\(file): \($0.message)" }
            }
            if json {
                AlbumsCommand.printJSON(result)
            } else if let first = result.firstIndex {
                let ignored = result.ignoredColumns.isEmpty ? "" : " (ignored columns: \(result.ignoredColumns.joined(separator: ", ")))"
                print("Imported \(result.imported) albums at index \(first) on; the library is at version \(result.version)\(ignored).")
            } else {
                print("The file has no albums; nothing changed.")
            }
        }
    }
}
