# SPDX-License-Identifier: Apache-2.0
# Service recordings and the window against a real xsprofd on private socket paths
# (tests/service/sessions.sh): process trees, exit statuses, GPU joins as in one-shot mode.
add_test(NAME service_sessions COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/service/sessions.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_sessions PROPERTIES TIMEOUT 480)
