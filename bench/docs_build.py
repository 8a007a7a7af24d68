"""Handbook build time on a synthetic knowledge base (--full: 1,000 facts, 20 runbooks).

    .venv/bin/python bench/docs_build.py [--full] [--facts N] [--runbooks N] [--repeat N]
                                         [--no-baseline] [--json] [--serve-edits N]
    .venv/bin/python bench/docs_build.py --full --compare OTHER/src [--rounds N]

Small by default (100 facts, 4 runbooks); --full is the issue's size. The full build with the
plugin and plain mkdocs on the same pages run --repeat times, alternating, and their medians
and the median of the per-pair ratios are reported (the machine may be shared). --compare SRC
runs only the serve case, alternating another source tree and this one on one knowledge base.

Cases (wall seconds; mkdocs runs as a subprocess, as a user runs it):
  generate             the generator alone, cold (load KB + results + runbooks, render pages)
  mkdocs build         `mkdocs build` with the hook: generation + MkDocs-Material rendering
  regenerate 1 fact    one fact's title edited; a warm generator renders only what changed
  serve rebuild        what `mkdocs serve` does after that edit: an in-process rebuild with the
                       plugins kept across builds as serve keeps them (unchanged pages reused)
  served after edit    what a reader waits for: a real `mkdocs serve`, one fact's title
                       saved, until the fact's page is served with the new title (--serve-edits
                       edits, each timed from the write to the first response that has it);
                       split by the serve log's lines, stamped as they arrive, into saved ->
                       change detected -> site rebuilt -> page served, with the server's CPU
                       seconds (/proc) from the write to the response
  mkdocs alone         plain `mkdocs build` (no hook) of the very same pages, pre-generated
  one page per fact    the naive layout: every fact its own page, built by plain mkdocs

The synthetic facts are bench/status_render.py's (same knowledge base for both budgets).
Exits 1 when the full build exceeds 10 s or one changed fact takes over 1 s to regenerate.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from status_render import build_kb

from factbook.handbook import Generator, write_tree

REPO = Path(__file__).resolve().parents[1]
# the factbook plugin comes from the mkdocs.plugins entry point (pip install -e .)
FULL_BUDGET_S = 10.0
REGEN_BUDGET_S = 1.0
RUNBOOK_FRONT = """\
---
jupytext:
  text_representation: {{extension: .md, format_name: myst}}
kernelspec: {{display_name: Python 3, language: python, name: python3}}
factbook:
  target: llm-two
  description: Synthetic runbook {n} for the handbook benchmark.
---

# Runbook {n}

