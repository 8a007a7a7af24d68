# ruff: noqa: E501  (the corpus table keeps one case per line, so a new case is one line)
"""Hostile knowledge bases (issue 25): reading one never runs its code, reads outside it,
hangs, or locks you out of it.

The corpus is a table. Each case: files planted over a small valid knowledge base, the
command, the exit code, a fragment its output must contain, the most RSS and seconds it may
take, and two properties checked for every case: no file outside the knowledge base changes
(and the content of a planted secret outside it never appears in any output), and no marker
file appears (a payload that ran would create it).

A case runs in-process (fast; a SIGALRM time limit and the growth of this process's peak RSS)
unless it is `isolated`: then it runs as `prlimit --as=... python -m factbook` with a
wall-clock limit and its own peak RSS, because what it checks (a hang, a memory bomb) must be
stopped from outside.
"""

from __future__ import annotations

import io
import os
import resource
import shlex
import shutil
import signal
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers import PEAK_RSS_CLI

from factbook.commands.cli import run

SECRET = "s3cr3t-0f-the-0utside"  # the content of every file outside the knowledge base
BASE = {
    "milestones.yaml": 'milestones:\n  - {id: "1", title: first}\n',
    "targets.yaml": "targets:\n  here: {transport: local}\n  box: {host: box.invalid, user: root}\n",
    "facts/good.yaml": (
        "facts:\n  - id: hw.gpu.count\n    category: hardware\n    title: GPU count\n"
        "    statement: The box has 8 GPUs.\n    value: 8\n    status: verified\n"
        "    target: here\n    sources: [{seed: a.txt}]\n"
        "    check: {probe: env.var, args: {name: HOME}, expect: {exists: true}}\n"
    ),
}

ASSUMED = BASE["facts/good.yaml"].replace("status: verified", "status: assumed")  # --record edits


@dataclass(frozen=True)
class Link:
    """A symbolic link to plant; `{out}` in `to` is the folder outside the knowledge base."""

    to: str


FIFO = Link("")

COMMANDS = {
    "lint": ["lint"],
    "list": ["list"],
    "show": ["show", "hw.gpu.count"],
    "status": ["status", "--out", "-"],
    "docs": ["docs", "--out", "_site_md"],
    "verify-dry": ["verify", "--dry-run"],
    "verify": ["verify", "hw.gpu.count"],
    "export-ansible": ["export-ansible", "--out", "-"],
}


@dataclass(frozen=True)
class Case:
    """One hostile input and what must come of it."""

    name: str
    files: dict[str, str | bytes | Link]
    command: str | list[str]  # a COMMANDS key, or argv after --root ({out}/{kb} expanded)
    code: int
    fragment: str
    max_rss_mb: int = 200
    max_s: float = 10.0
    isolated: bool = False
    env: dict[str, str] = field(default_factory=dict)
    fsize: int | None = None  # RLIMIT_FSIZE for an isolated case: a disk that fills up
    absent: tuple[str, ...] = ()  # must appear in no output (a secret, a raw control char)
    then: str | list[str] | None = None  # read back what the command wrote: must exit 0


def tpl(payload: str) -> dict[str, str | bytes | Link]:
    """The status template replaced by `payload`."""
    return {"templates/status/status.md.j2": payload}


def macros(payload: str) -> dict[str, str | bytes | Link]:
    """Only `_macros.j2` overridden (in templates/, the less specific folder)."""
    return {
        "templates/_macros.j2": "{% macro line(item) %}"
        + payload
        + "{% endmacro %}{% macro items(list) %}{% for i in list %}{{ line(i) }}{% endfor %}{% endmacro %}{% macro progress(list, numbered=false) %}{{ items(list) }}{% endmacro %}"
    }


MARK = "{out}/MARKER"
# a hand-written dump naming a box and a version on it: an import proposes a target and a fact
IMPORT_DUMP = "# Status\n\n## Access\n\n- Node: ssh ubuntu@node-a.example -p 2202\n\n## Software\n\n- torch 2.5.1\n"
# Known Jinja2 escapes: each would create MARK (or print Python internals) if it ran.
ESCAPES = {
    "cycler globals": "{{ cycler.__init__.__globals__.os.system('touch " + MARK + "') }}",
    "joiner globals": "{{ joiner.__init__.__globals__.os.popen('touch " + MARK + "').read() }}",
    "namespace globals": "{{ namespace.__init__.__globals__.os.system('touch " + MARK + "') }}",
    "lipsum globals": "{{ lipsum.__globals__['os'].system('touch " + MARK + "') }}",
    "range self": "{{ range.__self__.__import__('os').system('touch " + MARK + "') }}",
    "subclasses": "{% for c in ''.__class__.__mro__[1].__subclasses__() %}{% if c.__name__ == 'Popen' %}{{ c(['touch', '"
    + MARK
    + "']) }}{% endif %}{% endfor %}",
    "attr filter": "{{ ''|attr('__class__')|attr('__mro__') }}",
    "format string": "{{ '{0.__class__.__mro__[1].__subclasses__}'.format('') }}",
    "format_map": "{{ '{x.__class__}'.format_map({'x': 1}) }}",
    "percent format": "{{ '%(a)s' % {'a': cycler.__init__} }}",
    "list mutation": "{% set xs = [1] %}{{ xs.append(2) }}{{ xs }}",
    "dict mutation": "{% set d = {} %}{{ d.update(a=1) }}",
    "self context": "{{ self._TemplateReference__context.environment }}",
    "macro func globals": "{% macro m() %}{% endmacro %}{{ m._func.__globals__ }}",
    "loop internals": "{% for i in [1] %}{{ loop.__class__.__init__.__globals__ }}{% endfor %}",
    "getitem dunder": "{{ cycler['__init__']['__globals__'] }}",
    "power bomb": "{{ 99999 ** 9999999 }}",
    "repeat bomb": "{{ 'x' * 10000000000 }}",
    "self include": "{% include 'status.md.j2' %}",
}
# Strings a template asks for by size: each would take gigabytes if it were made.
SIZE_BOMBS = {
    "percent width": "{{ '%999999999d' % 1 }}",
    "percent star width": "{{ '%*d' % (999999999, 1) }}",
    "format width": "{{ '{:>999999999}'.format(1) }}",
    "format nested width": "{{ '{:>{w}}'.format(1, w=999999999) }}",
    "format_map width": "{{ '{a:>999999999}'.format_map({'a': 1}) }}",
    "center filter": "{{ 'x'|center(10 ** 10) }}",
    "ljust method": "{{ 'x'.ljust(10 ** 10) }}",
    "zfill method": "{{ '1'.zfill(10 ** 10) }}",
    "indent filter": "{{ ('x\\n' * 1000)|indent(10 ** 7) }}",
    "format filter": "{{ '%999999999s'|format('x') }}",
    "replace method": "{{ ('x' * 1000000).replace('x', 'yy' * 500000) }}",
    "replace filter": "{{ ('x' * 1000000)|replace('x', 'yy' * 500000) }}",
    "expandtabs": "{{ ('a\\tb' * 1000).expandtabs(10 ** 6) }}",
}
REGEX_FACT = """\
facts:
  - id: sw.r
    category: software
    title: R
    statement: S.
    status: assumed
    target: here
    sources: [{seed: a.txt}]
    check: {probe: env.var, args: {name: HOME}, expect: {path: value, regex: 'PATTERN'}}
"""
HUGE_INTS = {
    "hex": "0x" + "f" * 4000,
    "octal": "0" + "7" * 5000,
    "0o string": "0o" + "7" * 5000,
    "binary": "0b" + "1" * 15000,
    "sexagesimal": "1:" + "59:" * 3000 + "1",
}


def value_fact(value: str) -> str:
    """A fact file whose one fact has `value: VALUE` on line 7."""
    return f"facts:\n  - id: x.one\n    category: hardware\n    title: T\n    statement: S.\n    status: assumed\n    value: {value}\n    sources: [{{seed: a.txt}}]\n"


BENCH_FACT = "facts:\n  - id: bench.x\n    category: benchmarks\n    title: B\n    statement: S.\n    status: assumed\n    value: 1.0\n    unit: tok/s\n    sources: [{seed: a.txt}]\n"
BENCH_IMPORT = ["bench", "import", "{kb}/run.jsonl", "--record", "bench.x"]


