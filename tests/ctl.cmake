# SPDX-License-Identifier: Apache-2.0
# xsprofctl's own logic without a daemon (its .c files compiled into the tests, so their static
# functions are reachable): arguments, errors, -o checks, status rendering; fleet's host lines,
# errors and the merge of the hosts' GPU reports.
set(XSPROF_CTL_LIBS xsprof_job_merge xsprof_output xsprof_base PkgConfig::LIBCURL PkgConfig::JSONC
	PkgConfig::MICROHTTPD)
xsprof_unit_test(test_ctl SOURCES test_ctl.c ${PROJECT_SOURCE_DIR}/daemon/ctl/fleet.c
	${PROJECT_SOURCE_DIR}/daemon/ctl/fleet_job.c
	${PROJECT_SOURCE_DIR}/daemon/ctl/top.c ${PROJECT_SOURCE_DIR}/daemon/ctl/dumps.c
	${PROJECT_SOURCE_DIR}/daemon/ctl/ui.c LIBS ${XSPROF_CTL_LIBS})
xsprof_unit_test(test_ctl_fleet SOURCES test_ctl_fleet.c
	${PROJECT_SOURCE_DIR}/daemon/ctl/fleet_job.c LIBS ${XSPROF_CTL_LIBS})
