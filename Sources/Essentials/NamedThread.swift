import CLinux
import Foundation

/// Starts a thread named `name` where operators look: `ps -L`, `top -H`, `perf` and
/// `/proc/<pid>/task/<tid>/comm` (the kernel keeps 15 bytes; a longer name is cut). Foundation's
/// `Thread.name`, set before `start()` on Linux, names only the `Thread` object, so every thread
/// started that way shows as the process's name; the kernel's name is set from inside the thread.
/// - Parameter stackSize: bytes of stack; nil for Foundation's default.
public func startThread(named name: String, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread {
        _ = bl_set_calling_thread_name(name)
        body()
    }
    thread.name = name
    if let stackSize { thread.stackSize = stackSize }
    thread.start()
}