def bench_line(**fields: object) -> str:
    """One sglang.bench_serving JSONL line with `fields` over a minimal valid result."""
    import json

    data = {
        "backend": "sglang",
        "output_throughput": 123.4,
        "max_concurrency": 4,
        "server_info": {"version": "0.5"},
        **fields,
    }
    return json.dumps(data) + "\n"


def nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


def padded(text: str, size: int) -> str:
    """A fact file `text` grown with a comment to `size` bytes: at the loader's limit."""
    return text + "#" + "x" * (size - len(text) - 2) + "\n"


RUNBOOK = "---\njupytext:\n  text_representation: {format_name: myst}\nfactbook: {target: here}\n---\n# A runbook\n\n```{code-cell} python\n:name: hello\nprint('hi')\n```\n"
RUN = "results/runbooks/rb/20260101T000000Z-here"  # one run of RUNBOOK
RUN_FILES = {
    "runbooks/rb.md": RUNBOOK,
    f"{RUN}/record.json": '{"run_id": "20260101T000000Z-here", "runbook": "rb", "target": "here", "status": "ok", "steps": []}',
}
MANIFEST = "_site_md/.factbook-pages.json"  # what `docs` wrote last time (COMMANDS["docs"])
PID = "20260101-000000-aaaaaa"  # a pending proposal's id

