#!/usr/bin/env python3
"""ingest_call: one device call's files into the repository as the table keeps them, in one command.

    python3 calibrate/validation/ingest_call.py --from /work/.device/2 --name 2026-12-05-h100-run66seq \
        --command 'PIPEPLAN_TOTAL_S=570 ... bash calibrate/validation/device_run.sh' --timeout-s 600 \
        [--reply reply.json] [--table] [--score]

Copies the call's $OUT files (device_run.sh's: cases.json, profile.json, calibrate.log, harness.log, env.txt, the
probe's files) into calibrate/validation/results/NAME/, stores cases.json, calibrate.log and harness.log as .xz
(XZ_STORED: convert and every diagnostic read them as they are), writes run_meta.json (the command, its timeout and,
from the device tool's reply saved as JSON with --reply, rc, wall_s, warm, lease and device), keeps the small side
files (NOTES_PACKED: env.txt, probe.log, run_meta.json, probe_fragment.json...) in one notes.tar.xz, leaves every file
writable, and with --table adds NAME to table_calls.txt and to the device plan's lists of calls that carry a reading
(results/fd-handover-calls.txt, results/wander-long-calls.txt: reading_lists). With --score it then runs
score_call.py on the new folder.
What each session did by hand after a call (docs/validation.md, the device plan); a bad argument or an incomplete
call is one line and exit 2, with nothing written.
"""
from __future__ import annotations

import argparse
import io
import json
import lzma
import os
import re
import shutil
import subprocess
import tarfile
import sys
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import convert  # noqa: E402

RESULTS = os.path.join(HERE, "results")
TABLE_CALLS = os.path.join(HERE, "table_calls.txt")
# convert needs both; a call without them was cut short (the harness or calibrate never wrote)
REQUIRED = ("cases.json", "profile.json")
# kept as xz (preset 9): the working tree that travels to the GPU machine is limited to 64 MiB, and these are its
# largest files (calibrate.log about 30 KB a call, 5x smaller as xz); convert.read_json / read_stored_text read them
XZ_STORED = ("cases.json", "profile.json", "calibrate.log", "harness.log")
# the small side files kept in one archive a call (convert.NOTES_ARCHIVE; convert.read_json, read_stored_text and
# read_notes_member read them there): each took a 4 KiB block of the 64 MiB that travels to the device
NOTES_PACKED = ("env.txt", "probe.log", "run_meta.json", "output_tail.txt", "reply.json", "probe_fragment.json")
# the results folders' names: date, GPU kind, run and call (2026-12-05-h100-run66seq)
NAME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}-[a-z0-9]+-[A-Za-z0-9_.-]+$")
# the device tool's reply keys that run_meta.json keeps (as runs 11-66 kept them by hand)
REPLY_KEYS = ("rc", "wall_s", "warm", "lease", "device")


# the lists of calls beside table_calls.txt that a device plan item scores (results/NAME-calls.txt), by the reading a
# call carries: item 30's (a pinned probe at 2-4 workers that timed the receive's fd hand-overs, harness since run
# 84) and item 29's (the workers-only long reading, components.wander_long, harness --wander-long-s since run 83)
READING_LISTS = ("fd-handover", "wander-long")


def reading_lists(doc: Any) -> List[str]:
    """Pure: which of READING_LISTS a call's cases.json belongs in, in that order."""
    doc = doc if isinstance(doc, dict) else {}
    out = []
    probes = [p for case in (doc.get("cases") or []) if isinstance(case, dict)
              for p in ((case.get("components") or {}).get("probe"), (case.get("components") or {}).get("probe_after"))
              if isinstance(p, dict)]
    if any(p.get("pin_memory") and 2 <= int(p.get("workers") or 0) <= 4
           and p.get("fd_detach_wall_s_per_batch") is not None for p in probes):
        out.append("fd-handover")
    if (doc.get("components") or {}).get("wander_long"):
        out.append("wander-long")
    return out


