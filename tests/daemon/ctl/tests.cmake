# SPDX-License-Identifier: Apache-2.0
# xsprofctl's own logic without a daemon, through the library xsprofctl is built from:
# arguments, errors, -o checks, status rendering; fleet's host lines, errors and the merge of
# the hosts' GPU reports.
xsprof_unit_test(test_ctl SOURCES daemon/ctl/test_ctl.c LIBS xsprof_ctl)
xsprof_unit_test(test_ctl_fleet SOURCES daemon/ctl/test_ctl_fleet.c LIBS xsprof_ctl)

# Fleet collection and the remote API (tests/daemon/service/fleet.sh): xsprofd instances in their own
# network namespaces with their own workloads, one down, one hanging; TLS, tokens, go tool pprof
# on the scrape endpoint, refused writes, malformed requests. Needs root, BPF, iproute2, openssl,
# curl and go (golang-go).
add_test(NAME service_fleet COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/service/fleet.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_fleet PROPERTIES TIMEOUT 300)

# xsprofctl fleet --report straggler on 60 MiB of one host's job parts (tests/daemon/ctl/fleet_parts_big.sh):
# the report in under 10 s and 512 MiB (issue 53, H10). Needs python3 and time.
add_test(NAME fleet_parts_big COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/ctl/fleet_parts_big.sh ${CMAKE_BINARY_DIR})
set_tests_properties(fleet_parts_big PROPERTIES TIMEOUT 120)
