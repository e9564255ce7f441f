// SPDX-License-Identifier: Apache-2.0
#include <string.h>

#include "daemon/gpu/cupti_server.h"
#include "daemon/log.h"
#include "daemon/session/gpu_socket.h"

void gpu_socket__serve(struct cupti_server *srv, uint64_t *malformed_seen, uint64_t *foreign_seen)
{
	struct cupti_server_stats cs;
	int n = cupti_server__process(srv);

	if (n < 0)
		log_err("CUPTI pipe: %s", strerror(-n));
	cupti_server__stats(srv, &cs);
	if (cs.malformed != *malformed_seen) {
		log_warn("dropped a CUPTI connection that sent malformed data (%s); %llu so far",
			 cs.last_malformed, (unsigned long long)cs.malformed);
		*malformed_seen = cs.malformed;
	}
	if (foreign_seen && cs.foreign != *foreign_seen) {
		log_warn("refused GPU records from a process outside this run (%llu connections "
			 "so far): only the profiled processes may send them",
			 (unsigned long long)cs.foreign);
		*foreign_seen = cs.foreign;
	}
}
