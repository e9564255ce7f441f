# SPDX-License-Identifier: Apache-2.0
# Service recordings and the window against a real xsprofd on private socket paths
# (tests/service/sessions.sh): process trees, exit statuses, GPU joins as in one-shot mode.
add_test(NAME service_sessions COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/service/sessions.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_sessions PROPERTIES TIMEOUT 480)

# Export sinks to a profile store double in the suite (tests/service/export.sh): OTLP,
# Pyroscope and Parca pushes checked with protoc and go tool pprof, a 2-minute outage, a tiny
# queue cap, bad settings.
add_test(NAME service_export COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/service/export.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_export PROPERTIES TIMEOUT 600)
