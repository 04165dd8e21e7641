#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryServer
import Foundation

/// `bluelibrary backup --data-dir DIR --to FILE|-` and `bluelibrary restore --from FILE|- --data-dir DIR`.
enum BackupCommand {
    static let backupHelp = """
        Usage: bluelibrary backup --data-dir DIR --to FILE

        Copies DIR/bluelibrary.sqlite to the new file FILE with SQLite's online backup API:
        everything the database holds (libraries, albums in order, undo, saved states, the
        change feed, views, settings, the token hash and lockouts, idempotency keys, the cursor
        key). A server may keep running on DIR and keep writing: the copy is the database as
        of one commit. The copy is checked (SQLite's quick_check) and its row counts printed.
        FILE must not exist; it is readable by its owner only (mode 0600: it holds the token's
        hash and the cursor key). FILE '-' writes the copy to standard output (the report goes
        to standard error), made and checked beside the database first and removed from there
        at once: 'docker exec NAME bluelibrary backup --to - > FILE' takes a backup out of a
        container (create FILE under 'umask 077'). DIR defaults to $BLUELIBRARY_DATA_DIR or ./data.
        The cover cache (DIR/covers) is not copied: it refills itself.
        With BLUELIBRARY_DATABASE_URL (PostgreSQL), use pg_dump instead (it says how).
        Exit codes: 0 done, 1 the copy failed, 2 a bad command line.
        """

    static let restoreHelp = """
        Usage: bluelibrary restore --from FILE --data-dir DIR

        Puts a backup made by 'bluelibrary backup' in place of DIR/bluelibrary.sqlite (DIR is
        created if missing). Refused while a server runs on DIR (stop it first; a server
        refuses to start while a restore runs). The backup is checked first; one written by a
        newer version is refused. The database it replaces is kept as
        DIR/bluelibrary.sqlite.before-restore. A backup from an older version is upgraded by
        the next server start. FILE '-' reads the backup from standard input, so the user
        running restore need not be able to read the file itself: in a container,
        'docker run --rm -i -v VOLUME:/data IMAGE restore --from - < FILE'. DIR defaults to
        $BLUELIBRARY_DATA_DIR or ./data. With PostgreSQL, use pg_restore instead.
        Exit codes: 0 done, 1 refused or failed (nothing replaced), 2 a bad command line.
        """

    static func runBackup(_ arguments: [String]) -> Never {
        let options = parse(arguments, command: "backup", help: backupHelp, valueFlags: ["--data-dir", "--to"])
        refusePostgres(options)
        let directory = options["--data-dir"] ?? ProcessInfo.processInfo.environment["BLUELIBRARY_DATA_DIR"] ?? "./data"
        guard let target = options["--to"] else { fail("usage: bluelibrary backup --data-dir DIR --to FILE") }
        do {
            if target == "-" {
                // The copy goes to stdout; the report to stderr. A reader that goes away is a failed backup, not a signal.
                signal(SIGPIPE, SIG_IGN)
                FileHandle.standardError.write(Data((try DataBackup.backup(dataDirectory: directory, to: target) + "\n").utf8))
            } else {
                print(try DataBackup.backup(dataDirectory: directory, to: target))
            }
        } catch {
            fail(error.message, code: 1)
        }
        exit(0)
    }

    static func runRestore(_ arguments: [String]) -> Never {
        let options = parse(arguments, command: "restore", help: restoreHelp, valueFlags: ["--data-dir", "--from"])
        refusePostgres(options)
        let directory = options["--data-dir"] ?? ProcessInfo.processInfo.environment["BLUELIBRARY_DATA_DIR"] ?? "./data"
        guard let source = options["--from"] else { fail("usage: bluelibrary restore --from FILE --data-dir DIR") }
        do {
            print(try DataBackup.restore(from: source, dataDirectory: directory))
        } catch {
            fail(error.message, code: 1)
        }
        exit(0)
    }

    /// PostgreSQL is backed up with its own tools: say how, exit 2.
    private static func refusePostgres(_ options: [String: String]) {
        let url = options["--database-url"] ?? ProcessInfo.processInfo.environment["BLUELIBRARY_DATABASE_URL"] ?? ""
        if !url.trimmingCharacters(in: .whitespaces).isEmpty { fail(DataBackup.postgresAdvice) }
    }

    /// `--flag VALUE` and `--flag=VALUE` for `valueFlags` (and `--database-url`); help exits 0.
    private static func parse(_ arguments: [String], command: String, help: String, valueFlags: [String]) -> [String: String] {
        let flags = valueFlags + ["--database-url"]
        var values: [String: String] = [:]
        var words = arguments[...]
        while let word = words.popFirst() {
            if word == "--help" || word == "-h" || word == "help" {
                print(help)
                exit(0)
            }
            let (flag, inline) = word.firstIndex(of: "=").map { (String(word[..<$0]), Optional(String(word[word.index(after: $0)...]))) }
                ?? (word, nil)
            guard flags.contains(flag) else { fail("unknown \(command) option '\(word)'; try 'bluelibrary \(command) --help'") }
            guard let value = inline ?? words.popFirst(), !value.isEmpty else { fail("\(flag) needs a value") }
            values[flag] = value
        }
        return values
    }
}
