import BlueLibraryAPI
import Foundation

/// Applies a JSON merge patch (RFC 7396) to the settings, validating the result as a whole.
///
/// - A section or field set to `null` returns to its default (the merge-patch "remove").
/// - Unknown sections and fields are refused (with a suggestion for typos); `schemaVersion`
///   is set by the server.
/// - Every problem is collected (`access.attemptLimit`, `covers.allowList[2]`, ...) and
///   thrown together as `LibraryError.invalid`; nothing is applied unless all is valid.
public enum SettingsPatch {
    public static let sections = ["access", "covers", "undo", "paging", "sorting"]
    static let fields: [String: [String]] = [
        "access": ["passcodeEnabled", "attemptLimit", "checkIntervalSeconds", "protectReads"],
        "covers": ["cacheSizeLimitBytes", "fetchTimeoutSeconds", "freshnessSeconds", "allowList"],
        "undo": ["depth"],
        "paging": ["defaultLimit", "maxLimit"],
        "sorting": ["ignoredArticles"],
    ]

    /// Ranges of the integer fields, by path.
    public static let ranges: [String: ClosedRange<Int>] = [
        "access.attemptLimit": 1...1000,
        "access.checkIntervalSeconds": 1...7 * 86400,
        "covers.cacheSizeLimitBytes": 0...(1 << 40),
        "covers.fetchTimeoutSeconds": 1...300,
        "covers.freshnessSeconds": 0...365 * 86400,
        "undo.depth": 0...10000,
        "paging.defaultLimit": 1...500,
        "paging.maxLimit": 1...500,
    ]

    /// The patched settings, or `LibraryError.malformed` / `.invalid` (every bad field).
    public static func apply(_ bytes: [UInt8], to current: LibrarySettings) throws(LibraryError) -> LibrarySettings {
        let object = try LibraryError.reading { () throws(BodyError) in
            try JSONObjectParser.object(from: bytes, what: "the settings patch", example: #"{"undo": {"depth": 50}}"#)
        }
        var errors: [FieldError] = []
        func fail(_ path: String, _ message: String) {
            errors.append(FieldError(field: path, message: "\(path) \(message)"))
        }
        var result = current
        for key in object.keys.sorted() {
            let value = object[key]!
            if key == "schemaVersion" {
                fail(key, "is set by the server and cannot be changed; remove it")
                continue
            }
            guard let names = fields[key] else {
                var message = "is not a known section"
                if let suggestion = KeySuggestion.closest(to: key, in: sections) { message += "; did you mean \(suggestion)?" }
                fail(key, message + " Known sections: " + sections.joined(separator: ", "))
                continue
            }
            if value is NSNull {
                result.resetSection(key)
                continue
            }
            guard let members = value as? [String: Any] else {
                fail(key, "must be an object, not \(JSONValueKind.describe(value))")
                continue
            }
            for name in members.keys.sorted() {
                let path = "\(key).\(name)"
                guard names.contains(name) else {
                    var message = "is not a known field"
                    if let suggestion = KeySuggestion.closest(to: name, in: names) { message += "; did you mean \(suggestion)?" }
                    fail(path, message + " Known fields of \(key): " + names.joined(separator: ", "))
                    continue
                }
                let raw = members[name]!
                if raw is NSNull {
                    result.resetField(path)
                    continue
                }
                if path == "covers.allowList" {
                    guard let list = raw as? [Any] else {
                        fail(path, "must be an array of host names or CIDR ranges, not \(JSONValueKind.describe(raw))")
                        continue
                    }
                    var entries: [String] = []
                    if list.count > 100 { fail(path, "has \(list.count) entries; at most 100 are allowed") }
                    for (index, item) in list.enumerated() {
                        guard let text = item as? String, !text.isEmpty, text.utf8.count <= 255,
                              text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
                            fail("\(path)[\(index)]", "must be a host name, address or CIDR range (1 to 255 visible ASCII characters)")
                            continue
                        }
                        entries.append(text)
                    }
                    result.covers.allowList = entries
                    continue
                }
                if path == "sorting.ignoredArticles" {
                    guard let words = raw as? [Any], words.allSatisfy({ $0 is String }) else {
                        fail(path, "must be an array of words, like [\"The\", \"A\", \"An\"], not \(JSONValueKind.describe(raw))")
                        continue
                    }
                    let articles = words.compactMap { $0 as? String }
                    if let problem = SortArticles.problem(with: articles) {
                        fail(path, "has \(problem)")
                        continue
                    }
                    result.sorting.ignoredArticles = articles
                    continue
                }
                let fieldValue = JSONValueKind.fieldValue(raw)
                if let range = ranges[path] {
                    guard let number = fieldValue.integer, case .number = fieldValue, range.contains(number) else {
                        fail(path, "must be \(IntegerRules.wholeNumber(range)), not \(IntegerRules.describe(fieldValue))")
                        continue
                    }
                    result.setInteger(path, number)
                } else {
                    guard case .bool(let flag) = fieldValue else {
                        fail(path, "must be true or false, not \(fieldValue.kindDescription)")
                        continue
                    }
                    result.setBool(path, flag)
                }
            }
        }
        if errors.isEmpty, result.paging.defaultLimit > result.paging.maxLimit {
            fail("paging.defaultLimit", "(\(result.paging.defaultLimit)) must not exceed paging.maxLimit (\(result.paging.maxLimit))")
        }
        guard errors.isEmpty else { throw .invalid(ValidationFailure(errors)) }
        return result
    }
}

