/*
 * test_fault_inject on a real GPU: the wrapping table forwards to the CUDA
 * runtime instead of the host backend, so that managed memory, streams and
 * events are real when each call fails in turn (CUPTI stays the mock: the
 * launches are the test's). Skips without a device.
 */
#define INJECT_GPU 1
#include "test_fault_inject.c"
