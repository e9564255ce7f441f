/* SPDX-License-Identifier: Apache-2.0 */
/* xsprofctl ui --history: the history store's pages under /history/ (daemon/ctl/ui_history.c). */
#ifndef XSPROF_DAEMON_CTL_UI_HISTORY_H
#define XSPROF_DAEMON_CTL_UI_HISTORY_H

#include <stdbool.h>
#include <stddef.h>

#include <microhttpd.h>

struct ui_history;

/* Opens the store (xsprof-history's --db URL). 0, or -errno with a sentence in err. */
int ui_history__open(const char *url, struct ui_history **ret, char *err, size_t errlen);
void ui_history__close(struct ui_history *h);
/* Whether url is one of the history's pages (/history/...). */
bool ui_history__path(const char *url);
/* Answers a history page; h NULL: 404, saying how to start with a history. live: whether
 * xsprofd is behind the rest of the page (benches says so, for the page to hide the rest). */
enum MHD_Result ui_history__answer(struct ui_history *h, struct MHD_Connection *c, const char *url,
				   bool live);

#endif
