/*
 * test_abi_layout.c - the public headers against the layout pinned in abi_layout.h: a program
 * compiled against an earlier header keeps working only if every struct field keeps its offset
 * and size, every output struct its size (params structs with field_mask first may grow at the
 * end), and every enum constant its value. The pinned numbers are those of LP64 (x86-64,
 * aarch64); on other data models the test is skipped. A failure is an ABI break: see
 * tests/abi/gen_layout.py before you regenerate the table.
 */
#include "cdt.h"
#include "cdt_sobj.h"
#include "cdt_ucx.h"

#include "abi_layout.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static int failures, checked;

static void field(const char *s, const char *f, size_t off, size_t size, size_t pin_off,
                  size_t pin_size)
{
    checked++;
    if (off != pin_off || size != pin_size) {
        printf("ABI break: %s.%s is at offset %zu with size %zu; it was at %zu with size %zu\n", s,
               f, off, size, pin_off, pin_size);
        failures++;
    }
}

static void whole(const char *s, size_t size, size_t pin_size, int may_grow)
{
    checked++;
    if (size == pin_size || (may_grow && size > pin_size))
        return;
    printf("ABI break: sizeof(%s) is %zu, was %zu%s\n", s, size, pin_size,
           may_grow ? " (a params struct may only grow)" : "");
    failures++;
}

static void value(const char *name, long long v, long long pin)
{
    checked++;
    if (v != pin) {
        printf("ABI break: %s is %lld, was %lld\n", name, v, pin);
        failures++;
    }
}

/* the version the table pins is this header's ABI version: MAJOR.MINOR before 1.0 */
static void abi_version(void)
{
    char abi[32];
    if (CDT_VERSION_MAJOR == 0)
        snprintf(abi, sizeof abi, "%d.%d", CDT_VERSION_MAJOR, CDT_VERSION_MINOR);
    else
        snprintf(abi, sizeof abi, "%d", CDT_VERSION_MAJOR);
    checked++;
    if (strcmp(abi, CDT_PINNED_ABI) != 0) {
        printf("the table pins ABI %s but the header is ABI %s: regenerate it with "
               "tests/abi/gen_layout.py --write once the layout change is intended\n",
               CDT_PINNED_ABI, abi);
        failures++;
    }
}

int main(void)
{
    if (sizeof(void *) != 8 || sizeof(long) != 8) {
        printf("not an LP64 platform: the pinned layout does not apply (skipped)\n");
        return 77;
    }
#define STRUCT(s, size, grows) whole(#s, sizeof(struct s), size, grows);
#define FIELD(s, f, off, size)                                                                     \
    field(#s, #f, offsetof(struct s, f), sizeof(((struct s *)0)->f), off, size);
#define VALUE(name, v) value(#name, (long long)(name), v);
    CDT_PINNED_STRUCTS(STRUCT)
    CDT_PINNED_FIELDS(FIELD)
    CDT_PINNED_VALUES(VALUE)
    abi_version();
    printf("%d layout facts checked, %d changed\n", checked, failures);
    return failures ? 1 : 0;
}