HOSTILE_TAGS = {
    "facts/good.yaml": BASE["facts/good.yaml"]
    + '    tags: ["*", "a\\nnot-a-tag", "x y", "\\u202eevil", ok]\n'
}
COMPLETE_TAG = ["__complete", "5", "factbook", "--root", "{kb}", "verify", "--tag", ""]
INJECTED_NAME = "facts/a\n::error file=x::pwned\x1b[31m\u202e.yaml"
SLOW_REGEXES = [
    "(a|aa)+$",
    "(a+)+$",
    "(\\w+\\s?)*$",
    "(.*a){12}",
    "(x+x+)+y",
    "^(\\d+)*$",
    "(a|a)*$",
    "(ab|a.)*z",
]
# fmt: off
CASES: list[Case] = [
    *[Case(f"status.md.j2 {n}", tpl(p), "status", 2, "status template:") for n, p in ESCAPES.items()],
    *[Case(f"_macros.j2 {n}", macros(p), "status", 2, "status template:") for n, p in ESCAPES.items() if n != "self include"],
    Case("status.md.j2 nested loop", tpl("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"), "status", 2, "rendering took longer than", env={"FACTBOOK_TEMPLATE_SECONDS": "1"}),
    Case("status.md.j2 output bomb", tpl("{% for i in range(100000) %}{{ 'x' * 1000000 }}{% endfor %}"), "status", 2, "grew beyond", max_rss_mb=250, isolated=True),
    Case("status.md.j2 benign", tpl("{% for f in [1, 2] %}{{ f * 2 }}{% endfor %} {{ '%s' % 'ok' }}"), "status", 0, "24 ok"),
    *[Case(f"status.md.j2 size bomb {n}", tpl(p), "status", 2, "refused by the sandbox:") for n, p in SIZE_BOMBS.items()],
    Case("status.md.j2 translate bomb", tpl("{{ ('x' * 1000000).translate({120: 'y' * 1000000}) }}"), "status", 2, "needed more than 512 MiB", max_rss_mb=700, isolated=True),
    Case("status.md.j2 sized benign", tpl("{{ '%5d|%s' % (3, 'ok') }}{{ '{:>6}'.format('r') }}{{ 'ab'|center(6) }}{{ 'a'.ljust(3) }}{{ 'b'|indent(2) }}{{ 'aa'|replace('a', 'bb') }}|"), "status", 0, "    3|ok     r  ab  a  bbbbb|"),
    Case("mkdocs.yml hooks", {"mkdocs.yml": "site_name: x\nhooks:\n  - hook.py\n", "hook.py": "open('{out}/MARKER', 'w')\n"}, "lint", 2, "mkdocs.yml:3: hooks: MkDocs imports these Python files"),
    Case("mkdocs.yml python object apply", {"mkdocs.yml": "site_name: x\nextra: !!python/object/apply:os.system ['touch {out}/MARKER']\n"}, "lint", 2, "mkdocs.yml:2: !!python/object/apply:os.system runs Python"),
    Case("mkdocs.yml python module", {"mkdocs.yml": "site_name: x\nextra: !!python/module:hook\n", "hook.py": "x = 1\n"}, "lint", 2, "!!python/module:hook runs Python"),
    Case("mkdocs.yml custom_dir", {"mkdocs.yml": "site_name: x\ntheme:\n  name: material\n  custom_dir: overrides\n", "overrides/main.html": "{{ cycler.__init__.__globals__.os.system('touch {out}/MARKER') }}"}, "lint", 2, "mkdocs.yml:4: theme.custom_dir: MkDocs renders its templates with no sandbox"),
    Case("mkdocs.yml local extension", {"mkdocs.yml": "site_name: x\nmarkdown_extensions:\n  - toc\n  - localext:\n      x: 1\n", "localext.py": "open('{out}/MARKER', 'w')\n"}, "lint", 2, "mkdocs.yml:4: localext: a Python module of the knowledge base"),
    Case("mkdocs.yml INHERIT hooks", {"mkdocs.yml": "INHERIT: base.yml\nsite_name: x\n", "base.yml": "hooks: [hook.py]\n"}, "lint", 2, "base.yml:1: hooks:"),
    Case("mkdocs.yml INHERIT outside", {"mkdocs.yml": "INHERIT: {out}/shadow\nsite_name: x\n"}, "lint", 2, "resolves to {out}/shadow, outside the knowledge base"),
    Case("mkdocs.yml trusted", {"mkdocs.yml": "site_name: x\nhooks:\n  - hook.py\n", "hook.py": "x = 1\n"}, "lint", 0, "ok: 1 facts", env={"FACTBOOK_TRUST_MKDOCS_CODE": "1"}),
    Case("mkdocs.yml material emoji", {"mkdocs.yml": "site_name: x\nmarkdown_extensions:\n  - pymdownx.emoji:\n      emoji_index: !!python/name:material.extensions.emoji.twemoji\n"}, "lint", 0, "ok: 1 facts"),
    # mkdocs.yml is an allow-list: templates, plugins, extensions, !ENV and paths out of the root
    Case("mkdocs.yml extra_templates", {"mkdocs.yml": "site_name: x\nplugins:\n  - factbook\nextra_templates:\n  - x.html\n", "docs/x.html": "{{ cycler.__init__.__globals__.os.system('touch {out}/MARKER') }}"}, "lint", 2, "mkdocs.yml:5: extra_templates: MkDocs renders these files with a plain Jinja2 Template"),
    Case("mkdocs.yml theme.static_templates", {"mkdocs.yml": "site_name: x\ntheme:\n  name: material\n  static_templates: [x.html]\n"}, "lint", 2, "mkdocs.yml:4: theme.static_templates: MkDocs renders these"),
    Case("mkdocs.yml material/projects", {"mkdocs.yml": "site_name: x\ntheme: {name: material}\nplugins:\n  - factbook\n  - material/projects\n", "projects/p1/docs/index.md": "# p\n", "projects/p1/mkdocs.yml": "site_name: p1\nextra: !!python/object/apply:os.system ['touch {out}/MARKER']\n"}, "lint", 2, "mkdocs.yml:5: plugins: material/projects: builds projects/*/mkdocs.yml"),
    Case("mkdocs.yml projects by its bare name", {"mkdocs.yml": "site_name: x\ntheme: material\nplugins:\n  projects: {}\n  search: {}\n"}, "lint", 2, "mkdocs.yml:4: plugins: projects: builds projects/*/mkdocs.yml"),
    Case("mkdocs.yml projects inside group", {"mkdocs.yml": "site_name: x\nplugins:\n  - material/group:\n      enabled: true\n      plugins:\n        - material/projects\n"}, "lint", 2, "mkdocs.yml:6: plugins: material/projects:"),
    Case("mkdocs.yml material/info", {"mkdocs.yml": "site_name: x\nplugins:\n  - material/info\n"}, "lint", 2, "mkdocs.yml:3: plugins: material/info: reads the configs with MkDocs' unsafe YAML loader"),
    Case("mkdocs.yml unvetted plugin", {"mkdocs.yml": "site_name: x\nplugins:\n  - search\n  - macros:\n      module_name: main\n", "main.py": "open('{out}/MARKER', 'w')\n"}, "lint", 2, "mkdocs.yml:4: plugins: macros: not an installed plugin factbook has vetted"),
    Case("mkdocs.yml privacy fetches", {"mkdocs.yml": "site_name: x\nplugins:\n  - material/privacy\n"}, "lint", 2, "mkdocs.yml:3: plugins: material/privacy: downloads every external URL"),
    Case("mkdocs.yml tags export_file outside", {"mkdocs.yml": "site_name: x\nplugins:\n  - material/tags:\n      export_file: {out}/tags.json\n"}, "lint", 2, "mkdocs.yml:4: plugins: material/tags: export_file: resolves to {out}/tags.json, outside the knowledge base"),
    Case("mkdocs.yml blog_dir outside", {"mkdocs.yml": "site_name: x\nplugins:\n  - material/blog:\n      blog_dir: ../outside\n"}, "lint", 2, "blog_dir: resolves to {out}, outside the knowledge base"),
    Case("mkdocs.yml !ENV", {"mkdocs.yml": "site_name: !ENV [HOME, x]\n"}, "lint", 2, "mkdocs.yml:1: !ENV puts the builder's environment into the site"),
    Case("mkdocs.yml !ENV nested", {"mkdocs.yml": "site_name: x\nextra:\n  key: !ENV AWS_SECRET_ACCESS_KEY\n"}, "lint", 2, "mkdocs.yml:3: !ENV"),
    Case("mkdocs.yml snippets base_path /", {"mkdocs.yml": "site_name: x\nmarkdown_extensions:\n  - pymdownx.snippets:\n      base_path: ['/']\n", "docs/guide.md": "--8<-- \"{out}/shadow\"\n"}, "lint", 2, "mkdocs.yml:4: markdown_extensions: pymdownx.snippets: base_path: resolves to /, outside"),
    Case("mkdocs.yml snippets base_path !relative", {"mkdocs.yml": "site_name: x\nmarkdown_extensions:\n  - pymdownx.snippets:\n      base_path: [!relative $config_dir/../outside]\n"}, "lint", 2, "base_path: resolves to {out}, outside"),
    Case("mkdocs.yml snippets restrict_base_path false", {"mkdocs.yml": "site_name: x\nmarkdown_extensions:\n  - pymdownx.snippets:\n      restrict_base_path: false\n"}, "lint", 2, "mkdocs.yml:4: markdown_extensions: pymdownx.snippets: restrict_base_path: false lets it include any file"),
    Case("mkdocs.yml snippets url_download", {"mkdocs.yml": "site_name: x\nmarkdown_extensions:\n  - pymdownx.snippets:\n      url_download: yes\n"}, "lint", 2, "url_download: yes lets it include what any URL returns"),
    Case("mkdocs.yml b64 base_path outside", {"mkdocs.yml": "site_name: x\nmarkdown_extensions:\n  - pymdownx.b64:\n      base_path: {out}\n"}, "lint", 2, "pymdownx.b64: base_path: resolves to {out}, outside"),
    Case("mkdocs.yml docs_dir outside", {"mkdocs.yml": "site_name: x\ndocs_dir: {out}\nplugins:\n  - factbook\n"}, "lint", 2, "mkdocs.yml:2: docs_dir: resolves to {out}, outside the knowledge base; MkDocs would publish it"),
    Case("mkdocs.yml site_dir outside", {"mkdocs.yml": "site_name: x\nsite_dir: ../outside/site\n"}, "lint", 2, "mkdocs.yml:2: site_dir: resolves to {out}/site, outside the knowledge base"),
    Case("mkdocs.yml default docs -> outside", {"mkdocs.yml": "site_name: x\n", "docs": Link("{out}")}, "lint", 2, "mkdocs.yml:1: docs_dir: resolves to {out}, outside"),
    Case("mkdocs.yml extension os:system", {"mkdocs.yml": "site_name: x\nmarkdown_extensions:\n  - os:system:\n      command: touch {out}/MARKER\n"}, "lint", 2, "mkdocs.yml:3: markdown_extensions: os:system: not an extension of Markdown, PyMdown or Material"),
    Case("mkdocs.yml extension installed module", {"mkdocs.yml": "site_name: x\nmarkdown_extensions:\n  - antigravity\n"}, "lint", 2, "markdown_extensions: antigravity: not an extension"),
    Case("mkdocs.yml python/name builtin", {"mkdocs.yml": "site_name: x\nmarkdown_extensions:\n  - toc:\n      slugify: !!python/name:exec\n"}, "lint", 2, "mkdocs.yml:4: !!python/name:exec: not a function of Markdown, PyMdown or Material"),
    Case("mkdocs.yml python/name imported helper", {"mkdocs.yml": "site_name: x\nplugins:\n  - material/blog:\n      post_slugify: !!python/name:material.plugins.blog.plugin.rmtree\n"}, "lint", 2, "!!python/name:material.plugins.blog.plugin.rmtree: not a function"),
    # --- 2. reads outside the knowledge base: refused with the path, content never shown ---
    Case("fact file -> shadow", {"facts/x.yaml": Link("{out}/shadow")}, "lint", 2, "facts/x.yaml:1: resolves to {out}/shadow, outside the knowledge base"),
    Case("fact file -> environ", {"facts/x.yaml": Link("/proc/self/environ")}, "lint", 2, "facts/x.yaml:1: resolves to /proc/"),
    Case("fact file -> shadow, list", {"facts/x.yaml": Link("{out}/shadow")}, "list", 0, "hw.gpu.count"),
    Case("fact file -> shadow, docs", {"facts/x.yaml": Link("{out}/shadow")}, "docs", 0, "outside the knowledge base"),
    Case("facts folder -> outside", {"facts": Link("{out}/facts")}, "lint", 2, "facts:1: resolves to {out}/facts"),
    Case("nested fact folder -> outside", {"facts/sub": Link("{out}/facts")}, "lint", 0, "ok: 1 facts"),
    Case("targets.yaml -> shadow", {"targets.yaml": Link("{out}/shadow")}, "lint", 2, "targets.yaml:1: resolves to"),
    Case("milestones.yaml -> shadow", {"milestones.yaml": Link("{out}/shadow")}, "lint", 2, "milestones.yaml:1: resolves to"),
    Case("checks probe -> shadow", {"checks/x.py": Link("{out}/shadow")}, "lint", 2, "checks/x.py:1: resolves to"),
    Case("checks folder -> outside", {"checks": Link("{out}")}, "lint", 2, "checks:1: resolves to"),
    Case("inventory: outside path", {"targets.yaml": "inventory: {out}/inventory.ini\ntargets:\n  here: {transport: local}\n"}, "lint", 2, "inventory {out}/inventory.ini: {out}/inventory.ini:1: resolves to"),
    Case("inventory: ../ path", {"targets.yaml": "inventory: ../outside/shadow\ntargets:\n  here: {transport: local}\n"}, "lint", 2, "outside the knowledge base"),
    Case("inventory: /proc/self/environ", {"targets.yaml": "inventory: /proc/self/environ\ntargets:\n  here: {transport: local}\n"}, "lint", 2, "outside the knowledge base"),
    Case("inventory file -> shadow", {"inv.ini": Link("{out}/shadow"), "targets.yaml": "inventory: inv.ini\ntargets:\n  here: {transport: local}\n"}, "lint", 2, "inv.ini:1: resolves to"),
    Case("inventory dir host_vars -> shadow", {"inv/hosts.ini": "[g]\nn1\n", "inv/host_vars/n1.yml": Link("{out}/shadow"), "targets.yaml": "inventory: inv\ntargets:\n  here: {transport: local}\n"}, "lint", 2, "outside the knowledge base"),
    Case("ssh_config Include outside", {"ssh_config": "Include {out}/ssh_config\nHost n1\n  HostName 10.0.0.1\n", "targets.yaml": "inventory: ssh_config\ntargets:\n  here: {transport: local}\n"}, "lint", 2, "ssh_config:1: Include {out}/ssh_config: resolves to"),
    Case("ssh_config Include glob outside", {"ssh_config": "Host n1\n  HostName 10.0.0.1\nInclude {out}/ssh_*\n", "targets.yaml": "inventory: ssh_config\ntargets:\n  here: {transport: local}\n"}, "lint", 2, "outside the knowledge base"),
    Case("ssh_config Include inside", {"ssh_config": "Include {kb}/more\nHost n1\n  HostName 10.0.0.1\n", "more": "Host n1\n  User ops\n", "targets.yaml": "inventory: ssh_config\ntargets:\n  here: {transport: local}\n"}, "list", 0, "hw.gpu.count"),
    Case("latest.json -> outside", {"results/latest.json": Link("{out}/latest.json")}, "status", 2, "results/latest.json:1: resolves to"),
    Case("results folder -> outside, status", {"results": Link("{out}")}, "status", 2, "results/latest.json:1: resolves to"),
    Case("results folder -> outside, show", {"results": Link("{out}")}, "show", 2, "resolves to"),
    Case("results folder -> outside, verify", {"results": Link("{out}")}, ["verify", "hw.gpu.count"], 2, "resolves to {out}/latest.json, outside the knowledge base"),
    Case("results folder -> empty outside, verify", {"results": Link("{out}/facts")}, ["verify", "hw.gpu.count"], 2, "results: resolves to {out}/facts, outside the knowledge base"),
    Case("lock folder -> outside", {"results/.latest.lock": Link("{out}/lock")}, ["verify", "hw.gpu.count"], 2, "results/.latest.lock: cannot open the lock file: is a link"),
    Case("run file -> shadow", {"results/runs/r1.jsonl": Link("{out}/shadow")}, "docs", 0, "pages generated"),
    Case("runbook -> shadow", {"runbooks/rb.md": Link("{out}/shadow")}, "lint", 2, "runbooks/rb.md:1: resolves to"),
    Case("runbook record -> shadow", {"results/runbooks/rb/r1/record.json": Link("{out}/shadow")}, "docs", 0, "pages generated"),
    Case("status template -> shadow", {"templates/status/status.md.j2": Link("{out}/shadow")}, "status", 2, "templates/status/status.md.j2:1: resolves to"),
    Case("_macros.j2 -> shadow", {"templates/_macros.j2": Link("{out}/shadow")}, "status", 2, "templates/_macros.j2:1: resolves to"),
    Case("template folder -> outside", {"templates/status": Link("{out}")}, "status", 2, "templates/status:1: resolves to"),
    Case("status template fifo", {"templates/status/status.md.j2": FIFO}, "status", 2, "not a regular file"),
    Case("redact.yaml -> shadow", {"redact.yaml": Link("{out}/shadow")}, ["status", "--redact", "--out", "-"], 2, "redact.yaml:1: resolves to"),
    Case("docs page -> shadow", {"docs/leak.md": Link("{out}/shadow")}, "docs", 0, "leak.md: not copied"),
    Case("docs status page -> shadow", {"docs/status/status-1.md": Link("{out}/shadow")}, "docs", 0, "pages generated"),
    Case("docs page fifo", {"docs/pipe.md": FIFO}, "docs", 0, "pipe.md: not copied"),
    # the output folder of `docs` sits in the knowledge base: its manifest and links are planted
    Case("docs manifest entry outside", {MANIFEST: '["facts/index.md", "../../outside/shadow"]'}, "docs", 2, "lists '../../outside/shadow', not a file of"),
    Case("docs manifest entry absolute", {MANIFEST: '["{out}/shadow"]'}, "docs", 2, "/shadow', not a file of"),
    Case("docs manifest entry through a linked folder", {MANIFEST: '["sub/shadow"]', "_site_md/sub": Link("{out}")}, "docs", 2, "resolves to {out}/shadow, outside"),
    Case("docs manifest not a list", {MANIFEST: '5'}, "docs", 0, "pages generated"),
    Case("docs manifest fifo", {MANIFEST: FIFO}, "docs", 2, "not a regular file", isolated=True, max_s=30),
    Case("docs default output folder -> outside", {"build/handbook": Link("{out}")}, ["docs"], 2, "build/handbook: resolves to {out}, outside the knowledge base"),
    Case("docs output folder -> outside", {"_site_md": Link("{out}")}, "docs", 2, "_site_md: resolves to {out}, outside the knowledge base"),
    Case("docs output subfolder -> outside", {"_site_md/facts": Link("{out}/facts")}, "docs", 2, "would be written into: resolves to {out}/facts"),
    Case("docs output page fifo", {"_site_md/index.md": FIFO}, "docs", 2, "not a regular file", isolated=True, max_s=30),
    Case("executed notebook -> shadow", {**RUN_FILES, f"{RUN}/executed.ipynb": Link("{out}/shadow")}, "docs", 0, "executed.ipynb: not copied: resolves to {out}/shadow"),
    # `status` rebuilds docs/status/index.md from the title of every docs/status/*.md
    Case("status index: document -> outside", {"docs/status/leak.md": Link("{out}/notes.md")}, ["status"], 0, "docs/status/leak.md: resolves to {out}/notes.md, outside the knowledge base; left out of the index"),
    Case("status index: not UTF-8", {"docs/status/bad.md": b"# caf\xe9\n"}, ["status"], 0, "-status.md", then=["status"]),
    Case("status index: a folder named x.md", {"docs/status/dir.md/x": "x"}, ["status"], 0, "docs/status/dir.md: not a regular file; left out of the index"),
    Case("status index: fifo", {"docs/status/pipe.md": FIFO}, ["status"], 0, "docs/status/pipe.md: not a regular file", isolated=True, max_s=30),
    Case("status folder -> outside", {"docs/status": Link("{out}/facts")}, ["status"], 2, "docs/status: resolves to {out}/facts, outside the knowledge base"),
    Case("docs folder -> outside, status", {"docs": Link("{out}")}, ["status"], 2, "docs/status: resolves to {out}/status, outside the knowledge base"),
    # readers of proposals and run records
    Case("proposal -> outside, list", {f"proposals/{PID}.yaml": Link("{out}/proposal.yaml")}, ["proposals", "list"], 2, f"proposals/{PID}.yaml:1: resolves to {{out}}/proposal.yaml, outside the knowledge base"),
    Case("proposals folder -> outside", {"proposals": Link("{out}/proposals")}, ["proposals", "list"], 2, "proposals: resolves to {out}/proposals, outside the knowledge base"),
    Case("run record -> outside, run --list", {**RUN_FILES, f"{RUN}/record.json": Link("{out}/record.json")}, ["run", "--list"], 0, "record.json: resolves to {out}/record.json, outside the knowledge base; run skipped"),
    Case("results/runbooks -> outside, run --list", {"runbooks/rb.md": RUNBOOK, "results/runbooks": Link("{out}/runbooks")}, ["run", "--list"], 0, "resolves to {out}/runbooks/rb/r1/record.json"),
    Case("--inventory shadow", {}, ["verify", "--dry-run", "--inventory", "{out}/shadow"], 2, "{out}/shadow"),
    Case("--inventory ini of secrets", {}, ["verify", "--dry-run", "--inventory", "{out}/inventory.ini"], 2, "{out}/inventory.ini"),
    # --- 3. catastrophic regular expressions: flagged by lint, stopped when they run ---
    *[Case(f"regex expectation {p}", {"facts/r.yaml": REGEX_FACT.replace("PATTERN", p)}, "lint", 2, "nested quantifiers") for p in SLOW_REGEXES],
    Case("regex expectation benign", {"facts/r.yaml": REGEX_FACT.replace("PATTERN", "^(/[a-z]+)+$")}, "lint", 0, "ok: 2 facts"),
    *[Case(f"redact pattern {p}", {"redact.yaml": f"patterns: ['{p}']\n"}, ["status", "--redact", "--out", "-"], 2, "redact.yaml:1: patterns[0]: nested quantifiers") for p in SLOW_REGEXES],
    Case("--target ~REGEX backtracking", {"targets.yaml": "targets:\n  here: {transport: local}\n  " + "a" * 40 + "b: {transport: local}\n"}, ["verify", "--dry-run", "--target", "~^(a|aa)+$"], 2, "stopped after 1 s on 41 characters", max_s=30, isolated=True),
    # --- 6. tracebacks: each input is one line and exit 2 (or carried on with a warning) ---
    *[Case(f"{form} integer in a fact, {cmd}", {"facts/x.yaml": value_fact(big)}, cmd, 2 if cmd == "lint" and form != "0o string" else 0, "facts/x.yaml:7: invalid value: Exceeds the limit" if cmd == "lint" and form != "0o string" else "") for form, big in HUGE_INTS.items() for cmd in ("lint", "list", "status", "docs")],
    *[Case(f"{form} integer in a fact, show", {"facts/x.yaml": value_fact(big)}, ["show", "x.one"], 0, "x.one") for form, big in HUGE_INTS.items()],
    Case("hex integer as a target port", {"targets.yaml": "targets:\n  here: {transport: local}\n  t: {host: h, port: " + HUGE_INTS["hex"] + "}\n"}, "lint", 2, "targets.yaml:3: invalid value: Exceeds the limit"),
    Case("hex integer in target vars, verify", {"targets.yaml": "targets:\n  here: {transport: local, vars: {a: " + HUGE_INTS["hex"] + "}}\n"}, "verify-dry", 2, "targets.yaml:2: invalid value: Exceeds the limit"),
    Case("hex integer as a milestone id", {"milestones.yaml": "milestones:\n  - {id: " + HUGE_INTS["hex"] + ", title: x}\n"}, "lint", 2, "milestones.yaml:2: invalid value: Exceeds the limit"),
    Case("octal integer as a milestone message", {"milestones.yaml": "milestones:\n  - {id: '1', title: x, message: " + HUGE_INTS["octal"] + "}\n"}, "status", 0, "# Status"),
    Case("python apply on a sequence", {"facts/x.yaml": value_fact('!!python/object/apply:os.system ["touch {out}/MARKER"]')}, "lint", 2, "facts/x.yaml:7: invalid value: could not determine a constructor for the tag 'tag:yaml.org,2002:python/object/apply:os.system'"),
    Case("python apply on a mapping", {"facts/x.yaml": value_fact("!!python/object/apply:os.system {args: [x]}")}, "lint", 2, "could not determine a constructor"),
    Case("python object on the top mapping", {"facts/x.yaml": "!!python/object:os.X\nfacts: []\n"}, "lint", 2, "facts/x.yaml:1: invalid value: could not determine a constructor"),
    Case("python tag on targets", {"targets.yaml": "!!python/object/new:os.system [x]\n"}, "lint", 2, "targets.yaml:1: invalid value: could not determine a constructor"),
    Case("set tag", {"facts/x.yaml": value_fact("!!set {a, b}")}, "lint", 2, "tag:yaml.org,2002:set"),
    Case("non-UTF-8 run file, docs", {"results/runs/r1.jsonl": b'{"run": {"id": "r1\xff"}}\n{"fact": "x\xff", "probe": "measure.x"}\n'}, "docs", 0, "pages generated"),
    Case("non-UTF-8 run record, docs", {"results/runbooks/rb/r1/record.json": b'{"run_id": "r1", "status": "ok\xff"}'}, "docs", 0, "pages generated"),
    Case("huge number in a run record", {"results/runbooks/rb/r1/record.json": '{"run_id": "r1", "duration_s": ' + "9" * 5000 + "}"}, "docs", 0, "pages generated"),
    Case("fact lock path is a folder", {"facts/good.yaml": ASSUMED, ".factbook-cache/locks/facts__good.yaml.lock/x": "x"}, ["verify", "hw.gpu.count", "--record"], 2, ".factbook-cache/locks/facts__good.yaml.lock: is a folder, not a lock file"),
    Case("results lock path is a folder", {"results/.latest.lock/x": "x"}, ["verify", "hw.gpu.count"], 2, "results/.latest.lock: is a folder, not a lock file"),
    Case("lock folder -> outside, write-back", {"facts/good.yaml": ASSUMED, ".factbook-cache/locks": Link("{out}/facts")}, ["verify", "hw.gpu.count", "--record"], 2, "resolves to {out}/facts, outside the knowledge base"),
    Case("disk full while saving results", {}, ["verify", "hw.gpu.count"], 2, "could not save (File too large); the old file is unchanged", isolated=True, fsize=200),
    # import --write on a full disk: its temporary folder, its scratch copy, its save (an
    # OSError naming no file, "No usable temporary directory", was a traceback)
    *[Case(f"import --write, disk full at {size} bytes", {"dump.md": IMPORT_DUMP}, ["import", "{kb}/dump.md", "--milestone", "1", "--write"], 2, said, isolated=True, fsize=size, then="lint")
      for size, said in ((0, "No usable temporary directory"), (100, "File too large"))],
    Case("import: a folder", {"dump.md/x": "x"}, ["import", "{kb}/dump.md", "--milestone", "1"], 2, "dump.md:1: is a folder"),
    Case("import: not UTF-8", {"dump.md": b"# Status\n- caf\xe9\n"}, ["import", "{kb}/dump.md", "--milestone", "1"], 2, "dump.md:2: not UTF-8"),
    Case("import: unreadable", {"dump.md": Link("dump.md")}, ["import", "{kb}/dump.md", "--milestone", "1"], 2, "cannot read file: Too many levels of symbolic links"),
    Case("import: huge number in a hint", {"dump.md": "# Status as of 1\n\nGenerated by `factbook status`.\n\n## Hardware\n\n- GPUs <!-- factbook: {\"id\": \"hw.x\", \"value\": " + "9" * 5000 + "} -->\n"}, ["import", "{kb}/dump.md", "--milestone", "1"], 0, "dump.md: 1 items"),
    Case("import: deep hint", {"dump.md": "# Status as of 1\n\nGenerated by `factbook status`.\n\n## Hardware\n\n- GPUs <!-- factbook: " + "[" * 100000 + " -->\n"}, ["import", "{kb}/dump.md", "--milestone", "1"], 0, "dump.md: 1 items"),
    # --- 5. unbounded input: a size bound checked before reading ---
    Case("import: /dev/zero", {}, ["import", "/dev/zero", "--milestone", "1"], 2, "/dev/zero:1: not a regular file", isolated=True, max_s=20),
    Case("import: a FIFO", {"pipe.md": FIFO}, ["import", "{kb}/pipe.md", "--milestone", "1"], 2, "pipe.md:1: not a regular file", isolated=True, max_s=20),
    Case("import: 40 MB", {"big.md": "# Notes\n\n" + "- a line of a dump\n" * 2_200_000}, ["import", "{kb}/big.md", "--milestone", "1"], 2, "big.md:1: file larger than", isolated=True, max_s=20),
    Case("--inventory /dev/zero", {}, ["verify", "--dry-run", "--inventory", "/dev/zero"], 2, "not a regular file", isolated=True, max_s=20),
    Case("ssh_config Include a FIFO", {"ssh_config": "Include {kb}/pipe\nHost n1\n  HostName 10.0.0.1\n", "pipe": FIFO, "targets.yaml": "inventory: ssh_config\ntargets:\n  here: {transport: local}\n"}, "lint", 2, "not a regular file", isolated=True, max_s=20),
    # --- 4. self-inflicted lockout: nothing factbook writes can exceed what factbook reads ---
    Case("bench import: a 1 MB string", {"facts/bench.yaml": BENCH_FACT, "run.jsonl": bench_line(tag="x" * 1_000_000)}, BENCH_IMPORT, 0, "tag: too large or too deeply nested for a fact file; recorded as a 4", then="lint"),
    Case("bench import: a 45-deep list", {"facts/bench.yaml": BENCH_FACT, "run.jsonl": bench_line(backend=nested(45))}, BENCH_IMPORT, 0, "backend: too large or too deeply nested", then="lint"),
    Case("bench import: 210k keys", {"facts/bench.yaml": BENCH_FACT, "run.jsonl": bench_line(dataset_name={f"k{i}": i for i in range(210_000)})}, BENCH_IMPORT, 0, "dataset_name: too large or too deeply nested", then="lint", max_s=30, max_rss_mb=400),
    Case("bench import: a 1 MB server_info value", {"facts/bench.yaml": BENCH_FACT, "run.jsonl": bench_line(server_info={"model_path": "m" * 1_000_000})}, BENCH_IMPORT, 0, "server_model_path: too large", then="lint"),
    Case("bench import: every value at its bound", {"facts/bench.yaml": BENCH_FACT, "run.jsonl": bench_line(**{k: "v" * 4000 for k in ("backend", "dataset_name", "tag", "random_input_len", "request_rate")})}, BENCH_IMPORT, 0, "recorded bench.x = 123.4 tok/s", then="lint"),
    Case("bench import: into a fact file at the loader's limit", {"facts/bench.yaml": padded(BENCH_FACT, (1 << 20) - 100), "run.jsonl": bench_line()}, BENCH_IMPORT, 2, "over the 1048576 bytes factbook reads; not written", then="lint"),
    Case("verify --record: a fact file at the loader's limit", {"facts/good.yaml": padded(ASSUMED, (1 << 20) - 40)}, ["verify", "hw.gpu.count", "--record"], 0, "not recorded: hw.gpu.count:", then="lint"),
    Case("verify: a 120 kB observed value", {"facts/big.yaml": "facts:\n  - id: sw.big\n    category: software\n    title: B\n    statement: S.\n    status: assumed\n    target: here\n    sources: [{seed: a.txt}]\n    check: {probe: env.var, args: {name: FB_BIG}, expect: {exists: true}}\n"}, ["verify", "sw.big"], 0, "1 passed", env={"FB_BIG": "y" * 120_000}, then=["show", "sw.big"]),
    Case("proposals: a planted 50 MB proposal", {"proposals/20260101-000000-aaaaaa.yaml": "id: x\nitem: " + "x" * (5 << 20) + "\n"}, ["proposals", "list"], 2, "file larger than 4194304 bytes"),
    Case("proposals: a planted deep proposal", {"proposals/20260101-000000-aaaaaa.yaml": "id: x\nitem: " + "[" * 1000 + "]" * 1000 + "\n"}, ["proposals", "list"], 2, "nested deeper than 40 levels"),
    *[Case(f"file.read max_bytes {n}", {"facts/r.yaml": REGEX_FACT.replace("env.var, args: {name: HOME}", "file.read, args: {path: /dev/zero, max_bytes: " + n + "}").replace("{path: value, regex: 'PATTERN'}", "{exists: true}")}, "lint", 2, "probe file.read: max_bytes must be a whole number from 0 to 1048576") for n in ("10000000000", "-1", "1.5", "'big'", "1048577")],
    Case("file.read max_bytes at the bound", {"facts/r.yaml": REGEX_FACT.replace("env.var, args: {name: HOME}", "file.read, args: {path: /dev/zero, max_bytes: 1048576}").replace("{path: value, regex: 'PATTERN'}", "{exists: true}")}, ["verify", "sw.r"], 0, "1 passed", then=["show", "sw.r"]),
    # --- 8. completion: one candidate per line, never a line break or control character ---
    Case("completion: tags with a newline, a bidi override and *", HOSTILE_TAGS, COMPLETE_TAG, 0, "*\nok\nx y\n", absent=("not-a-tag", "\u202e", "evil")),
    Case("completion: a fact id prefix of *", HOSTILE_TAGS, ["__complete", "5", "factbook", "--root", "{kb}", "verify", "--tag", "*"], 0, "*\n", absent=("ok", "not-a-tag")),
    # --- 7. secrets ---
    Case("password in an ssh:// target", {}, ["verify", "hw.gpu.count", "--target", "ssh://ops:{secret}@127.0.0.1:1", "--timeout", "2"], 3, "unreachable", isolated=True, max_s=30),
    Case("redaction: a host learned from user@host, then bare", {"facts/x.yaml": value_fact("1").replace("statement: S.", "statement: dave@build-3.corp.example.com ran it; build-3.corp.example.com rebooted and dave left")}, ["status", "--redact", "--out", "-"], 0, "user-1@host-1 ran it; host-1 rebooted and user-1 left", absent=("build-3", "dave")),
    Case("redaction: a secret with < and | after escaping", {"redact.yaml": "secrets: ['p<ss|w0rd42']\n", "facts/x.yaml": value_fact("1").replace("statement: S.", "statement: 'the key is p<ss|w0rd42'")}, ["status", "--redact", "--out", "-"], 0, "the key is secret-1", absent=("w0rd42",)),
    # --- 8. output injection: one problem is one line, controls and bidi shown escaped ---
    *[Case(f"file name with a newline, lint {fmt}", {INJECTED_NAME: "facts: [x]\n"}, ["lint", "--format", fmt], 2, "expected mapping", absent=("\n::error file=x", "\u202e", "\x1b")) for fmt in ("text", "github", "json", "sarif")],
    Case("file name with a newline, list", {INJECTED_NAME: "facts: [x]\n"}, "list", 0, "lint problem", absent=("\n::error file=x", "\u202e", "\x1b")),
    Case("file name with a newline, verify", {INJECTED_NAME: "facts: [x]\n"}, "verify-dry", 2, "\\n::error file=x::pwned", absent=("\n::error file=x", "\u202e", "\x1b")),
    Case("--inventory ssh_config of secrets", {}, ["verify", "--dry-run", "--inventory", "{out}/ssh_config"], 2, "{out}/ssh_config"),
    # --- 2 and 6 again: what an import copies, edits and compares with is the knowledge base's own files ---
    Case("import: targets.yaml -> outside, a box proposed", {"targets.yaml": Link("{out}/shadow"), "dump.md": IMPORT_DUMP}, ["import", "{kb}/dump.md", "--milestone", "1"], 0, "targets.yaml: not a file of the knowledge base; not written"),
    Case("import: a FIFO among the fact files", {"facts/pipe.yaml": FIFO, "dump.md": IMPORT_DUMP}, ["import", "{kb}/dump.md", "--milestone", "1", "--write"], 0, "wrote", isolated=True, max_s=20, then="list"),
    Case("import: facts folder -> outside", {"facts": Link("{out}/facts"), "dump.md": IMPORT_DUMP}, ["import", "{kb}/dump.md", "--milestone", "1", "--write"], 2, "facts: resolves to {out}/facts, outside the knowledge base; refusing to use it", max_s=20),
    Case("import: a folder named as the category's file", {"facts/software.yaml/x": "x", "dump.md": IMPORT_DUMP}, ["import", "{kb}/dump.md", "--milestone", "1", "--write"], 0, "software-2.yaml", then="list"),
    # --- 5. the template deadline holds whatever repeats the work: loops that call nothing, a filter's own loop ---
    Case("status.md.j2 nested loops over a range made once", tpl("{% set r = range(100000) %}{% for i in r %}{% for j in r %}{% for k in r %}{% endfor %}{% endfor %}{% endfor %}done"), "status", 2, "rendering took longer than 1 s", env={"FACTBOOK_TEMPLATE_SECONDS": "1"}, isolated=True, max_s=15),
    Case("status.md.j2 nested loops over a string made by *", tpl("{% set s = 'x' * 1000000 %}{% for a in s %}{% for b in s %}{% endfor %}{% endfor %}"), "status", 2, "rendering took longer than 1 s", env={"FACTBOOK_TEMPLATE_SECONDS": "1"}, isolated=True, max_s=15),
    Case("status.md.j2 nested loops with an if", tpl("{% set r = range(100000)|list %}{% for a in r if a %}{% for b in r if b %}{% endfor %}{% endfor %}"), "status", 2, "rendering took longer than 1 s", env={"FACTBOOK_TEMPLATE_SECONDS": "1"}, isolated=True, max_s=15),
    Case("status.md.j2 nested loops in a recursive loop", tpl("{% set r = range(100000) %}{% for a in [r] recursive %}{% for b in r %}{% for c in r %}{% endfor %}{% endfor %}{% endfor %}"), "status", 2, "rendering took longer than 1 s", env={"FACTBOOK_TEMPLATE_SECONDS": "1"}, isolated=True, max_s=15),
    Case("status.md.j2 quadratic sum of lists", tpl("{{ range(100000)|batch(1)|sum(start=[])|length }}"), "status", 2, "rendering took longer than 1 s", env={"FACTBOOK_TEMPLATE_SECONDS": "1"}, isolated=True, max_s=15),
    Case("status.md.j2 recursive macro, 2**60 calls", tpl("{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}"), "status", 2, "rendering took longer than 1 s", env={"FACTBOOK_TEMPLATE_SECONDS": "1"}, isolated=True, max_s=15),
    # --- 11. import is linear in what the knowledge base and the dump say (1 s per MB) ---
    Case("import: a 240 kB description of where where ...", {"targets.yaml": 'targets:\n  here: {transport: local}\n  box: {host: box.invalid, user: root, description: "' + "where " * 40000 + '"}\n', "dump.md": "# Status\n\n## Software\n\n- torch 2.5.1 on box\n"}, ["import", "{kb}/dump.md", "--milestone", "1"], 0, "dump.md: 1 items", isolated=True, max_s=15),
    Case("import: 150 kB lines of spaces, digits, ssh options, where/all", {"dump.md": "# Status\n\n" + "".join(f"## {h}\n\n- {b}\n- [ ] {b} (FAILED)\n- x {b} → y\n\n" for h in ("Software", "Pitfalls", "Access", "Next steps") for b in ("a" + " " * 150_000 + "- b:", "6" * 150_000, "ssh -a " * 20_000, "ssh -" * 30_000, "ssh box where all every training " * 5_000))}, ["import", "{kb}/dump.md", "--milestone", "1"], 0, "dump.md:", isolated=True, max_s=20, max_rss_mb=400),
    # --- 12. hidden characters written as YAML escapes: lint names them, no output carries them raw; secrets in status dumps and env.var results ---
    *[Case(f"hidden characters as YAML escapes, {c if isinstance(c, str) else ' '.join(c)}", {"facts/x.yaml": value_fact('"v\\x1b[31m\\u202e\\x07"').replace("statement: S.", 'statement: "S\\x1b[2J."')}, c, code, fragment, absent=("\x1b", "\u202e", "\x07")) for c, code, fragment in (("lint", 2, "facts/x.yaml:7: hidden character U+001B (ESC)"), ("list", 0, "v\\x1b[31m\\u202e\\x07"), (["show", "x.one"], 0, "value: v\\x1b[31m\\u202e\\x07"), ("status", 0, "S\\x1b[2J."), (["status", "--budget", "2000", "--out", "-"], 0, "T: v\\x1b[31m\\u202e\\x07"))],
    Case("redaction: a private key header in a budgeted JSON dump", {"facts/x.yaml": value_fact("1").replace("statement: S.", 'statement: "key -----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"')}, ["status", "--redact", "--budget", "2000", "--format", "json"], 0, '"key secret-1', absent=("BEGIN OPENSSH", "b3BlbnNz")),
    Case("redaction: mysql -p, sshpass -p and curl -u passwords, ssh -p port kept", {"facts/x.yaml": value_fact("1").replace("statement: S.", "statement: 'mysql -uroot -pHunter2pass db; sshpass -p Hunter2pw ssh -p 22 box; curl -u admin:Hunter2cu x'")}, ["status", "--redact", "--out", "-"], 0, "mysql -uroot -psecret-1 db; sshpass -p secret-2 ssh -p 22 box; curl -u admin:secret-3 x", absent=("Hunter2",)),
    Case("env.var of a credential: masked in verify output", {"facts/x.yaml": "facts:\n  - id: sw.tok\n    category: software\n    title: T\n    statement: S.\n    status: assumed\n    target: here\n    sources: [{seed: a.txt}]\n    check: {probe: env.var, args: {name: FACTBOOK_HOSTILE_TOKEN}, expect: {exists: true}}\n"}, ["verify", "sw.tok", "--format", "json"], 0, '"masked": true', env={"FACTBOOK_HOSTILE_TOKEN": "hf_Qw3rTy7uIoPaSdFgHjKlZxCvBnM1234567"}, absent=("Qw3rTy7uIoPaSdFgHjKl",), then="status"),
]
# fmt: on


