// cuda_stage.c — double-buffered uploads: the next batch goes to the device
// on the copy stream while the compute stream works on the current one
// (cuda_rt.h shows the calls of one step).
//
// Per slot, two events order the streams and the host:
//   uploaded[s]  recorded on the copy stream after the slot's upload; the
//                compute stream waits for it before reading the slot, and
//                the host waits for it before refilling the pinned buffer
//   consumed[s]  recorded on the compute stream after the slot's readers;
//                the copy stream waits for it before overwriting the slot
// An event never recorded counts as complete, so the first use of a slot
// waits for nothing.
#include <string.h>

#include "cuda_rt_internal.h"

static int check_slot(int slot, char *err, size_t errlen) {
  if (slot == 0 || slot == 1) return 0;
  return rt_err(err, errlen, "stage slot %d is neither 0 nor 1", slot);
}

int mlc_cuda_stage_init(MlcCudaStage *s, MlcCuda *c, size_t bytes, MlcDevPtr dev0, MlcDevPtr dev1,
                        char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  s->c = c;
  s->bytes = bytes;
  s->dev[0] = dev0;
  s->dev[1] = dev1;
  for (int i = 0; i < 2; i++) {
    CUevent *up = (CUevent *)&s->uploaded[i], *used = (CUevent *)&s->consumed[i];
    if (!(s->host[i] = mlc_cuda_host_alloc(c, bytes, err, errlen)) ||
        MLC_CU(c, cuEventCreate, (up, CU_EVENT_DISABLE_TIMING), err, errlen) ||
        MLC_CU(c, cuEventCreate, (used, CU_EVENT_DISABLE_TIMING), err, errlen)) {
      mlc_cuda_stage_free(s);
      return -1;
    }
  }
  return 0;
}

void *mlc_cuda_stage_host(MlcCudaStage *s, int slot, char *err, size_t errlen) {
  if (check_slot(slot, err, errlen) ||
      MLC_CU(s->c, cuEventSynchronize, ((CUevent)s->uploaded[slot]), err, errlen))
    return NULL;
  return s->host[slot];
}

int mlc_cuda_stage_upload(MlcCudaStage *s, int slot, size_t n, char *err, size_t errlen) {
  if (check_slot(slot, err, errlen)) return -1;
  if (n > s->bytes)
    return rt_err(err, errlen, "stage upload of %zu bytes into a %zu-byte slot", n, s->bytes);
  MlcCuda *c = s->c;
  CUstream copy = c->stream[MLC_CUDA_COPY];
  if (MLC_CU(c, cuStreamWaitEvent, (copy, (CUevent)s->consumed[slot], 0), err, errlen) ||
      MLC_CU(c, cuMemcpyHtoDAsync, ((CUdeviceptr)s->dev[slot], s->host[slot], n, copy), err,
             errlen))
    return -1;
  return MLC_CU(c, cuEventRecord, ((CUevent)s->uploaded[slot], copy), err, errlen);
}

int mlc_cuda_stage_acquire(MlcCudaStage *s, int slot, MlcDevPtr *dev, char *err, size_t errlen) {
  if (check_slot(slot, err, errlen)) return -1;
  MlcCuda *c = s->c;
  if (MLC_CU(c, cuStreamWaitEvent, (c->stream[MLC_CUDA_COMPUTE], (CUevent)s->uploaded[slot], 0),
             err, errlen))
    return -1;
  *dev = s->dev[slot];
  return 0;
}

int mlc_cuda_stage_release(MlcCudaStage *s, int slot, char *err, size_t errlen) {
  if (check_slot(slot, err, errlen)) return -1;
  return MLC_CU(s->c, cuEventRecord, ((CUevent)s->consumed[slot], s->c->stream[MLC_CUDA_COMPUTE]),
                err, errlen);
}

void mlc_cuda_stage_free(MlcCudaStage *s) {
  if (!s->c) return;
  char ignore[256];
  for (int i = 0; i < 2; i++) {
    if (s->uploaded[i]) MLC_CU(s->c, cuEventDestroy, ((CUevent)s->uploaded[i]), ignore, sizeof ignore);
    if (s->consumed[i]) MLC_CU(s->c, cuEventDestroy, ((CUevent)s->consumed[i]), ignore, sizeof ignore);
    mlc_cuda_host_free(s->c, s->host[i]);
  }
  memset(s, 0, sizeof *s);
}
