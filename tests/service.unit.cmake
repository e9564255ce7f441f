# SPDX-License-Identifier: Apache-2.0
# Unit tests of the service's own modules (the systemd test is tests/service.cmake).
xsprof_unit_test(test_window SOURCES test_window.c LIBS xsprof_service)
xsprof_unit_test(test_report_window SOURCES test_report_window.c LIBS xsprof_service)
