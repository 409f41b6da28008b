#!/usr/bin/env python3
"""check_train.py — checks the metrics of e2e training runs (tests/e2e/run.sh).

Usage: check_train.py MIN_TEST_ACC A.jsonl [B.jsonl]

A.jsonl: the loss of the last logged step is below the first one's, and the
final epoch's test accuracy is at least MIN_TEST_ACC. With B.jsonl (the same
run again, same seed, another thread count): every logged step has the same
loss, gradient norm and learning rate, bit for bit as printed.
"""
import json
import sys


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    min_acc, a = float(sys.argv[1]), load(sys.argv[2])
    steps = [r for r in a if r["type"] == "step"]
    epochs = [r for r in a if r["type"] == "epoch"]
    ok = True
    if len(steps) < 2 or not epochs:
        print("[FAIL] too few logged steps or no epoch record")
        return 1
    first, last = steps[0]["loss"], steps[-1]["loss"]
    acc = epochs[-1]["test_accuracy"]
    print(f"loss {first:.4f} -> {last:.4f}, test accuracy {acc:.4f} (need >= {min_acc})")
    if not last < first:
        print("[FAIL] the loss did not fall")
        ok = False
    if acc is None or acc < min_acc:
        print("[FAIL] test accuracy too low")
        ok = False
    if len(sys.argv) > 3:
        b = [r for r in load(sys.argv[3]) if r["type"] == "step"]
        key = lambda r: (r["step"], r["loss"], r["grad_norm"], r["lr"])
        if [key(r) for r in steps] != [key(r) for r in b]:
            print("[FAIL] two runs with the same seed logged different losses")
            ok = False
        else:
            print(f"{len(steps)} logged steps identical across runs")
    print("[PASS]" if ok else "[FAIL]")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