extension LibrarySettings {
    mutating func resetSection(_ section: String) {
        switch section {
        case "access": access = Access()
        case "covers": covers = Covers()
        case "undo": undo = Undo()
        case "paging": paging = Paging()
        case "sorting": sorting = Sorting()
        default: break
        }
    }

    mutating func resetField(_ path: String) {
        let d = LibrarySettings.defaults
        switch path {
        case "access.passcodeEnabled": access.passcodeEnabled = d.access.passcodeEnabled
        case "access.protectReads": access.protectReads = d.access.protectReads
        case "covers.allowList": covers.allowList = d.covers.allowList
        case "sorting.ignoredArticles": sorting.ignoredArticles = d.sorting.ignoredArticles
        default: if let value = d.integer(path) { setInteger(path, value) }
        }
    }

    func integer(_ path: String) -> Int? {
        switch path {
        case "access.attemptLimit": access.attemptLimit
        case "access.checkIntervalSeconds": access.checkIntervalSeconds
        case "covers.cacheSizeLimitBytes": covers.cacheSizeLimitBytes
        case "covers.fetchTimeoutSeconds": covers.fetchTimeoutSeconds
        case "covers.freshnessSeconds": covers.freshnessSeconds
        case "undo.depth": undo.depth
        case "paging.defaultLimit": paging.defaultLimit
        case "paging.maxLimit": paging.maxLimit
        default: nil
        }
    }

    mutating func setInteger(_ path: String, _ value: Int) {
        switch path {
        case "access.attemptLimit": access.attemptLimit = value
        case "access.checkIntervalSeconds": access.checkIntervalSeconds = value
        case "covers.cacheSizeLimitBytes": covers.cacheSizeLimitBytes = value
        case "covers.fetchTimeoutSeconds": covers.fetchTimeoutSeconds = value
        case "covers.freshnessSeconds": covers.freshnessSeconds = value
        case "undo.depth": undo.depth = value
        case "paging.defaultLimit": paging.defaultLimit = value
        case "paging.maxLimit": paging.maxLimit = value
        default: break
        }
    }

    mutating func setBool(_ path: String, _ value: Bool) {
        switch path {
        case "access.passcodeEnabled": access.passcodeEnabled = value
        case "access.protectReads": access.protectReads = value
        default: break
        }
    }
}
