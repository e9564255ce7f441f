// SPDX-License-Identifier: Apache-2.0
/*
 * GET /ui/: the web view. Its files are compiled in (ui/embed.cmake) and hold no data, so they
 * are served before any credential check; the page asks the API for everything it shows, with
 * the same rules as any client (on the network: the token from the URL's #token=).
 */
#include <stdbool.h>
#include <string.h>

#include "daemon/service/internal.h"
#include "daemon/service/ui_assets.h"

bool ui__path(const char *url)
{
	return !strcmp(url, "/") || !strcmp(url, "/ui") || !strncmp(url, "/ui/", 4);
}

enum MHD_Result ui__api(struct MHD_Connection *c, const char *method, const char *url)
{
	static const char *const moved[] = {"Location", "/ui/"};
	static const char *const page[] = {
		"Content-Security-Policy", UI_PAGE_CSP, "X-Content-Type-Options", "nosniff",
		"Referrer-Policy", "no-referrer", "X-Frame-Options", "DENY",
		/* Revalidated each load, so a new daemon's page is never mixed with an old one's. */
		"Cache-Control", "no-cache"};
	const struct ui_asset *a = ui_asset__at(url);

	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return reply__error(c, 405, "use GET for the web view", NULL);
	if (!strcmp(url, "/") || !strcmp(url, "/ui"))
		return reply__headers(c, 302, "text/plain", "", 0, false, moved, 2);
	if (a)
		return reply__headers(c, 200, a->type, a->data, a->len, false, page,
				      sizeof(page) / sizeof(page[0]));
	return reply__error(c, 404, "no such file of the web view", "open /ui/");
}
