/*
 * What the example programs share on their command lines (mlp_train,
 * vgg/vgg_train): messages as "PROGRAM: message", exit 1 on a failure,
 * exit 2 and a pointer to --help on a usage error, and numbers parsed
 * whole or refused naming the flag and the range.
 */
#ifndef UMADV_EXAMPLES_EXAMPLE_CLI_H
#define UMADV_EXAMPLES_EXAMPLE_CLI_H

#include <stdarg.h>

#define EXAMPLE_EXIT_USAGE 2
#define EXAMPLE_EXIT_SKIP 77 /* automake's "skipped": no GPU here */

/* The program's name in every message; set once, before any. */
void example_cli_name(const char *program);

/* "PROGRAM: message" on stderr, without the line's end. */
void example_vreport(const char *fmt, va_list ap);

/* The message, then exit 1. */
void example_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* The message and where to find help, then exit 2. */
void example_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* --@flag's @text as an integer in [@min, @max], or a usage error. */
long long example_parse_int(const char *flag, const char *text, long long min, long long max);

/* --@flag's @text as a number in [@min, @max), or a usage error. */
double example_parse_real(const char *flag, const char *text, double min, double max);

/* Make UMADV_DEVICE's GPU (default 0) current: exit 77 when there is no
 * CUDA device, so that test harnesses count a skip; a usage of a device
 * that is not there is a failure naming it. Returns the device. */
int example_cuda_device(void);

#endif
