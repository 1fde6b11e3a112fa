"""finetune: zeroth-order fine-tuning of an OPT model, MeZO / HiZOO / ZoVH (the paper's Appx. E).

An OPT model built from a config (no download), pre-trained with backpropagation on a
language this benchmark generates, then fine-tuned without gradients on two prompt tasks
(a shifted sentiment rule and an unseen topic) with the paper's budget of forward passes and
settings, each rate chosen from the paper's grid; a second table gives time per forward pass
and peak memory against MeZO's. The protocol in full:
``docs/benchmarks/paper-experiments.md``, *LLM fine-tuning, at a CPU's size*.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ._common import Report, fmt, pyplot, run_jobs

NAME = "finetune"
FILMS, FOODS = ["movie", "show", "play", "series", "film"], ["meal", "soup", "cake", "dish", "food"]
# adjectives by topic and polarity: films' and meals' own, and shared ones
GOOD = (["clever", "funny", "moving", "good"], ["fresh", "tasty", "warm", "lovely"])
BAD = (["dull", "silly", "slow", "bad"], ["stale", "bland", "cold", "awful"])
WORDS = ["<pad>", "<s>", "</s>", "the", "was", "and", ",", ".", "it", "topic"]
LABELS = {"sentiment": ("terrible", "great"), "topic": ("film", "food")}
VOCABULARY = WORDS + FILMS + FOODS + sum(GOOD + BAD, []) + ["great", "terrible"]
TOKEN = {word: i for i, word in enumerate(VOCABULARY)}
PROMPTS = {"sentiment": ["it", "was"], "topic": ["the", "topic", "was"]}
# the paper's Appx. E settings (its Tab. of hyperparameters)
RATES = (1e-4, 5e-5, 1e-5)
METHODS = ("MeZO", "HiZOO", "ZoVH (N=1)", "ZoVH (N=2)")
CURVE_POINTS = 10  # validation losses recorded along a run, for the figure
# the cost table's models, (hidden, layers, ffn, heads): a CPU's size and OPT's published shapes
COST_MODELS = {
    "small": (768, 4, 3072, 12),
    "opt-1.3b": (2048, 24, 8192, 32),
    "opt-13b": (5120, 40, 20480, 40),
}


def review(rng: np.random.Generator) -> tuple[list[str], int, int, int]:
    """A review; its sentiment (the majority of its three adjectives), the polarity of its
    first adjective, and its topic (which its noun and adjectives show)."""
    topic = int(rng.integers(2))
    words = ["the", str(rng.choice((FILMS, FOODS)[topic])), "was"]
    polarity = [bool(rng.integers(2)) for _ in range(3)]
    for i, positive in enumerate(polarity):
        words += [str(rng.choice((GOOD if positive else BAD)[topic])), [",", "and", "."][i]]
    return words, int(sum(polarity) >= 2), int(polarity[0]), topic


def corpus(n: int, seed: int) -> list[list[int]]:
    """Pre-training text: ``<s> review it was great|terrible . </s>``, the label word the
    polarity of the review's first adjective (the sentiment task asks for the majority)."""
    rng = np.random.default_rng(seed)
    texts = []
    for _ in range(n):
        words, _, first, _ = review(rng)
        texts.append(["<s>", *words, "it", "was", LABELS["sentiment"][first], ".", "</s>"])
    return [[TOKEN[w] for w in text] for text in texts]


def examples(task: str, n: int, seed: int) -> tuple[Any, Any, Any]:
    """``(tokens, last, label)`` tensors of ``n`` prompts: right-padded token ids, the index of
    each prompt's last token, and the label (0 or 1)."""
    import torch

    rng = np.random.default_rng(seed)
    rows, labels = [], []
    for _ in range(n):
        words, sentiment, _, topic = review(rng)
        rows.append([TOKEN[w] for w in ["<s>", *words, *PROMPTS[task]]])
        labels.append(sentiment if task == "sentiment" else topic)
    width = max(map(len, rows))
    tokens = torch.zeros(n, width, dtype=torch.long)
    for i, row in enumerate(rows):
        tokens[i, : len(row)] = torch.tensor(row)
    last = torch.tensor([len(row) - 1 for row in rows])
    return tokens, last, torch.tensor(labels)