Bring the box from a clean state to a measured benchmark.
"""


def add_runbooks(root: Path, count: int) -> None:
    """`count` runbooks of six steps, each with three recorded runs."""
    (root / "runbooks").mkdir(exist_ok=True)
    for n in range(count):
        parts = [RUNBOOK_FRONT.format(n=n)]
        for s in range(6):
            meta = {"name": f"step-{s}", "timeout": 60 * (s + 1)}
            if s == 5:
                meta["destructive"] = True
            front = yaml.safe_dump(meta, default_flow_style=None, sort_keys=False).strip()
            parts.append(f"\n```{{code-cell}} ipython3\n---\n{front}\n---\nprint({s})\n```\n")
        (root / "runbooks" / f"book-{n:02d}.md").write_text("".join(parts), encoding="utf-8")
        for r in range(3):
            run_id = f"20261129T1{r}0000.000000Z-llm-two"
            folder = root / "results" / "runbooks" / f"book-{n:02d}" / run_id
            folder.mkdir(parents=True)
            steps = [
                {
                    "name": f"step-{s}",
                    "status": "ok" if s < 5 or r else "failed",
                    "duration_s": 0.5 * s,
                }
                for s in range(6)
            ]
            record = {
                "runbook": f"book-{n:02d}",
                "run_id": run_id,
                "steps": steps,
                "status": "ok" if r else "failed",
                "started": f"2026-11-29T1{r}:00:00Z",
                "finished": f"2026-11-29T1{r}:00:09Z",
            }
            (folder / "record.json").write_text(json.dumps(record), encoding="utf-8")


def mkdocs_config(
    root: Path, *, hooks: bool, docs_dir: str = "docs", nav: list[Any] | None = None
) -> Path:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    config["docs_dir"] = docs_dir
    if hooks:
        config.setdefault("plugins", ["search", "factbook"])
    else:  # plain MkDocs over pages written to disk: no plugin
        config["plugins"] = [p for p in config.get("plugins", []) if p != "factbook"]
        config["extra_css"] = ["assets/factbook.css"]
        if nav is not None:
            config["nav"] = nav
    name = "mkdocs.yml" if hooks else f"mkdocs-{docs_dir.replace('/', '-')}.yml"
    path = root / name
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


CPU: dict[str, float] = {}  # case -> CPU seconds (user + sys), for runs on a busy machine


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def mkdocs_build(root: Path, config: Path, case: str) -> float:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    cpu = _children_cpu()
    started = time.perf_counter()
    proc = subprocess.run(
        [
            str(Path(sys.executable).with_name("mkdocs")),
            "build",
            "-q",
            "-f",
            str(config),
            "-d",
            str(root / "site"),
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    took = time.perf_counter() - started
    CPU[case] = _children_cpu() - cpu
    if proc.returncode != 0:
        raise SystemExit(f"mkdocs build failed:\n{proc.stderr[-3000:]}")
    return took


def edited_file(root: Path) -> Path:
    """The fact file the edits go to: the fourth of ten at 1,000 facts, else the last."""
    files = sorted((root / "facts").glob("part*.yaml"))
    return files[min(3, len(files) - 1)]


def edit_one_fact(root: Path, marker: str) -> None:
    path = edited_file(root)
    text = path.read_text(encoding="utf-8")
    start = text.index("title: ")
    end = text.index("\n", start)
    path.write_text(text[:start] + f"title: edited {marker}" + text[end:], encoding="utf-8")


def serve_rebuild(root: Path, config: Path) -> tuple[float, float]:
    """A warm in-process build, then the rebuild `mkdocs serve` does after one fact edit."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    os.environ["NO_MKDOCS_2_WARNING"] = "1"
    cwd = os.getcwd()
    os.chdir(root)
    url = "http://127.0.0.1:8000/"

    def load() -> Any:  # as mkdocs serve's builder does: a fresh config, kept plugins
        loaded = load_config(str(config), site_dir=str(root / "site-serve"))
        loaded.site_url = url
        return loaded

    try:
        first_config = load()
        first_config.plugins.on_startup(command="serve", dirty=False)
        started, cpu = time.perf_counter(), time.process_time()
        build(first_config, serve_url=url)
        first = time.perf_counter() - started
        CPU["serve_first_build_s"] = time.process_time() - cpu
        edit_one_fact(root, "serve")
        started, cpu = time.perf_counter(), time.process_time()
        build(load(), serve_url=url)
        CPU["serve_rebuild_s"] = time.process_time() - cpu
        return first, time.perf_counter() - started
    finally:
        os.chdir(cwd)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as response:
        return response.read().decode("utf-8", errors="replace")


class ServeLog:
    """mkdocs serve's output, each line stamped with when it arrived (the log has no times):
    where an edit's wait goes, between the watcher, the rebuild and the response."""

    def __init__(self, stream: Any, copy: Path) -> None:
        self.lines: list[tuple[float, str]] = []
        self._copy = copy.open("w", encoding="utf-8")
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: Any) -> None:
        for raw in stream:
            line = raw.decode("utf-8", errors="replace").rstrip()
            self.lines.append((time.perf_counter(), line))
            self._copy.write(line + "\n")
            self._copy.flush()

    def first_after(self, started: float, needle: str) -> float | None:
        return next((t for t, line in list(self.lines) if t >= started and needle in line), None)

    def close(self) -> None:
        self._thread.join(timeout=20)
        self._copy.close()