def straggler_probe_path(doc: Any) -> Optional[str]:
    """Pure: the JSON path of the first probe the harness ran with its case's straggler (--probe-with-straggler:
    the probe carries slow_worker_factor), else None. Such a call stays out of the table: its probes charge the
    straggler's hold on the receive to the pin thread's wait (validation-runs.md run 72: 2.1-3.6 ms a batch against
    0.6-0.8 in plain probes on the same lease), which the simulator adds again for loader.slow_worker, and a user's
    calibrate measures no straggler."""
    for i, case in enumerate((doc or {}).get("cases") or []):
        for probe in ("probe", "probe_after"):
            p = (((case or {}).get("components") or {}).get(probe) or {})
            if isinstance(p, dict) and float(p.get("slow_worker_factor") or 1.0) > 1.0:
                return f"$.cases[{i}].components.{probe}.slow_worker_factor = {p['slow_worker_factor']:g}"
    return None


def read_source(src: str) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """Pure but for reading the folder: (its cases.json, None) where src holds a call convert can read, else (None,
    the one-line reason)."""
    if not os.path.isdir(src):
        return None, f"{src}: not a folder (expected the device call's files, its reply's files_at)"
    missing = [f for f in REQUIRED if not os.path.isfile(os.path.join(src, f))]
    if missing:
        return None, f"{src}: no {' or '.join(missing)} (the call did not finish: nothing to score)"
    try:
        with open(os.path.join(src, "cases.json")) as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        return None, f"{src}/cases.json: not JSON ({e})"
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
        return None, f"{src}/cases.json: $.cases is missing or not a list (expected the harness's output)"
    return doc, None


