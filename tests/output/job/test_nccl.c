// SPDX-License-Identifier: Apache-2.0
/* NCCL's kernel names as its versions wrote them (from profiles and NCCL's sources). */
#include <criterion/criterion.h>

#include "output/job/nccl.h"

static void expect(const char *name, const char *op, const char *redop, const char *dtype,
		   const char *algo, const char *proto)
{
	struct nccl_kernel k;

	cr_assert(nccl__parse(name, &k), "not recognised: %s", name);
	cr_expect_str_eq(k.op, op, "%s: op", name);
	cr_expect_str_eq(k.redop, redop, "%s: redop", name);
	cr_expect_str_eq(k.dtype, dtype, "%s: dtype", name);
	cr_expect_str_eq(k.algo, algo, "%s: algo", name);
	cr_expect_str_eq(k.proto, proto, "%s: proto", name);
}

/* NCCL 2.4 to 2.7. */
Test(nccl, camel_case_of_nccl_2_4)
{
	expect("ncclAllReduceRingLLKernel_sum_f32(ncclColl)", "AllReduce", "Sum", "f32", "RING",
	       "LL");
	expect("ncclAllReduceRingLLKernel_sum_f16", "AllReduce", "Sum", "f16", "RING", "LL");
	expect("ncclAllReduceTreeLL128Kernel_max_f64(ncclColl)", "AllReduce", "Max", "f64", "TREE",
	       "LL128");
	expect("ncclBroadcastRingKernel_copy_i8(ncclColl)", "Broadcast", "", "i8", "RING",
	       "SIMPLE");
}

/* NCCL 2.8 to 2.18: ncclKernel_<op>_<ALGO>_<PROTO>_<redop>_<C type>. */
Test(nccl, kernel_names_of_nccl_2_8_to_2_18)
{
	expect("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "AllReduce", "Sum", "f32",
	       "RING", "LL");
	expect("ncclKernel_AllReduce_RING_LL_Sum_half(ncclDevComm*, unsigned long, ncclWork*)",
	       "AllReduce", "Sum", "f16", "RING", "LL");
	expect("ncclKernel_AllReduce_RING_LL_Sum_bfloat16", "AllReduce", "Sum", "bf16", "RING",
	       "LL");
	expect("ncclKernel_AllReduce_COLLNET_DIRECT_SIMPLE_Sum___nv_bfloat16(ncclWorkElem)",
	       "AllReduce", "Sum", "bf16", "COLLNET_DIRECT", "SIMPLE");
	expect("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, "
	       "ncclWork*)",
	       "SendRecv", "Sum", "i8", "RING", "SIMPLE");
	expect("ncclKernel_ReduceScatter_NVLS_TREE_SIMPLE_Max_uint64_t", "ReduceScatter", "Max",
	       "u64", "NVLS_TREE", "SIMPLE");
	/* Mangled, as a tool that does not demangle shows it. */
	expect("_Z38ncclKernel_AllReduce_RING_LL_Sum_floatP11ncclDevCommmP8ncclWork", "AllReduce",
	       "Sum", "f32", "RING", "LL");
}

/* NCCL 2.19 on: ncclDevKernel_<op>[_<redop>_<type>]_<ALGO>_<PROTO>, Generic, SendRecv. */
Test(nccl, dev_kernel_names_of_nccl_2_19_on)
{
	expect("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
	       "AllReduce", "Sum", "f32", "RING", "LL");
	expect("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
	       "AllReduce", "Sum", "bf16", "RING", "LL");
	expect("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL128", "ReduceScatter", "Sum", "bf16",
	       "RING", "LL128");
	expect("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "AllGather", "",
	       "", "RING", "LL");
	expect("ncclDevKernel_Broadcast_RING_LL", "Broadcast", "", "", "RING", "LL");
	expect("ncclDevKernel_Reduce_Sum_f16_RING_LL", "Reduce", "Sum", "f16", "RING", "LL");
	expect("ncclDevKernel_AllReduce_Sum_f32(ncclDevKernelArgsStorage<4096ul>)", "AllReduce",
	       "Sum", "f32", "", "");
	expect("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "SendRecv", "", "", "",
	       "");
	expect("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", "Generic", "", "", "",
	       "");
	expect("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", "Generic", "", "", "",
	       "");
	expect("ncclDevKernel_AllReduce_SumPostDiv_u8_NVLS_SIMPLE", "AllReduce", "SumPostDiv", "u8",
	       "NVLS", "SIMPLE");
	/* Mangled. */
	expect("_Z21ncclDevKernel_Generic24ncclDevKernelArgsStorageILm4096EE", "Generic", "", "",
	       "", "");
	expect("_Z23ncclDevKernel_Generic_424ncclDevKernelArgsStorageILm4096EE", "Generic", "", "",
	       "", "");
}

Test(nccl, other_kernels_are_not_nccl)
{
	struct nccl_kernel k = {.op = "keep"};

	cr_expect_not(nccl__parse("xs_k_forward", &k));
	cr_expect_not(nccl__parse("void at::native::vectorized_elementwise_kernel<4>(int)", &k));
	cr_expect_not(nccl__parse("ncclDevKernel_", &k));
	cr_expect_not(nccl__parse("ncclKernel_Nothing_RING_LL", &k));
	cr_expect_not(nccl__parse("nccl", &k));
	cr_expect_not(nccl__parse("", &k));
	cr_expect_not(nccl__parse(NULL, &k));
	cr_expect_not(nccl__parse("_Z99ncclDevKernel_Generic", &k));
	cr_expect_str_eq(k.op, "keep", "untouched on failure");
}
