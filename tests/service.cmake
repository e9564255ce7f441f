# SPDX-License-Identifier: Apache-2.0
# xsprofd as a systemd service, for real: builds and installs the .deb, boots systemd in a PID
# namespace, drives the service with xsprofctl (tests/service/run.sh). Needs root; installs and
# purges the package on this machine, so it runs alone.
add_test(NAME service_systemd COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/service/run.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_systemd PROPERTIES TIMEOUT 600 RUN_SERIAL TRUE)