def plant(root: Path, out: Path, files: dict[str, str | bytes | Link]) -> None:
    """The base knowledge base with `files` planted over it; `{out}` -> the outside folder."""
    for rel, content in {**BASE, **files}.items():
        path = root / rel
        for parent in path.parents:
            if parent.is_file() or parent.is_symlink():
                parent.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
        if isinstance(content, Link):
            if content is FIFO:
                os.mkfifo(path)
            else:
                path.symlink_to(content.to.replace("{out}", str(out)))
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(expand(content, root, out), encoding="utf-8")


def outside_tree(out: Path) -> dict[str, tuple[int, int]]:
    """Every file outside the knowledge base: (size, mtime_ns)."""
    found = {}
    for path in out.rglob("*"):
        if path.is_file() and not path.is_symlink():
            st = path.stat()
            found[str(path)] = (st.st_size, st.st_mtime_ns)
    return found


def make_outside(out: Path) -> None:
    """Secrets a hostile knowledge base would like to read: a shadow file, an environ."""
    out.mkdir(parents=True)
    (out / "shadow").write_text(f"root:{SECRET}:19000:0:99999:7:::\n")
    (out / "environ").write_bytes(f"AWS_SECRET={SECRET}\0HOME=/root\0".encode())
    (out / "facts").mkdir()
    (out / "facts" / "x.yaml").write_text(f"facts: [{{id: {SECRET}}}]\n")
    (out / "inventory.ini").write_text(f"[{SECRET}]\nroot:{SECRET}\n")
    (out / "ssh_config").write_text(f"{SECRET} yes\nHost {SECRET}\n")
    (out / "latest.json").write_text('{"' + SECRET + '": 1}')
    (out / "notes.md").write_text(f"# {SECRET}\nbody\n")
    (out / "proposal.yaml").write_text(f"summary: {SECRET}\nid: x\n")
    (out / "proposals").mkdir()
    (out / "proposals" / "20260101-000000-aaaaaa.yaml").write_text(f"summary: {SECRET}\n")
    record = '{"run_id": "r1", "runbook": "rb", "target": "here", "status": "' + SECRET + '"}'
    (out / "record.json").write_text(record)
    (out / "runbooks" / "rb" / "r1").mkdir(parents=True)
    (out / "runbooks" / "rb" / "r1" / "record.json").write_text(record)


