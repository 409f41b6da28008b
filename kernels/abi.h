// abi.h — the constants the compiler, the runtime and generated code agree
// on, in one place.
//
// Included by the compiler (backend/backend.h, the host glue), by the
// runtime (runtime/include/mlc_model.h) and by the generated glue, which
// `mlc build` compiles in a temporary directory holding a copy of this file
// as kernels/abi.h (compiler/backend/host/glue_headers.c). Plain C: macros
// and one enum, no includes, so any of them can use it in array sizes and
// #if tests.
#ifndef MLC_KERNELS_ABI_H
#define MLC_KERNELS_ABI_H

// The model ABI's version (runtime/include/mlc_model.h): a program refuses a
// model object compiled for another one. 3: CSV column lists, the forward
// output's class dim, value limits of integer inputs and symbols. 4: the
// device path (MlcModel.device and .device_only, MlcCtx.device). 5: a
// label's ignore_index (MlcInputDesc.has_ignore, ignore_value). 6: the
// compute precision of matmuls and convolutions (MlcRecipe.precision), and
// loss scaling (MlcModel.loss_scale; train_step's outputs after the
// auxiliary values).
#define MLC_ABI_VERSION 6

// Dims of one tensor at every interface: a kernel entry point reads
// argument a's dim d at dims[a * MLC_MAX_RANK + d] (d = 0 is the batch dim),
// so a per-sample shape has at most MLC_MAX_RANK - 1 dims; state tensors
// (no batch dim) have at most MLC_MAX_RANK.
#define MLC_MAX_RANK 8

// Arguments of a model's loss (its inputs: data files, batch buffers).
#define MLC_MAX_INPUTS 8

// Symbolic per-sample dims (a sequence length T) one model may have.
#define MLC_MAX_SYMS 8
// Most auxiliary values a loss may return besides itself (logged by the
// program: MlcModel.naux).
#define MLC_MAX_AUX 8
// A train_step with loss scaling writes this many more scalars after the
// auxiliary values: the scale it ran with, 1 when it overflowed (the
// update was skipped) else 0, and the number of steps skipped so far.
#define MLC_SCALER_OUTPUTS 3

// Bytes of the message an entry point leaves in MlcCtx.err.
#define MLC_ERR_LEN 256

// The largest batch and thread count the runtime accepts (the generated
// program's --batch / --threads, the embedding API's batch and options);
// generated library headers print them.
#define MLC_MAX_BATCH ((int64_t)1 << 40)
#define MLC_MAX_THREADS 4096

// Element types of state tensors, inputs and outputs; the numbering is ABI.
typedef enum MlcDType {
  MLC_F32 = 0,  // float
  MLC_F64 = 1,  // double
  MLC_I32 = 2,  // int32_t
  MLC_I64 = 3,  // int64_t
  MLC_U8 = 4,   // uint8_t
  MLC_BOOL = 5, // uint8_t, 0 or 1
} MlcDType;

#endif
