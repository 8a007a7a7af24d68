"""`factbook mcp` driven by the official SDK's own client over stdio, as a real subprocess.

No mocks: the server is `python -m factbook mcp --root KB`, the client is
mcp.ClientSession over mcp.client.stdio.stdio_client, and every check reads what came back
over the wire (structured content, tool errors, resources) and what landed on disk.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from helpers import REPO, SHADOW_PROBE, TOUCH_PROBE, cli, local_trio, make_kb, module_or_skip

from factbook.api import lint, load

# the SDK is imported where a test runs it (under pytest-xdist every worker collects this file)
module_or_skip("mcp", reason="the mcp extra is not installed")
import anyio  # noqa: E402  (the SDK's dependency: after the skip)

if TYPE_CHECKING:
    from mcp import ClientSession

Scenario = Callable[["ClientSession"], Awaitable[None]]


def serve(root: Path, scenario: Scenario, *extra: str) -> None:
    """Start `factbook mcp --root ROOT [EXTRA...]`, initialize, run the scenario, close."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "factbook", "mcp", "--root", str(root), *extra],
        env={"PYTHONPATH": str(REPO / "src"), "NO_COLOR": "1"},
        cwd=str(root),
    )

    async def main() -> None:
        with anyio.fail_after(120):
            async with (
                stdio_client(params) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                await scenario(session)

    anyio.run(main)


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool call that must succeed; its structured result."""
    result = await session.call_tool(tool, arguments)
    text = result.content[0].text if result.content else ""
    assert not result.is_error, text
    assert result.structured_content is not None
    return result.structured_content


async def error(session: ClientSession, tool: str, **arguments: Any) -> str:
    """A tool call that must fail as a tool error of one line; its text."""
    result = await session.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    text = result.content[0].text
    assert "\n" not in text and text.strip(), text
    return text


def test_tools_search_resources_and_hostile_arguments(kb_copy: Path) -> None:
    """One server: every read-only tool, the resources, then hostile arguments, each a
    one-line tool error, and nothing written or read outside the knowledge base."""
    outside = kb_copy.parent / "secret.txt"
    outside.write_text("facts: []\n")

    async def scenario(session: ClientSession) -> None:
        listed = {t.name: t for t in (await session.list_tools()).tools}
        assert set(listed) == {
            "search_facts", "show_fact", "verify_facts", "propose_fact", "propose_change",
            "status_brief", "check_launch", "match_pitfalls",
        }  # fmt: skip
        assert listed["search_facts"].input_schema["required"] == ["query"]
        assert listed["search_facts"].description.startswith("Search the team's facts")

        found = await call(session, "search_facts", query="<|im_end|> token id", limit=3)
        top = {r["id"]: r for r in found["results"]}
        assert top["tok.im_end.id"]["value"] == 163586
        assert top["tok.im_end.id"]["status"] == "verified"
        asked = await call(session, "search_facts", query="which token id really ends a turn?")
        assert 163586 in [r.get("value") for r in asked["results"][:3]]

        only = await call(session, "search_facts", query="token id", category="pitfalls")
        assert only["results"] and all(r["category"] == "pitfalls" for r in only["results"])
        then = await call(session, "search_facts", query="SGLang single-stream", as_of="3157")
        assert "bench.sglang.nccl_tuned.single_stream" not in [r["id"] for r in then["results"]]

        fact = await call(session, "show_fact", id="tok.im_end.id")
        assert fact["check"]["probe"] == "tokenizer.token_id"
        assert fact["sources"][0]["quote"] == "163586 = the REAL <|im_end|> token"
        assert {"relation": "replaces", "id": "tok.im_end.wrong_id"} in fact["linked_from"] or (
            fact["links"]["replaces"] == ["tok.im_end.wrong_id"]
        )

        pits = await call(
            session, "match_pitfalls",
            text="INFO weights loaded in 31s\n(no further output; curl localhost:8000 refused)",
        )  # fmt: skip
        # gone by 3478, still matched for a symptom seen again, and marked as ended
        assert pits["results"][0]["id"] == "pit.sglang-hang-after-weight-loading"
        assert pits["results"][0]["fix"] and pits["results"][0]["until"] == "3478"

        launch = await call(
            session, "check_launch",
            argv=["python", "-m", "sglang.launch_server", "--model-path", "/m",
                  "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "/d",
                  "--speculative-num-steps", "1", "--speculative-eagle-topk", "1",
                  "--speculative-num-draft-tokens", "16"],
        )  # fmt: skip
        assert launch["resolved"]["speculative_num_draft_tokens"] == 2
        assert [f["pitfall"] for f in launch["findings"]] == ["pit.topk1-num-draft-tokens"]

        budgeted = await call(session, "status_brief", budget=400)
        whole = (await call(session, "status_brief"))["document"]
        if "budget" in budgeted:  # api.status renders budgeted dumps (the dense-dumps issue)
            assert len(budgeted["document"]) < len(whole)
        else:
            assert "no budgeted status" in budgeted["note"] and budgeted["document"] == whole
        brief = await call(session, "status_brief", as_of="3478")
        assert brief["document"].startswith("# Status as of milestone 3478")

        resources = {str(r.uri) for r in (await session.list_resources()).resources}
        assert {"factbook://status", "factbook://status/4504", "factbook://fact/tok.im_end.id"} <= (
            resources
        )
        read = await session.read_resource("factbook://fact/tok.im_end.id")
        assert json.loads(read.contents[0].text)["value"] == 163586
        status = await session.read_resource("factbook://status/3157")
        assert status.contents[0].text.startswith("# Status as of milestone 3157")
        await hostile(session)

    serve(kb_copy, scenario)
    assert outside.read_text() == "facts: []\n"
    assert not (kb_copy / "proposals").exists()
    assert not (kb_copy / "results").exists()


async def hostile(session: ClientSession) -> None:
    assert "bad fact id" in await error(session, "show_fact", id="../secret.txt")
    assert "bad fact id" in await error(session, "show_fact", id="/etc/passwd")
    assert "no fact with id" in await error(session, "show_fact", id="tok.nope")
    assert "at most 2000" in await error(session, "search_facts", query="gpu " * 5000)
    assert "limit" in await error(session, "search_facts", query="gpu", limit=10**9)
    assert "unknown milestone" in await error(
        session, "search_facts", query="gpu", as_of="../../etc"
    )
    assert "unknown target" in await error(
        session, "verify_facts", facts=["tok.im_end.id"], target="ssh://root@127.0.0.1"
    )
    assert "unknown target" in await error(
        session, "verify_facts", facts=["tok.im_end.id"], target="../../etc/hosts"
    )
    assert "not a fact id or glob" in await error(session, "verify_facts", facts=["../secret.txt"])
    assert "no fact matches" in await error(session, "verify_facts", facts=["nothing.*"])
    assert "timeout_s" in await error(session, "verify_facts", facts=["hw.cpu.*"], timeout_s=10**6)
    assert "not an SGLang launch" in await error(session, "check_launch", argv="rm -rf /")
    assert "at most 512" in await error(session, "check_launch", argv=["x"] * 600)
    assert "bad fact id" in await error(
            session, "propose_fact", id="../../evil", category="hardware", title="t",
            statement="s", reason="r",
        )  # fmt: skip
    assert "not lint clean" in await error(
            session, "propose_fact", id="hw.evil", category="hardware", title="t",
            statement="s", reason="r", check={"probe": "os.system", "args": {"cmd": "id"}},
        )  # fmt: skip
    assert "cannot be changed" in await error(
        session, "propose_change", id="tok.im_end.id", reason="r", fields={"statement": "x"}
    )
    assert "less than or equal to 1000000" in await error(session, "status_brief", budget=10**12)
    assert "greater than or equal to 100" in await error(session, "status_brief", budget=99)
    huge = await call(session, "match_pitfalls", text="no output " * 30000)
    assert "cut to its last" in huge["note"]
    with pytest.raises(Exception, match=r"security|Unknown resource|no fact"):
        await session.read_resource("factbook://fact/..%2F..%2Fsecret.txt")
    # still serving after all of that
    again = await call(session, "search_facts", query="<|im_end|>", limit=3)
    assert again["count"] == 3


def test_verify_a_local_fact_and_write_facts_setting(tmp_path: Path) -> None:
    root = make_kb(tmp_path / "kb", local_trio())
    (root / "factbook.yaml").write_text("mcp:\n  write_facts: true\n")

    async def scenario(session: ClientSession) -> None:
        run = await call(session, "verify_facts", facts=["hw.cpu.*"], timeout_s=20)
        outcomes = {r["fact"]: r for r in run["results"]}
        assert outcomes["hw.cpu.threads"]["outcome"] == "pass"
        assert outcomes["hw.cpu.threads"]["expected"] == {"ge": 1}
        assert outcomes["hw.cpu.threads"]["observed"] == os.cpu_count()
        assert outcomes["hw.cpu.too_many"]["outcome"] == "drift"
        assert run["summary"] == {"pass": 1, "drift": 1}
        assert (root / run["saved"]).is_file()
        shown = await call(session, "show_fact", id="hw.cpu.threads")
        assert shown["results"][0]["outcome"] == "pass"
        found = await call(session, "search_facts", query="cpu threads")
        assert found["results"][0]["last_verified"][0]["outcome"] == "pass"
        # factbook.yaml allows direct writes: the change lands in facts/ at once, lint clean
        done = await call(
            session, "propose_change", id="hw.cpu.too_many", value=1, reason="measured"
        )
        assert done["written"] == ["facts/facts.yaml"]
        assert "value: 1" in (root / "facts" / "facts.yaml").read_text()
        found = await call(session, "search_facts", query="too_many")  # read again
        assert found["results"][0]["value"] == 1

    serve(root, scenario)
    latest = json.loads((root / "results" / "latest.json").read_text())
    assert latest["hw.cpu.threads"]["local"]["outcome"] == "pass"
    assert lint(root) == []
    assert not (root / "proposals").exists()


def test_propose_accept_reject_and_lint_stays_clean(kb_copy: Path) -> None:
    assert lint(kb_copy) == []
    before = {p: p.read_text() for p in (kb_copy / "facts").glob("*.yaml")}
    made: dict[str, str] = {}

    async def scenario(session: ClientSession) -> None:
        new = await call(
            session, "propose_fact",
            id="hw.cpu.bringup_threads", category="hardware", title="CPU threads of this box",
            statement="This box has at least one CPU thread.", reason="ran nproc",
            value=os.cpu_count(), target="local", tags=["cpu"],
            check={"probe": "cpu.threads", "expect": {"ge": 1}},
        )  # fmt: skip
        assert new["state"] == "waiting for review"
        assert "+  - id: hw.cpu.bringup_threads" in new["diff"]
        made["new"] = new["proposal"]
        change = await call(
            session, "propose_change", id="tok.think.open", status="stale",
            reason="tokenizer replaced on the box", milestone="4504",
        )  # fmt: skip
        made["change"] = change["proposal"]
        assert "+    status: stale" in change["diff"] or "status: stale" in change["diff"]
        # nothing reached facts/ yet
        assert {p: p.read_text() for p in (kb_copy / "facts").glob("*.yaml")} == before

    serve(kb_copy, scenario)
    code, out, err = cli(kb_copy, "proposals", "list")
    assert code == 0 and made["new"] in out and made["change"] in out, err
    code, out, err = cli(kb_copy, "proposals", "accept", made["new"])
    assert code == 0, err
    code, out, err = cli(kb_copy, "proposals", "reject", made["change"], "--why", "not true")
    assert code == 0, err
    assert lint(kb_copy) == []
    text = (kb_copy / "facts" / "hardware.yaml").read_text()
    assert "id: hw.cpu.bringup_threads" in text and "proposed by an assistant over MCP" in text
    assert text.startswith(before[kb_copy / "facts" / "hardware.yaml"][:200])  # comments kept
    assert (kb_copy / "facts" / "tokenizer.yaml").read_text() == before[
        kb_copy / "facts" / "tokenizer.yaml"
    ]
    rejected = yaml.safe_load(
        (kb_copy / "proposals" / "rejected" / f"{made['change']}.yaml").read_text()
    )
    assert rejected["why"] == "not true"
    assert (kb_copy / "proposals" / "accepted" / f"{made['new']}.yaml").is_file()
    code, out, _ = cli(kb_copy, "proposals", "list")
    assert "(0 pending)" in out
    code, _, err = cli(kb_copy, "proposals", "accept", "../../etc")
    assert code == 2 and "bad proposal id" in err

    # the accepted fact is part of the knowledge base now, with its check
    fact = load(kb_copy).facts["hw.cpu.bringup_threads"]
    assert fact.check is not None and fact.check.probe == "cpu.threads"


@pytest.mark.parametrize("budget", [10**12, 1_000_001, 99, -1, True, 1.5, "400", [400]])
def test_status_brief_budget_is_bounded_before_any_work(tmp_path: Path, budget: Any) -> None:
    """The Toolbox refuses a budget outside 100..1,000,000 whole tokens with one line, before
    the knowledge base is read (a string budget was a TypeError: an internal error)."""
    from factbook.errors import UsageError
    from factbook.integrations.mcp.tools import Toolbox

    box = Toolbox(tmp_path)  # no knowledge base here: reading one would fail differently
    with pytest.raises(UsageError, match=r"^budget must be (between 100 and 1,000,000|a whole)"):
        box.status_brief(budget)


def _probe_kb(root: Path) -> tuple[Path, Path, Path]:
    """checks/touch.py leaves a marker when its probe runs, checks/shadow.py (declaring the
    built-in cpu.threads) when it is merely shipped; target `proved` proves its identity
    with the knowledge base's probe."""
    from helpers import fact

    touched, shadowed = root / "touched", root / "shadowed"
    facts = [
        fact("kb.touch", "t.touch", {"eq": 1}, args={"path": str(touched)}, target="local"),
        fact("hw.cpu.threads", "cpu.threads", {"ge": 1}, target="local"),
        fact("sw.env.home", "env.var", {"exists": True}, args={"name": "HOME"}, target="local"),
        fact("sw.env.path", "env.var", {"exists": True}, args={"name": "PATH"}),  # any box
    ]
    targets = {
        "targets": {
            "local": {"transport": "local"},
            "proved": {"transport": "local", "identity": {"facts": ["kb.touch"]}},
        }
    }
    checks = {"touch.py": TOUCH_PROBE, "shadow.py": SHADOW_PROBE % str(shadowed)}
    return make_kb(root / "kb", facts, targets=targets, checks=checks), touched, shadowed


def test_verify_facts_runs_kb_probes_only_with_the_flag(tmp_path: Path) -> None:
    """Issue 25: without --run-kb-probes no code of checks/ runs (not its probes, not a file
    shadowing a built-in, not an identity fact's probe): each such check is an error that
    names the flag, saved with the run; with the flag they run."""
    root, touched, shadowed = _probe_kb(tmp_path)
    seen: dict[str, Any] = {}

    async def refused(session: ClientSession) -> None:
        run = await call(session, "verify_facts", facts=["kb.*", "hw.*", "sw.env.home"])
        seen["run"] = {r["fact"]: r for r in run["results"]}
        seen["saved"] = run["saved"]
        proved = await call(session, "verify_facts", facts=["sw.env.path"], target="proved")
        seen["proved"] = proved["results"]

    serve(root, refused)
    assert not touched.exists() and not shadowed.exists()
    run = seen["run"]
    assert run["kb.touch"]["outcome"] == "error"
    assert "own probe 't.touch' (checks/touch.py)" in run["kb.touch"]["reason"]
    assert "started with --run-kb-probes" in run["kb.touch"]["reason"]
    assert run["hw.cpu.threads"]["outcome"] == "error"
    assert "(checks/shadow.py)" in run["hw.cpu.threads"]["reason"]
    assert run["sw.env.home"]["outcome"] == "pass"
    saved = [json.loads(line) for line in (root / seen["saved"]).read_text().splitlines()]
    assert saved[0]["run"]["summary"]["error"] == 2 and saved[0]["run"]["summary"]["pass"] == 1
    assert {r["fact"] for r in saved[1:]} == {"kb.touch", "hw.cpu.threads", "sw.env.home"}
    [proved] = seen["proved"]
    assert proved["outcome"] == "error" and "proves its identity with" in proved["reason"]

    async def allowed(session: ClientSession) -> None:
        run = await call(session, "verify_facts", facts=["kb.touch", "hw.cpu.threads"])
        assert {r["outcome"] for r in run["results"]} == {"pass"}

    serve(root, allowed, "--run-kb-probes")
    assert touched.exists() and shadowed.exists()
