/* SPDX-License-Identifier: Apache-2.0 */
/*
 * XPlane (the XSpace protobuf TensorBoard's profile plugin and XProf read, output/proto/xla/
 * xplane.proto, vendored): a host plane "/host:CPU" with two lines a thread, its CUDA calls,
 * GPU waits and NVTX ranges on one and its sampled stacks on the other (frames as nested
 * events, as the Chrome trace draws them); and a plane "/device:GPU:N" a GPU with a line a
 * (process, stream), its kernels, copies, memsets, syncs and graphs, each with its correlation
 * id, process, device, stream and the CPU stack that launched it. Times are the epoch's, in
 * picoseconds from each line's start. TensorBoard finds it as
 * LOGDIR/plugins/profile/RUN/HOST.xplane.pb.
 */
#ifndef XSPROF_OUTPUT_XPLANE_H
#define XSPROF_OUTPUT_XPLANE_H

#include <stdio.h>

struct profile_data;
struct output_meta;

/* Plane names XProf recognises. */
#define XPLANE_HOST_NAME       "/host:CPU"
#define XPLANE_GPU_NAME_PREFIX "/device:GPU:"

/* 0, -EINVAL (a record that ends before it starts), -ENOMEM or -EIO. */
int xplane__write(const struct profile_data *pd, FILE *f, const struct output_meta *meta);

#endif
