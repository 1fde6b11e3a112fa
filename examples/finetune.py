"""Fine-tune a Hugging Face model without gradients: ZoVH as a torch optimizer.

An OPT model built from a config (no download) is pre-trained briefly with backpropagation on
short reviews followed by "it was great" or "it was terrible" (the first adjective's word),
then fine-tuned with `zovh_opt.torch.ZoVH` on the real task, the majority of the three
adjectives, with forward passes only: each step calls the closure three times, perturbing
the weights in place, and needs no more memory than inference.

Run:  python examples/finetune.py            (about 50 s)
      python examples/finetune.py --quick    (about 15 s: mostly the pre-training)
Needs PyTorch and transformers (pip install "zovh-opt[finetune]"); without them it says so and
exits with status 0.
"""

import argparse
import importlib.util

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--quick", action="store_true", help="a smaller model and fewer steps")
args = parser.parse_args()
missing = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
if missing:
    print(f"This example needs {' and '.join(missing)}: pip install 'zovh-opt[finetune]'")
    raise SystemExit(0)

import torch  # noqa: E402
from transformers import OPTForCausalLM  # noqa: E402

from zovh_opt.benchmarks import finetune as bench  # noqa: E402 (the generated language)
from zovh_opt.torch import ZoVH  # noqa: E402

s = bench.settings(quick=False)
s.update(pretrain_steps=1200 if args.quick else 2000)
steps = 100 if args.quick else 1000

model = OPTForCausalLM(bench.model_config(*s["model"])).eval()
model.load_state_dict(bench.pretrain(s))
train, valid = bench.examples("sentiment", 1000, 1), bench.examples("sentiment", 500, 2)
before = bench.classification_loss(model, valid, "sentiment")

# the loop: a closure that returns the loss on this step's batch, and opt.step(closure)
opt = ZoVH(model.parameters(), lr=1e-4, seed=0)  # the paper's mu, K, N and lambda
batches = torch.Generator().manual_seed(0)
for _ in range(steps):
    batch = torch.randint(1000, (16,), generator=batches)
    inputs = tuple(t[batch] for t in train)
    loss = opt.step(lambda inputs=inputs: bench.classification_loss(model, inputs, "sentiment")[0])

after = bench.classification_loss(model, valid, "sentiment")
passes = steps * opt.points_per_step
print(
    f"validation loss {float(before[0]):.3f} -> {float(after[0]):.3f}, accuracy "
    f"{before[1]:.3f} -> {after[1]:.3f} after {passes} forward passes"
)
if not float(after[0]) < float(before[0]):
    raise SystemExit("the validation loss did not fall")
