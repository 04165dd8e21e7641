#if canImport(Glibc)
import Glibc
#endif

/// `posix_spawn` of `path` with `arguments` (without argv[0]), exactly `environment` and
/// `actions`, the child starting with no signal blocked and every signal at its default (the
/// spawning test thread's mask is not the program's to inherit). Returns the child's process id,
/// or the error number when it could not be started. What `ChildProcess` and `RunningChild`
/// share.
func spawn(
    _ path: String, _ arguments: [String], environment: [String: String], actions: inout posix_spawn_file_actions_t
) -> Result<pid_t, SpawnError> {
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t()
    sigemptyset(&none)
    var all = sigset_t()
    sigfillset(&all)
    posix_spawnattr_setsigmask(&attributes, &none)
    posix_spawnattr_setsigdefault(&attributes, &all)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        for pointer in argv { free(pointer) }
        for pointer in envp { free(pointer) }
    }
    var pid = pid_t()
    let spawned = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
    return spawned == 0 ? .success(pid) : .failure(SpawnError(path: path, number: spawned))
}

/// Why `spawn` could not start a program.
struct SpawnError: Error, CustomStringConvertible {
    let path: String
    let number: Int32
    var description: String { "posix_spawn \(path): \(String(cString: strerror(number)))" }
}