def argv_for(case: Case, root: Path, out: Path) -> list[str]:
    argv = COMMANDS[case.command] if isinstance(case.command, str) else case.command
    return [expand(a, root, out) for a in argv]


def expand(text: str, root: Path, out: Path) -> str:
    return text.replace("{out}", str(out)).replace("{kb}", str(root)).replace("{secret}", SECRET)


class _Alarm(Exception):
    pass


def _in_process(argv: list[str], seconds: float) -> tuple[int, str, float]:
    """The CLI run here under a SIGALRM limit; (exit code, output, peak RSS growth in MB)."""

    def ring(signum: int, frame: object) -> None:
        raise _Alarm

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = run(argv)
            except SystemExit as exc:
                code = int(exc.code or 0)
    except _Alarm:
        code = -1
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    return code, out.getvalue() + err.getvalue(), grown


MEASURE = PEAK_RSS_CLI


def _isolated(argv: list[str], case: Case, cwd: Path) -> tuple[int, str, float]:
    """The CLI in a child under prlimit (address space) and a wall-clock limit."""
    limit = (case.max_rss_mb + 400) << 20  # address space > RSS: the interpreter maps more
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **case.env}
    fsize = [f"--fsize={case.fsize}"] if case.fsize is not None else []
    cmd = ["prlimit", f"--as={limit}", *fsize, sys.executable, "-c", MEASURE, *argv]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=case.max_s, env=env, cwd=cwd
        )
    except subprocess.TimeoutExpired:
        return -1, "timed out", 0.0
    output = proc.stdout + proc.stderr
    rss = 0.0
    if "maxrss_kb" in output:
        output, tail = output.rsplit("maxrss_kb", 1)
        rss = int(tail.split()[0]) / 1024
    return proc.returncode, output, rss


