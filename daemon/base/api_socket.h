/* SPDX-License-Identifier: Apache-2.0 */
/* What xsprofd and xsprofctl both name of the control API: its default socket, and the header
 * of a window profile saying the seconds its data covers (whole slices: at times more than the
 * since_s asked for). */
#ifndef XSPROF_DAEMON_BASE_API_SOCKET_H
#define XSPROF_DAEMON_BASE_API_SOCKET_H

#define XSPROF_API_SOCKET  "/run/xsprof/xsprofd.sock"
#define XSPROF_SPAN_HEADER "X-Xsprof-Span-Seconds"

#endif
