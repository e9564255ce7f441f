# SPDX-License-Identifier: Apache-2.0
# Attacks on a real xsprofd on private socket paths (tests/service/abuse.sh): connection floods,
# header trickling, NaN and unbounded requests, slot hogging, hung-up waiters, a second daemon,
# a readable token file. Root must be answered within a second after each. Needs root and BPF.
add_test(NAME service_abuse COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/service/abuse.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_abuse PROPERTIES TIMEOUT 300)

# The TLS listener under clients without the token (tests/service/tcp_attacks.sh): silent
# connections from many loopback addresses, an address over its share, wrong tokens in a row.
add_test(NAME service_tcp COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/service/tcp_attacks.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_tcp PROPERTIES TIMEOUT 180)

# GET /metrics: promtool's format check, the TCP listener's rules, and a real Prometheus
# scraping it (tests/service/metrics.sh). Needs root, BPF and Debian's prometheus.
add_test(NAME service_metrics COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/service/metrics.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_metrics PROPERTIES TIMEOUT 420)

# xsprofctl ui, the loopback proxy to the web view (tests/service/ui_proxy.sh): the key, the
# Host and method guards, the query forwarded, 502 without the daemon, SIGTERM. Needs root, BPF.
add_test(NAME service_ui_proxy COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/service/ui_proxy.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_ui_proxy PROPERTIES TIMEOUT 180)

# The web view in headless Chromium, through xsprofctl ui (tests/service/ui.sh, ui_browser.py):
# flamegraph, search, range brush and comparison, the GPU timeline with launching stacks, no
# request outside the host; screenshots in tests/ui-artefacts. Needs root, BPF, chromium.
add_test(NAME service_ui COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/service/ui.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_ui PROPERTIES TIMEOUT 480)

# The GPU record store shared by uid (tests/service/gpu_share.sh): a member's flood of the CUPTI
# socket evicts only its own records; root's 50 kernels stay in root's report.
add_executable(xs_gpu_flood workloads/gpu_flood.c)
target_include_directories(xs_gpu_flood PRIVATE ${PROJECT_SOURCE_DIR})
add_test(NAME service_gpu_share COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/service/gpu_share.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_gpu_share PROPERTIES TIMEOUT 180)
# --max-cpu against a member's flood of the CUPTI socket (tests/service/gpu_ceiling.sh): the
# flooder's reading capped, xsprofd within 0.2 points of the ceiling, root's kernels all kept.
add_test(NAME service_gpu_ceiling COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/service/gpu_ceiling.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_gpu_ceiling PROPERTIES TIMEOUT 180)
# GPU records in bulk (tests/service/gpu_burst.sh): 300,000 kernels in bursts, graphs among
# them, all kept and in the window's report, status answered meanwhile (issue 40).
add_test(NAME service_gpu_burst COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/service/gpu_burst.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_gpu_burst PROPERTIES TIMEOUT 180)

# No process left stopped when the daemon dies (tests/service/stopped.sh): stopped, then killed
# -9, during `xsprofctl record -- LOOP` of execs.
add_test(NAME service_stopped COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/service/stopped.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_stopped PROPERTIES TIMEOUT 180)
# The flight recorder: slow-step, hang, death and gpu-idle dumps on the GPU doubles, a manual
# dump fetched, retention, ownership, no stall while writing, a full disk.
add_test(NAME service_flight COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/service/flight.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_flight PROPERTIES TIMEOUT 600)

# One run, four renderings of its counters (tests/service/counters_agree.sh): the status,
# /metrics, `xsprofctl status` and the end-of-run report (--stats FILE and -v) agree on every
# row of the table of counters. Needs root and BTF.
add_executable(xs_counters_rows xs_counters_rows.c)
target_link_libraries(xs_counters_rows PRIVATE xsprof_counters)
add_test(NAME service_counters_agree COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/service/counters_agree.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_counters_agree PROPERTIES TIMEOUT 180)