def run_case(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Plant, run, and check every property of `case`; the output."""
    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(root, out, case.files)
    before = outside_tree(out)
    argv = ["--root", str(root), *argv_for(case, root, out)]
    if case.isolated:
        code, output, rss = _isolated(argv, case, root)
    else:
        for key, value in case.env.items():
            monkeypatch.setenv(key, value)
        monkeypatch.chdir(root)
        code, output, rss = _in_process(argv, case.max_s)
    assert code != -1, f"{case.name}: still running after {case.max_s} s"
    assert "Traceback" not in output, output[-3000:]
    if case.then is not None:  # what it wrote reads back
        then = COMMANDS[case.then] if isinstance(case.then, str) else case.then
        again, said, _ = _in_process(["--root", str(root), *then], case.max_s)
        assert again == 0 and "Traceback" not in said, (case.then, again, said[-3000:])
    assert code == case.code, (code, output[-3000:])
    assert case.fragment.replace("{out}", str(out)) in output, output[-3000:]
    assert SECRET not in output, output[-3000:]
    for text in case.absent:
        assert text not in output, (text, output[-3000:])
    assert rss <= case.max_rss_mb, f"{case.name}: {rss:.0f} MB > {case.max_rss_mb} MB"
    assert not (out / "MARKER").exists(), f"{case.name}: the payload ran"
    assert outside_tree(out) == before, f"{case.name}: a file outside the knowledge base changed"
    for path in root.rglob("*"):  # nothing read outside was copied in (links are planted)
        if path.is_file() and not path.is_symlink() and path.stat().st_size < (1 << 24):
            assert SECRET.encode() not in path.read_bytes(), f"{case.name}: copied into {path}"
    return output


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_knowledge_base(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_case(case, tmp_path, monkeypatch)


def test_corpus_is_large_and_named_once() -> None:
    assert len(CASES) >= 100
    assert len({c.name for c in CASES}) == len(CASES)


# --- what the CLI cannot reach in a test: a value from a box that makes a regex backtrack ---
def test_regex_expectation_is_stopped_on_a_hostile_value() -> None:
    import time

    from factbook.judging.expectations import evaluate

    started = time.monotonic()
    outcome = evaluate({"regex": "(a|aa)+$"}, "a" * 80 + "b")  # minutes with `re`
    assert not outcome.passed and "stopped after 1 s on 81 characters" in outcome.reason
    assert time.monotonic() - started < 15
    assert evaluate({"regex": "^sm_9\\d$"}, "sm_90").passed  # ordinary patterns still work


def test_results_honour_the_umask_and_stale_temp_files_are_cleaned(tmp_path: Path) -> None:
    """Under umask 022 results and status files are 0644, not mkstemp's 0600; a `.tmp` left
    by a killed write-back is removed by the next write of that file once it is stale."""
    from factbook.store.atomic import STALE_TMP_S

    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(root, out, {})
    stale = root / "results" / ".latest.json.abc123.tmp"
    fresh = root / "results" / ".latest.json.def456.tmp"
    stale.parent.mkdir(parents=True)
    stale.write_text("{half")
    fresh.write_text("{half")
    old = os.path.getmtime(stale) - STALE_TMP_S - 5
    os.utime(stale, (old, old))
    previous = os.umask(0o022)
    try:
        code, output, _ = _in_process(["--root", str(root), "verify", "hw.gpu.count"], 30)
        assert code == 0, output
        code, output, _ = _in_process(["--root", str(root), "status"], 30)
        assert code == 0, output
    finally:
        os.umask(previous)
    written = [root / "results" / "latest.json", *(root / "results" / "runs").glob("*.jsonl")]
    written += list((root / "docs" / "status").glob("*.md"))
    assert len(written) >= 4
    for path in written:
        assert path.stat().st_mode & 0o777 == 0o644, (path, oct(path.stat().st_mode))
    assert not stale.exists() and fresh.exists()  # a live writer's temp file is left alone


# --- 4. results at the size a large fleet makes: written within what their readers read ---
def test_latest_json_of_10000_facts_with_big_values_reads_back(tmp_path: Path) -> None:
    """10,000 facts x 3 targets, each observing ~2 kB (60 MB of results before fitting):
    latest.json and the run file are written within their readers' limits, the biggest
    values as previews, small records whole, and every command that reads them still works."""
    import json

    from factbook.handbook.measured import load_history
    from factbook.knowledge.limits import RESULTS_MAX_BYTES, RUN_MAX_BYTES
    from factbook.store.results import ResultRecord, list_runs, load_latest, write_run

    root = tmp_path / "kb"
    big = ["a line of observed output " * 3 + str(i) for i in range(25)]
    records = [
        ResultRecord(
            f"f{i:05d}.x",
            f"node-{t}",
            "drift",
            "observed differs",
            observed=big if i % 10 else 8,
            probe="host.command",
            extra={"location": "facts/a.yaml:1"},
        )
        for i in range(10_000)
        for t in range(3)
    ]
    path = write_run(root, "r1", {"argv": ["verify"]}, records)
    latest = root / "results" / "latest.json"
    assert latest.stat().st_size <= RESULTS_MAX_BYTES and path.stat().st_size <= RUN_MAX_BYTES
    data = load_latest(root)
    assert sum(len(by) for by in data.values()) == 30_000
    assert data["f00000.x"]["node-0"]["observed"] == 8  # a small value is kept whole
    assert str(data["f00001.x"]["node-0"]["observed"]).startswith("<")  # a big one as a preview
    assert json.loads(path.read_text().splitlines()[1])["fact"] == "f00000.x"
    assert list_runs(root) and load_history(root) == {}
    write_run(root, "r2", {"argv": ["verify"]}, records[:10])  # merging into a full file
    assert load_latest(root)["f00000.x"]["node-0"]["run"] == ""


def test_results_that_cannot_fit_are_refused_before_writing(tmp_path: Path) -> None:
    """A run whose records would not fit even as previews (limits.py's bound, fact ids of
    ~700 characters) is one line, exit 2, and leaves latest.json as it was."""
    from factbook.errors import ResultsTooLarge
    from factbook.knowledge.limits import RESULTS_MAX_BYTES
    from factbook.store.results import ResultRecord, load_latest, write_run

    root = tmp_path / "kb"
    write_run(root, "r0", {}, [ResultRecord("a.b", "here", "pass", "ok")])
    name = "x" * 700
    count = RESULTS_MAX_BYTES // (2 * 700) + 10
    records = [ResultRecord(f"{name}{i}", "t", "pass", "ok") for i in range(count)]
    with pytest.raises(ResultsTooLarge, match="would not fit in the bytes factbook reads back"):
        write_run(root, "r1", {}, records)
    assert list(load_latest(root)) == ["a.b"]
    assert not (root / "results" / "runs" / "r1.jsonl").exists()


def test_file_read_is_capped_on_the_box_whatever_lint_allowed() -> None:
    """The agent's side of the bound: a huge max_bytes (from a knowledge base that skipped
    lint, or an old one) reads at most READ_MAX_BYTES; lint's bound is the same number."""
    from factbook.knowledge.limits import PROBE_ARG_MAX
    from factbook.probes.files import READ_MAX_BYTES, file_read

    assert PROBE_ARG_MAX["max_bytes"] == READ_MAX_BYTES
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert len(file_read("/dev/zero", 10**12)) == READ_MAX_BYTES
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) < 64 * 1024  # KiB
    with pytest.raises(RuntimeError, match="max_bytes must be 0 or more"):
        file_read("/dev/zero", -1)  # read(-1) would read all of it


