# SPDX-License-Identifier: Apache-2.0
# xsprofctl's own logic without a daemon: arguments, errors, -o checks, status rendering;
# fleet's host lines, errors and the merge of the hosts' GPU reports.
set(XSPROF_CTL_LIBS xsprof_job_merge xsprof_output xsprof_base PkgConfig::LIBCURL PkgConfig::JSONC
	PkgConfig::MICROHTTPD)
set(XSPROF_CTL_DIR ${PROJECT_SOURCE_DIR}/daemon/ctl)
xsprof_unit_test(test_ctl SOURCES test_ctl.c ${XSPROF_CTL_DIR}/xsprofctl.c ${XSPROF_CTL_DIR}/args.c
	${XSPROF_CTL_DIR}/client.c ${XSPROF_CTL_DIR}/status_print.c ${XSPROF_CTL_DIR}/cmd_status.c
	${XSPROF_CTL_DIR}/cmd_profile.c ${XSPROF_CTL_DIR}/cmd_record.c ${XSPROF_CTL_DIR}/fleet.c
	${XSPROF_CTL_DIR}/fleet_args.c ${XSPROF_CTL_DIR}/fleet_gpu.c ${XSPROF_CTL_DIR}/fleet_hosts.c
	${XSPROF_CTL_DIR}/fleet_job.c ${XSPROF_CTL_DIR}/top.c ${XSPROF_CTL_DIR}/dumps.c
	${XSPROF_CTL_DIR}/ui.c LIBS ${XSPROF_CTL_LIBS})
xsprof_unit_test(test_ctl_fleet SOURCES test_ctl_fleet.c ${XSPROF_CTL_DIR}/fleet.c
	${XSPROF_CTL_DIR}/fleet_args.c ${XSPROF_CTL_DIR}/fleet_gpu.c ${XSPROF_CTL_DIR}/fleet_hosts.c
	${XSPROF_CTL_DIR}/fleet_job.c LIBS ${XSPROF_CTL_LIBS})
