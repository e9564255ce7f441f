/* SPDX-License-Identifier: Apache-2.0 */
/* The web view's files, compiled in (daemon/service/ui/embed.cmake writes the table). */
#ifndef XSPROF_DAEMON_SERVICE_UI_ASSETS_H
#define XSPROF_DAEMON_SERVICE_UI_ASSETS_H

#include <stddef.h>

struct ui_asset {
	const char *path; /* "/ui/app.js" */
	const char *type; /* its Content-Type */
	const unsigned char *data;
	size_t len;
};

extern const struct ui_asset ui_assets[];
extern const size_t ui_nr_assets;

#endif
