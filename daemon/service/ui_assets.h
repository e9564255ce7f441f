/* SPDX-License-Identifier: Apache-2.0 */
/* The web view's files, compiled in (daemon/service/ui/embed.cmake writes the table). */
#ifndef XSPROF_DAEMON_SERVICE_UI_ASSETS_H
#define XSPROF_DAEMON_SERVICE_UI_ASSETS_H

#include <stddef.h>
#include <string.h>

struct ui_asset {
	const char *path; /* "/ui/app.js" */
	const char *type; /* its Content-Type */
	const unsigned char *data;
	size_t len;
};

extern const struct ui_asset ui_assets[];
extern const size_t ui_nr_assets;

/* The page runs its own script and style only and talks to its origin only. */
#define UI_PAGE_CSP                                                                       \
	"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " \
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/* The asset served at path ("/ui/" is index.html), or NULL. */
static inline const struct ui_asset *ui_asset__at(const char *path)
{
	size_t i;

	for (i = 0; i < ui_nr_assets; i++)
		if (!strcmp(ui_assets[i].path, path) ||
		    (!strcmp(path, "/ui/") && !strcmp(ui_assets[i].path, "/ui/index.html")))
			return &ui_assets[i];
	return NULL;
}

#endif
