"""The sequence validation's pure parts (harness: the step's fit, the token lengths, the family; convert: the scenario's
sequence section) against hand calculations, and the converted scenario run through pipeplan where it is built."""
import json
import math
import statistics
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import convert  # noqa: E402
from test_convert import load_harness, make_case  # noqa: E402

PIPEPLAN = os.path.join(HERE, "..", "..", "build", "cli", "pipeplan")


def simulate_doc(scenario, *extra):
    """pipeplan simulate on a scenario document (written to a temporary file), as convert.run_pipeplan reports it:
    {"result": the JSON report} or {"error": ...}."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s.json")
        with open(path, "w") as f:
            json.dump(scenario, f)
        return convert.run_pipeplan(PIPEPLAN, path, None, extra=extra)


def probe_main(argv):
    """pipeplan_probe.main on argv: (its exit code, what it wrote to stderr)."""
    import contextlib
    import io
    import pipeplan_probe as probe
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = probe.main(argv)
    return rc, err.getvalue()


def seq_case(kind="tokens", bs=32, fixed=0.002, per_token=3e-7, per_sq=2e-10, max_tokens=None):
    c = make_case("r1:00-sequence_step-tokens", "sequence_step", 1000.0, 0.03, 0.035, nw=4, bs=bs, kind=kind,
                  step="seq:4")
    c["components"]["tokens_per_sample"] = {"mean": 256.0, "cv": 0.6, "max": 2048.0, "n": 6000}
    if max_tokens:
        c["components"]["max_tokens"] = max_tokens
    c["components"]["sequence_step_shapes"] = {"fit": {"fixed_s": fixed, "per_token_s": per_token,
                                                       "per_token_squared_s": per_sq, "max_rel_residual": 0.01}}
    c["components"]["collate"]["batch_bytes"] = {"mean": bs * 800 * 8.0}
    return c


class SequenceStepFitTest(unittest.TestCase):
    def test_recovers_known_terms(self):
        h = load_harness()
        pts = [{"rows": b, "tokens": n, "step_s": 0.002 + 3e-7 * b * n + 2e-10 * b * n * n} for b, n in h.SEQ_FIT_SHAPES]
        fit = h.fit_sequence_step(pts)
        self.assertAlmostEqual(fit["fixed_s"], 0.002, places=9)
        self.assertAlmostEqual(fit["per_token_s"] / 3e-7, 1.0, places=6)
        self.assertAlmostEqual(fit["per_token_squared_s"] / 2e-10, 1.0, places=6)
        self.assertLess(fit["max_rel_residual"], 1e-9)

    def test_relative_least_squares_and_a_dropped_term(self):
        h = load_harness()
        # a step with no attention term and 2% noise alternating: the squared term comes out near 0 or is dropped,
        # never negative; the linear term within 3%
        pts = [{"rows": b, "tokens": n, "step_s": (0.004 + 5e-7 * b * n) * (1.02 if i % 2 else 0.98)}
               for i, (b, n) in enumerate(h.SEQ_FIT_SHAPES)]
        fit = h.fit_sequence_step(pts)
        self.assertGreaterEqual(fit["per_token_squared_s"], 0.0)
        self.assertGreaterEqual(fit["fixed_s"], 0.0)
        self.assertAlmostEqual(fit["per_token_s"] / 5e-7, 1.0, delta=0.03)
        self.assertIsNone(h.fit_sequence_step(pts[:2]))

    def test_token_lengths_and_the_family(self):
        h = load_harness()
        st = h.token_length_stats([100, 200, 300])
        self.assertAlmostEqual(st["mean"], 200.0)
        self.assertEqual((st["max"], st["n"]), (300.0, 3))
        cases = h.build_cases(False, ["sequence_step"])
        self.assertEqual([(c["knobs"]["kind"], c["knobs"]["batch_size"]) for c in cases],
                         [("tokens", 16), ("tokens", 32), ("tokens", 128), ("tokens_pad512", 32)])
        self.assertTrue(all(c["knobs"]["step"] == "seq:4" and c["knobs"]["num_workers"] == 4 for c in cases))
        self.assertFalse(h.step_is_heavy("seq:4"))
        # its shapes are timed once a call: the budget counts SEQ_SHAPES_S once, not again once measured
        with_shapes = h.setup_overhead_s(cases, {})
        measured = h.setup_overhead_s(cases, {"sequence_step_shapes": {"seq:4": {}}})
        self.assertAlmostEqual(with_shapes - measured, h.SEQ_SHAPES_S)


class SequenceStepFloorTest(unittest.TestCase):
    """sequence_fit.fit_sequence_step_with_floor: a latency floor under the linear fit, kept only where it earns it."""

    def test_recovers_a_floor_by_hand(self):
        from sequence_fit import fit_sequence_step_with_floor, fitted_step_s
        h = load_harness()
        # 9 ms at least, else 1.5 ms + 0.85 us a position: the 4k-position shapes sit on the floor
        pts = [{"rows": b, "tokens": n, "step_s": max(0.009, 0.0015 + 8.5e-7 * b * n)} for b, n in h.SEQ_FIT_SHAPES]
        fit = fit_sequence_step_with_floor(pts)
        self.assertAlmostEqual(fit["floor_s"], 0.009, places=9)
        self.assertAlmostEqual(fit["per_token_s"] / 8.5e-7, 1.0, places=6)
        self.assertAlmostEqual(fit["fixed_s"] / 0.0015, 1.0, places=5)
        self.assertLess(fit["max_rel_residual"], 1e-6)
        self.assertAlmostEqual(fitted_step_s(fit, 16, 256), 0.009, places=9)
        self.assertAlmostEqual(fitted_step_s(fit, 128, 1024), 0.0015 + 8.5e-7 * 131072, places=9)

    def test_no_floor_where_a_line_fits(self):
        from sequence_fit import fit_sequence_step_with_floor
        h = load_harness()
        pts = [{"rows": b, "tokens": n, "step_s": (0.004 + 5e-7 * b * n) * (1.01 if i % 2 else 0.99)}
               for i, (b, n) in enumerate(h.SEQ_FIT_SHAPES)]
        self.assertEqual(fit_sequence_step_with_floor(pts)["floor_s"], 0.0)

    def test_run_63_s_shapes(self):
        """Run 63's nine timed shapes (a real measurement): one line misses the largest by 14%; a floor at the two
        4k-position shapes' 8.9 ms and a line with an attention term through the other seven, by 0.4% at most."""
        import lzma
        from sequence_fit import fit_sequence_step, fit_sequence_step_with_floor
        path = os.path.join(HERE, "results", "2026-12-05-h200-run63seq", "cases.json.xz")
        pts = json.load(lzma.open(path))["components"]["sequence_step_shapes"]["seq:4"]["points"]
        self.assertGreater(fit_sequence_step(pts)["max_rel_residual"], 0.13)
        fit = fit_sequence_step_with_floor(pts)
        self.assertLess(fit["max_rel_residual"], 0.005)
        self.assertAlmostEqual(fit["floor_s"], 0.00887, delta=0.0001)
        self.assertGreater(fit["per_token_squared_s"], 0.0)


