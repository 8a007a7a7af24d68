"""The measured batch on a GPU machine: every `measure.*` probe through the real agent.

    python3 bench/gpu_measured.py --out DIR              # on the GPU machine, all visible GPUs
    python3 bench/gpu_measured.py --out DIR --cpu        # anywhere: tiny sizes, CPU, gloo

Needs python3 and torch only: src/ goes on sys.path and the batch runs exactly as
`verify-facts` ships it (bundle.build_script -> `python3 -` through the local transport), so
the agent's exclusive scheduling and its timeouts are what is timed. Quick checks (GPU names,
topology) run first, then each measurement alone. Writes DIR/gpu_measured.json (every raw
result, the batch time, each figure's share of its limit) and prints a table. GB/s is 1e9
bytes per second and all-reduce figures are nccl-tests' algbw/busbw, so `all_reduce_perf`
output compares directly.

Limits are the vendor's figures for the GPU named by nvidia-smi (H200 SXM: bf16 dense
989 TFLOP/s, fp8 dense 1979, HBM3e 4.8 TB/s, NVLink 4 450 GB/s per direction; PCIe Gen5 x16
~63 GB/s per direction for every GPU), the same ones facts/h200.yaml states.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from factbook.knowledge.model import Target  # noqa: E402
from factbook.verification.bundle import agent_argv, build_script, merge_calls  # noqa: E402
from factbook.verification.transports.local import LocalTransport  # noqa: E402

PCIE5_X16 = 63.0  # GB/s per direction: 32 GT/s x 16 lanes x 128b/130b
LIMITS = {
    "H200": {"bf16": 989.0, "fp8": 1979.0, "hbm": 4800.0, "nvlink": 450.0},
    "H100": {"bf16": 989.0, "fp8": 1979.0, "hbm": 3350.0, "nvlink": 450.0},
}


def batch(cpu: bool, read_path: str) -> list[tuple[str, str, dict[str, Any], float]]:
    """(key, probe, args, timeout) of the quick checks and the measured batch."""
    dev: dict[str, Any] = {"device": "cpu"} if cpu else {}
    small = cpu
    checks: list[tuple[str, str, dict[str, Any], float]] = []
    if not cpu:
        checks += [
            ("names", "gpu.names", {}, 30),
            ("topology", "gpu.topology", {}, 30),
        ]
    checks += [
        (
            "matmul_bf16",
            "measure.matmul",
            {"dtype": "bf16", **({"size": 256, "repeats": 3, "warmup": 1} if small else {}), **dev},
            60,
        ),
        (
            "memory_bandwidth",
            "measure.memory_bandwidth",
            {**({"size_mib": 16, "repeats": 3, "warmup": 1} if small else {}), **dev},
            60,
        ),
        (
            "pcie",
            "measure.pcie",
            {**({"size_mib": 16, "repeats": 3, "warmup": 1} if small else {}), **dev},
            60,
        ),
        ("read", "measure.read", {"path": read_path, "cache": "both"}, 60),
    ]
    if not cpu:
        checks += [
            ("matmul_fp8", "measure.matmul", {"dtype": "fp8"}, 60),
            ("p2p", "measure.p2p", {}, 60),
            ("allreduce", "measure.allreduce", {"sizes_mib": [1, 16, 64, 256, 1024]}, 120),
        ]
    else:
        args = {"backend": "gloo", "sizes_mib": [1, 4], "repeats": 3, "warmup": 1, "inner": 2}
        checks.append(("allreduce", "measure.allreduce", args, 120))
    return checks


def measured_facts(root: Path, gpus: int) -> list[dict[str, Any]]:
    """The measured facts of facts/h200.yaml this machine can answer: target h200 on one GPU,
    h200 and h200-x2 on two or more. [] where PyYAML is missing."""
    try:
        import yaml
    except ImportError:
        print("PyYAML missing: the facts' expectations are not judged, figures still are")
        return []
    targets = {"h200"} if gpus < 2 else {"h200", "h200-x2"}
    data = yaml.safe_load((root / "facts" / "h200.yaml").read_text(encoding="utf-8"))
    return [
        f
        for f in data.get("facts", [])
        if f.get("target") in targets
        and str(f.get("check", {}).get("probe")).startswith("measure.")
    ]


def count_gpus() -> int:
    """GPUs nvidia-smi lists here (0 without it)."""
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
    except OSError:
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def judge(facts: list[dict[str, Any]], results: dict[str, Any]) -> list[dict[str, Any]]:
    """Each measured fact's verdict: its expectation against the result of its call."""
    try:
        from factbook.judging.expectations import evaluate
    except ImportError as exc:  # packaging missing on the box
        print(f"expectations not judged: {exc}")
        return []
    verdicts = []
    for fact in facts:
        message = results.get(fact["id"]) or {}
        if message.get("ok"):
            outcome = evaluate(fact["check"]["expect"], message["value"])
            verdict = {"fact": fact["id"], "pass": outcome.passed, "reason": outcome.reason}
        else:
            reason = message.get("error") or message.get("skipped") or "no result"
            verdict = {"fact": fact["id"], "pass": False, "reason": reason}
        verdicts.append(verdict)
    return verdicts


