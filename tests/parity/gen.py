#!/usr/bin/python3
"""gen.py — writes the PyTorch reference data of the whole-model parity test.

For every example model (models.EXAMPLES, which also names the parity-only
models of tests/parity/*.model) it builds the PyTorch twin with a
fixed seed, draws one small batch, and computes the loss and the gradient
of every trainable parameter twice: in float64 (the float32 initial weights
and inputs widened exactly) and in float32. One file per example,
tests/parity/data/<example>.safetensors, holds

    param/<path>        the initial weights, F32 (every parameter, frozen too,
                        and every buffer: BatchNorm's running statistics)
    input/<name>        the arguments of `loss`, with the signature's dtypes
    f64/loss            F64 scalar
    f64/grad/<path>     F64, one per trainable parameter
    f64/grad_input/<n>  F64, d loss / d input for every float input
    f64/aux/<name>      F64, the loss's auxiliary values (a loss of several results)
    f32/...             the same in F32
    bf16/..., f16/...   for a model with PRECISIONS (models.py): float32 with
                        every matmul's and convolution's operands rounded to
                        that dtype, forward and backward (loss, grads,
                        grad_input)

and metadata: example, model (the .model's model name), source (the .model
file, relative to the repository root), inputs (argument names of `loss`,
comma-separated), seed, batch, torch (version).

Run with the Debian python (torch 1.13, numpy): /usr/bin/python3
tests/parity/gen.py [EXAMPLE...]. The output is deterministic; the files
are committed, and the C test (tests/parity/test_parity.c) only reads them.
"""
import copy
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402
import safetensors_np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 20240601
# Inputs to a step function (binarize) must keep this distance from the
# step (0) and from the ends of the gradient window (|x| = 1), or float32
# and float64 could disagree about which side a value falls on.
STEP_MARGIN = 1e-3


def to_np(t):
    return t.detach().cpu().numpy().copy()


def run(model, batch, dtype):
    """loss, {path: grad}, {input name: grad} and {aux name: value} of a copy
    of model in `dtype`."""
    m = copy.deepcopy(model).to(dtype)
    # a copy: .to() of a tensor already in dtype is the tensor itself, whose
    # .grad would accumulate over the runs
    args = [t.detach().to(dtype).clone().requires_grad_() if t.is_floating_point() else t for _, t in batch]
    res = m.loss(*args)
    loss, aux = (res[0], res[1:]) if isinstance(res, tuple) else (res, ())
    loss.backward()
    grads = {p: to_np(v.grad) for p, v in m.named_parameters() if v.requires_grad}
    dinputs = {n: to_np(a.grad) for (n, _), a in zip(batch, args) if a.is_floating_point()}
    auxv = {n: to_np(a) for n, a in zip(getattr(model, "AUX", ()), aux)}
    return loss, grads, dinputs, auxv


def step_margin_ok(model, batch):
    """For models with a step function: every input keeps STEP_MARGIN."""
    if not hasattr(model, "pre_codes"):
        return True
    with torch.no_grad():
        for dtype in (torch.float64, torch.float32):
            m = copy.deepcopy(model).to(dtype)
            v = m.pre_codes(batch[0][1].to(dtype)).abs()
            if v.min() < STEP_MARGIN or (v - 1).abs().min() < STEP_MARGIN:
                return False
            outside = (v > 1).double().mean().item()
            if not 0.2 <= outside <= 0.8:  # both sides of the window in use
                return False
    return True


def generate(example):
    model_name, cls, make_batch = models.EXAMPLES[example]
    for attempt in range(100):
        seed = SEED + attempt
        torch.manual_seed(seed)
        model = cls()
        batch = make_batch(torch.Generator().manual_seed(seed + 1))
        if step_margin_ok(model, batch):
            break
    else:
        raise SystemExit(f"{example}: no seed keeps the step margin")

    for prefix in getattr(model, "FROZEN", ()):
        for p, v in model.named_parameters():
            if p == prefix or p.startswith(prefix + "."):
                v.requires_grad_(False)
    out = {f"param/{p}": to_np(v) for p, v in model.named_parameters()}
    out.update({f"param/{p}": to_np(v) for p, v in model.named_buffers()})
    for name, t in batch:
        out[f"input/{name}"] = to_np(t)
    for tag, dtype, npdt in (("f64", torch.float64, np.float64),
                             ("f32", torch.float32, np.float32)):
        loss, grads, dinputs, aux = run(model, batch, dtype)
        out[f"{tag}/loss"] = np.array(loss.item(), dtype=npdt)
        for n, a in aux.items():
            out[f"{tag}/aux/{n}"] = np.array(a, dtype=npdt)
        for p, g in grads.items():
            assert g.dtype == npdt, (p, g.dtype)
            out[f"{tag}/grad/{p}"] = g
        for n, g in dinputs.items():
            out[f"{tag}/grad_input/{n}"] = g
    for dt in getattr(model, "PRECISIONS", ()):
        tag = {torch.bfloat16: "bf16", torch.float16: "f16"}[dt]
        rounded = copy.deepcopy(model)
        rounded.prec = dt
        loss, grads, dinputs, aux = run(rounded, batch, torch.float32)
        out[f"{tag}/loss"] = np.array(loss.item(), dtype=np.float32)
        for p, g in grads.items():
            out[f"{tag}/grad/{p}"] = g
        for n, g in dinputs.items():
            out[f"{tag}/grad_input/{n}"] = g
    meta = {
        "example": example, "model": model_name,
        "source": models.SOURCES.get(example, f"examples/{example}.model"),
        "inputs": ",".join(n for n, _ in batch), "seed": str(seed),
        "batch": str(batch[0][1].shape[0]), "torch": torch.__version__,
    }
    os.makedirs(os.path.join(HERE, "data"), exist_ok=True)
    path = os.path.join(HERE, "data", f"{example}.safetensors")
    safetensors_np.write(path, out, meta)
    size = os.path.getsize(path)
    print(f"{path}: {len(out)} tensors, {size} bytes, "
          f"f64 loss {out['f64/loss']!r}, f32 loss {out['f32/loss']!r}")


def main(argv):
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    for example in argv[1:] or list(models.EXAMPLES):
        generate(example)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