class SequenceSectionTest(unittest.TestCase):
    def test_pad_to_longest_and_pad_to_max(self):
        seq, fixed = convert.sequence_section(seq_case())
        self.assertEqual(seq["collate"], "pad_to_longest")
        self.assertEqual(seq["tokens_per_sample"], {"mean": 256.0, "cv": 0.6, "kind": "lognormal"})
        self.assertEqual((seq["step_s_per_token"], seq["step_s_per_token_squared"], fixed), (3e-7, 2e-10, 0.002))
        self.assertNotIn("max_tokens", seq)
        seq, _ = convert.sequence_section(seq_case(kind="tokens_pad512", max_tokens=512))
        self.assertEqual((seq["collate"], seq["max_tokens"]), ("pad_to_max", 512))

    def test_other_cases_have_none(self):
        self.assertIsNone(convert.sequence_section(make_case("x", "data_kind", 1.0, 0.1, 0.1, kind="tokens")))
        c = seq_case()
        del c["components"]["sequence_step_shapes"]
        self.assertIsNone(convert.sequence_section(c))
        # a fit through the origin keeps a positive fixed part, which the simulator needs
        self.assertEqual(convert.sequence_section(seq_case(fixed=0.0))[1], 1e-6)

    def test_scenario_has_the_section_and_no_item_bytes(self):
        s = convert.scenario_for(seq_case(), {"cpu_cores": 16})
        self.assertIn("sequence", s)
        self.assertNotIn("item_bytes", s["dataset"])
        self.assertEqual(s["training"]["step_s"], 0.002)
        self.assertEqual(s["training"]["step_s_vs_gpu_duty"], [])
        plain = convert.scenario_for(make_case("x", "data_kind", 1.0, 0.1, 0.1), {"cpu_cores": 16})
        self.assertNotIn("sequence", plain)
        self.assertIn("item_bytes", plain["dataset"])

    @unittest.skipUnless(os.access(PIPEPLAN, os.X_OK), "build/cli/pipeplan not built")
    def test_converted_case_simulates_the_expected_padding(self):
        # GPU-bound (a 0.002 + 3e-7 x positions s step on 32 rows, loads of 0.1 ms a sample and
        # 1 ms collates over 4 workers, no sync a step): the mean step is the fixed part plus 3e-7 x 32 x E[max of 32
        # lognormal(256, cv 0.6) lengths], the order statistic integrated from the lognormal's CDF
        c = seq_case(per_sq=0.0)
        c["components"]["load"]["mean"] = 0.0001
        c["components"]["collate"]["s_per_batch"]["mean"] = 0.001
        c["knobs"]["sync_every"] = 0   # no sync a step: the loop's launches and the copy overlap the GPU step
        s = convert.scenario_for(c, {"cpu_cores": 16})
        s["training"]["steps"] = 1500
        s["dataset"]["num_samples"] = 32 * 1500   # one epoch over the run, as convert writes it for the case's own
        s2 = math.log1p(0.36)
        mu = math.log(256.0) - s2 / 2

        def cdf(x):
            return 0.5 * math.erfc(-(math.log(x) - mu) / math.sqrt(2 * s2))
        e_max = sum(1 - cdf(x + 0.5) ** 32 for x in range(0, 20000))
        want = 0.002 + 3e-7 * 32 * e_max
        out = simulate_doc(s)
        self.assertNotIn("error", out, out.get("error"))
        r = out["result"]
        self.assertEqual(r["bottleneck"]["stage"], "gpu_compute")
        self.assertAlmostEqual(r["step_time_s"]["mean"] / want, 1.0, delta=0.02)
        self.assertAlmostEqual(r["synthetic_baseline"]["step_time_s"] / want, 1.0, delta=0.015)


