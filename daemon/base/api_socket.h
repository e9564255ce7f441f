/* SPDX-License-Identifier: Apache-2.0 */
/* Where xsprofd serves its control API by default: xsprofd and xsprofctl both name it here. */
#ifndef XSPROF_BASE_API_SOCKET_H
#define XSPROF_BASE_API_SOCKET_H

#define XSPROF_API_SOCKET "/run/xsprof/xsprofd.sock"

#endif
