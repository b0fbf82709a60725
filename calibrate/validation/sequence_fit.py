"""The sequence step's GPU time as a function of its batch's shape, fitted to the harness's timings at fixed shapes
(comp_sequence_step_shapes): shared by the harness (which logs the fit) and convert (which refits the recorded points,
so a call measured before a change of the fit's form gets the new form too). Pure, standard library only."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence


def _solve3(m, v):
    """Pure: the solution of a 3x3 linear system (Cramer's rule); None when singular."""
    def det(a):
        return (a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0])
                + a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]))
    d = det(m)
    if abs(d) < 1e-300:
        return None
    out = []
    for j in range(3):
        mj = [[v[i] if c == j else m[i][c] for c in range(3)] for i in range(3)]
        out.append(det(mj) / d)
    return out


def fit_sequence_step(points):
    """Pure: step time = fixed + per_token x rows x length + per_token_squared x rows x length^2, fitted to
    points [{"rows", "tokens", "step_s"}] by least squares on relative errors (each point weighted 1 / step^2, so a
    4 ms step counts as much as a 130 ms one). A term that comes out negative is dropped (0) and the rest refitted.
    Returns {"fixed_s", "per_token_s", "per_token_squared_s", "max_rel_residual", "n"}; None with fewer than three
    points."""
    pts = [(float(q["rows"]), float(q["tokens"]), float(q["step_s"])) for q in points if q.get("step_s")]
    if len(pts) < 3:
        return None
    rows = [(1.0, b * l, b * l * l, y) for b, l, y in pts]
    scale = [1.0, 1.0 / max(r[1] for r in rows), 1.0 / max(r[2] for r in rows)]   # conditioning
    keep = [True, True, True]
    for _ in range(3):
        idx = [j for j in range(3) if keep[j]]
        m = [[0.0] * 3 for _ in range(3)]
        v = [0.0] * 3
        for r in rows:
            w = 1.0 / (r[3] * r[3])
            x = [r[j] * scale[j] for j in range(3)]
            for i in range(3):
                v[i] += w * x[i] * r[3] if keep[i] else 0.0
                for j in range(3):
                    m[i][j] += w * x[i] * x[j] if keep[i] and keep[j] else 0.0
        for j in range(3):
            if not keep[j]:
                m[j][j], v[j] = 1.0, 0.0
        sol = _solve3(m, v)
        if sol is None:
            return None
        coef = [sol[j] * scale[j] if keep[j] else 0.0 for j in range(3)]
        negative = [j for j in idx if coef[j] < 0]
        if not negative:
            break
        keep[min(negative, key=lambda j: coef[j] / scale[j])] = False
    resid = max(abs(coef[0] + coef[1] * r[1] + coef[2] * r[2] - r[3]) / r[3] for r in rows)
    return {"fixed_s": coef[0], "per_token_s": coef[1], "per_token_squared_s": coef[2],
            "max_rel_residual": resid, "n": len(rows)}


# A floor must cut the fit's worst relative residual by this much to be kept (a floor is a fourth parameter: it has to
# earn it, not shave noise).
FLOOR_MIN_GAIN = 0.02


def fit_sequence_step_with_floor(points: Sequence[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """Pure: step time = max(floor, fixed + per_token x positions + per_token_squared x rows x length^2). A small
    batch's step is latency-bound (its kernels too small to fill the GPU: run 63's seq:4 step took 8.9 ms at 4k
    positions, and 0.58 us a position more to 16k against 0.85-0.89 beyond, so one line through all nine missed by
    14%). Tries the floor as the mean of the k fastest points (k = 0, none, up to all but three), the rest fitted by
    fit_sequence_step, and keeps the k whose squared relative residuals over all points sum least, where it cuts the
    worst residual by FLOOR_MIN_GAIN or more. Returns fit_sequence_step's keys (max_rel_residual over all points)
    plus "floor_s" (0: none); None with fewer than three points."""
    pts = sorted((q for q in points if q.get("step_s")), key=lambda q: float(q["step_s"]))
    base = fit_sequence_step(pts)
    if base is None:
        return None

    def residuals(fit: Dict[str, Any], floor_s: float) -> List[float]:
        out = []
        for q in pts:
            b, l, y = float(q["rows"]), float(q["tokens"]), float(q["step_s"])
            lin = fit["fixed_s"] + fit["per_token_s"] * b * l + fit["per_token_squared_s"] * b * l * l
            out.append((max(floor_s, lin) - y) / y)
        return out

    best = dict(base, floor_s=0.0)
    best_sse = sum(r * r for r in residuals(base, 0.0))
    for k in range(1, len(pts) - 2):
        fit = fit_sequence_step(pts[k:])
        if fit is None:
            continue
        floor_s = sum(float(q["step_s"]) for q in pts[:k]) / k
        res = residuals(fit, floor_s)
        sse = sum(r * r for r in res)
        if sse < best_sse and max(abs(r) for r in res) <= base["max_rel_residual"] - FLOOR_MIN_GAIN:
            best_sse = sse
            best = dict(fit, floor_s=floor_s, max_rel_residual=max(abs(r) for r in res), n=len(pts))
    return best


def fitted_step_s(fit: Dict[str, Any], rows: float, tokens: float) -> float:
    """Pure: a fit's GPU step time for a batch of `rows` x `tokens` (its floor where it has one)."""
    lin = (float(fit.get("fixed_s") or 0.0) + float(fit["per_token_s"]) * rows * tokens
           + float(fit.get("per_token_squared_s") or 0.0) * rows * tokens * tokens)
    return max(float(fit.get("floor_s") or 0.0), lin)


def component_fit(shapes: Dict[str, Any]) -> Dict[str, Any]:
    """Pure: the step's fit from a harness sequence_step_shapes component: refitted from its timed points where it
    recorded them (fit_sequence_step_with_floor: the sixty-third session's form, with a latency floor), else the
    harness's own fit; {} with neither."""
    return (fit_sequence_step_with_floor(shapes["points"]) if shapes.get("points") else None) or shapes.get("fit") or {}
