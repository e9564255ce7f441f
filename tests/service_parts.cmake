# SPDX-License-Identifier: Apache-2.0
# The service's parts that can be tested alone (their .c compiled into the test, the HTTP
# answer recorded instead of sent): permissions and the start budget.
xsprof_unit_test(test_permissions SOURCES test_permissions.c
	LIBS xsprof_session xsprofd_cli PkgConfig::MICROHTTPD PkgConfig::JSONC)
