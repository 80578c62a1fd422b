/*
 * The CUDA runtime's own definition of a function the injection library
 * interposes: the next one after this library in the search order (the
 * program's runtime). Internal to route.c and launch_hooks.c.
 */
#ifndef UMADV_INJECT_REAL_H
#define UMADV_INJECT_REAL_H

#include <cuda_runtime_api.h>

/* The definition of @name the program would have called; NULL (logged)
 * only when no CUDA runtime is loaded, which a caller of these functions
 * rules out. */
void *umadv__inject_real(const char *name);

/* In an interposed function: real_fn, CUDA's @_name of type @_type, or
 * return cudaErrorInitializationError. */
#define REAL(_name, _type) \
    static _type real_fn; \
    if (real_fn == NULL) \
        real_fn = (_type)umadv__inject_real(#_name); \
    if (real_fn == NULL) \
        return cudaErrorInitializationError

#endif
