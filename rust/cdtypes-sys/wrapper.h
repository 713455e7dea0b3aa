#include "cdt.h"
#include "cdt_ucx.h"
#include "cdt_sobj.h"
