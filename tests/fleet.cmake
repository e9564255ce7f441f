# SPDX-License-Identifier: Apache-2.0
# Fleet collection and the remote API (tests/service/fleet.sh): xsprofd instances in their own
# network namespaces with their own workloads, one down, one hanging; TLS, tokens, go tool pprof
# on the scrape endpoint, refused writes, malformed requests. Needs root, BPF, iproute2, openssl,
# curl and go (golang-go).
add_test(NAME service_fleet COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/service/fleet.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_fleet PROPERTIES TIMEOUT 300)

# xsprofctl fleet --report straggler on 60 MiB of one host's job parts (tests/fleet_parts_big.sh):
# the report in under 10 s and 512 MiB (issue 53, H10). Needs python3 and time.
add_test(NAME fleet_parts_big COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/fleet_parts_big.sh ${CMAKE_BINARY_DIR})
set_tests_properties(fleet_parts_big PROPERTIES TIMEOUT 120)
