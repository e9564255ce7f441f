// SPDX-License-Identifier: Apache-2.0
/* xsprofctl status: xsprofd's status document, as lines or as it came (--json). */
#include <stdio.h>
#include <stdlib.h>

#include <json-c/json.h>

#include "daemon/ctl/client.h"
#include "daemon/ctl/commands.h"
#include "daemon/ctl/ctl.h"
#include "daemon/ctl/ctl_internal.h"
#include "daemon/ctl/reply_buf.h"

int ctl_status(int argc, char **argv)
{
	struct reply_buf b;
	struct json_object *j;
	int st_code;

	if (argc != 1)
		return ctl_usage_error("%s", "status takes no arguments");
	st_code = ctl_request("GET", "/v1/status", NULL, &b, NULL);
	if (st_code)
		return st_code;
	if (ctl_opts()->json_out) {
		fputs(b.data, stdout);
		free(b.data);
		return EXIT_OK;
	}
	j = json_tokener_parse(b.data);
	free(b.data);
	if (!j) {
		fprintf(stderr, "xsprofctl: xsprofd sent a status that is not JSON\n");
		return EXIT_DAEMON_ERROR;
	}
	ctl_status_print(j);
	json_object_put(j);
	return EXIT_OK;
}
