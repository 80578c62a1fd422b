/*
 * Where an allocation was made, for people reading a profile's report:
 * the first frame of the allocating thread's native stack outside umadv,
 * the CUDA runtime and driver, CUPTI and the Python interpreter (and
 * outside umadv's own symbols, in a program that links it statically),
 * symbolized with dladdr (no debug information needed), or the Python
 * source line the thread declared (umadv__callsite_set_python) when it
 * runs Python code. Sites are kept once each for the life of the
 * process, at most UMADV_CALLSITE_MAX of them; past that, none.
 */
#ifndef UMADV_PROFILER_CALLSITE_H
#define UMADV_PROFILER_CALLSITE_H

#include <stddef.h>

#define UMADV_CALLSITE_MAX 4096
/* The longest site text kept, with its NUL (umadv_set_alloc_site). */
#define UMADV_CALLSITE_TEXT 256

/* The call site of this thread's caller, beyond @skip more frames (and
 * always beyond the frames of the libraries above): "symbol+0xOFF
 * (object)", or "object+0xOFF" when the object exports no symbol there
 * (addr2line -e object 0xOFF names the line), or the Python site
 * declared on this thread. NULL when no frame qualifies or the table is
 * full. The string lives as long as the process. */
const char *umadv__callsite_capture(unsigned skip);

/* What this thread runs in Python now ("train.py:42"; NULL or "":
 * nothing), copied, cut to UMADV_CALLSITE_TEXT - 1 bytes: the Python
 * start-up hook declares it through umadv_set_alloc_site(3) so that
 * allocations PyTorch makes for a line name that line. A site declared
 * takes precedence over the native stack. */
void umadv__callsite_set_python(const char *site);

/* Whether a shared object's file @path is one whose frames are never a
 * call site (its base name: libumadv*, libcudart*, libcuda.*, libcupti*,
 * libpython*, python*). */
int umadv__callsite_skipped_object(const char *path);

#endif
