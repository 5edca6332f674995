/*
 * hm_tool.h - what the command-line tools share at the end of option parsing:
 * --help on stdout (exit 0), a bad option or a stray argument on stderr with the
 * usage (exit 2, every tool's EXIT_USAGE; see their man pages).
 */
#ifndef HM_TOOL_H
#define HM_TOOL_H

#include <stdio.h>

enum { HM_TOOL_EXIT_USAGE = 2 };

/* The switch's default for getopt's c: 'h' prints usage to stdout and returns 0,
   anything else (getopt has named the bad option) prints it to stderr and
   returns HM_TOOL_EXIT_USAGE. */
static inline int hm_tool_help_or_usage(int c, void (*usage)(FILE *))
{
	usage(c == 'h' ? stdout : stderr);
	return c == 'h' ? 0 : HM_TOOL_EXIT_USAGE;
}

/* An argument left after the options: named, usage on stderr, HM_TOOL_EXIT_USAGE. */
static inline int hm_tool_stray_arg(const char *prog, const char *arg, void (*usage)(FILE *))
{
	fprintf(stderr, "%s: unexpected argument '%s'\n", prog, arg);
	usage(stderr);
	return HM_TOOL_EXIT_USAGE;
}

#endif