def completion_shell(tmp_path: Path, shell: str) -> tuple[Path, Path, dict[str, str]]:
    """For a completion test in a real shell: a folder holding files (what a glob would
    expand to), the generated script for `shell`, and an environment whose `factbook` is
    this tree's CLI, as `command factbook` finds it once installed."""
    from factbook.integrations.completion import SCRIPTS

    work = tmp_path / "cwd"
    work.mkdir(exist_ok=True)  # a test may ask a shell several times
    for name in ("FILE-ONE", "FILE-TWO"):
        (work / name).write_text("x")
    shim = tmp_path / "bin" / "factbook"
    shim.parent.mkdir(exist_ok=True)
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m factbook "$@"\n')
    shim.chmod(0o755)
    script = tmp_path / f"factbook.{shell}"
    script.write_text(SCRIPTS[shell])
    env = {
        **os.environ,
        "PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
    }
    return work, script, env


def test_bash_completion_neither_globs_nor_splits_a_hostile_tag(tmp_path: Path) -> None:
    """The generated bash function, sourced in a real bash and called as bash calls it
    (COMP_WORDS, COMP_CWORD), in a folder with files: a tag `*` completes as the literal `\\*`
    (not the file names), `x y` as one word, and a tag holding a newline adds no candidate."""
    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(root, out, HOSTILE_TAGS)
    assert bash_completes(tmp_path, root, "") == ["\\*", "ok", "x\\ y"]


