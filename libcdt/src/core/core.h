/*
 * core.h - the core as the other folders of libcdt/src see it: the common type header and
 * status helpers (type.h), custom types and operations (op.h, custom.c), byte-range sets
 * (ranges.h). The only core header that derived/, frame/ and ucx/ include.
 */
#ifndef CDT_CORE_H
#define CDT_CORE_H

#include "op.h"
#include "type.h"

#endif