class ProbeSequenceTest(unittest.TestCase):
    """pipeplan_probe.py --sequence: a user's token dataset measured into the scenario's sequence section."""

    class Ids:
        """An int64 token tensor's stand-in: its shape and bytes (what sequence_length_of and nbytes_of read)."""

        def __init__(self, n):
            self.shape, self.nbytes = (n,), 8 * n

    def test_lengths_of_the_usual_sample_shapes(self):
        import pipeplan_probe as probe
        ids = self.Ids(37)
        self.assertEqual(probe.sequence_length_of(ids), 37)
        self.assertEqual(probe.sequence_length_of({"input_ids": ids, "attention_mask": self.Ids(37)}), 37)
        self.assertEqual(probe.sequence_length_of((ids, 5)), 37)          # (tokens, label)
        self.assertEqual(probe.sequence_length_of([3, 9, 4]), 3)           # a plain list of ids
        self.assertIsNone(probe.sequence_length_of({"pixels": ids}))
        self.assertIsNone(probe.sequence_length_of(7))

    def test_section_by_hand(self):
        import pipeplan_probe as probe
        # lengths 100 and 300 (mean 200), 16 bytes a token (input_ids + attention_mask)
        sec = probe.sequence_section([100, 300], [1600, 4800], "pack", 512)
        self.assertEqual(sec["tokens_per_sample"]["mean"], 200.0)
        self.assertEqual((sec["bytes_per_token"], sec["collate"], sec["max_tokens"]), (16.0, "pack", 512))
        self.assertIsNone(probe.sequence_section([], []))

    def test_probe_writes_the_section_in_place_of_item_bytes(self):
        import pipeplan_probe as probe
        data = [{"input_ids": self.Ids(n), "attention_mask": self.Ids(n)} for n in (50, 150, 250, 350) * 25]

        def collate(batch):
            return [b["input_ids"] for b in batch]
        res = probe.probe(data, collate_fn=collate, batch_size=8, n_samples=60, n_batches=4, in_worker=False,
                          sequence={"collate": "pad_to_longest", "max_tokens": 0})
        sec = res["sequence"]
        self.assertEqual(sec["bytes_per_token"], 16.0)
        self.assertAlmostEqual(sec["tokens_per_sample"]["mean"], 200.0, delta=30.0)   # 60 of the four lengths
        frag = probe.scenario_fragment(res)
        self.assertIn("sequence", frag)
        self.assertNotIn("item_bytes", frag["dataset"])
        with open(os.path.join(HERE, "..", "..", "scenarios", "default.json")) as f:
            base = json.load(f)
        whole = probe.scenario_with(base, frag, batch_size=8)
        self.assertNotIn("item_bytes", whole["dataset"])
        if os.access(PIPEPLAN, os.X_OK):   # the merged scenario is one pipeplan accepts
            out = simulate_doc(whole, "--steps", "200")
            self.assertNotIn("error", out, out.get("error"))
            self.assertIn("sequence", out["result"])

    def test_pack_without_a_row_length_is_refused(self):
        rc, err = probe_main(["--dataset", "json:loads", "--sequence", "pack"])
        self.assertEqual(rc, 2)
        self.assertIn("--max-tokens", err)


class NewShapeComponentTest(unittest.TestCase):
    """harness.comp_sequence_new_shape on a stand-in step that spends 30 ms more the first time it meets a shape: the
    component reads 30 ms of host time a new shape, never on the case's own rows, and once per key."""

    class FakeTensor:
        def __init__(self, shape):
            self.shape = shape

        def to(self, device):
            return self

    class FakeTorch:
        int64 = "int64"

        class Generator:
            def __init__(self, device):
                pass

            def manual_seed(self, seed):
                return self

        @staticmethod
        def randint(lo, hi, shape, generator=None, dtype=None):
            return NewShapeComponentTest.FakeTensor(shape)

        @staticmethod
        def full(shape, value, dtype=None):
            return NewShapeComponentTest.FakeTensor(shape)

    def harness_with(self, step):
        """A Harness without its constructor: the fake torch, a GPU that needs no sync, and `step` as the model."""
        import types
        harness = object.__new__(load_harness().Harness)
        harness.t = self.FakeTorch
        harness.dev = types.SimpleNamespace(cpu=False, device="cuda", sync=lambda: None)
        harness.doc = {"components": {}}
        harness.step_model = lambda name: step
        return harness

    def test_no_timed_length_is_the_longest_so_far(self):
        # a stand-in whose new shape costs 20 ms, 20 more where its length is the longest it has run (a caching
        # allocator that must grow): after the helper's warm-up at the longest + 1 the component reads the 20
        import time
        seen_shapes, longest = [], [0]

        def step(batch):
            rows, length = tuple(batch[0].shape)
            new = (rows, length) not in seen_shapes
            time.sleep(0.001 + (0.020 if new else 0.0) + (0.020 if new and length > longest[0] else 0.0))
            longest[0] = max(longest[0], length)
            seen_shapes.append((rows, length))

        harness = self.harness_with(step)
        out = harness.comp_sequence_new_shape("seq:4", "tokens", 16)
        self.assertEqual(out["warm_up_length"], max(out["lengths"]) + 1)
        self.assertEqual(seen_shapes[0], (17, out["warm_up_length"]))     # the warm-up runs first
        self.assertAlmostEqual(out["new_shape_host_s"], 0.020, delta=0.008)

    def test_new_minus_seen_host_time(self):
        import time
        seen_shapes = []

        def step(batch):
            shape = tuple(batch[0].shape)
            time.sleep(0.031 if shape not in seen_shapes else 0.001)
            seen_shapes.append(shape)

        harness = self.harness_with(step)
        out = harness.comp_sequence_new_shape("seq:4", "tokens", 16)
        self.assertEqual(out["rows"], 17)                       # not the case's 16 rows: its shapes stay cold
        self.assertEqual(len(out["lengths"]), 16)
        self.assertAlmostEqual(out["new_shape_host_s"], 0.030, delta=0.008)
        lo, hi, cov = out["new_shape_host_s_interval"]      # 16 lengths: the 5th to the 12th of the sorted extras
        self.assertLessEqual(lo, out["new_shape_host_s"])
        self.assertGreaterEqual(hi, out["new_shape_host_s"])
        self.assertAlmostEqual(cov, 1 - 2 * 2517 / 65536, places=12)
        self.assertTrue(all(shape[0] == 17 for shape in seen_shapes))
        calls = len(seen_shapes)
        self.assertIs(harness.comp_sequence_new_shape("seq:4", "tokens", 16), out)   # once per key
        self.assertEqual(len(seen_shapes), calls)
        case = make_case("x", "sequence_step", 100.0, 0.1, 0.1, kind="tokens", step="seq:4")
        case["components"]["tokens_per_sample"] = {"mean": 200.0, "cv": 0.5, "n": 3, "histogram": [[100, 1], [300, 2]]}
        case["components"]["sequence_step_shapes"] = {"fit": {"fixed_s": 0.005, "per_token_s": 1e-6,
                                                              "per_token_squared_s": 0.0}}
        case["components"]["sequence_new_shape"] = out
        seq, fixed_s = convert.sequence_section(case)
        self.assertEqual(seq["new_shape_host_s"], round(out["new_shape_host_s"], 6))
        self.assertEqual(seq["tokens_per_sample_histogram"], [[100, 1], [300, 2]])
        self.assertNotIn("tokens_per_sample", seq)
        self.assertEqual(fixed_s, 0.005)
        self.assertNotIn("shapes_run_before", seq)
        # the shapes the process ran before the case go with the cost, and pipeplan reads them: with both lengths'
        # shapes at the case's rows already run, no step of the case meets a new one
        case["components"]["sequence_shapes_run_before"] = [[case["knobs"]["batch_size"], 100],
                                                            [case["knobs"]["batch_size"], 300], [17, 300]]
        seq, _ = convert.sequence_section(case)
        self.assertEqual(seq["shapes_run_before"], case["components"]["sequence_shapes_run_before"])
        if os.access(PIPEPLAN, os.X_OK):
            scen = {"dataset": {"num_samples": 100000, "load_s_per_sample": 0.0001},
                    "loader": {"batch_size": case["knobs"]["batch_size"], "num_workers": 2},
                    "sequence": seq, "training": {"step_s": fixed_s, "steps": 100, "warmup_steps": 0}}
            out = simulate_doc(scen)
            self.assertNotIn("error", out, out.get("error"))
            self.assertEqual(out["result"]["sequence"]["new_shapes_per_step"], 0.0)
            del scen["sequence"]["shapes_run_before"]
            self.assertGreater(simulate_doc(scen)["result"]["sequence"]["new_shapes_per_step"], 0.0)


