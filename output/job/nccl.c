// SPDX-License-Identifier: Apache-2.0
#include "output/job/nccl.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Operations, longest first where one begins another (AllReduce before All..., Reduce last). */
static const char *const ops[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast",
				  "SendRecv",  "AllToAll",  "Generic",	     "Reduce",
				  "Send",      "Recv"};
static const char *const redops[] = {"PreMulSum", "SumPostDiv", "Sum", "Prod", "Min", "Max"};
/* Algorithms as NCCL >= 2.8 spells them (upper case, words joined by '_'). */
static const char *const algos[] = {"COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS_TREE", "COLLNET",
				    "RING",	      "TREE",	       "NVLS",	    "PAT"};
static const char *const protos[] = {"LL128", "LL", "SIMPLE"};
/* Data types: NCCL >= 2.19's short names, then the C types of older ones, made short. */
static const char *const dtypes[][2] = {
	{"i8", "i8"},
	{"u8", "u8"},
	{"i32", "i32"},
	{"u32", "u32"},
	{"i64", "i64"},
	{"u64", "u64"},
	{"f16", "f16"},
	{"f32", "f32"},
	{"f64", "f64"},
	{"bf16", "bf16"},
	{"f8e4m3", "f8e4m3"},
	{"f8e5m2", "f8e5m2"},
	{"int8_t", "i8"},
	{"uint8_t", "u8"},
	{"int32_t", "i32"},
	{"uint32_t", "u32"},
	{"int64_t", "i64"},
	{"uint64_t", "u64"},
	{"half", "f16"},
	{"float", "f32"},
	{"double", "f64"},
	{"__nv_bfloat16", "bf16"},
	{"bfloat16", "bf16"},
	{"rccl_bfloat16", "bf16"},
	{"__nv_fp8_e4m3", "f8e4m3"},
	{"__nv_fp8_e5m2", "f8e5m2"},
};

#define NR(a) (sizeof(a) / sizeof((a)[0]))

static void put(char *dst, size_t size, const char *s)
{
	snprintf(dst, size, "%s", s);
}

/* The table entry w (len n) is, case aside; NULL when none. */
static const char *word_in(const char *const *t, size_t nr, const char *w, size_t n)
{
	for (size_t i = 0; i < nr; i++)
		if (strlen(t[i]) == n && !strncasecmp(t[i], w, n))
			return t[i];
	return NULL;
}

static const char *dtype_of(const char *w, size_t n)
{
	for (size_t i = 0; i < NR(dtypes); i++)
		if (strlen(dtypes[i][0]) == n && !strncmp(dtypes[i][0], w, n))
			return dtypes[i][1];
	return NULL;
}

/* The function's name alone: a mangled name's identifier, else up to '(' or '<'. */
static size_t bare_name(const char *name, char *buf, size_t size)
{
	size_t n;

	if (!strncmp(name, "void ", 5))
		name += 5;
	if (name[0] == '_' && name[1] == 'Z') {
		char *end;
		unsigned long len;

		name += 2;
		if (*name == 'L')
			name++;
		len = strtoul(name, &end, 10);
		if (end == name || len == 0 || len >= size || strlen(end) < len)
			return 0;
		memcpy(buf, end, len);
		buf[len] = '\0';
		return len;
	}
	n = strcspn(name, "(<");
	while (n && isspace((unsigned char)name[n - 1]))
		n--;
	if (n >= size)
		return 0;
	memcpy(buf, name, n);
	buf[n] = '\0';
	return n;
}

/* The words after ncclKernel_ / ncclDevKernel_: the operation, then algorithm, protocol,
 * reduction and type in whatever order the version puts them (a type may hold '_'). */
