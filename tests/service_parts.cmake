# SPDX-License-Identifier: Apache-2.0
# The service's parts that can be tested alone (their library linked in, the HTTP answer
# recorded instead of sent): permissions and the start budget.
xsprof_unit_test(test_permissions SOURCES test_permissions.c LIBS xsprof_service_permissions)
# Recordings on request (a request's fields, the caps, the states and answers, the pruning of
# finished ones) and the slices (the always-on recording's options, what a slice's close lets
# go, the timer), each linked with the service files around it replaced.
xsprof_unit_test(test_recordings SOURCES test_recordings.c LIBS xsprof_service_recordings)
xsprof_unit_test(test_slices SOURCES test_slices.c LIBS xsprof_service_slices)
# The GPU metrics (daemon/service/gpu_metrics.c): sums by label set, the caps, GPU memory.
xsprof_unit_test(test_gpu_metrics SOURCES test_gpu_metrics.c LIBS xsprof_slice_consumers)
# The flight recorder (daemon/service/flight*.c, with frozen profiles and dumps from the
# session library): trigger specs, the ring's cap over 10 minutes of 10,000 kernels a second,
# the triggers, dumps written by its thread, retention.
xsprof_unit_test(test_flight SOURCES test_flight.c LIBS xsprof_slice_consumers)
# Every number of a status document has a metric (tests/test_metrics_cover.c; service_metrics
# runs it on the running daemon's document too).
xsprof_unit_test(test_metrics_cover SOURCES test_metrics_cover.c LIBS xsprof_service)
