#ifndef BLUELIBRARY_CSQLITE_SHIM_H
#define BLUELIBRARY_CSQLITE_SHIM_H
#include <sqlite3.h>
#endif