class NewShapeOverlapTest(unittest.TestCase):
    """convert.new_shape_overlap_fraction by hand: a step of 5 ms + 1 us a position at 10 rows of 100 and 200 tokens
    (6 and 7 ms on the GPU) whose new shape spends 50 ms more host time; its wall to the sync 52.4 and 53.6 ms: the
    build plus (1 - f) of the GPU time, f = (50 + 6 - 52.4) / 6 = 0.6 and (50 + 7 - 53.6) / 7 = 0.486."""

    def test_by_hand(self):
        fit = {"fixed_s": 0.005, "per_token_s": 1e-6, "per_token_squared_s": 0.0}
        ns = {"rows": 10, "lengths": [100, 200], "new_host_s": [0.060, 0.061], "seen_host_s": [0.010, 0.011],
              "new_wall_s": [0.0524, 0.0536]}
        self.assertAlmostEqual(convert.new_shape_overlap_fraction(ns, fit), (0.6 + 3.4 / 7) / 2, places=6)
        # a wall as long as the build plus the whole GPU time: nothing overlapped (and never below 0)
        ns["new_wall_s"] = [0.058, 0.060]
        self.assertEqual(convert.new_shape_overlap_fraction(ns, fit), 0.0)
        self.assertIsNone(convert.new_shape_overlap_fraction({"rows": 10, "lengths": [100]}, fit))

    def test_sequence_section_passes_it_on(self):
        case = seq_case(bs=9, fixed=0.005, per_token=1e-6, per_sq=0.0)
        case["components"]["sequence_new_shape"] = {
            "rows": 10, "lengths": [100, 200], "new_host_s": [0.060, 0.061], "seen_host_s": [0.010, 0.011],
            "new_wall_s": [0.0524, 0.0536], "new_shape_host_s": 0.050}
        seq, _ = convert.sequence_section(case)
        self.assertAlmostEqual(seq["new_shape_gpu_overlap_fraction"], 0.5429, places=4)
        if os.access(PIPEPLAN, os.X_OK):
            out = simulate_doc({"dataset": {"num_samples": 100000, "load_s_per_sample": 0.0001},
                                "loader": {"batch_size": 9, "num_workers": 2}, "sequence": seq,
                                "training": {"step_s": 0.005, "steps": 50}})
            self.assertNotIn("error", out, out.get("error"))


