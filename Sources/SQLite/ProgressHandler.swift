import CSQLite

/// What a connection's progress handler asks every few thousand virtual-machine steps: whether
/// the statement running now must stop (see ``Connection/withProgressCheck(every:_:_:)``).
final class ProgressCheck {
    let shouldStop: () -> Bool
    /// Times SQLite asked, and whether an answer was "stop".
    var calls = 0
    var stopped = false

    init(_ shouldStop: @escaping () -> Bool) {
        self.shouldStop = shouldStop
    }
}

extension Connection {
    /// Runs `body` with SQLite's progress handler installed: every `steps` virtual-machine
    /// instructions of a running statement, `shouldStop` is asked, and when it says true the
    /// statement fails with `SQLITE_INTERRUPT` (``SQLiteError/isInterrupted``); so does every
    /// later statement of `body` that runs `steps` instructions, while it keeps saying true.
    /// The handler is removed when `body` returns or throws (before a surrounding transaction
    /// commits or rolls back).
    ///
    /// Once a statement was stopped, this throws `SQLITE_INTERRUPT` whatever `body` did: a
    /// body that caught the error and went on returns nothing half-read.
    ///
    /// `shouldStop` runs on this thread, inside `sqlite3_step`: it must be quick (an atomic
    /// load, a clock read) and must not use this connection. Not nestable: an inner call
    /// replaces the outer handler until it returns, then none is left.
    public func withProgressCheck<T>(
        every steps: Int32 = 4096, _ shouldStop: @escaping () -> Bool, _ body: (Connection) throws -> T
    ) throws -> T {
        let check = ProgressCheck(shouldStop)
        return try withExtendedLifetime(check) {
            sqlite3_progress_handler(handle, max(1, steps), { context in
                guard let context else { return 0 }
                let check = Unmanaged<ProgressCheck>.fromOpaque(context).takeUnretainedValue()
                check.calls += 1
                guard check.shouldStop() else { return 0 }
                check.stopped = true
                return 1
            }, Unmanaged.passUnretained(check).toOpaque())
            defer { sqlite3_progress_handler(handle, 0, nil, nil) }
            let result = Result { try body(self) }
            if check.stopped {
                throw SQLiteError(extendedCode: SQLITE_INTERRUPT, message: "the statement was stopped by its progress check")
            }
            return try result.get()
        }
    }
}