def bash_completes(tmp_path: Path, root: Path, typed: str, option: str = "--tag") -> list[str]:
    """What the generated bash function offers for `factbook --root ROOT verify OPTION
    TYPED` (TYPED as the user typed it), sourced in a real bash and called as bash calls
    it (COMP_WORDS, COMP_CWORD), in a folder holding files a glob would expand to."""
    work, script, env = completion_shell(tmp_path, "bash")
    program = f"""
source {script}
COMP_WORDS=(factbook --root {shlex.quote(str(root))} verify {option} {shlex.quote(typed)})
COMP_CWORD=5
_factbook_complete
printf '<%s>\\n' "${{COMPREPLY[@]}}"
"""
    proc = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", program],
        capture_output=True, text=True, env=env, cwd=work, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return [line[1:-1] for line in proc.stdout.splitlines()]


def served_kb(tmp_path: Path, interval: str) -> tuple[int, subprocess.Popen[bytes]]:
    """A knowledge base with nothing planted, served by a real `factbook serve` on a free
    loopback port re-verifying every `interval` seconds: (its port, its process)."""
    from helpers import free_port

    root, out = tmp_path / "kb", tmp_path / "outside"
    make_outside(out)
    plant(root, out, {})
    port = free_port()
    argv = ["--root", str(root), "serve", "--listen", f"127.0.0.1:{port}", "--interval", interval]
    proc = subprocess.Popen(
        [sys.executable, "-m", "factbook", *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    return port, proc