class MedianIntervalTest(unittest.TestCase):
    """pipeplan_probe.median_interval by hand: the median lies between the k-th smallest and the k-th largest of n
    draws unless at most k - 1 fall below it or at most k - 1 above, each with probability P(Binomial(n, 1/2) <= k - 1)."""

    def test_by_hand(self):
        import pipeplan_probe as probe
        # n = 16: P(B <= 4) = (1 + 16 + 120 + 560 + 1820) / 2^16 = 2517 / 65536 = 0.0384 (<= 0.05), P(B <= 5) = 0.105
        lo, hi, cov = probe.median_interval([float(x) for x in range(16, 0, -1)])
        self.assertEqual((lo, hi), (5.0, 12.0))
        self.assertAlmostEqual(cov, 1 - 2 * 2517 / 65536, places=12)
        # n = 8: P(B <= 1) = 9 / 256, P(B <= 2) = 37 / 256: [x(2), x(7)]; run 66's b16 component, 111-192 ms
        self.assertEqual(probe.median_interval([180, 160, 236, 192, 130, 105, 111, 133])[:2], (111.0, 192.0))
        self.assertAlmostEqual(probe.median_interval(range(8))[2], 1 - 18 / 256, places=12)
        # n = 5: the whole range covers 1 - 2 / 32 = 0.9375; n = 4: 0.875 < 0.9, no interval
        self.assertEqual(probe.median_interval([3, 1, 2, 5, 4]), (1.0, 5.0, 0.9375))
        self.assertIsNone(probe.median_interval([1, 2, 3, 4]))
        self.assertEqual(probe.median_interval([1, 2, 3, 4], coverage=0.8), (1.0, 4.0, 0.875))

    def test_the_helper_line_names_it(self):
        import pipeplan_probe as probe
        ns = {"rows": 16, "lengths": list(range(300, 308)), "new_host_s": [0.19, 0.17, 0.246, 0.202, 0.14, 0.115, 0.121, 0.143],
              "seen_host_s": [0.01] * 8, "new_wall_s": [0.2] * 8, "seen_wall_s": [0.02] * 8, "new_shape_host_s": 0.1415}
        line = probe._human_new_shapes(ns)
        self.assertIn("per length 105-236 ms, the median within 111-192 ms (93% interval", line)
        self.assertIn("--vary sequence.new_shape_host_s=0.111,0.192", line)


class CallNewShapeTest(unittest.TestCase):
    """convert.call_new_shape_host_s by hand: the median over every length the call's variable-length components
    timed, each component once, a padded kind's left out; sequence_section takes it in place of the case's own."""

    @staticmethod
    def with_component(case, rows, new_ms, seen_ms):
        case["components"]["sequence_new_shape"] = {
            "rows": rows, "lengths": list(range(100, 100 + 10 * len(new_ms), 10)),
            "new_host_s": [x / 1e3 for x in new_ms], "seen_host_s": [x / 1e3 for x in seen_ms],
            "new_shape_host_s": statistics.median(a - b for a, b in zip(new_ms, seen_ms)) / 1e3}
        return case

    def test_by_hand(self):
        b16 = self.with_component(seq_case(bs=16), 17, [160, 170, 250], [10, 10, 10])      # 150 160 240: own 160
        b32 = self.with_component(seq_case(bs=32), 33, [110, 120, 130], [10, 10, 10])      # 100 110 120: own 110
        again = json.loads(json.dumps(b32))                                                # a repeat: same component
        pad = self.with_component(seq_case(bs=32, max_tokens=512), 33, [10, 11, 12], [10, 10, 10])
        doc = {"cases": [b16, b32, again, pad]}
        # the six lengths 100 110 120 150 160 240: median (120 + 150) / 2 = 135 ms; the repeat and the padded kind
        # would move it to 120 and 115
        self.assertAlmostEqual(convert.call_new_shape_host_s(doc)["seq:4"], 0.135, places=9)
        seq, _ = convert.sequence_section(convert.with_call_new_shape(b16, convert.call_new_shape_host_s(doc)))
        self.assertAlmostEqual(seq["new_shape_host_s"], 0.135, places=6)
        self.assertAlmostEqual(convert.sequence_section(b16)[0]["new_shape_host_s"], 0.160, places=6)
        # the padded case keeps its own (no new shapes): the pooled figure is not given to it
        self.assertIs(convert.with_call_new_shape(pad, {"seq:4": 0.135}), pad)

    def test_no_components_no_figure(self):
        self.assertEqual(convert.call_new_shape_host_s({"cases": [seq_case()]}), {})


class ProbeDatasetLengthsTest(unittest.TestCase):
    """--lengths FILE: the whole dataset's lengths become sequence.tokens_per_sample_histogram."""

    def test_histogram_by_hand(self):
        import pipeplan_probe as probe
        self.assertEqual(probe.length_histogram([5, 3, 5, 0.2, 9, 5]), [[1, 1], [3, 1], [5, 3], [9, 1]])

    def test_lengths_file_json_and_lines_and_their_errors(self):
        import tempfile
        import pipeplan_probe as probe
        with tempfile.TemporaryDirectory() as d:
            js, lines, bad = (os.path.join(d, n) for n in ("l.json", "l.txt", "bad.txt"))
            with open(js, "w") as f:
                json.dump([12, 7, 7], f)
            with open(lines, "w") as f:
                f.write("# lengths\n12\n\n7  # a comment\n")
            with open(bad, "w") as f:
                f.write("12\nabc\n")
            self.assertEqual(probe.read_lengths_file(js), [12.0, 7.0, 7.0])
            self.assertEqual(probe.read_lengths_file(lines), [12.0, 7.0])
            with self.assertRaisesRegex(ValueError, "line 2 is 'abc'"):
                probe.read_lengths_file(bad)
            with open(js, "w") as f:
                json.dump([12, 0], f)
            with self.assertRaisesRegex(ValueError, r"\[1\] is 0"):
                probe.read_lengths_file(js)

    def test_the_fragment_carries_the_histogram_and_pipeplan_reads_it(self):
        import argparse
        import contextlib
        import io
        import pipeplan_probe as probe
        data = [{"input_ids": ProbeSequenceTest.Ids(n)} for n in (50, 150, 250, 350) * 25]
        a = argparse.Namespace(batch_size=8, samples=40, batches=3, seed=0, sample_bytes=None, max_seconds=None,
                               no_worker=True, num_workers=None, cold=False, sequence="pad_to_longest",
                               max_tokens=0, pad_to_multiple_of=64, lengths="lengths.json",
                               dataset_lengths=[50, 150, 250, 350] * 25 + [2000])
        with contextlib.redirect_stderr(io.StringIO()):
            res = probe.measure_dataset(a, data, lambda b: [x["input_ids"] for x in b], [], None)
        frag = probe.scenario_fragment(res)
        seq = frag["sequence"]
        self.assertNotIn("tokens_per_sample", seq)
        self.assertEqual(seq["tokens_per_sample_histogram"], [[50, 25], [150, 25], [250, 25], [350, 25], [2000, 1]])
        self.assertEqual(seq["pad_to_multiple_of"], 64)
        if os.access(PIPEPLAN, os.X_OK):
            with open(os.path.join(HERE, "..", "..", "scenarios", "default.json")) as f:
                base = json.load(f)
            out = simulate_doc(probe.scenario_with(base, frag, batch_size=8), "--steps", "200")
            self.assertNotIn("error", out, out.get("error"))
            self.assertEqual(out["result"]["sequence"]["pad_to_multiple_of"], 64)

    def test_lengths_without_sequence_is_refused(self):
        import contextlib
        import io
        import pipeplan_probe as probe
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = probe.main(["--dataset", "json:loads", "--lengths", "x.json"])
        self.assertEqual(rc, 2)
        self.assertIn("need --sequence", err.getvalue())