def run_meta(command: str, timeout_s: int, reply: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """Pure: run_meta.json's content: the command and its timeout, then the reply's REPLY_KEYS where present."""
    meta: Dict[str, Any] = {"command": command, "timeout_s": int(timeout_s)}
    for k in REPLY_KEYS:
        if reply and k in reply:
            meta[k] = reply[k]
    return meta


def with_call_listed(lines: List[str], name: str) -> List[str]:
    """Pure: table_calls.txt's lines with name at the end, once (unchanged where it is already listed)."""
    if any(line.strip() == name for line in lines):
        return lines
    out = list(lines)
    if out and not out[-1].endswith("\n"):
        out[-1] += "\n"
    return out + [name + "\n"]


def list_call(path: str, name: str) -> None:
    """Adds name to a list of calls (table_calls.txt, results/*-calls.txt) once, the file replaced whole, and says so."""
    with open(path) as f:
        lines = f.readlines()
    new = with_call_listed(lines, name)
    if new != lines:
        with open(path + ".tmp", "w") as f:
            f.writelines(new)
        os.replace(path + ".tmp", path)
        print(f"ingest_call: {name} added to {path}")


def pack_notes(folder: str) -> List[str]:
    """Moves `folder`'s NOTES_PACKED files into its notes.tar.xz, keeping the members already there (a file beside
    the archive replaces its member). The archive is written whole to a temporary name and renamed, and only then
    are the plain files removed, so an interrupted pack loses nothing. Members are stored with fixed owner and
    time, sorted, so packing the same files twice gives the same bytes. The names moved, sorted."""
    archive = os.path.join(folder, convert.NOTES_ARCHIVE)
    moved = sorted(n for n in NOTES_PACKED if os.path.isfile(os.path.join(folder, n)))
    if not moved:
        return []
    members: Dict[str, bytes] = {}
    if os.path.isfile(archive):
        with tarfile.open(archive, "r:xz") as t:
            for m in t.getmembers():
                f = t.extractfile(m)
                if f is not None:
                    members[m.name] = f.read()
    for n in moved:
        with open(os.path.join(folder, n), "rb") as f:
            members[n] = f.read()
    tmp = archive + ".partial"
    with tarfile.open(tmp, "w:xz", preset=9) as t:
        for n in sorted(members):
            info = tarfile.TarInfo(n)
            info.size = len(members[n])
            info.mode = 0o644
            t.addfile(info, io.BytesIO(members[n]))
    os.chmod(tmp, 0o644)
    os.replace(tmp, archive)
    for n in moved:
        os.remove(os.path.join(folder, n))
    return moved


def ingest(src: str, dest: str, meta: Dict[str, Any]) -> List[str]:
    """Copies src's plain files into dest (a new folder), cases.json and the two logs as .xz (XZ_STORED); writes
    run_meta.json. Writes into a temporary sibling first and renames it, so an interrupted ingest leaves no half
    folder. The names written, sorted."""
    tmp = dest + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        for name in sorted(os.listdir(src)):
            path = os.path.join(src, name)
            if not os.path.isfile(path) or name == "run_meta.json":
                continue
            if name in XZ_STORED:
                with open(path, "rb") as f, lzma.open(os.path.join(tmp, name + ".xz"), "wb", preset=9) as g:
                    shutil.copyfileobj(f, g)
            else:
                shutil.copyfile(path, os.path.join(tmp, name))
        with open(os.path.join(tmp, "run_meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
            f.write("\n")
        for name in os.listdir(tmp):          # the device's files come back read-only
            os.chmod(os.path.join(tmp, name), 0o644)
        pack_notes(tmp)
        os.rename(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return sorted(os.listdir(dest))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from", dest="src", required=True, help="the call's files (the device reply's files_at)")
    ap.add_argument("--name", required=True, help="the results folder to create, e.g. 2026-12-05-h100-run66seq")
    ap.add_argument("--command", required=True, help="the command the call ran, as given to the device")
    ap.add_argument("--timeout-s", type=int, required=True, help="the call's timeout")
    ap.add_argument("--reply", default=None, help="the device tool's JSON reply saved to a file (rc, wall_s, lease...)")
    ap.add_argument("--table", action="store_true", help="add the call to table_calls.txt")
    ap.add_argument("--score", action="store_true", help="then run score_call.py on it")
    ap.add_argument("--results", default=RESULTS, help=argparse.SUPPRESS)
    ap.add_argument("--table-calls", default=TABLE_CALLS, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)

    if not NAME_RE.match(a.name):
        print(f"ingest_call: --name {a.name!r}: expected DATE-GPU-RUN, e.g. 2026-12-05-h100-run66seq", file=sys.stderr)
        return 2
    if a.timeout_s <= 0:
        print(f"ingest_call: --timeout-s {a.timeout_s}: expected a positive number of seconds", file=sys.stderr)
        return 2
    dest = os.path.join(a.results, a.name)
    if os.path.exists(dest):
        print(f"ingest_call: {dest}: already there (a results folder is written once)", file=sys.stderr)
        return 2
    doc, why = read_source(a.src)
    if why:
        print(f"ingest_call: {why}", file=sys.stderr)
        return 2
    if a.table:
        where = straggler_probe_path(doc)
        if where:
            print(f"ingest_call: {a.src}/cases.json: {where} (the harness ran with --probe-with-straggler); expected "
                  "straggler-free probes for the table: ingest it without --table", file=sys.stderr)
            return 2
    reply = None
    if a.reply:
        try:
            with open(a.reply) as f:
                reply = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            print(f"ingest_call: --reply {a.reply}: not a JSON file ({e})", file=sys.stderr)
            return 2
        if not isinstance(reply, dict):
            print(f"ingest_call: --reply {a.reply}: $ is not an object (expected the device tool's reply)",
                  file=sys.stderr)
            return 2
    written = ingest(a.src, dest, run_meta(a.command, a.timeout_s, reply))
    print(f"ingest_call: {dest}: {', '.join(written)}")
    if a.table:
        list_call(a.table_calls, a.name)
        for kind in reading_lists(doc):
            listed = os.path.join(a.results, f"{kind}-calls.txt")
            if os.path.exists(listed):
                list_call(listed, a.name)
            else:
                print(f"ingest_call: {listed}: not there, so {a.name} is not listed in it (the call carries its "
                      "reading)", file=sys.stderr)
    if a.score:
        return subprocess.run([sys.executable, os.path.join(HERE, "score_call.py"), dest]).returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
