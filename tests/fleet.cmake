# SPDX-License-Identifier: Apache-2.0
# Fleet collection and the remote API (tests/service/fleet.sh): xsprofd instances in their own
# network namespaces with their own workloads, one down, one hanging; TLS, tokens, go tool pprof
# on the scrape endpoint, refused writes, malformed requests. Needs root, BPF, iproute2, openssl,
# curl and go (golang-go).
add_test(NAME service_fleet COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/service/fleet.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_fleet PROPERTIES TIMEOUT 300)
