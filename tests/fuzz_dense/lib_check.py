#!/usr/bin/python3
"""lib_check.py: gen.py's models as `mlc build --emit lib` libraries.

    lib_check.py MLC CC [--seeds N] [--first S]

For each seed whose inputs have constant per-sample sizes (MLPs, sequence
models with a constant T), the model is built as a library (libfz.a,
fz.h) and a driver written from the header's prototypes is linked with it.
At 1, 2 and 3 threads the driver creates an instance (same seed), runs
train_step 3 times on one batch of the recipe's size (times accumulate's
micro-batches), then eval on it and predict at the recipe's batch, and predict on each sample alone (batch 1, twice: the first
call makes the small-batch weight copies, the second reads them, on the
instance's held team at 2-3 threads). Each sample's batch-1 outputs must be
the bits of its row in the batch's; the losses and outputs must hash the
same at every thread count. Exit 1 on any failure.
"""
import math
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen  # noqa: E402

DRIVER = r'''
#include "fz.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t h = 1469598103934665603ull;
static void mix(const void *p, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
}
static uint64_t rng = 88172645463325252ull;
static double urand(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (double)(rng >> 11) * 0x1p-53;
}

int main(int argc, char **argv) {
  int threads = atoi(argv[1]);
  int64_t B = atoll(argv[2]), TB = B * atoll(argv[3]), no = MLC_FZ_NUM_OUT; // TB: accumulate's micro-batches
@DECLS@
  mlc_fz_options o = mlc_fz_default_options();
  o.seed = 7, o.threads = threads, o.steps_per_epoch = 10, o.epochs = 2;
  mlc_fz *m = mlc_fz_create(&o);
  if (!m) return printf("create: %s\n", mlc_fz_error(NULL)), 1;
  float loss, *out = malloc(sizeof(float) * (size_t)(TB * no)), *one = malloc(sizeof(float) * (size_t)no);
  for (int s = 0; s < 3; s++) {
    if (mlc_fz_train_step(m, TB, @TRAIN_ARGS@, &loss)) return printf("train_step: %s\n", mlc_fz_error(m)), 1;
    mix(&loss, sizeof loss);
  }
  if (mlc_fz_eval(m, TB, @TRAIN_ARGS@, &loss, out)) return printf("eval: %s\n", mlc_fz_error(m)), 1;
  mix(&loss, sizeof loss), mix(out, sizeof(float) * (size_t)(TB * no));
  if (mlc_fz_predict(m, B, @PRED_ARGS@, out)) return printf("predict: %s\n", mlc_fz_error(m)), 1;
  mix(out, sizeof(float) * (size_t)(B * no));
  for (int pass = 0; pass < 3; pass++) {
    if (pass == 2) { // the weights change: the small-batch copies must follow
      if (mlc_fz_train_step(m, TB, @TRAIN_ARGS@, &loss)) return printf("train_step: %s\n", mlc_fz_error(m)), 1;
      if (mlc_fz_predict(m, B, @PRED_ARGS@, out)) return printf("predict: %s\n", mlc_fz_error(m)), 1;
      mix(&loss, sizeof loss), mix(out, sizeof(float) * (size_t)(B * no));
    }
    for (int64_t r = 0; r < B; r++) {
      if (mlc_fz_predict(m, 1, @ROW_ARGS@, one)) return printf("predict batch 1: %s\n", mlc_fz_error(m)), 1;
      for (int64_t j = 0; j < no; j++)
        if (memcmp(&one[j], &out[r * no + j], sizeof(float)))
          return printf("FAIL: %d threads: sample %lld output %lld: batch 1 %.9g, batch %lld %.9g (call %d)\n",
                        threads, (long long)r, (long long)j, one[j], (long long)B, out[r * no + j], pass + 1), 1;
    }
  }
  float *three = malloc(sizeof(float) * (size_t)(3 * no)); // batches of 3 (the small-M path's rows)
  for (int64_t r = 0; r < B; r += 3) {
    int64_t n = B - r < 3 ? B - r : 3;
    if (mlc_fz_predict(m, n, @ROW_ARGS@, three)) return printf("predict batch %lld: %s\n", (long long)n, mlc_fz_error(m)), 1;
    for (int64_t j = 0; j < n * no; j++)
      if (memcmp(&three[j], &out[r * no + j], sizeof(float)))
        return printf("FAIL: %d threads: samples %lld.. output %lld: batch %lld %.9g, batch %lld %.9g\n", threads,
                      (long long)r, (long long)j, (long long)n, three[j], (long long)B, out[r * no + j]), 1;
  }
  printf("hash %016llx\n", (unsigned long long)h);
  mlc_fz_destroy(m);
  return 0;
}
'''