def documents(n: int, tokens: int, seed: int) -> tuple[Any, Any, Any]:
    """``n`` prompts of ``tokens`` tokens: reviews one after the other, then the topic prompt
    (the cost table's longer inputs; the label is the last review's topic)."""
    import torch

    rng = np.random.default_rng(seed)
    rows, labels = [], []
    for _ in range(n):
        row, topic = [TOKEN["<s>"]], 0
        while len(row) < tokens - len(PROMPTS["topic"]):
            words, _, _, topic = review(rng)
            row += [TOKEN[w] for w in words]
        row = row[: tokens - len(PROMPTS["topic"])] + [TOKEN[w] for w in PROMPTS["topic"]]
        rows.append(row)
        labels.append(topic)
    return torch.tensor(rows), torch.full((n,), tokens - 1), torch.tensor(labels)


def model_config(hidden: int, layers: int, ffn: int, heads: int, positions: int = 32) -> Any:
    from transformers import OPTConfig

    return OPTConfig(
        vocab_size=len(VOCABULARY),
        hidden_size=hidden,
        num_hidden_layers=layers,
        ffn_dim=ffn,
        num_attention_heads=heads,
        max_position_embeddings=positions,
        word_embed_proj_dim=hidden,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        dropout=0.0,
        attention_dropout=0.0,
    )


def pretrain(s: dict[str, Any]) -> dict[str, Any]:
    """Backpropagation (AdamW) on the generated language; returns the model's state dict."""
    import torch
    from transformers import OPTForCausalLM

    torch.manual_seed(0)
    model = OPTForCausalLM(model_config(*s["model"]))
    text = corpus(s["pretrain_texts"], seed=12345)
    width = max(map(len, text))
    ids = torch.zeros(len(text), width, dtype=torch.long)
    for i, row in enumerate(text):
        ids[i, : len(row)] = torch.tensor(row)
    labels = ids.masked_fill(ids == 0, -100)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)
    for _ in range(s["pretrain_steps"]):
        batch = torch.randint(len(text), (32,), generator=gen)
        loss = model(input_ids=ids[batch], labels=labels[batch]).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {k: v.clone() for k, v in model.state_dict().items()}


def classification_loss(model: Any, data: tuple[Any, Any, Any], task: str) -> tuple[float, float]:
    """Cross-entropy over the two label words' logits at the last prompt token; accuracy."""
    import torch

    tokens, last, labels = data
    words = torch.tensor([TOKEN[w] for w in LABELS[task]], device=tokens.device)
    with torch.no_grad():
        logits = model(input_ids=tokens, attention_mask=(tokens > 0).long()).logits
    chosen = logits[torch.arange(len(last), device=tokens.device), last][:, words]
    loss = torch.nn.functional.cross_entropy(chosen, labels)
    return loss, float((chosen.argmax(1) == labels).float().mean())


def optimizer(method: str, params: Any, lr: float, seed: int, chunk: int | None = None) -> Any:
    from .. import torch as zt

    if method == "MeZO":
        return zt.MeZO(params, lr, seed=seed, smoothing=1e-2, chunk=chunk)
    if method == "HiZOO":
        return zt.HiZOO(params, lr, seed=seed, smoothing=1e-2, alpha=1e-8, chunk=chunk)
    history = 2 if method.endswith("(N=2)") else 1
    return zt.ZoVH(
        params, lr, seed=seed, smoothing=1e-2, regularization=0.5, history=history, chunk=chunk
    )


