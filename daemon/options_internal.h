/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What xsprofd's option files share (options.h is what the daemon sees). options.c: the getopt
 * pass and each flag's handler; options_config.c: the config file, fed through the same pass;
 * options_check.c: the checks across flags once all are read; options_help.c: --help and
 * --list-formats.
 */
#ifndef XSPROF_DAEMON_OPTIONS_INTERNAL_H
#define XSPROF_DAEMON_OPTIONS_INTERNAL_H

#include <getopt.h>
#include <stdio.h>

struct xsprofd_opts;

/* The long flags, which are the config file's keys too. */
extern const struct option opts__long_opts[];

/* Where the option being parsed came from: NULL for the command line, else "FILE:LINE". */
extern const char *opts__origin;

/* "<3>" under the journal (a reload's bad config must show as an error), else "". */
const char *opts__errp(void);

/* Prints what is wrong with FLAG's ARG (and where, from the config file); returns 2. */
int opts__bad(const char *flag, const char *arg, const char *why);

/* One getopt pass over argv into *o: 0, 1 to stop (help, version), or 2 after an error. */
int opts__apply(struct xsprofd_opts *o, int argc, char **argv, const char **force_format);

/* The config file argv names (--config), or the default one unless one-shot: 0, or 2. */
int opts_config__read(struct xsprofd_opts *o, int argc, char **argv);

/* Checks across flags once everything is read, and each output's format: 0, or 2. */
int opts_check__finish(struct xsprofd_opts *o, const char *force_format);

void opts_help__print(FILE *f);
/* One line a format, tab-separated: name, extensions, where allowed. */
void opts_help__list_formats(FILE *f);
/* --list-triggers: one line a flight recorder trigger kind (flight_rule.c's table). */
void opts_help__list_triggers(FILE *f);

#endif
