# SPDX-License-Identifier: Apache-2.0
# xsprofd as a systemd service, for real: builds and installs the .deb, boots systemd in a PID
# namespace, drives the service with xsprofctl (tests/daemon/service/run.sh). Needs root; installs and
# purges the package on this machine, so it runs alone.
add_test(NAME service_systemd COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/service/run.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_systemd PROPERTIES TIMEOUT 600 RUN_SERIAL TRUE)

# Attacks on a real xsprofd on private socket paths (tests/daemon/service/abuse.sh): connection floods,
# header trickling, NaN and unbounded requests, slot hogging, hung-up waiters, a second daemon,
# a readable token file. Root must be answered within a second after each. Needs root and BPF.
add_test(NAME service_abuse COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/service/abuse.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_abuse PROPERTIES TIMEOUT 300)

# The TLS listener under clients without the token (tests/daemon/service/tcp_attacks.sh): silent
# connections from many loopback addresses, an address over its share, wrong tokens in a row.
add_test(NAME service_tcp COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/service/tcp_attacks.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_tcp PROPERTIES TIMEOUT 180)

# GET /metrics: promtool's format check, the TCP listener's rules, and a real Prometheus
# scraping it (tests/daemon/service/metrics.sh). Needs root, BPF and Debian's prometheus.
add_test(NAME service_metrics COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/service/metrics.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_metrics PROPERTIES TIMEOUT 420)

# xsprofctl ui, the loopback proxy to the web view (tests/daemon/service/ui_proxy.sh): the key, the
# Host and method guards, the query forwarded, 502 without the daemon, SIGTERM. Needs root, BPF.
add_test(NAME service_ui_proxy COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/service/ui_proxy.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_ui_proxy PROPERTIES TIMEOUT 180)

# The web view in headless Chromium, through xsprofctl ui (tests/daemon/service/ui.sh, ui_browser.py):
# flamegraph, search, range brush and comparison, the GPU timeline with launching stacks, no
# request outside the host; screenshots in tests/ui-artefacts. Needs root, BPF, chromium.
add_test(NAME service_ui COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/service/ui.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_ui PROPERTIES TIMEOUT 480)

# The GPU record store shared by uid (tests/daemon/service/gpu_share.sh): a member's flood of the CUPTI
# socket evicts only its own records; root's 50 kernels stay in root's report.
add_executable(xs_gpu_flood workloads/gpu_flood.c)
target_include_directories(xs_gpu_flood PRIVATE ${PROJECT_SOURCE_DIR})
add_test(NAME service_gpu_share COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/service/gpu_share.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_gpu_share PROPERTIES TIMEOUT 180)
# --max-cpu against a member's flood of the CUPTI socket (tests/daemon/service/gpu_ceiling.sh): the
# flooder's reading capped, xsprofd within 0.2 points of the ceiling, root's kernels all kept.
add_test(NAME service_gpu_ceiling COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/service/gpu_ceiling.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_gpu_ceiling PROPERTIES TIMEOUT 180)
# GPU records in bulk (tests/daemon/service/gpu_burst.sh): 300,000 kernels in bursts, graphs among
# them, all kept and in the window's report, status answered meanwhile (issue 40).
add_test(NAME service_gpu_burst COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/service/gpu_burst.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_gpu_burst PROPERTIES TIMEOUT 180)

# No process left stopped when the daemon dies (tests/daemon/service/stopped.sh): stopped, then killed
# -9, during `xsprofctl record -- LOOP` of execs.
add_test(NAME service_stopped COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/service/stopped.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_stopped PROPERTIES TIMEOUT 180)
# The flight recorder: slow-step, hang, death and gpu-idle dumps on the GPU doubles, a manual
# dump fetched, retention, ownership, no stall while writing, a full disk.
add_test(NAME service_flight COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/service/flight.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_flight PROPERTIES TIMEOUT 600)

# One run, four renderings of its counters (tests/daemon/service/counters_agree.sh): the status,
# /metrics, `xsprofctl status` and the end-of-run report (--stats FILE and -v) agree on every
# row of the table of counters. Needs root and BTF.
add_executable(xs_counters_rows daemon/service/xs_counters_rows.c)
target_link_libraries(xs_counters_rows PRIVATE xsprof_counters)
add_test(NAME service_counters_agree COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/service/counters_agree.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_counters_agree PROPERTIES TIMEOUT 180)

# Off-CPU, wall and GPU-wait recordings through the service, on private socket paths
# (tests/daemon/service/modes.sh).
add_test(NAME service_modes COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/service/modes.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_modes PROPERTIES TIMEOUT 300)

# The service's parts that can be tested alone (their library linked in, the HTTP answer
# recorded instead of sent): permissions and the start budget.
xsprof_unit_test(test_permissions SOURCES daemon/service/test_permissions.c LIBS xsprof_service_permissions)
# Recordings on request (a request's fields, the caps, the states and answers, the pruning of
# finished ones) and the slices (the always-on recording's options, what a slice's close lets
# go, the timer), each linked with the service files around it replaced.
xsprof_unit_test(test_recordings SOURCES daemon/service/test_recordings.c LIBS xsprof_service_recordings)
xsprof_unit_test(test_slices SOURCES daemon/service/test_slices.c LIBS xsprof_service_slices)
# The GPU metrics (daemon/service/gpu_metrics.c): sums by label set, the caps, GPU memory.
xsprof_unit_test(test_gpu_metrics SOURCES daemon/service/test_gpu_metrics.c LIBS xsprof_slice_consumers)
# The flight recorder (daemon/service/flight*.c, with frozen profiles and dumps from the
# session library): trigger specs, the ring's cap over 10 minutes of 10,000 kernels a second,
# the triggers, dumps written by its thread, retention.
xsprof_unit_test(test_flight SOURCES daemon/service/test_flight.c LIBS xsprof_slice_consumers)
# Every number of a status document has a metric (tests/daemon/service/test_metrics_cover.c; service_metrics
# runs it on the running daemon's document too).
xsprof_unit_test(test_metrics_cover SOURCES daemon/service/test_metrics_cover.c LIBS xsprof_service)

# Service recordings and the window against a real xsprofd on private socket paths
# (tests/daemon/service/sessions.sh): process trees, exit statuses, GPU joins as in one-shot mode.
add_test(NAME service_sessions COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/service/sessions.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_sessions PROPERTIES TIMEOUT 480)

# Export sinks to a profile store double in the suite (tests/daemon/service/export.sh): OTLP,
# Pyroscope and Parca pushes checked with protoc and go tool pprof, a 2-minute outage, a tiny
# queue cap, bad settings.
add_test(NAME service_export COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/service/export.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service_export PROPERTIES TIMEOUT 600)
