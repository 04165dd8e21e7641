import FuzzSupport
import Library

// The settings merge patch (`PATCH /settings`, RFC 7396). Byte 0 picks the settings it
// applies to (the defaults, or non-default ones). Properties: it never traps; a patch that
// applies gives settings within every range with defaultLimit <= maxLimit; applying the same
// patch again changes nothing (a merge patch is idempotent).

private let starting: [LibrarySettings] = [
    .defaults,
    LibrarySettings(
        access: .init(passcodeEnabled: true, attemptLimit: 3, checkIntervalSeconds: 60, protectReads: true),
        covers: .init(cacheSizeLimitBytes: 0, fetchTimeoutSeconds: 300, freshnessSeconds: 1, allowList: ["10.0.0.0/8"]),
        undo: .init(depth: 0),
        paging: .init(defaultLimit: 500, maxLimit: 500)),
]

private func apply(_ patch: [UInt8], to settings: LibrarySettings) -> Result<LibrarySettings, LibraryError> {
    Result { () throws(LibraryError) in try SettingsPatch.apply(patch, to: settings) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let current = starting[Int(input.byte()) % starting.count]
    let patch = input.rest()
    guard case let .success(patched) = apply(patch, to: current) else { return 0 }
    let integers: [(String, Int)] = [
        ("access.attemptLimit", patched.access.attemptLimit),
        ("access.checkIntervalSeconds", patched.access.checkIntervalSeconds),
        ("covers.cacheSizeLimitBytes", patched.covers.cacheSizeLimitBytes),
        ("covers.fetchTimeoutSeconds", patched.covers.fetchTimeoutSeconds),
        ("covers.freshnessSeconds", patched.covers.freshnessSeconds),
        ("undo.depth", patched.undo.depth),
        ("paging.defaultLimit", patched.paging.defaultLimit),
        ("paging.maxLimit", patched.paging.maxLimit),
    ]
    check(integers.count == SettingsPatch.ranges.count, "a range this target does not check")
    for (path, value) in integers {
        check(SettingsPatch.ranges[path]!.contains(value), "\(path) = \(value)")
    }
    check(patched.paging.defaultLimit <= patched.paging.maxLimit, "defaultLimit above maxLimit: \(patched.paging)")
    check(patched.covers.allowList.count <= 100, "\(patched.covers.allowList.count) allow-list entries")
    let twice = apply(patch, to: patched)
    check(twice == .success(patched), "applied twice: \(twice), once: \(patched)")
    return 0
}