PHASES = (  # (name, the serve log line that ends it)
    ("detected", "Detected file changes"),
    ("built", "Reloading browsers"),
)


def _process_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a running process and its threads, 0.0 off Linux."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def served_after_edit(root: Path, config: Path, edits: int) -> tuple[list[float], dict[str, Any]]:
    """Seconds from saving one fact's title to `mkdocs serve` serving its page with it, and
    where they went (per edit: saved -> change detected -> site rebuilt -> page served).

    What a reader of an open page waits for: the watcher's debounce, the whole rebuild
    (generation + MkDocs-Material) and the page request (mkdocs serve answers a request made
    during a rebuild once the rebuild is done). Each edit is timed alone.
    """
    path = edited_file(root)
    first = yaml.safe_load(path.read_text(encoding="utf-8"))["facts"][0]
    port = _free_port()
    page = f"http://127.0.0.1:{port}/facts/{first['category']}.html"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    mkdocs = str(Path(sys.executable).with_name("mkdocs"))
    # the log's copy lives outside the knowledge base: mkdocs serve watches its root folder,
    # and a log written there would trigger a rebuild per line it writes
    proc = subprocess.Popen(
        [mkdocs, "serve", "-f", str(config), "-a", f"127.0.0.1:{port}"],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    log = ServeLog(proc.stdout, root.parent / "serve.log")
    try:
        deadline = time.monotonic() + 300
        while True:  # the first build
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("mkdocs serve did not start:\n" + _tail(root.parent / "serve.log"))
            try:
                _get(page)
                break
            except OSError:
                time.sleep(0.2)
        times: list[float] = []
        phases: dict[str, list[float]] = {name: [] for name, _ in PHASES} | {"served": []}
        cpu: list[float] = []
        for n in range(edits):
            time.sleep(1.0)  # let the watcher settle, as between two saves by hand
            marker = f"served{n}x{os.getpid()}"
            cpu_before = _process_cpu(proc.pid)
            started = time.perf_counter()
            edit_one_fact(root, marker)
            while marker not in _get(page):
                if time.perf_counter() - started > 120:
                    log_tail = _tail(root.parent / "serve.log")
                    raise SystemExit(f"the edit never reached the page:\n{log_tail}")
                time.sleep(0.02)
            done = time.perf_counter()
            cpu.append(round(_process_cpu(proc.pid) - cpu_before, 3))
            times.append(done - started)
            time.sleep(0.2)  # the log line may trail the response by a moment
            last = started
            for name, needle in PHASES:
                at = log.first_after(started, needle)
                if at is not None:
                    phases[name].append(round(at - last, 3))
                    last = at
            phases["served"].append(round(done - last, 3))
        return times, phases | {"cpu": cpu}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _tail(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")[-3000:]


def one_page_per_fact(root: Path, pages: dict[str, str]) -> int:
    """The naive layout: split every category page into one page per fact."""
    out = root / "naive"
    count = 0
    for uri, text in pages.items():
        if not uri.startswith("facts/") or uri == "facts/index.md":
            continue
        for block in text.split("\n### ")[1:]:
            title, _, body = block.partition("\n")
            fact_id = title.rsplit("{#", 1)[-1].rstrip("} ")
            (out / "facts").mkdir(parents=True, exist_ok=True)
            (out / "facts" / f"{fact_id}.md").write_text(f"# {title}\n{body}", encoding="utf-8")
            count += 1
    (out / "index.md").write_text("# Facts\n", encoding="utf-8")
    shutil.copytree(REPO / "src/factbook/handbook/templates", out / "assets", dirs_exist_ok=True)
    return count


def serve_ab(facts: int, runbooks: int, other: Path, rounds: int, edits: int) -> int:
    """`mkdocs serve` edit -> served, alternating another source tree (`--compare SRC`, e.g.
    main's src/) and this one on one knowledge base, in the same minutes."""
    trees = {"compare": str(other.resolve()), "this": str(REPO / "src")}
    seen: dict[str, dict[str, list[float]]] = {k: {"wall": [], "cpu": []} for k in trees}
    with tempfile.TemporaryDirectory(prefix="docs-ab-") as tmp:
        root = build_kb(Path(tmp) / "kb", facts)
        add_runbooks(root, runbooks)
        (root / "docs").mkdir()
        config = mkdocs_config(root, hooks=True)
        saved = os.environ.get("PYTHONPATH")
        try:
            for n in range(rounds):
                for name, src in trees.items():
                    os.environ["PYTHONPATH"] = src  # the mkdocs serve subprocess's factbook
                    times, phases = served_after_edit(root, config, edits)
                    seen[name]["wall"] += times
                    seen[name]["cpu"] += phases["cpu"]
                    walls = ", ".join(f"{t:.2f}" for t in times)
                    cpus = ", ".join(f"{t:.2f}" for t in phases["cpu"])
                    print(f"round {n + 1} {name:<8} {src}: {walls} s (server cpu {cpus} s)")
        finally:
            if saved is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = saved
    for name, values in seen.items():
        wall, cpu = statistics.median(values["wall"]), statistics.median(values["cpu"] or [0])
        print(f"{name:<8} median {wall:.2f} s, server cpu {cpu:.2f} s")
    ratio = statistics.median(seen["this"]["wall"]) / statistics.median(seen["compare"]["wall"])
    print(f"this / compare: {ratio:.2f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="1,000 facts and 20 runbooks")
    parser.add_argument("--facts", type=int, help="default 100, 1,000 with --full")
    parser.add_argument("--runbooks", type=int, help="default 4, 20 with --full")
    parser.add_argument("--repeat", type=int, default=3, help="build pairs (plugin, plain)")
    parser.add_argument("--no-baseline", action="store_true", help="skip one page per fact")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--serve-edits", type=int, default=3, help="edits timed under a real mkdocs serve"
    )
    parser.add_argument(
        "--compare",
        type=Path,
        metavar="SRC",
        help="only the serve A/B: alternate SRC (another tree's src/) and this tree",
    )
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the --compare A/B")
    args = parser.parse_args(argv)
    if args.facts is None:
        args.facts = 1000 if args.full else 100
    if args.runbooks is None:
        args.runbooks = 20 if args.full else 4
    if args.compare is not None:
        return serve_ab(args.facts, args.runbooks, args.compare, args.rounds, args.serve_edits)
    results: dict[str, Any] = {"facts": args.facts, "runbooks": args.runbooks}
    with tempfile.TemporaryDirectory(prefix="docs-bench-") as tmp:
        root = build_kb(Path(tmp) / "kb", args.facts)
        add_runbooks(root, args.runbooks)
        (root / "docs").mkdir()
        config = mkdocs_config(root, hooks=True)

        generator = Generator()
        started, cpu = time.perf_counter(), time.process_time()
        handbook = generator.generate(root, docs_dir=root / "docs")
        results["generate_s"] = time.perf_counter() - started
        CPU["generate_s"] = time.process_time() - cpu
        results["pages"] = len(handbook.pages)
        results["generate_parts_s"] = handbook.seconds

        plain = mkdocs_config(root, hooks=False, docs_dir="generated", nav=handbook.nav)
        write_tree(handbook, root / "generated")
        hooked, alone = [], []
        for _ in range(max(1, args.repeat)):  # alternating, so load hits both alike
            hooked.append(mkdocs_build(root, config, "mkdocs_build_s"))
            alone.append(mkdocs_build(root, plain, "mkdocs_alone_s"))
        results["mkdocs_build_all_s"] = [round(t, 3) for t in hooked]
        results["mkdocs_alone_all_s"] = [round(t, 3) for t in alone]
        results["mkdocs_build_s"] = statistics.median(hooked)
        results["mkdocs_alone_s"] = statistics.median(alone)
        ratios = [h / a for h, a in zip(hooked, alone, strict=True)]
        results["build_ratio"] = statistics.median(ratios)

        edit_one_fact(root, "regen")
        started, cpu = time.perf_counter(), time.process_time()
        again = generator.generate(root, docs_dir=root / "docs")
        results["regenerate_s"] = time.perf_counter() - started
        CPU["regenerate_s"] = time.process_time() - cpu
        results["regenerated_pages"] = again.rendered
        out = root / "generated"
        write_tree(handbook, out)
        edit_one_fact(root, "write")
        started, cpu = time.perf_counter(), time.process_time()
        written = write_tree(generator.generate(root, docs_dir=root / "docs"), out)
        results["regenerate_and_write_s"] = time.perf_counter() - started
        CPU["regenerate_and_write_s"] = time.process_time() - cpu
        results["written_files"] = written

        results["serve_first_build_s"], results["serve_rebuild_s"] = serve_rebuild(root, config)

        if args.serve_edits > 0:
            served, phases = served_after_edit(root, config, args.serve_edits)
            results["served_after_edit_all_s"] = [round(t, 3) for t in served]
            results["served_phases_s"] = phases
            server_cpu = phases.pop("cpu")
            if any(server_cpu):
                CPU["served_after_edit_s"] = statistics.median(server_cpu)
            results["served_after_edit_s"] = statistics.median(served)

        if not args.no_baseline:
            results["naive_pages"] = one_page_per_fact(root, handbook.pages)
            naive = mkdocs_config(root, hooks=False, docs_dir="naive")
            results["naive_build_s"] = mkdocs_build(root, naive, "naive_build_s")

    results["cpu_s"] = dict(CPU)
    ok = results["mkdocs_build_s"] <= FULL_BUDGET_S and results["regenerate_s"] <= REGEN_BUDGET_S
    if args.json:
        print(json.dumps(results, indent=1))
        return 0 if ok else 1
    f, n = args.facts, args.runbooks
    print(f"handbook of {f} facts, {n} runbooks: {results['pages']} pages")
    rows = [
        ("generate (cold)", "generate_s", ""),
        ("mkdocs build, hook generates", "mkdocs_build_s", f"budget {FULL_BUDGET_S} s"),
        (
            "regenerate after 1 fact edit",
            "regenerate_s",
            f"budget {REGEN_BUDGET_S} s; rendered {', '.join(results['regenerated_pages'])}",
        ),
        (
            "  + write changed files",
            "regenerate_and_write_s",
            f"wrote {', '.join(results['written_files'])}",
        ),
        ("serve: first build in process", "serve_first_build_s", ""),
        ("serve: rebuild after 1 fact edit, in process", "serve_rebuild_s", ""),
        (
            "mkdocs alone, same pages, no hook",
            "mkdocs_alone_s",
            f"plugin build / plain: {results['build_ratio']:.3f} (median of pairs)",
        ),
    ]
    if "served_after_edit_s" in results:
        every = ", ".join(f"{t:.2f}" for t in results["served_after_edit_all_s"])
        rows.append(
            (
                "mkdocs serve: edit saved -> page served",
                "served_after_edit_s",
                f"median of {every} s; cpu: the server's, edit to response",
            )
        )
        for name, values in results["served_phases_s"].items():
            if values:
                results[f"served_{name}_s"] = statistics.median(values)
                label = {"detected": "saved -> change detected", "built": "-> site rebuilt"}
                rows.append(
                    (f"  {label.get(name, '-> page served')}", f"served_{name}_s", "median")
                )
    if "naive_build_s" in results:
        rows.append(
            (
                f"mkdocs, one page per fact ({results['naive_pages']} pages)",
                "naive_build_s",
                "the layout this design avoids",
            )
        )
    print(f"  {'case':<46} {'wall':>7}    {'cpu':>7}")
    for label, key, note in rows:
        print(f"  {label:<46} {results[key]:7.2f} s  {CPU.get(key, 0.0):7.2f} s  {note}")
    print("within budget" if ok else "OVER BUDGET")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
