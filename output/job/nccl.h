/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NCCL's kernels recognised by name, across its versions, mangled or demangled, with or
 * without their arguments:
 * - NCCL 2.4 to 2.7: ncclAllReduceRingLLKernel_sum_f32(ncclColl) (operation, algorithm and
 *   protocol run together; no protocol is the simple one);
 * - NCCL 2.8 to 2.18: ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem), also
 *   (ncclDevComm*, unsigned long, ncclWork*); mangled _Z38ncclKernel_..._floatP11ncclDevComm...;
 * - NCCL 2.19 on: ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>),
 *   ncclDevKernel_AllGather_RING_LL, ncclDevKernel_SendRecv, ncclDevKernel_Generic (and
 *   _Generic_1, _Generic_4), which can run any collective: the name says no operation.
 * What the name says is kept; what it does not is "" (NCCL >= 2.19 specialises a few
 * kernels and runs others in them, so the algorithm and protocol are those it was built for).
 */
#ifndef XSPROF_OUTPUT_NCCL_H
#define XSPROF_OUTPUT_NCCL_H

#include <stdbool.h>

struct nccl_kernel {
	char op[16];	/* "AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce",
			   "SendRecv", "Send", "Recv", "AllToAll", "Generic" */
	char redop[12]; /* "Sum", "Prod", "Min", "Max", "PreMulSum", "SumPostDiv"; "" */
	char dtype[8];	/* "i8", "u8", "i32", "u32", "i64", "u64", "f16", "f32", "f64", "bf16",
			   "f8e4m3", "f8e5m2"; "" */
	char algo[16];	/* "RING", "TREE", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS",
			   "NVLS_TREE", "PAT", "COLLNET"; "" */
	char proto[8];	/* "LL", "LL128", "SIMPLE"; "" */
};

/* True, and *ret filled, when name is an NCCL kernel's; false (ret untouched) otherwise. */
bool nccl__parse(const char *name, struct nccl_kernel *ret);

#endif
