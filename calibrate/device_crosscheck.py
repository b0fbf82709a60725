#!/usr/bin/env python3
"""Independent checks of pipeplan-calibrate's figures on the same machine, by other tools:
torch's copy rates (cudaMemcpyAsync through PyTorch, CUDA events, best and median of 10),
numpy's memcpy, PIL's JPEG decode of a photo-like 500x375 image at quality 90.
Usage: python3 calibrate/device_crosscheck.py [OUT.json]. Prints one JSON object."""
import io, json, sys, time

import numpy as np

result = {}

# numpy memcpy, one thread, 256 MiB, touched first
src = np.ones(256 << 20, dtype=np.uint8)
dst = np.zeros_like(src)
np.copyto(dst, src)
times = []
for _ in range(7):
    t0 = time.perf_counter(); np.copyto(dst, src); times.append(time.perf_counter() - t0)
result["numpy_memcpy_bytes_per_s"] = src.nbytes / sorted(times)[len(times) // 2]

# PIL decode (per process, one thread)
try:
    from PIL import Image
    h, w = 375, 500
    y, x = np.mgrid[0:h, 0:w] / np.array([h, w]).reshape(2, 1, 1)
    rng = np.random.default_rng(1)
    img = np.stack([128 + 70 * np.sin(3 * x + 2 * c) * np.cos(2.5 * y - c)
                    + 25 * np.sin(40 * x * (1 + c) + 25 * y) * np.sin(30 * y * (2 - y)) for c in range(3)], -1)
    img = np.clip(img + rng.integers(-12, 13, img.shape), 0, 255).astype(np.uint8)
    buf = io.BytesIO(); Image.fromarray(img).save(buf, "JPEG", quality=90)
    data = buf.getvalue()
    Image.open(io.BytesIO(data)).convert("RGB")
    per = []
    for _ in range(300):
        t0 = time.perf_counter(); Image.open(io.BytesIO(data)).convert("RGB"); per.append(time.perf_counter() - t0)
    per.sort()
    result["pil_decode_500x375"] = {"bytes": len(data), "s_per_image": per[len(per) // 2]}
except Exception as e:  # report, never fail the whole check
    result["pil_decode_500x375"] = {"error": repr(e)}

# torch copies
try:
    import torch
    if torch.cuda.is_available():
        n = 256 << 20
        dev = torch.empty(n, dtype=torch.uint8, device="cuda")
        def rate(host, h2d):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            rates = []
            for i in range(11):
                s.record()
                if h2d: dev.copy_(host, non_blocking=True)
                else: host.copy_(dev, non_blocking=True)
                e.record(); e.synchronize()
                if i: rates.append(n / (s.elapsed_time(e) * 1e-3))
            rates.sort()
            return {"best": rates[-1], "median": rates[len(rates) // 2]}
        pinned = torch.ones(n, dtype=torch.uint8).pin_memory()
        pageable = torch.ones(n, dtype=torch.uint8)
        result["torch_256MiB"] = {"h2d_pinned": rate(pinned, True), "d2h_pinned": rate(pinned, False),
                                  "h2d_pageable": rate(pageable, True), "d2h_pageable": rate(pageable, False)}
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
        for _ in range(3): a @ b
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(10): a @ b
        e.record(); e.synchronize()
        result["torch_bf16_gemm_flops_per_s"] = 10 * 2 * 8192 ** 3 / (s.elapsed_time(e) * 1e-3)
except Exception as e:
    result["torch"] = {"error": repr(e)}

text = json.dumps(result, indent=1)
print(text)
if len(sys.argv) > 1:
    open(sys.argv[1], "w").write(text + "\n")
