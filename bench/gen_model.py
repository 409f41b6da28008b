#!/usr/bin/python3
"""gen_model.py - writes a large, valid .model file for timing `mlc check`.

    bench/gen_model.py [-o FILE] [--blocks N] [--stmts N] [--fns N]

The model is deterministic (no randomness), syntactically and semantically
valid, and about 5,000 lines with the defaults:
  - N user blocks Mix0..MixN-1, each with four params, a LayerNorm
    instance and a long forward method (matmuls, elementwise chains,
    softmax, where, reshapes) over [B, T, d];
  - N global fns with long bodies over [N, h];
  - one model holding two instances of every block (weights not shared)
    and one instance used twice (shared), chained in a long forward, a
    loss, and a train block.
It prints the number of lines written to stderr.
"""

import argparse
import sys

D, H = 64, 128  # model width and hidden width


def elementwise(i, a, b):
    """One statement body combining two [.., h] tensors; cycles through ops."""
    forms = [
        "relu({a}) + {b} * 0.5",
        "gelu({a}) - {b}",
        "sigmoid({a}) * {b}",
        "tanh({a} + {b})",
        "silu({a}) / (1.0 + abs({b}))",
        "where({a} > 0.0, {a}, {b} * 0.1)",
        "softmax({a}, dim = -1) + {b}",
        "sqrt(abs({a}) + 1.0) - {b}",
        "exp(-abs({a})) * {b}",
        "{a} @ s + {b}",
    ]
    return forms[i % len(forms)].format(a=a, b=b)


def gen_block(k, stmts):
    out = []
    out.append("# Mix%d(d, h): [B, T, d] -> [B, T, d]; up-project, %d mixing steps, down-project." % (k, stmts))
    out.append("block Mix%d(d, h) {" % k)
    out.append("  param w1: f32[h, d] init kaiming_uniform")
    out.append("  param b1: f32[h] init zeros")
    out.append("  param s: f32[h, h] init normal(0, 0.02)")
    out.append("  param w2: f32[d, h] init kaiming_uniform")
    out.append("  ln = LayerNorm(d)")
    out.append("")
    out.append("  forward(x: f32[B, T, d]) -> f32[B, T, d] {")
    out.append("    flat = reshape(x, [B * T, d])")
    out.append("    a0 = relu(flat @ w1.T + b1)              # [B*T, h]")
    out.append("    a1 = gelu(a0)")
    for i in range(2, stmts + 2):
        out.append("    a%d = %s" % (i, elementwise(i + k, "a%d" % (i - 1), "a%d" % (i - 2))))
    last = "a%d" % (stmts + 1)
    out.append("    y = reshape(%s @ w2.T, [B, T, d])         # [B, T, d]" % last)
    out.append("    return ln(x + y)")
    out.append("  }")
    out.append("}")
    out.append("")
    return out


def gen_fn(k, stmts):
    out = []
    out.append("# g%d: [N, h] x [N, h] -> [N, h]" % k)
    out.append("fn g%d(p: f32[N, %d], q: f32[N, %d]) -> f32[N, %d] {" % (k, H, H, H))
    out.append("  t0 = p")
    out.append("  t1 = q")
    forms = ["relu({a}) + {b}", "{a} * {b} - 1.0", "tanh({a}) * 0.5 + {b}",
             "sigmoid({a} - {b})", "where({a} < {b}, {a}, {b})", "abs({a}) / (1.0 + abs({b}))"]
    for i in range(2, stmts + 2):
        out.append("  t%d = %s" % (i, forms[(i + k) % len(forms)].format(a="t%d" % (i - 1), b="t%d" % (i - 2))))
    out.append("  return t%d" % (stmts + 1))
    out.append("}")
    out.append("")
    return out


def gen_model(nblocks, nfns):
    out = []
    out.append("model Big {")
    out.append("  emb = Embedding(256, %d)" % D)
    for k in range(nblocks):
        out.append("  m%da = Mix%d(%d, %d)" % (k, k, D, H))
        out.append("  m%db = Mix%d(%d, %d)" % (k, k, D, H))
    out.append("  shared = Mix0(%d, %d)                  # used twice below: one set of weights" % (D, H))
    out.append("  head = Linear(%d, 256)" % D)
    out.append("")
    out.append("  # idx: [B, T] byte ids -> [B, T, 256] scores")
    out.append("  forward(idx: i64[B, T]) -> f32[B, T, 256] {")
    out.append("    h = emb(idx)")
    out.append("    h = shared(h)")
    for k in range(nblocks):
        out.append("    h = m%db(m%da(h))" % (k, k))
    out.append("    h = shared(h)")
    out.append("    flat = reshape(h, [B * T, %d])" % D)
    out.append("    u = relu(flat @ m0a.w1.T)                # [B*T, %d]" % H)
    for k in range(nfns):
        out.append("    u = g%d(u, u)" % k)
    out.append("    return reshape(head(flat + u @ m0a.w2.T), [B, T, 256])")
    out.append("  }")
    out.append("")
    out.append("  loss(idx: i64[B, T], y: i64[B, T]) -> f32 {")
    out.append("    logits = forward(idx)")
    out.append("    return cross_entropy(reshape(logits, [B * T, 256]), reshape(y, [B * T]))")
    out.append("  }")
    out.append("}")
    out.append("")
    out.append("train Big {")
    out.append("  batch 16   epochs 1   seed 0")
    out.append("  optimizer adamw(lr = 3e-4, weight_decay = 0.1)")
    out.append("  schedule cosine(warmup = 10 steps)")
    out.append("  clip grad_norm = 1.0")
    out.append("  train_data {")
    out.append("    idx = npy(\"data/bench_x.npy\")")
    out.append("    y = npy(\"data/bench_y.npy\")")
    out.append("  }")
    out.append("}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", default="-", help="output file (default stdout)")
    ap.add_argument("--blocks", type=int, default=55, help="user blocks (default 55)")
    ap.add_argument("--stmts", type=int, default=60, help="mixing statements per block (default 60)")
    ap.add_argument("--fns", type=int, default=20, help="global fns (default 20)")
    opts = ap.parse_args()

    lines = ["# Generated by bench/gen_model.py --blocks %d --stmts %d --fns %d; do not edit."
             % (opts.blocks, opts.stmts, opts.fns), ""]
    for k in range(opts.blocks):
        lines += gen_block(k, opts.stmts)
    for k in range(opts.fns):
        lines += gen_fn(k, opts.stmts // 2)
    lines += gen_model(opts.blocks, opts.fns)
    text = "\n".join(lines) + "\n"
    if opts.output == "-":
        sys.stdout.write(text)
    else:
        with open(opts.output, "w") as f:
            f.write(text)
    print("gen_model: %d lines" % len(lines), file=sys.stderr)


if __name__ == "__main__":
    main()
