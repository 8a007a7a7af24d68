# ruff: noqa: E501  (the corpus table keeps one case per line, so a new case is one line)
"""Hostile input, round 11 (issue 25, "Hardening III"): the probes' own reads on the box
(tokenizers, a checkpoint's index and headers), proposals whose file says something else
than its name, benchmark figures no run can produce, and new classes (concurrent writers,
read-only files, export-ansible and completion, overlapping redactions, init, runbooks,
safetensors headers), in the table form of tests/test_hostile_kb.py and checked by its
`run_case` (no traceback, no file outside touched, no payload run), plus plain tests where
a property needs its own driver.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from test_hostile_kb import BENCH_FACT, BENCH_IMPORT, FIFO, PID, Case, bench_line, run_case


def tok_fact(
    path: str, probe: str = "tokenizer.token_id", args: str = "token: x"
) -> dict[str, str | bytes]:
    """A fact whose check reads the tokenizer at `path` on the box (`{kb}` expanded)."""
    return {
        "facts/t.yaml": f"facts:\n  - id: tok.x\n    category: tokenizer\n    title: T\n    statement: S.\n    status: assumed\n    target: here\n    sources: [{{seed: a.txt}}]\n    check: {{probe: {probe}, args: {{path: '{path}', {args}}}, expect: {{eq: 1}}}}\n"
    }


def st_bytes(
    header: object, data: bytes = b"", *, raw: bytes | None = None, length: int | None = None
) -> bytes:
    """A .safetensors file built from plain bytes: the 8-byte length, the header, the data."""
    text = raw if raw is not None else json.dumps(header).encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def ckpt(header: object, data: bytes = b"", **kw: object) -> dict[str, str | bytes]:
    """A draft checkpoint folder `ck/` holding one model.safetensors."""
    return {"ck/model.safetensors": st_bytes(header, data, **kw)}  # type: ignore[arg-type]


F32 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
KEYS = ["eagle3", "keys", "{kb}/ck"]
D2T = ["eagle3", "validate-vocab", "--checkpoint", "{kb}/ck"]
CHECKPOINT_FACT = "facts:\n  - id: tok.x\n    category: tokenizer\n    title: T\n    statement: S.\n    status: assumed\n    target: here\n    sources: [{seed: a.txt}]\n    check: {probe: safetensors.tensors, args: {path: '{kb}/ck'}, expect: {exists: true}}\n"
VERIFY_TOK = ["verify", "tok.x", "--timeout", "60"]

PROPOSAL = f"id: {PID}\ncreated: '2026-01-01T00:00:00Z'\norigin: mcp\nsummary: SUMMARY\nreason: r\nitem:\n  change: {{id: hw.gpu.count, set: {{value: 3}}}}\n"
OTHER = "20260101-000000-bbbbbb"


def proposal(text: str = PROPOSAL, name: str = PID, **replace: str) -> dict[str, str | bytes]:
    """One pending proposal file proposals/NAME.yaml of `text` with `replace` applied."""
    for old, new in replace.items():
        text = text.replace(old, new)
    return {f"proposals/{name}.yaml": text}


BENCH = {"facts/bench.yaml": BENCH_FACT}

# fmt: off
CASES: list[Case] = [
    # --- a. the tokenizer probes read whole files on the box: /dev/zero grew the agent until the timeout ---
    Case("verify: tokenizer.token_id of /dev/zero", tok_fact("/dev/zero"), VERIFY_TOK, 3, "/dev/zero: not a regular file; not read", isolated=True, max_s=30),
    Case("verify: tokenizer.decode of /dev/zero", tok_fact("/dev/zero", "tokenizer.decode", "ids: [1]"), VERIFY_TOK, 3, "/dev/zero: not a regular file; not read", isolated=True, max_s=30),
    Case("verify: tokenizer.json a FIFO", {**tok_fact("{kb}/tk"), "tk/tokenizer.json": FIFO}, VERIFY_TOK, 3, "tokenizer.json: not a regular file; not read", isolated=True, max_s=30),
    Case("verify: tiktoken.model a FIFO", {**tok_fact("{kb}/tk/tiktoken.model"), "tk/tiktoken.model": FIFO}, VERIFY_TOK, 3, "tiktoken.model: not a regular file; not read", isolated=True, max_s=30),
    Case("verify: tokenizer_config.json beside a tiktoken.model a FIFO", {**tok_fact("{kb}/tk"), "tk/tiktoken.model": "YQ== 1\n", "tk/tokenizer_config.json": FIFO}, VERIFY_TOK, 3, "tokenizer_config.json: not a regular file; not read", isolated=True, max_s=30),
    Case("verify: tokenizer.json nested 100,000 deep", {**tok_fact("{kb}/tk"), "tk/tokenizer.json": "{\"a\": " + "[" * 100_000}, VERIFY_TOK, 3, "tokenizer.json: not a tokenizer JSON file (", max_s=30),
    Case("verify: tokenizer_config.json a list", {**tok_fact("{kb}/tk"), "tk/tiktoken.model": "YQ== 1\n", "tk/tokenizer_config.json": "[1]"}, VERIFY_TOK, 3, "tokenizer_config.json: not a tokenizer JSON file (not an object)", max_s=30),
    Case("verify: a tiktoken.model read whole still works", {**tok_fact("{kb}/tk", args="token: a"), "tk/tiktoken.model": "YQ== 1\nYg== 2\n"}, VERIFY_TOK, 0, "1 passed", max_s=30),
    Case("verify: a tokenizer.json still works", {**tok_fact("{kb}/tk", args="token: '<s>'"), "tk/tokenizer.json": json.dumps({"added_tokens": [{"id": 1, "content": "<s>"}], "model": {"vocab": {"a": 0}}})}, VERIFY_TOK, 0, "1 passed", max_s=30),
    # --- a. a checkpoint's index, read by safetensors.* probes and `eagle3`, bounded the same way ---
    Case("eagle3 keys: index a FIFO (passed over, never opened)", {"ck/model.safetensors.index.json": FIFO}, KEYS, 2, "ck: no *.safetensors file here", isolated=True, max_s=30),
    Case("eagle3 keys: index nested 100,000 deep", {"ck/model.safetensors.index.json": "[" * 100_000}, KEYS, 2, "model.safetensors.index.json: invalid JSON: maximum recursion depth"),
    Case("eagle3 keys: index naming a shard outside the folder", {"ck/model.safetensors.index.json": json.dumps({"weight_map": {"a": "../outside/shadow"}})}, KEYS, 2, "weight_map names '../outside/shadow', not a file here"),
    Case("eagle3 keys: index naming an absolute shard", {"ck/model.safetensors.index.json": json.dumps({"weight_map": {"a": "{out}/shadow"}})}, KEYS, 2, "/shadow', not a file here"),
    Case("verify: safetensors.tensors of an index that is a FIFO", {"facts/t.yaml": CHECKPOINT_FACT, "ck/model.safetensors.index.json": FIFO}, VERIFY_TOK, 0, "1 passed", isolated=True, max_s=30),
    Case("verify: safetensors.tensors of a header nested 100,000 deep", {"facts/t.yaml": CHECKPOINT_FACT, "ck/model.safetensors": st_bytes(None, raw=b"[" * 100_000)}, VERIFY_TOK, 3, "bad header: maximum recursion depth", max_s=30),
    # --- new: eagle3 on hostile safetensors headers (plain bytes): each one line, exit 2 ---
    Case("eagle3 keys: header length 2**63", ckpt({}, length=2**63), KEYS, 2, "header length 9223372036854775808, file size"),
    Case("eagle3 keys: header length past the end of the file", ckpt({}, length=1 << 20), KEYS, 2, "header length 1048576, file size 10"),
    Case("eagle3 keys: header not JSON", ckpt(None, raw=b"\x00\xffnot json"), KEYS, 2, "not a safetensors file (bad header:"),
    Case("eagle3 keys: header nested 100,000 deep", ckpt(None, raw=b"[" * 100_000), KEYS, 2, "bad header: maximum recursion depth"),
    Case("eagle3 keys: __metadata__ a list", ckpt({"__metadata__": [1, 2]}), KEYS, 2, "__metadata__ is not an object of strings"),
    Case("eagle3 keys: __metadata__ a string", ckpt({"__metadata__": "ab"}), KEYS, 2, "__metadata__ is not an object of strings"),
    Case("eagle3 keys: __metadata__ of numbers", ckpt({"__metadata__": {"a": 1}}), KEYS, 2, "__metadata__ is not an object of strings"),
    Case("eagle3 keys: shape an integer", ckpt({"fc.weight": {**F32, "shape": 2}}, b"\0" * 8), KEYS, 2, "tensor 'fc.weight': shape is not a list of sizes"),
    Case("eagle3 keys: shape a string", ckpt({"fc.weight": {**F32, "shape": "ab"}}, b"\0" * 8), KEYS, 2, "shape is not a list of sizes"),
    Case("eagle3 keys: shape negative", ckpt({"fc.weight": {**F32, "shape": [-2]}}, b"\0" * 8), KEYS, 2, "shape is not a list of sizes"),
    Case("eagle3 keys: shape 10**30", ckpt({"fc.weight": {**F32, "shape": [10**30, 10**30]}}, b"\0" * 8), KEYS, 2, "shape is not a list of sizes"),
    Case("eagle3 keys: shape of booleans", ckpt({"fc.weight": {**F32, "shape": [True, True]}}, b"\0" * 8), KEYS, 2, "shape is not a list of sizes"),
    Case("eagle3 keys: dtype a list", ckpt({"fc.weight": {**F32, "dtype": ["F32"]}}, b"\0" * 8), KEYS, 2, "dtype is not a name"),
    Case("eagle3 keys: dtype holding ESC", ckpt({"fc.weight": {**F32, "dtype": "F\x1b[2J"}}, b"\0" * 8), KEYS, 2, "dtype is not a name", absent=("\x1b",)),
    Case("eagle3 keys: offsets past the data", ckpt({"fc.weight": {**F32, "data_offsets": [0, 10**12]}}, b"\0" * 8), KEYS, 2, "data_offsets outside the 8 bytes of data"),
    Case("eagle3 keys: offsets reversed", ckpt({"fc.weight": {**F32, "data_offsets": [8, 0]}}, b"\0" * 8), KEYS, 2, "data_offsets outside"),
    Case("eagle3 keys: offsets negative", ckpt({"fc.weight": {**F32, "data_offsets": [-8, 0]}}, b"\0" * 8), KEYS, 2, "data_offsets outside"),
    Case("eagle3 keys: offsets null", ckpt({"fc.weight": {**F32, "data_offsets": None}}, b"\0" * 8), KEYS, 2, "data_offsets outside"),
    Case("eagle3 validate-vocab: d2t without offsets", ckpt({"d2t": {"dtype": "I64", "shape": [4]}}, b"\0" * 32), D2T, 2, "cannot read as safetensors (Error while deserializing header"),
    Case("eagle3 keys: offsets of floats", ckpt({"fc.weight": {**F32, "data_offsets": [0.0, 8.0]}}, b"\0" * 8), KEYS, 2, "data_offsets outside"),
    Case("eagle3 keys: offsets overlapping", ckpt({"a": F32, "b": {**F32, "data_offsets": [4, 12]}}, b"\0" * 12), KEYS, 2, "tensor 'b' overlaps after 'a' of the data"),
    Case("eagle3 keys: a gap between tensors", ckpt({"a": F32, "b": {**F32, "data_offsets": [12, 20]}}, b"\0" * 20), KEYS, 2, "tensor 'b' leaves a gap after 'a'"),
    Case("eagle3 keys: bytes after the last tensor", ckpt({"a": F32}, b"\0" * 12), KEYS, 2, "4 bytes after the last tensor"),
    Case("eagle3 keys: bytes not the shape's", ckpt({"a": {**F32, "shape": [3]}}, b"\0" * 8), KEYS, 2, "tensor 'a': 8 bytes for F32 of shape [3]"),
    Case("eagle3 keys: a dtype never seen is kept as a name", ckpt({"fc.weight": {**F32, "dtype": "F3_NEW"}}, b"\0" * 8), KEYS, 1, "incomplete layout (1 file(s), single file)"),
    Case("eagle3 validate-vocab: d2t of a dtype never seen", ckpt({"d2t": {"dtype": "Q7", "shape": [4], "data_offsets": [0, 32]}}, b"\0" * 32), D2T, 2, "cannot read as safetensors (Error while deserializing header"),
    Case("eagle3 keys: model.safetensors a FIFO", {"ck/model.safetensors": FIFO}, KEYS, 2, "model.safetensors: not a regular file; not read", isolated=True, max_s=30),
    Case("eagle3 keys: a FIFO named *.safetensors in a folder", {"ck/a.safetensors": FIFO}, KEYS, 2, "a.safetensors: not a regular file; not read", isolated=True, max_s=30),
    # --- b. a proposal file's own id: was ignored, a file named by no id listed, a summary printed whole ---
    Case("proposals list: id: [1]", proposal(**{f"id: {PID}": "id: [1]"}), ["proposals", "list"], 2, f"proposals/{PID}.yaml: its id: is [1], not {PID}; not a proposal of this name"),
    Case("proposals accept: id: [1]", proposal(**{f"id: {PID}": "id: [1]"}), ["proposals", "accept", PID], 2, "its id: is [1], not"),
    Case("proposals accept: id naming another proposal", proposal(**{f"id: {PID}": f"id: {OTHER}"}), ["proposals", "accept", PID], 2, f"its id: is {OTHER}, not {PID}"),
    Case("proposals show: id naming another proposal", proposal(**{f"id: {PID}": f"id: {OTHER}"}), ["proposals", "show", PID], 2, f"its id: is {OTHER}, not {PID}"),
    Case("proposals reject: id naming another proposal", proposal(**{f"id: {PID}": f"id: {OTHER}"}), ["proposals", "reject", PID], 2, f"its id: is {OTHER}, not {PID}"),
    Case("proposals accept: no id at all", proposal(**{f"id: {PID}\n": ""}), ["proposals", "accept", PID], 2, f"its id: is None, not {PID}"),
    Case("proposals accept: id of ESC and RLO", proposal(**{f"id: {PID}": 'id: "x\\e\\u202e"'}), ["proposals", "accept", PID], 2, "its id: is x\\x1b\\u202e, not", absent=("\x1b", "\u202e")),
    Case("proposals list: a file whose name holds a newline", {**proposal(), **proposal(name="a\nb")}, ["proposals", "list"], 2, "proposals/a\\nb.yaml: not named by a proposal id (letters, digits and '-'); left out"),
    Case("proposals list: a file named by ESC and RLO", {**proposal(), **proposal(name="a\x1b[31m\u202e")}, ["proposals", "list"], 2, "(1 pending, 1 unreadable)", absent=("\x1b", "\u202e")),
    Case("proposals list --json: a file whose name holds a newline", proposal(name="a\nb"), ["proposals", "list", "--json"], 2, "[]"),
    Case("proposals list: a 1 MB summary is one bounded line", proposal(SUMMARY="x" * 1_000_000), ["proposals", "list"], 0, "x" * 117 + "...  (mcp: r)", absent=("x" * 121,)),
    Case("proposals list: a summary of 5,000 lines is one line", proposal(SUMMARY="'" + "a\n\n" * 5000 + "'"), ["proposals", "list"], 0, "a a a", absent=("\na",)),
    Case("proposals list: a 1 MB origin", proposal(**{"origin: mcp": "origin: " + "o" * 1_000_000}), ["proposals", "list"], 0, "o" * 37 + "...: r)"),
    Case("proposals list: a good one still listed", proposal(), ["proposals", "list"], 0, f"{PID}  SUMMARY  (mcp: r)"),
    Case("proposals accept: a good one still accepted", proposal(), ["proposals", "accept", PID], 0, f"accepted {PID}", then="lint"),
    # --- c. bench import recorded figures no run can measure ---
    Case("bench import: output_throughput -1e308", {**BENCH, "run.jsonl": bench_line(output_throughput=-1e308)}, BENCH_IMPORT, 2, "output_throughput is -1e+308: a throughput, latency or count is a finite number of 0 or more; not recorded"),
    Case("bench import: output_throughput -1", {**BENCH, "run.jsonl": bench_line(output_throughput=-1)}, BENCH_IMPORT, 2, "output_throughput is -1:"),
    Case("bench import: output_throughput NaN", {**BENCH, "run.jsonl": bench_line(output_throughput=float("nan"))}, BENCH_IMPORT, 2, "output_throughput is nan:"),
    Case("bench import: output_throughput Infinity", {**BENCH, "run.jsonl": bench_line(output_throughput=float("inf"))}, BENCH_IMPORT, 2, "output_throughput is inf:"),
    Case("bench import: a negative median TTFT", {**BENCH, "run.jsonl": bench_line(median_ttft_ms=-5.0)}, BENCH_IMPORT, 2, "median_ttft_ms is -5.0:"),
    Case("bench import: a NaN p99 e2e latency", {**BENCH, "run.jsonl": bench_line(p99_e2e_latency_ms=float("nan"))}, BENCH_IMPORT, 2, "p99_e2e_latency_ms is nan:"),
    Case("bench import: a negative request throughput", {**BENCH, "run.jsonl": bench_line(request_throughput=-0.5)}, BENCH_IMPORT, 2, "request_throughput is -0.5:"),
    Case("bench import: completed -3", {**BENCH, "run.jsonl": bench_line(completed=-3)}, BENCH_IMPORT, 2, "completed is -3:"),
    Case("bench import: duration -Infinity", {**BENCH, "run.jsonl": bench_line(duration=float("-inf"))}, BENCH_IMPORT, 2, "duration is -inf:"),
    Case("bench import: total_output_tokens -10**40", {**BENCH, "run.jsonl": bench_line(total_output_tokens=-(10**40))}, BENCH_IMPORT, 2, "total_output_tokens is <huge>:"),
    Case("bench import: vLLM's negative mean e2el", {**BENCH, "run.jsonl": json.dumps({"endpoint_type": "openai", "output_throughput": 5.0, "mean_e2el_ms": -1.0})}, BENCH_IMPORT, 2, "mean_e2el_ms is -1.0:"),
    Case("bench import: request_rate Infinity is sglang's all at once", {**BENCH, "run.jsonl": bench_line(request_rate=float("inf"))}, BENCH_IMPORT, 0, "recorded bench.x = 123.4 tok/s", then="lint"),
    Case("bench import: accept_length 0 is none", {**BENCH, "run.jsonl": bench_line(accept_length=0)}, BENCH_IMPORT, 0, "recorded bench.x = 123.4 tok/s", then="lint"),
    Case("bench import: zero throughput is a figure", {**BENCH, "run.jsonl": bench_line(output_throughput=0)}, BENCH_IMPORT, 0, "recorded bench.x = 0", then="lint"),
    # --- new: a file-system refusal naming a path is one line, whatever command meets it ---
    Case("export-ansible -o into a folder under a file", {"f": "x"}, ["export-ansible", "-o", "{kb}/f/sub/"], 2, "/f/sub: Not a directory"),
    Case("export-ansible -o a folder in read-only /sys", {}, ["export-ansible", "-o", "/sys/factbook-round11/"], 2, "/sys/factbook-round11: "),
    Case("status --out into a folder in read-only /sys", {}, ["status", "--out", "/sys/factbook-round11/s.md"], 2, "/sys/factbook-round11"),
    Case("docs --out a folder in read-only /sys", {}, ["docs", "--out", "/sys/factbook-round11"], 2, "/sys/factbook-round11"),
    Case("export-ansible -o a name too long", {}, ["export-ansible", "-o", "{kb}/" + "n" * 300 + "/"], 2, "File name too long"),
    Case("export-ansible -o a folder with a newline in its name", {}, ["export-ansible", "-o", "{kb}/a\nb/"], 0, "factbook.fact"),
    Case("eagle3 keys: model.safetensors -> /dev/zero", {"ck/model.safetensors": b"", "ck/x": b""}, ["eagle3", "keys", "/dev/zero"], 2, "/dev/zero", isolated=True, max_s=30),
]
# fmt: on


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_round11(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_cases_named_once() -> None:
    assert len({c.name for c in CASES}) == len(CASES)


def test_probe_reads_refuse_a_huge_sparse_file_before_reading(tmp_path: Path) -> None:
    """A tokenizer or index of a terabyte (sparse: no disk) is refused by its size, unread,
    in one line; the bounds are generous enough for real files (see their comments)."""
    import resource

    from factbook.probes.common import INDEX_READ_MAX_BYTES, SafetensorsError, safetensors_files
    from factbook.probes.ml import TOKENIZER_READ_MAX_BYTES, tokenizer_token_id

    assert TOKENIZER_READ_MAX_BYTES >= 128 << 20 and INDEX_READ_MAX_BYTES >= 32 << 20
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for name in ("tokenizer.json", "tiktoken.model"):
        folder = tmp_path / name.split(".")[0]
        folder.mkdir()
        with open(folder / name, "wb") as handle:
            handle.truncate(1 << 40)
        with pytest.raises(
            RuntimeError, match=f"{name}: 1099511627776 bytes, larger than 268435456; not read"
        ):
            tokenizer_token_id(str(folder), "a")
    (tmp_path / "ck").mkdir()
    with open(tmp_path / "ck" / "model.safetensors.index.json", "wb") as handle:
        handle.truncate(1 << 40)
    with pytest.raises(SafetensorsError, match="larger than 67108864; not read"):
        safetensors_files(str(tmp_path / "ck"))
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) < 64 * 1024  # KiB


def test_real_safetensors_files_still_read(tmp_path: Path) -> None:
    """The header checks are the library's own: a file safetensors wrote, of every dtype
    torch has here (zero-size and scalar tensors included), reads as before."""
    torch = pytest.importorskip("torch")
    save_file = pytest.importorskip("safetensors.torch").save_file
    from factbook.probes.common import safetensors_header

    tensors = {
        "e": torch.zeros((), dtype=torch.int64),
        "c": torch.zeros(0, 4),
        "a": torch.zeros(3, 5, dtype=torch.bfloat16),
        "b": torch.ones(7, dtype=torch.bool),
        "d": torch.zeros(2, 2, dtype=torch.float8_e4m3fn),
        "f": torch.zeros(3, dtype=torch.complex64),
        "g": torch.zeros(3, dtype=torch.float16),
        "h": torch.zeros(3, dtype=torch.uint8),
    }
    save_file(tensors, str(tmp_path / "x.safetensors"), metadata={"format": "pt"})
    header, metadata, start = safetensors_header(str(tmp_path / "x.safetensors"))
    assert sorted(header) == sorted(tensors) and metadata == {"format": "pt"} and start > 8


def test_read_only_knowledge_base_is_refused_in_one_line(tmp_path: Path) -> None:
    """An immutable fact file, facts/, results/, docs/status/ and output folder (chattr +i:
    read-only even to root): each write is one line naming the file, exit 2, nothing
    half-written and no traceback."""
    import shutil
    import subprocess

    from test_hostile_kb import ASSUMED, _in_process, make_outside, plant

    if shutil.which("chattr") is None:
        pytest.skip("no chattr")
    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(
        root,
        out,
        {"facts/good.yaml": ASSUMED, "dump.md": "# Status\n\n## Software\n\n- torch 2.5.1\n"},
    )
    for folder in ("results", "docs/status", "out"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    tries = [
        ("results", ["verify", "hw.gpu.count"], "results/.latest.lock: cannot open the lock file"),
        (
            "facts/good.yaml",
            ["verify", "hw.gpu.count", "--record"],
            "facts/good.yaml: could not save",
        ),
        (
            "facts",
            ["import", str(root / "dump.md"), "--milestone", "1", "--write"],
            "could not save",
        ),
        ("docs/status", ["status"], "could not save"),
        (
            "out",
            ["export-ansible", "-o", str(root / "out" / "sub") + "/"],
            "out/sub: Operation not permitted",
        ),
        ("out", ["docs", "--out", str(root / "out" / "site")], "out/site"),
    ]
    for locked, argv, fragment in tries:
        if subprocess.run(["chattr", "+i", str(root / locked)], capture_output=True).returncode:
            pytest.skip("chattr +i refused here")
        try:
            before = _snapshot(root / locked)
            code, output, _ = _in_process(["--root", str(root), *argv], 30)
        finally:
            subprocess.run(["chattr", "-i", str(root / locked)], check=True)
        assert code == 2 and "Traceback" not in output, (argv, code, output[-2000:])
        assert fragment in output and len(output.strip().splitlines()[-1]) < 500, (
            argv,
            output[-2000:],
        )
        assert _snapshot(root / locked) == before, argv


def _snapshot(path: Path) -> object:
    """What a read-only file or folder holds: its bytes, or its entries' names."""
    return path.read_bytes() if path.is_file() else sorted(str(p) for p in path.rglob("*"))
