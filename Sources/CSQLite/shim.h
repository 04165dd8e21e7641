#ifndef BLUELIBRARY_CSQLITE_SHIM_H
#define BLUELIBRARY_CSQLITE_SHIM_H
#include <sqlite3.h>

/// `sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0)` (the C call is variadic, which Swift cannot make):
/// SQLite stops counting its memory use, which takes a global mutex around every allocation.
/// Only before SQLite initializes (the first connection); SQLITE_MISUSE after.
static inline int bl_sqlite3_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
#endif