static bool parse_words(char *s, struct nccl_kernel *k)
{
	char *w = s, *next;
	const char *hit;
	size_t n = strcspn(w, "_");

	if (!(hit = word_in(ops, NR(ops), w, n)))
		return false;
	put(k->op, sizeof(k->op), hit);
	for (w += n; *w == '_'; w = next) {
		w++;
		n = strcspn(w, "_");
		next = w + n;
		/* Two-word algorithms: COLLNET_DIRECT, COLLNET_CHAIN, NVLS_TREE. */
		if (*next == '_') {
			size_t n2 = n + 1 + strcspn(next + 1, "_");

			if ((hit = word_in(algos, NR(algos), w, n2)) && strchr(hit, '_')) {
				put(k->algo, sizeof(k->algo), hit);
				next = w + n2;
				continue;
			}
		}
		if (!*k->algo && (hit = word_in(algos, NR(algos), w, n)))
			put(k->algo, sizeof(k->algo), hit);
		else if (!*k->proto && (hit = word_in(protos, NR(protos), w, n)))
			put(k->proto, sizeof(k->proto), hit);
		else if (!*k->redop && (hit = word_in(redops, NR(redops), w, n)))
			put(k->redop, sizeof(k->redop), hit);
		else if (!*k->dtype && (hit = dtype_of(w, n)))
			put(k->dtype, sizeof(k->dtype), hit);
		else if (!*k->dtype && *k->redop && (hit = dtype_of(w, strlen(w)))) {
			put(k->dtype, sizeof(k->dtype), hit); /* an older type: the rest */
			break;
		}
		/* Anything else (Generic_4's 4, a suffix a later version adds) says nothing. */
	}
	return true;
}

/* NCCL 2.4 to 2.7: ncclAllReduceRingLLKernel_sum_f32 (Ring, Tree, CollNet; LL, LL128). */
static bool parse_camel(const char *s, struct nccl_kernel *k)
{
	static const char *const calgos[][2] = {
		{"CollNet", "COLLNET"}, {"Ring", "RING"}, {"Tree", "TREE"}};
	const char *kern = strstr(s, "Kernel");
	const char *p = s, *hit = NULL;
	size_t i;

	for (i = 0; i < NR(ops) && !hit; i++)
		if (!strncmp(p, ops[i], strlen(ops[i])))
			hit = ops[i];
	if (!hit || !kern)
		return false;
	put(k->op, sizeof(k->op), hit);
	p += strlen(hit);
	for (i = 0; i < NR(calgos); i++)
		if (!strncmp(p, calgos[i][0], strlen(calgos[i][0]))) {
			put(k->algo, sizeof(k->algo), calgos[i][1]);
			p += strlen(calgos[i][0]);
			break;
		}
	if (!strncmp(p, "LL128", 5))
		put(k->proto, sizeof(k->proto), "LL128");
	else if (!strncmp(p, "LL", 2))
		put(k->proto, sizeof(k->proto), "LL");
	else if (p == kern && *k->algo)
		put(k->proto, sizeof(k->proto), "SIMPLE");
	p = kern + strlen("Kernel");
	if (*p == '_') {
		size_t n = strcspn(++p, "_");

		if ((hit = word_in(redops, NR(redops), p, n)))
			put(k->redop, sizeof(k->redop), hit);
		if (p[n] == '_' && (hit = dtype_of(p + n + 1, strlen(p + n + 1))))
			put(k->dtype, sizeof(k->dtype), hit);
	}
	return true;
}

bool nccl__parse(const char *name, struct nccl_kernel *ret)
{
	struct nccl_kernel k = {};
	char buf[256];
	bool ok;

	if (!name || !bare_name(name, buf, sizeof(buf)))
		return false;
	if (!strncmp(buf, "ncclDevKernel_", 14))
		ok = parse_words(buf + 14, &k);
	else if (!strncmp(buf, "ncclKernel_", 11))
		ok = parse_words(buf + 11, &k);
	else if (!strncmp(buf, "nccl", 4) && isupper((unsigned char)buf[4]))
		ok = parse_camel(buf + 4, &k);
	else
		ok = false;
	if (ok)
		*ret = k;
	return ok;
}