def run_batch(
    checks: list[tuple[str, str, dict[str, Any], float]], limit: float = 540.0
) -> dict[str, Any]:
    """Ship the batch to `python3 -` here (local transport); results by key, and timings.
    Past `limit` seconds the agent is killed (its whole group) and what arrived is kept."""
    calls = merge_calls(checks)
    script = build_script(calls, jobs=8)
    transport = LocalTransport(Target(name="local", transport="local"))
    started = time.monotonic()
    proc = transport.start(agent_argv(sys.executable), script.encode(), {})
    watchdog = threading.Timer(limit, proc.kill)
    watchdog.daemon = True
    watchdog.start()
    by_id = {c.id: c for c in calls}
    results: dict[str, Any] = {}
    agent: dict[str, Any] = {}
    for line in proc.lines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if "agent" in message:
            agent = message["agent"]
        elif "done" in message:
            agent["elapsed_s"] = message.get("elapsed_s")
        elif message.get("id") in by_id:
            for key in by_id[message["id"]].keys:
                results[key] = message
                print(f"  {key:18} {_state(message)} {message.get('duration_s', '')}s", flush=True)
    status = proc.wait(timeout=30)
    watchdog.cancel()
    return {
        "results": results,
        "agent": agent,
        "status": status,
        "stderr": proc.stderr_text()[-2000:],
        "batch_s": round(time.monotonic() - started, 2),
    }


def _state(message: dict[str, Any]) -> str:
    if message.get("ok"):
        return "ok"
    return (
        "skipped: " + message["skipped"]
        if "skipped" in message
        else "error: " + str(message.get("error"))
    )


def gpu_limits(results: dict[str, Any]) -> tuple[dict[str, float], bool]:
    """The vendor limits of the GPUs named, and whether NVLink joins them."""
    names = results.get("names", {}).get("value") or []
    limits: dict[str, float] = {}
    for model, figures in LIMITS.items():
        if names and all(model in n for n in names):
            limits = dict(figures)
    topology = results.get("topology", {}).get("value") or {}
    return limits, bool(topology.get("nvlink"))


def rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One table row per figure: value, unit, limit, share of the limit, spread."""
    limits, nvlink = gpu_limits(results)
    link = limits.get("nvlink") if nvlink else PCIE5_X16
    table: list[dict[str, Any]] = []

    def add(name: str, value: Any, unit: str, limit: float | None, spread: Any = None) -> None:
        share = round(value / limit, 3) if limit and isinstance(value, (int, float)) else None
        table.append(
            {
                "figure": name,
                "value": value,
                "unit": unit,
                "limit": limit,
                "share": share,
                "spread": spread,
            }
        )

    def value(key: str) -> dict[str, Any] | None:
        message = results.get(key) or {}
        return message.get("value") if message.get("ok") else None

    for key, limit_key in (("matmul_bf16", "bf16"), ("matmul_fp8", "fp8")):
        got = value(key)
        for gpu, figure in (got or {}).get("values", {}).items():
            add(f"{key} {gpu}", figure, "TFLOP/s", limits.get(limit_key), got["spread"][gpu])
    got = value("memory_bandwidth")
    for gpu, figure in (got or {}).get("values", {}).items():
        add(f"memory copy {gpu}", figure, "GB/s", limits.get("hbm"), got["spread"][gpu])
    got = value("pcie")
    if got:
        for direction in ("h2d", "d2h"):
            for gpu, figure in got[direction]["values"].items():
                link_info = got["links"].get(gpu, {})
                label = f"{direction} {gpu}"
                if link_info:
                    label += f" (Gen{link_info['gen']} x{link_info['width']})"
                add(
                    label,
                    figure,
                    "GB/s",
                    None if not limits else PCIE5_X16,
                    got[direction]["spread"][gpu],
                )
    got = value("p2p")
    for pair, figure in (got or {}).get("values", {}).items():
        add(f"p2p {pair}", figure, "GB/s", link if limits else None, got["spread"][pair])
    got = value("allreduce")
    if got:
        for row in got["sweep"]:
            mib = row["bytes"] / 2**20
            add(
                f"allreduce {mib:g} MiB busbw ({got['ranks']} ranks)",
                row["busbw"],
                "GB/s",
                link if limits else None,
                {"algbw": row["algbw"], "time_us": row["time_us"]},
            )
        if "slowest_link" in got:
            slow = got["slowest_link"]
            name = f"allreduce peak busbw / {slow['pair']} copy"
            add(name, got["busbw_peak"], "GB/s", slow["gbs"], None)
    got = value("read")
    if got:
        for cache in ("cold", "warm"):
            if cache in got:
                add(f"read {cache}", got[cache], "GB/s", None)
    return table


def print_table(table: list[dict[str, Any]]) -> None:
    print(
        f"{'figure':42} {'value':>10} {'unit':8} {'limit':>8} {'share':>6}  spread min/median/max"
    )
    for row in table:
        spread = row["spread"] or {}
        if "min" in spread:
            text = f"{spread['min']}/{spread['median']}/{spread['max']} (n={spread['n']})"
        else:
            text = " ".join(f"{k}={v}" for k, v in spread.items())
        share = f"{row['share']:.0%}" if row["share"] is not None else "-"
        limit = f"{row['limit']:g}" if row["limit"] else "-"
        print(
            f"{row['figure']:42} {row['value']:>10} {row['unit']:8} {limit:>8} {share:>6}  {text}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder for gpu_measured.json")
    parser.add_argument("--cpu", action="store_true", help="tiny sizes on the CPU (gloo)")
    parser.add_argument("--read", help="file or folder to read (default: a temporary file)")
    parser.add_argument("--read-gib", type=float, default=1.0)
    parser.add_argument("--limit", type=float, default=540.0, help="seconds for the batch")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    read_path = args.read
    if read_path is None:
        read_path = os.path.join(tempfile.gettempdir(), f"factbook-read-test-{os.getpid()}.bin")
        size = int((0.03 if args.cpu else args.read_gib) * 2**30)
        with open(read_path, "wb") as handle:
            chunk = os.urandom(2**20)
            for _ in range(size // 2**20):
                handle.write(chunk)
    gpus = 0 if args.cpu else count_gpus()
    facts = [] if args.cpu else measured_facts(ROOT, gpus)
    checks = batch(args.cpu, read_path)
    for fact in facts:
        check = fact["check"]
        checks.append((fact["id"], check["probe"], check.get("args") or {}, check.get("timeout")))
    where = "cpu" if args.cpu else f"{gpus} GPU(s), {len(facts)} measured facts"
    print(f"measured batch on {os.uname().nodename} ({where})")
    try:
        run = run_batch(checks, args.limit)
    finally:
        if args.read is None:
            os.unlink(read_path)
    table = rows(run["results"])
    print_table(table)
    print(f"whole batch: {run['batch_s']} s (agent {run['agent'].get('elapsed_s')} s)")
    verdicts = judge(facts, run["results"])
    for verdict in verdicts:
        print(f"{'PASS' if verdict['pass'] else 'FAIL'} {verdict['fact']}: {verdict['reason']}")
    summary = {
        "host": os.uname().nodename,
        "cpu": args.cpu,
        "gpus": gpus,
        "table": table,
        "facts": verdicts,
        **run,
    }
    path = out / "gpu_measured.json"
    path.write_text(json.dumps(summary, indent=1, default=str), encoding="utf-8")
    print(f"wrote {path}")
    failed = [key for key, *_ in checks if not run["results"].get(key, {}).get("ok")]
    if failed:
        print(f"not measured: {', '.join(failed)}")
    return 0 if run["status"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