class FakeClock:
    """A clock the stand-in step advances: timings exact whatever the machine's load."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


class PlanCacheStep:
    """A stand-in step with a plan cache keyed by shape: its first call on a (rows, length) spends `plan_s` (host
    time, before it returns), every call `step_s`: on `clock` where given (a FakeClock), else sleeping. A module-level
    name so --shape-step can load it."""

    def __init__(self, plan_s=0.03, step_s=0.002, clock=None):
        self.plan_s, self.step_s, self.seen, self.calls, self.clock = plan_s, step_s, set(), [], clock

    def _spend(self, s):
        import time
        if self.clock is not None:
            self.clock.t += s
        else:
            time.sleep(s)

    def __call__(self, rows, length):
        self.calls.append((rows, length))
        if (rows, length) not in self.seen:
            self.seen.add((rows, length))
            self._spend(self.plan_s)
        self._spend(self.step_s)
        return None


def make_plan_cache_step(plan_s=0.03):
    return PlanCacheStep(plan_s)


class ProbeNewShapeTest(unittest.TestCase):
    """--shape-step: what the user's step costs on a shape it has not run, new minus seen (sequence.new_shape_host_s),
    against a stand-in whose plan cache costs a known 30 ms."""

    def test_lengths_spread_over_the_upper_half(self):
        import pipeplan_probe as probe
        self.assertEqual(probe.new_shape_lengths([], n=8), [300 + 61 * j for j in range(8)])   # 427 / 7 = 61
        got = probe.new_shape_lengths([])
        self.assertEqual((len(got), got[0], got[-1], len(set(got))), (16, 300, 727, 16))
        got = probe.new_shape_lengths(list(range(1, 1001)), n=4)  # the 50th, 65th, 80th and 95th percentiles
        self.assertEqual(len(got), 4)
        for g, want in zip(got, (500.5, 650.35, 800.2, 950.05)):
            self.assertLessEqual(abs(g - want), 1.0)
        self.assertEqual(probe.new_shape_lengths([7] * 20, n=3), [7, 8, 9])  # one length: made distinct

    def test_new_minus_seen_is_the_plan_cost(self):
        import pipeplan_probe as probe
        clock = FakeClock()
        step = PlanCacheStep(plan_s=0.03, clock=clock)
        res = probe.time_new_shapes(step, 9, [100, 200, 300], sync=lambda out: None, clock=clock)
        # each timed length runs twice on one shape, after two warm-ups at a shape not timed
        self.assertEqual(step.calls, [(9, 301), (9, 301), (9, 100), (9, 100), (9, 200), (9, 200), (9, 300), (9, 300)])
        self.assertAlmostEqual(res["new_shape_host_s"], 0.03, places=12)
        self.assertAlmostEqual(res["new_shape_wall_s"], 0.03, places=12)
        self.assertEqual(probe.new_shape_fragment(res)["sequence"]["new_shape_host_s"],
                         round(res["new_shape_host_s"], 6))
        # a step all on the host (the stand-in sleeps): nothing runs during the build, no overlap key
        self.assertEqual(probe.new_shape_overlap(res), 0.0)
        self.assertNotIn("new_shape_gpu_overlap_fraction", probe.new_shape_fragment(res)["sequence"])
        # no plan cache: no cost, and a negative median is written as 0
        self.assertEqual(probe.new_shape_fragment({"new_shape_host_s": -0.0004}),
                         {"sequence": {"new_shape_host_s": 0.0}})

    def test_overlap_by_hand(self):
        import pipeplan_probe as probe
        # a 20 ms GPU step (seen wall 20 ms) whose 50 ms build lets 5 ms of it run: new wall 50 + 15 = 65 ms
        res = {"new_host_s": [0.052, 0.052, 0.052], "seen_host_s": [0.002, 0.002, 0.002],
               "new_wall_s": [0.065, 0.066, 0.064], "seen_wall_s": [0.020, 0.020, 0.020], "new_shape_host_s": 0.05}
        self.assertAlmostEqual(probe.new_shape_overlap(res), 0.25, places=6)
        self.assertEqual(probe.new_shape_fragment(res)["sequence"]["new_shape_gpu_overlap_fraction"], 0.25)

    def test_cli_writes_the_key_and_refuses_bad_rows(self):
        import contextlib
        import io
        import pipeplan_probe as probe
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "frag.json")
            with contextlib.redirect_stderr(io.StringIO()) as err:
                rc = probe.main(["--shape-step", "test_sequence:make_plan_cache_step", "--step-args", "[0.02]",
                                 "--batch-size", "4", "--out", out])
            self.assertEqual(rc, 0, err.getvalue())
            self.assertIn("sequence.new_shape_host_s", err.getvalue())
            with open(out) as f:
                frag = json.load(f)
            self.assertAlmostEqual(frag["sequence"]["new_shape_host_s"], 0.02, delta=0.01)
            # the step by shape, wired through (its sleeps jitter on a loaded machine: the law is tested exactly in
            # ProbeStepShapesTest on a clock the stand-in advances)
            self.assertIn("step by shape", err.getvalue())
            self.assertGreater(frag["training"]["step_s"], 0.0)
            self.assertIn("step_s_per_token", frag["sequence"])
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(probe.main(["--shape-step", "test_sequence:make_plan_cache_step", "--shape-rows", "0"]), 2)
            self.assertEqual(probe.main(["--shape-step", "test_sequence:nothing_here"]), 2)
        self.assertIn("--shape-rows 0", err.getvalue())
        self.assertIn("--shape-step test_sequence:nothing_here", err.getvalue())


class ProbeStepShapesTest(unittest.TestCase):
    """--shape-step's step by shape: timed at the batch's rows and half of them over the dataset's lengths, fitted in
    the validation's form, against a stand-in whose step follows a known law (validation run 65, finding 3)."""

    class LawStep:
        """1 ms + 2 ns a position + 1 ps a squared row length (rows x length^2), on a FakeClock; its first call on a
        shape also spends 50 ms (a plan build, which the timing must leave out)."""

        def __init__(self, clock):
            self.clock, self.seen, self.calls = clock, set(), []

        def __call__(self, rows, length):
            self.calls.append((rows, length))
            if (rows, length) not in self.seen:
                self.seen.add((rows, length))
                self.clock.t += 0.05
            self.clock.t += 1e-3 + 2e-9 * rows * length + 1e-12 * rows * length * length

    def test_shapes_by_hand(self):
        import pipeplan_probe as probe
        # quantiles 25/50/90/99 of 1..1000: 250.75, 500.5, 900.1, 990.01 -> rounded; rows 16, 32 and 64
        lengths = [251, 500, 900, 990]
        got = probe.step_fit_shapes(16, list(range(1, 1001)))
        self.assertEqual(got, [(r, n) for r in (16, 32, 64) for n in lengths])
        self.assertEqual(probe.step_fit_shapes(1, []), [(r, n) for r in (1, 2, 4)
                                                        for n in probe.STEP_FIT_DEFAULT_LENGTHS])
        self.assertEqual(probe.step_fit_shapes(4, [300] * 10),    # one length: no fit from it
                         [(r, n) for r in (4, 8, 16) for n in probe.STEP_FIT_DEFAULT_LENGTHS])
        # a sweep's own batch sizes, sorted and each once
        self.assertEqual(probe.step_fit_shapes(16, [], [128, 16, 16]),
                         [(r, n) for r in (16, 128) for n in probe.STEP_FIT_DEFAULT_LENGTHS])

    def test_row_counts_option_and_its_errors(self):
        import pipeplan_probe as probe
        self.assertEqual(probe._row_counts("16,32, 64"), [16, 32, 64])
        for bad in ("", "16,x", "0,16", "-4"):
            with self.assertRaises(Exception) as cm:
                probe._row_counts(bad)
            self.assertIn("expected positive integers", str(cm.exception))

    def test_fit_rows_without_shape_step_is_refused(self):
        rc, err = probe_main(["--dataset", "json:loads", "--shape-fit-rows", "16,32"])
        self.assertEqual(rc, 2)
        self.assertIn("--shape-fit-rows: given without --shape-step", err)

    def test_a_shape_out_of_gpu_memory_is_left_out(self):
        import pipeplan_probe as probe

        class OutOfMemoryError(RuntimeError):
            pass

        clock = FakeClock()
        law = self.LawStep(clock)

        def step(rows, length):
            if rows >= 64:
                raise OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
            return law(rows, length)

        res = probe.time_step_shapes(step, probe.step_fit_shapes(16, list(range(1, 1001))), sync=lambda out: None,
                                     repeats=3, clock=clock, gpu_time=lambda fn: None)
        self.assertEqual([q["rows"] for q in res["points"]], [16] * 4 + [32] * 4)
        self.assertEqual(res["skipped_out_of_memory"], [[64, n] for n in (251, 500, 900, 990)])
        self.assertAlmostEqual(res["fit"]["per_token_s"], 2e-9, places=15)
        self.assertIn("left out (out of GPU memory): 64x251", probe._human_step_shapes(res))

        def broken(rows, length):
            raise ValueError("a bug in the step")

        with self.assertRaises(ValueError):    # only the allocator's refusal is skipped
            probe.time_step_shapes(broken, [(1, 10)], sync=lambda out: None, gpu_time=lambda fn: None)

    def test_the_fit_recovers_the_law_without_the_plan_builds(self):
        import pipeplan_probe as probe
        clock = FakeClock()
        step = self.LawStep(clock)
        shapes = probe.step_fit_shapes(16, list(range(1, 1001)))
        res = probe.time_step_shapes(step, shapes, sync=lambda out: None, repeats=3, clock=clock,
                                     gpu_time=lambda fn: None)
        self.assertEqual(step.calls[:4], [(16, 251)] * 4)          # one untimed step, then three timed
        for q in res["points"]:
            want = 1e-3 + 2e-9 * q["rows"] * q["tokens"] + 1e-12 * q["rows"] * q["tokens"] ** 2
            self.assertAlmostEqual(q["step_s"], want, places=12)
            self.assertEqual(q["source"], "wall to sync")
        fit = res["fit"]
        self.assertAlmostEqual(fit["fixed_s"], 1e-3, places=9)
        self.assertAlmostEqual(fit["per_token_s"], 2e-9, places=15)
        self.assertAlmostEqual(fit["per_token_squared_s"], 1e-12, places=18)
        frag = probe.step_shapes_fragment(res)
        self.assertAlmostEqual(frag["training"]["step_s"], 1e-3, places=9)
        self.assertAlmostEqual(frag["sequence"]["step_s_per_token"], 2e-9, places=15)
        self.assertNotIn("step_s_floor", frag["sequence"])          # the law has none: the fit earns none

    def test_a_gpu_time_is_taken_where_there_is_one(self):
        import pipeplan_probe as probe
        clock = FakeClock()
        res = probe.time_step_shapes(self.LawStep(clock), [(2, 10), (2, 20), (4, 20)], sync=lambda out: None,
                                     clock=clock, gpu_time=lambda fn: {"sustained_s": {"p50": 0.004},
                                                                       "isolated_s": {"p50": 0.003}})
        self.assertEqual([q["step_s"] for q in res["points"]], [0.004] * 3)
        self.assertEqual(res["points"][0]["source"], "GPU, sustained")
        self.assertEqual(probe.step_shapes_fragment({"points": [], "fit": None}), {})


