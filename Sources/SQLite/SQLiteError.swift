import CSQLite
import Glibc

/// An error reported by SQLite (or by this wrapper, using SQLite's result codes).
///
/// Carries the primary and extended result codes, SQLite's message and the SQL text
/// of the statement involved. Bound parameter values are never recorded, so the error
/// is safe to log.
public struct SQLiteError: Error, CustomStringConvertible, Equatable, Sendable {
    /// Primary result code (e.g. `SQLITE_CONSTRAINT`), i.e. `extendedCode & 0xFF`.
    public let code: Int32
    /// Extended result code (e.g. `ExtendedCode.constraintUnique`).
    public let extendedCode: Int32
    /// Human-readable message, from `sqlite3_errmsg` when SQLite produced the error.
    public let message: String
    /// SQL text of the failing statement (as written, never with values expanded).
    public let sql: String?
    /// The operating system's `errno` behind an I/O error (`sqlite3_system_errno`), else 0.
    public let systemErrno: Int32

    public init(extendedCode: Int32, message: String, sql: String? = nil, systemErrno: Int32 = 0) {
        self.code = extendedCode & 0xFF
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
        self.systemErrno = systemErrno
    }

    /// Builds an error from a failing call's result code and the connection's message.
    init(resultCode: Int32, db: OpaquePointer?, sql: String?) {
        let message: String
        if let db, let cMessage = sqlite3_errmsg(db) {
            message = String(cString: cMessage)
        } else {
            message = String(cString: sqlite3_errstr(resultCode))
        }
        let code = resultCode & 0xFF
        let systemErrno = db.map { code == SQLITE_IOERR || code == SQLITE_FULL || code == SQLITE_CANTOPEN ? sqlite3_system_errno($0) : 0 } ?? 0
        self.init(extendedCode: resultCode, message: message, sql: sql, systemErrno: systemErrno)
    }

    public var description: String {
        var text = "SQLite error \(extendedCode) (\(String(cString: sqlite3_errstr(extendedCode)))): \(message)"
        if systemErrno != 0 {
            text += " (errno \(systemErrno))"
        }
        if let sql {
            text += " [SQL: \(sql)]"
        }
        return text
    }

    // MARK: - Classification

    /// Any constraint violation (UNIQUE, PRIMARY KEY, NOT NULL, CHECK, FOREIGN KEY, ...).
    public var isConstraintViolation: Bool { code == SQLITE_CONSTRAINT }
    /// A UNIQUE or PRIMARY KEY constraint violation.
    public var isUniqueViolation: Bool {
        extendedCode == ExtendedCode.constraintUnique || extendedCode == ExtendedCode.constraintPrimaryKey
    }
    public var isForeignKeyViolation: Bool { extendedCode == ExtendedCode.constraintForeignKey }
    public var isNotNullViolation: Bool { extendedCode == ExtendedCode.constraintNotNull }
    public var isCheckViolation: Bool { extendedCode == ExtendedCode.constraintCheck }
    /// The database (or, for ``Database``, the reader pool) was busy; retrying later may succeed.
    public var isBusy: Bool { code == SQLITE_BUSY }
    /// The statement was stopped before it finished (a progress check said stop, or
    /// `sqlite3_interrupt`); nothing it did is kept if it was a write.
    public var isInterrupted: Bool { code == SQLITE_INTERRUPT }
    /// A table was locked by another statement on the same shared-cache connection.
    public var isLocked: Bool { code == SQLITE_LOCKED }
    /// An attempt to write through a read-only connection or to a read-only file.
    public var isReadOnly: Bool { code == SQLITE_READONLY }
    /// A value could not be converted to the requested Swift type, or a datatype mismatch.
    public var isMismatch: Bool { code == SQLITE_MISMATCH }
    /// Wrong number of bound parameters or a column index out of range.
    public var isRange: Bool { code == SQLITE_RANGE }
    /// The database file is malformed.
    public var isCorrupt: Bool { code == SQLITE_CORRUPT || code == SQLITE_NOTADB }
    /// The disk is full: `SQLITE_FULL`, or an I/O error whose cause is `ENOSPC` or `EDQUOT`
    /// (SQLite reports a failed write of the WAL or the database file as `SQLITE_IOERR_WRITE`).
    public var isFull: Bool {
        code == SQLITE_FULL || (code == SQLITE_IOERR && (systemErrno == ENOSPC || systemErrno == EDQUOT))
    }
}

/// Extended result codes whose C macros Swift does not import (sqlite3.h: `code | (n << 8)`).
enum ExtendedCode {
    static let constraintCheck = SQLITE_CONSTRAINT | (1 << 8)
    static let constraintForeignKey = SQLITE_CONSTRAINT | (3 << 8)
    static let constraintNotNull = SQLITE_CONSTRAINT | (5 << 8)
    static let constraintPrimaryKey = SQLITE_CONSTRAINT | (6 << 8)
    static let constraintUnique = SQLITE_CONSTRAINT | (8 << 8)
}
