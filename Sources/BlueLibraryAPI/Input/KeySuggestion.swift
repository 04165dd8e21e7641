/// Finds the known key a misspelt one was probably meant to be (`titel` → `title`), so the
/// error for an unknown field can say "did you mean title?".
public enum KeySuggestion {
    /// The known key closest to `key` by edit distance, if it is close enough (at most 2 edits,
    /// and fewer than half the key's length) to be a likely typo rather than a different word.
    public static func closest(to key: String, in known: [String]) -> String? {
        let lowered = Array(key.lowercased())
        var best: (key: String, distance: Int)?
        for candidate in known {
            let distance = editDistance(lowered, Array(candidate.lowercased()))
            if distance < (best?.distance ?? .max) {
                best = (candidate, distance)
            }
        }
        guard let best, best.distance <= 2, best.distance * 2 < max(lowered.count, 2) else { return nil }
        return best.key
    }

    /// Levenshtein distance where swapping two neighbours counts as one edit (`titel`).
    public static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previousRow = [Int](repeating: 0, count: b.count + 1)
        var row = Array(0...b.count)
        var rowBeforePrevious = row
        for i in 1...a.count {
            rowBeforePrevious = previousRow
            previousRow = row
            row = [Int](repeating: 0, count: b.count + 1)
            row[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                row[j] = min(previousRow[j] + 1, row[j - 1] + 1, previousRow[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    row[j] = min(row[j], rowBeforePrevious[j - 2] + 1)
                }
            }
        }
        return row[b.count]
    }
}
