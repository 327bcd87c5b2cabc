#!/usr/bin/python3
"""Training-step throughput of the CIFAR-10 model: PyTorch against `clgraph bench train-step`.

The same model as tools/cifar10_model.c (conv 5x5 SAME 3->64, relu, max pool 3x3 stride 2
SAME, LRN, conv 5x5 SAME 64->64, relu, LRN, max pool, fully connected 2304->384->192->10,
cross entropy + 0.004 * L2 of local3/local4 weights, SGD lr 0.1) at batch 128 on the CPU,
PyTorch with 2 threads and OMP_WAIT_POLICY=PASSIVE. The two sides alternate: each repeat times
one block of PyTorch steps, then runs one `clgraph bench train-step --json --repeats N`
subprocess. Reported: each side's median seconds per step and images/s, and the ratio
clgraph/PyTorch of images/s (the medians'; also the median of the per-repeat ratios).

Needs Debian's python3-torch (run it with /usr/bin/python3); nothing in the build needs it.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

# Read by libgomp when torch loads it: without PASSIVE, idle OpenMP threads spin and the
# clgraph subprocess (and PyTorch itself, 4x) runs slower.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class Cifar10(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 64, 5, padding=2)
        self.conv2 = torch.nn.Conv2d(64, 64, 5, padding=2)
        self.local3 = torch.nn.Linear(6 * 6 * 64, 384)
        self.local4 = torch.nn.Linear(384, 192)
        self.softmax_linear = torch.nn.Linear(192, 10)
        # TensorFlow's LRN: x / (bias + alpha * sum over [c-4, c+4] of x^2)^beta, alpha =
        # 0.001/9. PyTorch's LocalResponseNorm divides its alpha by size, so pass alpha * 9.
        self.norm = torch.nn.LocalResponseNorm(9, alpha=0.001 / 9.0 * 9, beta=0.75, k=1.0)
        for w, sd in ((self.conv1.weight, 5e-2), (self.conv2.weight, 5e-2),
                      (self.local3.weight, 0.04), (self.local4.weight, 0.04),
                      (self.softmax_linear.weight, 1 / 192.0)):
            torch.nn.init.trunc_normal_(w, std=sd, a=-2 * sd, b=2 * sd)
        for b, v in ((self.conv1.bias, 0.0), (self.conv2.bias, 0.1), (self.local3.bias, 0.1),
                     (self.local4.bias, 0.1), (self.softmax_linear.bias, 0.0)):
            torch.nn.init.constant_(b, v)

    @staticmethod
    def pool(x):
        # TensorFlow's 3x3 stride-2 SAME on an even side pads one row and column after
        # (24 -> 12, 12 -> 6), never before.
        return F.max_pool2d(F.pad(x, (0, 1, 0, 1), value=float("-inf")), 3, 2)

    def forward(self, x):
        x = self.norm(self.pool(F.relu(self.conv1(x))))
        x = self.pool(self.norm(F.relu(self.conv2(x))))
        x = F.relu(self.local3(x.flatten(1)))
        x = F.relu(self.local4(x))
        return self.softmax_linear(x)

    def loss(self, logits, labels):
        decay = 0.004 * 0.5 * (self.local3.weight.square().sum() +
                               self.local4.weight.square().sum())
        return F.cross_entropy(logits, labels) + decay


def torch_block(model, opt, images, labels, steps):
    """Seconds per step of `steps` consecutive training steps (their median)."""
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model.loss(model(images), labels)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), float(loss)


def clgraph_block(path, batch, steps):
    out = subprocess.run([path, "bench", "train-step", "--json", "--repeats", str(steps),
                          "--batch", str(batch)], check=True, capture_output=True, text=True)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("{")][-1]
    return json.loads(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clgraph", default="build/release/clgraph", help="the clgraph binary")
    ap.add_argument("--repeats", type=int, default=7, help="alternating rounds (default 7)")
    ap.add_argument("--steps", type=int, default=5, help="timed steps per block (default 5)")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2, help="PyTorch threads (default 2)")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of text")
    a = ap.parse_args()
    if not os.access(a.clgraph, os.X_OK):
        sys.exit(f"compare_pytorch.py: {a.clgraph} is not an executable (see --clgraph)")

    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    model = Cifar10()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    images = torch.rand(a.batch, 3, 24, 24) - 0.5
    labels = torch.randint(0, 10, (a.batch,))
    torch_block(model, opt, images, labels, 2)  # warm-up: oneDNN primitives, allocator

    rows = []
    for r in range(a.repeats):
        pt, loss = torch_block(model, opt, images, labels, a.steps)
        cg = clgraph_block(a.clgraph, a.batch, a.steps)
        cs = cg["ms_per_step"] / 1e3
        rows.append((pt, cs))
        if not a.json:
            print(f"repeat {r + 1}/{a.repeats}: pytorch {pt * 1e3:7.1f} ms/step, "
                  f"clgraph {cs * 1e3:7.1f} ms/step (loss {loss:.3f})", flush=True)
    pt_med = statistics.median(p for p, _ in rows)
    cg_med = statistics.median(c for _, c in rows)
    ratio = pt_med / cg_med  # images/s of clgraph over PyTorch's
    pair = statistics.median(p / c for p, c in rows)
    result = {
        "batch": a.batch, "repeats": a.repeats, "steps_per_block": a.steps,
        "torch_version": torch.__version__, "torch_threads": torch.get_num_threads(),
        "pytorch_sec_per_batch": round(pt_med, 4),
        "pytorch_images_per_sec": round(a.batch / pt_med, 1),
        "clgraph_sec_per_batch": round(cg_med, 4),
        "clgraph_images_per_sec": round(a.batch / cg_med, 1),
        "ratio": round(ratio, 3), "ratio_median_of_pairs": round(pair, 3),
    }
    if a.json:
        print(json.dumps(result))
    else:
        print(f"PyTorch {result['torch_version']} ({result['torch_threads']} threads): "
              f"{pt_med:.3f} s/batch, {a.batch / pt_med:.0f} images/s")
        print(f"clgraph ({a.clgraph}): {cg_med:.3f} s/batch, {a.batch / cg_med:.0f} images/s")
        print(f"clgraph / PyTorch images/s: {ratio:.2f}x (median of per-repeat ratios {pair:.2f}x)")


if __name__ == "__main__":
    main()
