"""The README's screenshots, from this repository's own handbook and results.

Builds the site (`mkdocs build`), serves it on a loopback port with the standard library,
and photographs a few pages in Debian's headless Chromium:

    .venv/bin/python scripts/screenshots.py [--out docs/img]
"""

from __future__ import annotations

import argparse
import functools
import os
import subprocess
import sys
import tempfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
SHOTS = [  # (file, page, viewport, full page)
    ("home.png", "index.html", DESKTOP, False),
    ("hardware-topology.png", "facts/hardware.html#topology", DESKTOP, False),
    ("pitfalls.png", "facts/pitfalls.html", DESKTOP, False),
    ("pitfalls-phone.png", "facts/pitfalls.html", PHONE, False),
    ("fact-verified.png", "facts/hardware.html#h200.gpu.model", DESKTOP, False),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    args = parser.parse_args()
    site = Path(tempfile.mkdtemp(prefix="factbook-site-"))
    mkdocs = Path(sys.executable).with_name("mkdocs")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    subprocess.run([str(mkdocs), "build", "-q", "-d", str(site)], cwd=ROOT, env=env, check=True)
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for name, page_path, viewport, full in SHOTS:
                page = browser.new_page(viewport=viewport)
                page.goto(f"{base}/{page_path}", wait_until="networkidle")
                page.screenshot(path=str(args.out / name), full_page=full)
                page.close()
                print(args.out / name)
            browser.close()
    finally:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
