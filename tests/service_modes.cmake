# SPDX-License-Identifier: Apache-2.0
# Off-CPU, wall and GPU-wait recordings through the service, on private socket paths
# (tests/service/modes.sh).
add_test(NAME service_modes COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/service/modes.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_modes PROPERTIES TIMEOUT 300)
