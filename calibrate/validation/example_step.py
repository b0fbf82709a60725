"""An example training step for `pipeplan_probe.py --step` (copy it and put your own model in).

    python3 calibrate/validation/pipeplan_probe.py --step calibrate/validation/example_step.py:resnet50_step \
        --steps 30 --out step_fragment.json
    python3 calibrate/validation/pipeplan_probe.py --step calibrate/validation/example_step.py:resnet50_step \
        --dataset calibrate/validation/example_step.py:tensor_dataset --num-workers 8 --memory-map \
        --samples 50 --batches 5 --no-worker --out step_fragment.json

resnet50_step(batch_size) returns a function of no arguments that runs one training step of torchvision's
ResNet-50 (bf16 autocast, channels_last, SGD with momentum: the validation harness's ResNet-50 step) on a
batch of 224x224 images already on the GPU, and returns the loss. The batch stays on the GPU: the probe times
the step alone, not the input pipeline.
"""
from __future__ import annotations


def resnet50_step(batch_size: int = 64):
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device: this example step needs a GPU")
    step = train_step("resnet50", "cuda", batch_size)
    x = torch.randn(batch_size, 3, 224, 224, device="cuda").contiguous(memory_format=torch.channels_last)
    return lambda: step(x)


def matmul_step(target_ms: float = 5.0):
    """A light step: back-to-back bf16 GEMMs of 4096 x 4096 for about `target_ms` of GPU time, a few launches of
    host work (the validation harness's mm:N steps). Beside ResNet-50's Python-heavy step it shows what a loop that
    barely needs the interpreter or the memory map reads under `--memory-map` (docs/validation-runs.md, run 30)."""
    import time
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device: this example step needs a GPU")
    g = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(4096, 4096, generator=g).to("cuda", torch.bfloat16)
    b = torch.randn(4096, 4096, generator=g).to("cuda", torch.bfloat16)
    c = torch.empty(4096, 4096, device="cuda", dtype=torch.bfloat16)
    torch.mm(a, b, out=c)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(20):
        torch.mm(a, b, out=c)
    torch.cuda.synchronize()
    k = max(1, round(target_ms / 1e3 / ((time.perf_counter() - t0) / 20)))

    def step():
        for _ in range(k):
            torch.mm(a, b, out=c)
        return c[0, 0].float()
    return step


def decoder_shape_step(layers: int = 4):
    """A step on a batch of any shape, for `pipeplan_probe.py --shape-step` (copy it and put your own model in): the
    validation harness's decoder (harness.SequenceStep: embedding, `layers` blocks of causal
    scaled_dot_product_attention and an MLP, bf16 autocast, SGD) on random token ids. Returns a function of (rows,
    length) that runs one training step on a batch of that shape and returns the loss.

        python3 calibrate/validation/pipeplan_probe.py --shape-step \
            calibrate/validation/example_step.py:decoder_shape_step --batch-size 16 --out shape_fragment.json
    """
    import os
    import sys
    import types
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device: this example step needs a GPU")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from harness import SequenceStep
    model = SequenceStep(types.SimpleNamespace(torch=torch, cpu=False, device=torch.device("cuda")), layers)

    def step(rows: int, length: int):
        return model(torch.randint(2, SequenceStep.VOCAB, (rows, length), device="cuda"))
    return step


def tensor_dataset(n: int = 512):
    """n float32 samples of 3x224x224 (602 kB each, the validation's tensor_f32 kind) in memory: a DataLoader source
    for `pipeplan_probe.py --memory-map` beside resnet50_step, as the harness's pin-parts probe loads its cached
    samples (docs/validation-runs.md, run 28, finding 1)."""
    import torch
    g = torch.Generator().manual_seed(0)
    return [torch.randn(3, 224, 224, generator=g) for _ in range(n)]


def tensor_label_dataset(n: int = 512):
    """tensor_dataset's samples as (tensor, label) pairs, the harness's tensor_f32 kind's structure (its Dataset
    returns `(torch.from_numpy(np.load(path)), i % 1000)`): run 29 (docs/validation-runs.md, finding 1) found the
    harness's loop faulting 63 pages a step beside pin_memory() and this helper's loop beside bare tensors 1; the
    pairs tell whether the samples' structure moves that."""
    return [(x, i % 1000) for i, x in enumerate(tensor_dataset(n))]


def train_step(model_name: str, device: str, batch_size: int):
    """One training step of a torchvision model as a function of its batch x (already on `device`): bf16 autocast,
    channels_last, SGD with momentum; returns the loss. resnet50_step runs it on a fixed batch; sync_check.py on
    batches from a DataLoader."""
    import torch
    import torchvision
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    model = getattr(torchvision.models, model_name)(num_classes=1000).to(device)
    model = model.to(memory_format=torch.channels_last).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    y = torch.randint(0, 1000, (batch_size,), device=device)

    def step(x):
        with torch.autocast(device_type="cuda" if device == "cuda" else "cpu", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x).float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.detach()
    return step
