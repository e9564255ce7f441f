# SPDX-License-Identifier: Apache-2.0
# The real-GPU suite (tests/gpu/, run by hand on a machine with a GPU: tests/gpu/README.md).
# Here: its CUDA programs still build with nvcc, and its checker reads the outputs of a real
# run on an H100 (tests/gpu/fixtures/, tests/gpu/RESULTS.md) to the same verdicts.
find_program(XS_NVCC nvcc HINTS ${CUDAToolkit_BIN_DIR} /usr/local/cuda/bin)
if(XS_NVCC)
	add_test(NAME gpu_suite_builds COMMAND sh -c
		"'${XS_NVCC}' -O2 -arch=sm_90 -o '${CMAKE_CURRENT_BINARY_DIR}/xs_gpu_sites' '${CMAKE_CURRENT_SOURCE_DIR}/gpu/sites.cu' -lcuda && '${XS_NVCC}' -O2 -arch=sm_90 -o '${CMAKE_CURRENT_BINARY_DIR}/xs_gpu_launch_cost' '${CMAKE_CURRENT_SOURCE_DIR}/gpu/launch_cost.cu'")
else()
	add_test(NAME gpu_suite_builds COMMAND sh -c
		"echo 'gpu_suite_builds: no nvcc found at configure time (set CUDAToolkit_ROOT)' >&2; exit 1")
endif()
# The checks that fail on the real run are the ones RESULTS.md lists, no more and no fewer.
add_test(NAME gpu_suite_check COMMAND sh -c
	"python3 '${CMAKE_CURRENT_SOURCE_DIR}/gpu/check.py' '${CMAKE_CURRENT_SOURCE_DIR}/gpu/fixtures' --summary '${CMAKE_CURRENT_BINARY_DIR}/gpu_summary.json' > '${CMAKE_CURRENT_BINARY_DIR}/gpu_check.txt'; python3 -c \"import json, sys; c = json.load(open(sys.argv[1]))['checks']; print(''.join(x['stage'] + ': ' + x['check'] + chr(10) for x in c if not x['ok']), end=''); print(sum(x['ok'] for x in c), 'of', len(c), 'passed')\" '${CMAKE_CURRENT_BINARY_DIR}/gpu_summary.json' | diff - '${CMAKE_CURRENT_SOURCE_DIR}/gpu/fixtures/verdicts.txt'")
set_tests_properties(gpu_suite_builds PROPERTIES TIMEOUT 300)
