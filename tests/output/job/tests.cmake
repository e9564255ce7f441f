# SPDX-License-Identifier: Apache-2.0
# A training job's ranks and their collectives: NCCL's kernel names across its versions
# (test_nccl).
xsprof_unit_test(test_nccl SOURCES output/job/test_nccl.c LIBS xsprof_output)
# The analysis on hand-made jobs (test_job_report, read back with json-c).
xsprof_unit_test(test_job_report SOURCES output/job/test_job_report.c LIBS xsprof_output PkgConfig::JSONC)
# A job across hosts: job parts written, read back, aligned and merged (output/job/job_merge.h).
xsprof_unit_test(test_job_merge SOURCES output/job/test_job_merge.c LIBS xsprof_job_merge xsprof_output PkgConfig::JSONC)

# The real xsprofd on a 4-rank job of the GPU double (tests/workloads/gpu_job.c): a compute
# straggler, a host straggler and none, each named with its cause and stack
# (tests/output/job/job_report.sh). Needs root and BTF (no GPU).
if(NOT TARGET xs_gpu_job)
	foreach(t job_report job_fleet)
		add_test(NAME ${t} COMMAND sh -c
			"echo '${t}: no CUDA toolkit found at configure time (set CUDAToolkit_ROOT)' >&2; exit 1")
	endforeach()
	return()
endif()
add_test(NAME job_report COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/output/job/job_report.sh ${CMAKE_BINARY_DIR})
set_tests_properties(job_report PROPERTIES TIMEOUT 300)
# The same job on 2 hosts (network and pid namespaces, a daemon each, one host's clock 3.7 ms
# off) and xsprofctl fleet --report straggler across them (tests/output/job/job_fleet.sh).
add_test(NAME job_fleet COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/output/job/job_fleet.sh ${CMAKE_BINARY_DIR})
set_tests_properties(job_fleet PROPERTIES TIMEOUT 400 RUN_SERIAL TRUE)
