/* status.c - status code names and messages, from the one table in cdt.h. */
#include "cdt.h"

const char *cdt_strerror(int status)
{
    switch (status) {
#define CDT_STATUS_MSG_(name, value, msg)                                                          \
    case value:                                                                                    \
        return msg;
        CDT_STATUS_MAP(CDT_STATUS_MSG_)
#undef CDT_STATUS_MSG_
    default:
        return "unknown or user-defined error";
    }
}

const char *cdt_err_name(int status)
{
    switch (status) {
#define CDT_STATUS_NAME_(name, value, msg)                                                         \
    case value:                                                                                    \
        return #name;
        CDT_STATUS_MAP(CDT_STATUS_NAME_)
#undef CDT_STATUS_NAME_
    default:
        return "CDT_ERR_USER";
    }
}
