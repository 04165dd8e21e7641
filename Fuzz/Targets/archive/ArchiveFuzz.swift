import FuzzSupport
import Library

// The archive parser (`PUT /archive`): JSON syntax with `JSONScanner`, then every album and
// state rule. Properties: it never traps, and it answers the same twice.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = FuzzInput(data, size).bytes
    let first = Result { () throws(LibraryError) in try ArchiveDocument.parse(json: bytes) }
    if case let .success(document) = first {
        check(document.formatVersion == ArchiveDocument.currentFormatVersion, "format version \(document.formatVersion)")
        let ids = Set(document.albums.map(\.id))
        check(ids.count == document.albums.count, "duplicate album ids accepted")
    }
    let second = Result { () throws(LibraryError) in try ArchiveDocument.parse(json: bytes) }
    check(first == second, "two answers: \(first) and \(second)")
    return 0
}
