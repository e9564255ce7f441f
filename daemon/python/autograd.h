/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PyTorch backward work under the forward line that caused it.
 *
 * Every autograd node takes a sequence number from at::sequence_number::get_and_increment while
 * the forward op that makes it runs; the engine runs the node later, in backward, through
 * Engine::evaluate_function, on the thread that called backward() (CPU graphs) or on a device
 * thread of its own (pt_autograd_N). The probes of bpf/autograd.bpf.c report both ends and
 * the backward() call (Engine::execute); this file keeps, per process, which Python frames
 * made each node, and per thread which node runs, and puts the node's forward frames into the
 * stacks of the work done for it:
 *
 *   train (train.py:57);[backward of] Net.forward (model.py:31);Linear.forward (...);...;
 *   torch::autograd::Engine::evaluate_function(...);AddmmBackward0::apply(...);...
 *
 * (the first forward frame that differs from the sample's own Python frames carries the
 * "[backward of] " mark; a device thread's stack, which has no Python frames of its own, is put
 * under the backward() call's frames first). CPU samples and CUDA launches are joined.
 */
#ifndef XSPROF_DAEMON_PYTHON_AUTOGRAD_H
#define XSPROF_DAEMON_PYTHON_AUTOGRAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct symbolizer;
struct bpf_program;
struct autograd;

struct autograd_opts {
	struct symbolizer *sym;
	/* The four programs of bpf/autograd.bpf.c, loaded. */
	struct bpf_program *node, *eval, *exec, *exec_end;
	uint32_t max_procs;   /* processes probed at once (0: 64) */
	uint32_t max_nodes;   /* nodes remembered per process, a power of two (0: 65536) */
	uint32_t max_threads; /* threads followed (0: 4096) */
};

struct autograd_stats {
	uint64_t procs;		   /* processes whose libtorch got the probes */
	uint64_t procs_capped;	   /* ... not probed: max_procs reached */
	uint64_t attach_failed;	   /* ... the probes could not be put on their libtorch */
	uint64_t nodes;		   /* forward nodes recorded */
	uint64_t node_frames;	   /* ... distinct forward stacks kept */
	uint64_t nodes_no_frames;  /* ... without Python frames (made by C++ code alone) */
	uint64_t evals;		   /* nodes the engine ran */
	uint64_t evals_unknown;	   /* ... whose forward node was not seen (made before attach,
				     forgotten past max_nodes, or a layout not read) */
	uint64_t execs;		   /* backward() calls */
	uint64_t passes_untimed;   /* passes the timeline did not keep (its cap): the GPU
				      report's ranges miss their engine threads' work */
	uint64_t links_untimed;	   /* launches' forward links the timeline did not keep (its
				      cap): no Chrome trace flow from their forward op */
	uint64_t samples_joined;   /* samples put under a forward line */
	uint64_t samples_backward; /* samples inside backward (joined or not) */
	uint64_t threads_capped;   /* events of threads past max_threads: dropped */
	uint64_t launches_joined;  /* CUDA launches put under a forward line */
	uint64_t reuse_made_whole; /* reuse records of a changed stack made whole launches */
	uint64_t too_deep;	   /* joined stacks over the depth cap: left as they were */
	uint64_t bad_layout; /* processes left unjoined: their nodes' numbers matched none made */
	uint64_t bad_records;
};

struct autograd *autograd__new(const struct autograd_opts *opts);
void autograd__free(struct autograd *ag);

/* Look for a libtorch in pid's mappings; put the probes on it once. 0, or -errno (counted). */
int autograd__scan(struct autograd *ag, pid_t pid);
/* A process went (or exec'd): its state and probes go. */
void autograd__exit(struct autograd *ag, pid_t pid);

/* A XSPROF_REC_AUTOGRAD record, its Python frames already named (pyprof__rewrite). */
int autograd__record(struct autograd *ag, const void *data, size_t size);

/* A CPU sample, CUDA call, xsprof:launch or launch reuse record taken while a node ran, put
 * under the node's forward line: the rewritten record (valid until the next call; a reuse
 * record made a whole launch) and its size, or data itself when nothing applies. */
const void *autograd__rewrite(struct autograd *ag, const void *data, size_t size, size_t *ret_size);

/*
 * A backward pass: thread tid of tgid in its outermost backward() call (Engine::execute) over
 * [start_ns, end_ns]. The engine's own threads work for it meanwhile, so their GPU work is the
 * pass's: the GPU report gives it to the NVTX range the calling thread was in.
 */
struct autograd_pass {
	uint32_t tgid, tid;
	uint64_t start_ns, end_ns;
};
/* The passes still open: ended at now_ns, handed to on_pass (a session's end). */
void autograd__end_passes(struct autograd *ag, uint64_t now_ns);

/*
 * A launch of backward work joined to its node: thread tid of tgid launched at time_ns (the
 * launch record's time) for the node thread fwd_tid made at fwd_ns in forward. The Chrome
 * trace draws the flow from the forward op to the launch's GPU work.
 */
struct autograd_link {
	uint32_t tgid, tid, fwd_tid;
	uint64_t time_ns, fwd_ns;
};
/*
 * For the timeline: on_pass with each pass as it ends (the outermost call returns), on_link
 * with each launch joined to its node's forward frames (as it is rewritten). A non-zero return
 * is counted (passes_untimed, links_untimed); it does not stop the probes.
 */
void autograd__on_timeline(struct autograd *ag,
			   int (*on_pass)(void *ctx, const struct autograd_pass *p),
			   int (*on_link)(void *ctx, const struct autograd_link *l), void *ctx);

void autograd__stats(const struct autograd *ag, struct autograd_stats *ret);
/* Why the last libtorch found got no probes, or NULL. */
const char *autograd__last_error(const struct autograd *ag);

/* The mangled names the probes go on (a prefix: the arguments differ between versions). */
#define AUTOGRAD_SYM_NODE "_ZN2at15sequence_number17get_and_incrementEv"
#define AUTOGRAD_SYM_EVAL "_ZN5torch8autograd6Engine17evaluate_functionE"
#define AUTOGRAD_SYM_EXEC "_ZN5torch8autograd6Engine7executeE"

#endif