def driver(header, accum):
    ins = re.findall(r"^//   (\w+)\s+(float|int32_t|int64_t)\[([\d, ]*)\](?:\s+\(([^)]*)\))?(?:\s+\(([^)]*)\))?", header, re.M)
    pred = re.search(r"int mlc_fz_predict\(mlc_fz \*m, int64_t batch, (.*), float \*out\);", header).group(1)
    pnames = re.findall(r"\*in_(\w+)", pred)
    decls, names = [], []
    for name, ct, size, what, rng in ins:
        size = str(math.prod(int(d) for d in size.split(",") if d.strip()))  # float[3, 63]; int32_t[]: 1
        lim = re.search(r"(\d+)\.\.(\d+)", (what or "") + " " + (rng or ""))
        fill = "urand() * 2 - 1" if ct == "float" else "(%s)(urand() * %d)" % (ct, int(lim.group(2)) + 1)
        n = "%s * B * %d" % (size, accum)
        decls.append("  %s *in_%s = malloc(sizeof(%s) * (size_t)(%s));" % (ct, name, ct, n))
        decls.append("  for (int64_t e = 0; e < %s; e++) in_%s[e] = %s;" % (n, name, fill))
        names.append((name, size))
    sizes = dict(names)
    return (DRIVER.replace("@DECLS@", "\n".join(decls))
            .replace("@TRAIN_ARGS@", ", ".join("in_" + n for n, _ in names))
            .replace("@PRED_ARGS@", ", ".join("in_" + n for n in pnames))
            .replace("@ROW_ARGS@", ", ".join("in_%s + r * %s" % (n, sizes[n]) for n in pnames)))


def check(mlc, cc, seed, tmp):
    text = gen.generate(seed)
    if "--seq" in text.split("\n", 1)[0]:
        return None
    batch = int(re.search(r"--batch (\d+)", text).group(1))
    accum = int(re.search(r"accumulate (\d+)", text).group(1)) if "accumulate" in text else 1
    path = os.path.join(tmp, "m.model")
    with open(path, "w") as f:
        f.write(text)
    lib = os.path.join(tmp, "libfz.a")
    p = subprocess.run([mlc, "build", path, "--emit", "lib", "-o", lib], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    if p.returncode:
        return "build: " + p.stdout.decode(errors="replace")[-1500:]
    with open(os.path.join(tmp, "fz.h")) as f:
        src = driver(f.read(), accum)
    with open(os.path.join(tmp, "d.c"), "w") as f:
        f.write(src)
    exe = os.path.join(tmp, "d")
    p = subprocess.run([cc, "-O1", "-I", tmp, os.path.join(tmp, "d.c"), lib, "-o", exe, "-lz", "-lcjson", "-lm",
                        "-lpthread"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode:
        return "cc: " + p.stdout.decode(errors="replace")[-1500:]
    hashes = []
    for t in (1, 2, 3):
        p = subprocess.run([exe, str(t), str(batch), str(accum)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        out = p.stdout.decode(errors="replace").strip()
        if p.returncode or not out.startswith("hash "):
            return "%d threads: rc %d: %s" % (t, p.returncode, out[-1500:])
        hashes.append(out)
    if len(set(hashes)) != 1:
        return "losses and outputs differ across 1, 2, 3 threads: " + ", ".join(hashes)
    return ""


def main():
    argv = sys.argv[1:]
    mlc, cc, seeds, first = argv[0], argv[1], 20, 0
    if "--seeds" in argv:
        seeds = int(argv[argv.index("--seeds") + 1])
    if "--first" in argv:
        first = int(argv[argv.index("--first") + 1])
    bad = done = 0
    with tempfile.TemporaryDirectory() as tmp:
        for s in range(first, first + seeds):
            why = check(mlc, cc, s, tmp)
            if why is None:
                continue
            done += 1
            print("[%s] gen.py %d%s" % ("FAIL" if why else "PASS", s, ": " + why if why else ""), flush=True)
            bad += bool(why)
    print("%d libraries checked, %d failed" % (done, bad))
    return 1 if bad or not done else 0


if __name__ == "__main__":
    sys.exit(main())
