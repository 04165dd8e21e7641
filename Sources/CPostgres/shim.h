#ifndef BLUELIBRARY_CPOSTGRES_SHIM_H
#define BLUELIBRARY_CPOSTGRES_SHIM_H
#include <libpq-fe.h>
#endif