class TokenCostSplitTest(unittest.TestCase):
    def test_fit_by_hand(self):
        import pipeplan_probe as probe
        # 0.1 ms + 2 us a token, exactly: lengths 100..1000
        lengths = list(range(100, 1001, 50))
        got = probe.token_cost_split(lengths, [1e-4 + 2e-6 * n for n in lengths])
        self.assertAlmostEqual(got["fixed_s"], 1e-4, places=12)
        self.assertAlmostEqual(got["per_token_s"], 2e-6, places=14)
        mean_n = sum(lengths) / len(lengths)     # 550: the tokens' share 2e-6 x 550 / (1e-4 + 2e-6 x 550)
        self.assertAlmostEqual(got["token_share"], 1.1e-3 / 1.2e-3, places=9)
        self.assertAlmostEqual(mean_n, 550.0)
        # times falling with length: no per-token part, the mean as the fixed part
        flat = probe.token_cost_split(lengths, [1e-3 - 1e-7 * n for n in lengths])
        self.assertEqual(flat["per_token_s"], 0.0)
        self.assertIsNone(probe.token_cost_split([5] * 20, [1e-3] * 20))    # lengths that do not vary
        self.assertIsNone(probe.token_cost_split(lengths[:5], [1e-3] * 5))  # too few

    def test_fragment_splits_the_measured_level(self):
        import pipeplan_probe as probe
        res = {"num_samples": 1000, "batch_size": 8, "item_bytes_from_batch": 4000.0,
               "load_s_per_sample": {"mean": 0.002, "cv": 0.3}, "collate_s_per_batch": {"mean": 0.001},
               "sequence": {"tokens_per_sample": {"mean": 500.0, "cv": 0.5, "kind": "lognormal"},
                            "collate": "pad_to_longest", "bytes_per_token": 8.0},
               "sequence_token_cost": {"fixed_s": 2e-4, "per_token_s": 3.6e-6, "token_share": 0.9}}
        frag = probe.scenario_fragment(res)
        # 2 ms a sample, 90% of it the tokens': 0.2 ms fixed and 0.9 x 2 ms / 500 tokens = 3.6 us a token
        self.assertAlmostEqual(frag["dataset"]["load_s_per_sample"]["mean"], 0.0002)
        self.assertAlmostEqual(frag["sequence"]["load_s_per_token"], 3.6e-6)
        self.assertNotIn("load_s_per_token", res["sequence"])   # the measurement itself is left as it was


