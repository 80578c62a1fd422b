/*
 * NVTX injection (NVTX_INJECTION64_PATH names this library): the start of
 * every range named UMADV_ITERATION_RANGE in NVTX's default domain begins
 * an iteration. umadv takes NVTX's core calls; it answers them as NVTX
 * with no tool does (no push/pop tracking, range id 0), so the program
 * sees the same values with or without umadv.
 */
#include "config.h" /* UMADV_HAVE_NVTX */
#include "inject/inject.h"

#ifdef UMADV_HAVE_NVTX

#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include <nvtx3/nvToolsExt.h>

#include "common/log.h"

static int is_iteration(const char *message)
{
    const umadv_config_t *config = umadv__inject_config();

    return config != NULL && message != NULL && strcmp(message, config->iteration_range) == 0;
}

static int is_iteration_w(const wchar_t *message)
{
    char narrow[UMADV_CONFIG_STRING_MAX];
    mbstate_t state;
    size_t n;

    if (message == NULL)
        return 0;
    memset(&state, 0, sizeof(state));
    n = wcsrtombs(narrow, &message, sizeof(narrow), &state);
    return n != (size_t)-1 && n < sizeof(narrow) && message == NULL && is_iteration(narrow);
}

static int is_iteration_ex(const nvtxEventAttributes_t *attr)
{
    if (attr == NULL)
        return 0;
    if (attr->messageType == NVTX_MESSAGE_TYPE_ASCII)
        return is_iteration(attr->message.ascii);
    if (attr->messageType == NVTX_MESSAGE_TYPE_UNICODE)
        return is_iteration_w(attr->message.unicode);
    return 0; /* registered strings live in a domain of their own */
}

static void seen(int iteration)
{
    if (iteration)
        umadv__inject_mark(UMADV_ITERATION_SOURCE_NVTX, 0);
}

static int NVTX_API push_a(const char *message)
{
    seen(is_iteration(message));
    return NVTX_NO_PUSH_POP_TRACKING;
}

static int NVTX_API push_w(const wchar_t *message)
{
    seen(is_iteration_w(message));
    return NVTX_NO_PUSH_POP_TRACKING;
}

static int NVTX_API push_ex(const nvtxEventAttributes_t *attr)
{
    seen(is_iteration_ex(attr));
    return NVTX_NO_PUSH_POP_TRACKING;
}

static nvtxRangeId_t NVTX_API start_a(const char *message)
{
    seen(is_iteration(message));
    return 0;
}

static nvtxRangeId_t NVTX_API start_w(const wchar_t *message)
{
    seen(is_iteration_w(message));
    return 0;
}

static nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t *attr)
{
    seen(is_iteration_ex(attr));
    return 0;
}

static void install(NvtxFunctionTable table, unsigned size, unsigned id, NvtxFunctionPointer fn)
{
    if (id < size && table[id] != NULL)
        *table[id] = fn;
}

UMADV_INJECT_API int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table);

/* NVTX's loader calls this once, from the first NVTX call; nonzero: the
 * tool is in place. */
UMADV_INJECT_API int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table)
{
    const NvtxExportTableCallbacks *callbacks;
    NvtxFunctionTable table = NULL;
    unsigned size = 0;

    if (umadv__inject_config() == NULL || get_table == NULL)
        return 0;
    callbacks = (const NvtxExportTableCallbacks *)get_table(NVTX_ETID_CALLBACKS);
    if (callbacks == NULL ||
        !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) || table == NULL) {
        umadv_warn("NVTX gave no table of its core calls: iterations are not found from "
                   "UMADV_ITERATION_RANGE");
        return 0;
    }
    install(table, size, NVTX_CBID_CORE_RangePushA, (NvtxFunctionPointer)push_a);
    install(table, size, NVTX_CBID_CORE_RangePushW, (NvtxFunctionPointer)push_w);
    install(table, size, NVTX_CBID_CORE_RangePushEx, (NvtxFunctionPointer)push_ex);
    install(table, size, NVTX_CBID_CORE_RangeStartA, (NvtxFunctionPointer)start_a);
    install(table, size, NVTX_CBID_CORE_RangeStartW, (NvtxFunctionPointer)start_w);
    install(table, size, NVTX_CBID_CORE_RangeStartEx, (NvtxFunctionPointer)start_ex);
    return 1;
}

#endif /* UMADV_HAVE_NVTX: without its headers, no NVTX injection */
