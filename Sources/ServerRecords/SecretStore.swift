/// Where server secrets (the cursor signing key, ...) are kept, shared by every process that
/// opens the same database.
public protocol SecretStore: Sendable {
    /// The secret called `name`: the stored one, or else `candidate`, stored now. Whoever
    /// stores first wins, so every process opening this database gets the same value.
    func secret(named name: String, orStore candidate: [UInt8]) throws -> [UInt8]
}