class GpuDecodeValidationTest(unittest.TestCase):
    """The harness's decode_device family and convert's gpu_decode keys (no torch here)."""

    def test_family_and_the_step_name(self):
        h = load_harness()
        cases = [c for c in h.build_cases(False, ["decode_device"]) if not c.get("repeat")]   # the base's repeats aside
        self.assertEqual([(c["knobs"]["kind"], c["knobs"]["step"], c["knobs"]["num_workers"]) for c in cases],
                         [("image", "mm:25", 8), ("image_bytes", "gpudec+mm:25", 8), ("image", "mm:25", 4),
                          ("image_bytes", "gpudec+mm:25", 4)])
        self.assertFalse(h.step_is_heavy("gpudec+mm:25"))
        # encoded JPEGs stay on the host for decode_jpeg(device="cuda"): to_device passes the container through
        import pipeplan_probe as probe
        kept = h.HostTensors([b"\xff\xd8", b"\xff\xd8"])
        self.assertIs(probe.to_device((kept, None), "cuda")[0], kept)

    def test_convert_reads_the_decode_component(self):
        # a batch of 64: 6.4 ms in the call, 9.6 ms to the stream's end: 0.1 ms a sample on the host, 0.05 on the GPU
        comp = {"gpu_decode": {"host_s": {"mean": 0.0064}, "wall_s": {"mean": 0.0096}, "batch_size": 64}}
        self.assertEqual(convert.gpu_decode_keys(comp), {"gpu_decode_host_s_per_sample": 0.0001,
                                                         "gpu_decode_s_per_sample": 0.00005})
        self.assertEqual(convert.gpu_decode_keys({}), {})
        c = make_case("r1:01-decode_device-image_bytes", "decode_device", 1500.0, 0.04, 0.05, kind="image_bytes",
                      step="gpudec+mm:25")
        c["components"].update(comp)
        s = convert.scenario_for(c, {"cpu_cores": 16})
        self.assertEqual(s["training"]["gpu_decode_s_per_sample"], 0.00005)
        if os.access(PIPEPLAN, os.X_OK):   # keys pipeplan knows
            out = simulate_doc(s, "--steps", "200")
            self.assertNotIn("error", out, out.get("error"))


if __name__ == "__main__":
    unittest.main()