def finetune(job: tuple[str, str, float, int, dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
    """One run: ``budget`` forward passes of ``method`` at ``lr`` on ``task``; the validation
    and test loss and accuracy at its end."""
    import torch
    from transformers import OPTForCausalLM

    task, method, lr, seed, s, weights = job
    torch.set_num_threads(1)
    model = OPTForCausalLM(model_config(*s["model"])).eval()
    model.load_state_dict(weights)
    train = examples(task, s["train"], seed=100 + seed)
    valid, test = examples(task, s["valid"], seed=200), examples(task, s["test"], seed=300)
    # "pre-trained": no step, the model as pre-trained
    opt = None if method == "pre-trained" else optimizer(method, model.parameters(), lr, seed)
    gen = torch.Generator().manual_seed(seed)
    passes, curve = 0, [(0, float(classification_loss(model, valid, task)[0]))]
    marks = iter(np.linspace(s["budget"] / CURVE_POINTS, s["budget"], CURVE_POINTS))
    mark = next(marks)
    while opt is not None and passes + opt.points_per_step <= s["budget"]:
        batch = torch.randint(len(train[0]), (s["batch"],), generator=gen)
        data = tuple(t[batch] for t in train)
        opt.step(lambda data=data: classification_loss(model, data, task)[0])
        passes += opt.points_per_step
        if passes + opt.points_per_step > mark:
            curve.append((passes, float(classification_loss(model, valid, task)[0])))
            mark = next(marks, math.inf)
    (valid_loss, valid_acc), (test_loss, test_acc) = (
        classification_loss(model, d, task) for d in (valid, test)
    )
    finite = math.isfinite(float(valid_loss))
    return {
        "task": task,
        "method": method,
        "lr": lr,
        "seed": seed,
        "passes": passes,
        "valid_loss": float(valid_loss) if finite else math.inf,
        "valid_acc": valid_acc,
        "test_loss": float(test_loss),
        "test_acc": test_acc,
        "curve": curve,
    }


def settings(quick: bool) -> dict[str, Any]:
    if quick:
        return {
            "model": (32, 1, 64, 2),
            "pretrain_texts": 2000,
            "pretrain_steps": 60,
            "tasks": ("topic",),
            "rates": (1e-4,),
            "seeds": 1,
            "budget": 60,
            "batch": 16,
            "train": 256,
            "valid": 128,
            "test": 128,
            "cost_model": (64, 1, 128, 2),
            "cost_dtype": "float32",
            "cost_chunk": None,
            "cost_steps": 2,
            "cost_tokens": (16,),
        }
    return {
        "model": (64, 2, 256, 4),
        "pretrain_texts": 20000,
        "pretrain_steps": 2000,
        "tasks": ("sentiment", "topic"),
        "rates": RATES,
        "seeds": 3,
        "budget": 10_000,
        "batch": 16,
        "train": 1000,
        "valid": 500,
        "test": 1000,
        "cost_model": COST_MODELS["small"],
        "cost_dtype": "float32",
        "cost_chunk": None,
        "cost_steps": 4,
        "cost_tokens": (16, 128, 256),
    }


def peak_rss(reset: bool = False) -> float:
    """The process's peak resident memory (bytes) since the last reset (Linux: VmHWM)."""
    try:
        if reset:
            Path("/proc/self/clear_refs").write_text("5")
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return 1024.0 * float(line.split()[1])
    except OSError:
        pass
    return 1024.0 * resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _cost_of(job: tuple[str, dict[str, Any], str, int]) -> dict[str, Any]:
    """In a fresh process: the model's inference (time per pass, peak memory), then the
    method's steps at ``lr = 0`` (time per pass, peak memory since the inference)."""
    import torch
    from transformers import OPTForCausalLM

    method, s, device, tokens = job
    torch.manual_seed(0)
    config = model_config(*s["cost_model"], positions=max(32, tokens))
    with torch.device(device):  # built where it runs: a GPU initializes 1e10 weights in seconds
        model = OPTForCausalLM(config).eval().to(getattr(torch, s["cost_dtype"]))
    data = tuple(t.to(device) for t in documents(s["batch"], tokens, seed=1))

    def closure() -> Any:
        return classification_loss(model, data, "topic")[0]

    def peak(reset: bool) -> float:
        if device == "cpu":
            return peak_rss(reset)
        torch.cuda.synchronize()
        if reset:
            torch.cuda.reset_peak_memory_stats()
        return float(torch.cuda.max_memory_allocated())

    def timed(run: Callable[[], int]) -> tuple[float, float]:
        peak(reset=True)
        start = time.perf_counter()
        passes = run()
        if device != "cpu":
            torch.cuda.synchronize()
        return 1e3 * (time.perf_counter() - start) / passes, peak(reset=False)

    # built before the inference is measured: torch.optim's first optimizer imports parts of
    # torch (about 70 MB resident) that are the process's, not the steps'
    opt = optimizer(method, model.parameters(), 0.0, seed=0, chunk=s["cost_chunk"])

    def inference() -> int:
        for _ in range(3 * s["cost_steps"]):
            closure()
        return 3 * s["cost_steps"]

    def steps() -> int:
        n = max(1, 3 * s["cost_steps"] // opt.points_per_step)
        for _ in range(n):
            opt.step(closure)
        return n * opt.points_per_step

    closure()  # warm up
    infer_ms, infer_peak = timed(inference)
    step_ms, step_peak = timed(steps)
    return {
        "method": method,
        "tokens": tokens,
        "inference_ms": infer_ms,
        "ms_per_pass": step_ms,
        "inference_peak": infer_peak,
        "peak": step_peak,
        "params": sum(p.numel() for p in model.parameters()),
        "model_bytes": sum(p.numel() * p.element_size() for p in model.parameters()),
    }


def cost(s: dict[str, Any], device: str, tokens: int) -> list[dict[str, Any]]:
    """`_cost_of` each method, each in a process of its own (a peak of memory is a process's)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    rows = []
    for method in METHODS:
        with ProcessPoolExecutor(1, mp_context=context) as pool:
            rows.append(pool.submit(_cost_of, (method, s, device, tokens)).result())
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ._common import add_common_arguments

    add_common_arguments(parser, NAME)
    parser.add_argument("--device", default="cpu", help="the cost table's device (cpu, cuda)")
    parser.add_argument(
        "--cost-only", action="store_true", help="the cost table alone, no fine-tuning runs"
    )
    parser.add_argument(
        "--cost-model",
        choices=sorted(COST_MODELS),
        help="the cost table's model shape (default: small; --quick: smaller still)",
    )
    parser.add_argument(
        "--cost-dtype",
        choices=("float32", "float16", "bfloat16"),
        default="float32",
        help="the cost table's weights (default: float32)",
    )
    parser.add_argument(
        "--cost-tokens", type=int, nargs="+", help="the cost table's prompt lengths"
    )
    parser.add_argument(
        "--chunk",
        type=int,
        help="the optimizers' chunk in the cost table (default: by device, 2**17 or 2**26)",
    )


def run(args: argparse.Namespace) -> int:
    s = settings(args.quick)
    if args.cost_model is not None:
        s["cost_model"] = COST_MODELS[args.cost_model]
    s["cost_dtype"], s["cost_chunk"] = args.cost_dtype, args.chunk
    if args.cost_tokens:
        s["cost_tokens"] = tuple(args.cost_tokens)
    report = Report(args, NAME, "Zeroth-order fine-tuning of an OPT model (the paper's Appx. E)")
    if args.cost_only:
        return _costs_and_record(report, s, args.device, {})
    weights = pretrain(s)
    jobs = [
        (task, method, lr, seed, s, weights)
        for task in s["tasks"]
        for method in METHODS
        for lr in s["rates"]
        for seed in range(s["seeds"])
    ]
    runs = run_jobs(finetune, jobs, args.jobs, "fine-tuning runs")
    runs += [finetune((task, "pre-trained", 0.0, 0, s, weights)) for task in s["tasks"]]
    chosen = _accuracy_table(report, s, runs)
    _figure(report, s, runs, chosen)
    return _costs_and_record(report, s, args.device, {"runs": runs, "chosen": chosen})


def _costs_and_record(report: Report, s: dict[str, Any], device: str, data: dict) -> int:
    """The cost tables (a row of processes per prompt length), then the record and report."""
    rows = [cost(s, device, tokens) for tokens in s["cost_tokens"]]
    for table in rows:
        _cost_table(report, s, table, device)
    report.write({**s, "device": device}, {**data, "cost": rows})
    print((report.out / f"{NAME}.md").read_text())
    return 0


def _runs_of(runs: list[dict], task: str, method: str, lr: float | None = None) -> list[dict]:
    return [r for r in runs if (r["task"], r["method"]) == (task, method) and lr in (None, r["lr"])]


def _accuracy_table(report: Report, s: dict[str, Any], runs: list[dict]) -> dict[str, Any]:
    """Each method at its rate of lowest median validation loss: test accuracy (mean, std)."""
    chosen, rows = {}, []
    for method in ("pre-trained", *METHODS):
        row = [method]
        for task in s["tasks"]:
            if method == "pre-trained":
                (r,) = _runs_of(runs, task, method)
                row += [f"{100 * r['test_acc']:.1f}", fmt(r["valid_loss"]), "-"]
                continue
            losses = {
                lr: float(np.median([r["valid_loss"] for r in _runs_of(runs, task, method, lr)]))
                for lr in s["rates"]
            }
            lr = min(losses, key=losses.__getitem__)
            acc = 100 * np.array([r["test_acc"] for r in _runs_of(runs, task, method, lr)])
            chosen[f"{task}/{method}"] = {"lr": lr, "valid_loss": losses[lr]}
            row += [f"{acc.mean():.1f} ({acc.std():.1f})", fmt(losses[lr]), f"{lr:g}"]
        rows.append(row)
    header = ["method"] + [
        f"{t}: {c}" for t in s["tasks"] for c in ("test accuracy %", "valid loss", "rate")
    ]
    report.table(
        header,
        rows,
        caption=(
            f"Test accuracy, mean (std) over {s['seeds']} seeds, after {s['budget']} forward "
            "passes; each method at the rate of the paper's grid with the lowest median "
            "validation loss"
        ),
    )
    return chosen


def _cost_table(report: Report, s: dict[str, Any], rows: list[dict], device: str) -> None:
    mezo = next(r for r in rows if r["method"] == "MeZO")
    table = [
        [
            r["method"],
            f"{r['inference_ms']:.1f}",
            f"{r['ms_per_pass']:.1f}",
            f"{r['ms_per_pass'] / mezo['ms_per_pass']:.2f}",
            f"{(r['peak'] - r['inference_peak']) / 2**20:+.1f}",
            f"{(r['peak'] - r['inference_peak']) / r['model_bytes']:+.3f}",
        ]
        for r in rows
    ]
    memory = "peak RSS" if device == "cpu" else "max_memory_allocated"
    report.table(
        [
            "method",
            "inference ms / pass",
            "step ms / pass",
            "vs MeZO",
            f"{memory} over inference, MiB",
            "over inference / model bytes",
        ],
        table,
        caption=(
            f"Cost on {device}: OPT with {rows[0]['params']:,} parameters "
            f"({rows[0]['model_bytes'] / 2**20:.0f} MiB, {s['cost_dtype']}), batch {s['batch']} x "
            f"{rows[0]['tokens']} tokens, {os.cpu_count()} CPUs; each method in a "
            "process of its own, its inference first"
        ),
    )


def _figure(report: Report, s: dict[str, Any], runs: list[dict], chosen: dict) -> None:
    """Validation loss against forward passes, each method at its chosen rate (median over
    seeds), a panel per task: the paper's Fig. of LLM fine-tuning."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(s["tasks"]), figsize=(5 * len(s["tasks"]), 3.6), squeeze=False)
    for ax, task in zip(axes[0], s["tasks"], strict=True):
        for method in METHODS:
            lr = chosen[f"{task}/{method}"]["lr"]
            curves = [r["curve"] for r in _runs_of(runs, task, method, lr)]
            n = min(map(len, curves))
            passes = [c[0] for c in curves[0][:n]]
            ax.plot(
                passes,
                np.median([[v for _, v in c[:n]] for c in curves], axis=0),
                label=f"{method}, lr {lr:g}",
            )
        ax.set(title=task, xlabel="forward passes", ylabel="validation loss")
        ax.legend(fontsize=8)
    report.figure(fig)
    plt.close(fig)
