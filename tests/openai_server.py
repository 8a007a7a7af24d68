"""A real OpenAI-compatible server on loopback, serving a tiny causal LM this module builds.

No hub download: the model is transformers' LlamaForCausalLM from a tiny LlamaConfig with
seeded random weights, the tokenizer is bytes (ids 0-255, 256 BOS, 257 EOS). Tokens come from
real greedy decoding, so every timing the benchmark client measures is real:

- plain mode: one engine thread batches all active requests into one forward per step
  (continuous batching, like SGLang and vLLM), so throughput grows with concurrency;
- speculative mode (`spec_steps=k`): a draft (the target's first layer, sharing its embedding,
  norm and head) proposes k tokens greedily, the target verifies them in one forward and keeps
  the longest agreeing prefix plus its own next token. The accept length is reported the way
  SGLang 0.5.23 does: per request in `sglext.spec_tokens_details.spec_accept_length` when the
  request sets `return_spec_tokens_details`, and in `/server_info` `internal_states`.

Endpoints: /v1/chat/completions and /v1/completions (streaming SSE with usage, or not),
/v1/models, /health, /server_info.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import torch
from transformers import LlamaConfig, LlamaForCausalLM

BOS, EOS, VOCAB = 256, 257, 258
MODEL_ID = "tiny-llama-bytes"


def build_model(seed: int = 0, layers: int = 2, hidden: int = 64) -> LlamaForCausalLM:
    """A tiny random Llama; the same seed gives the same weights and the same text."""
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=4096,
        bos_token_id=BOS,
        eos_token_id=EOS,
    )
    return LlamaForCausalLM(config).eval()


def encode(text: str) -> list[int]:
    return [BOS, *text.encode("utf-8")]


def decode(ids: list[int]) -> str:
    return bytes(i for i in ids if i < 256).decode("latin-1")


@dataclass
class _Request:
    prompt: list[int]
    max_tokens: int
    ignore_eos: bool
    out: queue.Queue = field(default_factory=queue.Queue)  # ints, then None
    generated: list[int] = field(default_factory=list)
    verify_steps: int = 0
    submitted: float = field(default_factory=time.perf_counter)  # server-side clock
    first: float | None = None
    done: float | None = None


class Engine:
    """Greedy decoding for every active request, one batched forward per step."""

    def __init__(self, model: LlamaForCausalLM, spec_steps: int = 0):
        self.model = model
        self.device = next(model.parameters()).device
        self.finished: list[_Request] = []  # for /stats: server-side timings
        self.spec_steps = spec_steps
        self.inbox: queue.Queue[_Request] = queue.Queue()
        self.stop = threading.Event()
        self.accept_total = 0  # tokens produced by verify steps
        self.verify_total = 0
        self.forwards = 0  # batched target forwards of plain steps (reset with the stats)
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def submit(self, request: _Request) -> None:
        self.inbox.put(request)

    @torch.no_grad()
    def _logits(self, seqs: list[list[int]], layers: int | None = None) -> torch.Tensor:
        """Logits of every position for left-padded sequences (full recompute: tiny model)."""
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), EOS, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for row, seq in enumerate(seqs):
            ids[row, width - len(seq) :] = torch.tensor(seq)
            mask[row, width - len(seq) :] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        if layers is None:
            return self.model(input_ids=ids, attention_mask=mask, position_ids=positions).logits
        # the draft: the first `layers` decoder layers, the target's norm and head
        inner = self.model.model
        saved = inner.layers
        inner.layers = saved[:layers]
        try:
            out = self.model(input_ids=ids, attention_mask=mask, position_ids=positions)
        finally:
            inner.layers = saved
        return out.logits

    def _loop(self) -> None:
        active: list[_Request] = []
        while not self.stop.is_set():
            try:
                while True:
                    active.append(self.inbox.get(block=not active, timeout=0.05))
            except queue.Empty:
                pass
            if not active:
                continue
            if self.spec_steps:
                for req in active:
                    self._spec_step(req)
            else:
                self._plain_step(active)
            for req in [r for r in active if self._finished(r)]:
                req.done = time.perf_counter()
                req.out.put(None)
                active.remove(req)
                with self.lock:
                    self.finished.append(req)

    def _finished(self, req: _Request) -> bool:
        if len(req.generated) >= req.max_tokens:
            return True
        return not req.ignore_eos and bool(req.generated) and req.generated[-1] == EOS

    def _emit(self, req: _Request, tokens: list[int]) -> None:
        for tok in tokens:
            if self._finished(req):
                return
            req.generated.append(tok)
            if req.first is None:
                req.first = time.perf_counter()
            req.out.put(tok)

    def _plain_step(self, active: list[_Request]) -> None:
        logits = self._logits([r.prompt + r.generated for r in active])
        with self.lock:
            self.forwards += 1
        for req, row in zip(active, logits[:, -1].argmax(-1).tolist(), strict=True):
            self._emit(req, [row])

    def _spec_step(self, req: _Request) -> None:
        seq = req.prompt + req.generated
        draft: list[int] = []
        for _ in range(self.spec_steps):
            draft.append(int(self._logits([seq + draft], layers=1)[0, -1].argmax()))
        verify = self._logits([seq + draft])[0, len(seq) - 1 :].argmax(-1).tolist()
        accepted = 0
        while accepted < len(draft) and draft[accepted] == verify[accepted]:
            accepted += 1
        tokens = verify[: accepted + 1]  # the agreeing drafts, then the target's own token
        before = len(req.generated)
        self._emit(req, tokens)
        with self.lock:
            req.verify_steps += 1
            self.verify_total += 1
            self.accept_total += len(req.generated) - before

    def stats(self) -> dict[str, Any]:
        """Server-side truth for a client to be compared with: tokens, span, TTFT."""
        with self.lock:
            done = list(self.finished)
        if not done:
            return {"requests": 0}
        start = min(r.submitted for r in done)
        end = max(r.done or 0.0 for r in done)
        ttfts = sorted((r.first or r.done or 0.0) - r.submitted for r in done)
        tokens = sum(len(r.generated) for r in done)
        return {
            "requests": len(done),
            "tokens": tokens,
            "span_s": end - start,
            "throughput_tok_s": tokens / (end - start) if end > start else None,
            "ttft_p50_s": ttfts[(len(ttfts) - 1) // 2],
            "forwards": self.forwards,  # tokens / forwards: how many requests a step batched
        }

    def reset_stats(self) -> None:
        with self.lock:
            self.finished.clear()
            self.forwards = 0

    def draft_counters(self) -> tuple[int, int]:
        """(verify steps, accepted draft tokens): what vLLM's spec_decode counters count."""
        with self.lock:
            return self.verify_total, self.accept_total - self.verify_total

    def avg_accept_length(self) -> float | None:
        with self.lock:
            return self.accept_total / self.verify_total if self.verify_total else None


class _Handler(BaseHTTPRequestHandler):
    server: OpenAIServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        engine = self.server.engine
        if self.path == "/health":
            self._json(200, {"status": "ok"})
        elif self.path == "/v1/models":
            self._json(200, {"object": "list", "data": [{"id": MODEL_ID, "object": "model"}]})
        elif self.path == "/stats":
            self._json(200, engine.stats())
        elif self.path == "/stats/reset":
            engine.reset_stats()
            self._json(200, {"ok": True})
        elif self.path == "/metrics" and self.server.flavor == "vllm":
            drafted, accepted = engine.draft_counters()
            label = f'{{model_name="{MODEL_ID}"}}'
            text = (
                "# TYPE vllm:spec_decode_num_drafts counter\n"
                f"vllm:spec_decode_num_drafts_total{label} {drafted}\n"
                "# TYPE vllm:spec_decode_num_accepted_tokens counter\n"
                f"vllm:spec_decode_num_accepted_tokens_total{label} {accepted}\n"
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(text)))
            self.end_headers()
            self.wfile.write(text)
        elif self.path in ("/server_info", "/get_server_info") and self.server.flavor == "sglang":
            state: dict[str, Any] = {}
            accept = engine.avg_accept_length()
            if accept is not None:
                state["avg_spec_accept_length"] = accept
            info = {
                "model_path": MODEL_ID,
                "speculative_algorithm": "EAGLE3" if engine.spec_steps else None,
                "speculative_num_steps": engine.spec_steps or None,
                "speculative_eagle_topk": 1 if engine.spec_steps else None,
                "speculative_num_draft_tokens": engine.spec_steps + 1
                if engine.spec_steps
                else None,
                "internal_states": [state],
                "version": "tiny-test-server",
            }
            self._json(200, info)
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._json(400, {"error": {"message": "body is not JSON"}})
            return
        chat = self.path == "/v1/chat/completions"
        if not chat and self.path != "/v1/completions":
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        if body.get("model") not in (None, MODEL_ID):
            self._json(404, {"error": {"message": f"model {body.get('model')} not served"}})
            return
        if chat:
            text = "".join(str(m.get("content", "")) for m in body.get("messages") or [])
        else:
            text = str(body.get("prompt", ""))
        req = _Request(
            prompt=encode(text),
            max_tokens=int(body.get("max_tokens") or 16),
            ignore_eos=bool(body.get("ignore_eos", False)),
        )
        self.server.engine.submit(req)
        if body.get("stream"):
            self._stream(req, chat, body)
        else:
            self._whole(req, chat, body)

    def _tokens(self, req: _Request):
        while (tok := req.out.get()) is not None:
            yield tok

    def _extras(self, req: _Request, body: dict[str, Any]) -> dict[str, Any]:
        if self.server.flavor != "sglang":
            return {}
        if not (self.server.engine.spec_steps and body.get("return_spec_tokens_details")):
            return {}
        length = len(req.generated) / req.verify_steps if req.verify_steps else 0.0
        return {
            "sglext": {
                "spec_tokens_details": {
                    "spec_accept_length": length,
                    "spec_verify_ct": req.verify_steps,
                }
            }
        }

    def _usage(self, req: _Request) -> dict[str, int]:
        n = len(req.generated)
        return {"prompt_tokens": len(req.prompt), "completion_tokens": n,
                "total_tokens": len(req.prompt) + n}  # fmt: skip

    def _stream(self, req: _Request, chat: bool, body: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        kind = "chat.completion.chunk" if chat else "text_completion"
        base = {"id": f"cmpl-{id(req)}", "object": kind, "created": int(time.time()),
                "model": MODEL_ID}  # fmt: skip

        def send(payload: dict[str, Any] | str) -> None:
            data = payload if isinstance(payload, str) else json.dumps(payload)
            raw = f"data: {data}\n\n".encode()
            self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
            self.wfile.flush()

        for tok in self._tokens(req):
            piece = decode([tok])
            choice = {"index": 0, "finish_reason": None}
            choice.update({"delta": {"content": piece}} if chat else {"text": piece})
            send({**base, "choices": [choice]})
        reason = "length" if len(req.generated) >= req.max_tokens else "stop"
        last = {"index": 0, "finish_reason": reason}
        last.update({"delta": {}} if chat else {"text": ""})
        send({**base, "choices": [last], **self._extras(req, body)})
        if (body.get("stream_options") or {}).get("include_usage"):
            send({**base, "choices": [], "usage": self._usage(req)})
        send("[DONE]")
        self.wfile.write(b"0\r\n\r\n")

    def _whole(self, req: _Request, chat: bool, body: dict[str, Any]) -> None:
        text = decode(list(self._tokens(req)))
        reason = "length" if len(req.generated) >= req.max_tokens else "stop"
        choice: dict[str, Any] = {"index": 0, "finish_reason": reason}
        if chat:
            choice["message"] = {"role": "assistant", "content": text}
        else:
            choice["text"] = text
        self._json(200, {"id": f"cmpl-{id(req)}", "object": "chat.completion" if chat
                         else "text_completion", "model": MODEL_ID, "choices": [choice],
                         "usage": self._usage(req), **self._extras(req, body)})  # fmt: skip


class OpenAIServer(ThreadingHTTPServer):
    """The server on 127.0.0.1 at a free port; `with OpenAIServer() as s: s.url`."""

    daemon_threads = True

    def __init__(
        self,
        *,
        spec_steps: int = 0,
        flavor: str = "sglang",
        seed: int = 0,
        layers: int = 2,
        hidden: int = 64,
        device: str = "cpu",
        port: int = 0,
    ):
        """`flavor` picks how accept lengths are exposed: "sglang" (sglext, /server_info),
        "vllm" (/metrics counters) or "plain" (not at all)."""
        super().__init__(("127.0.0.1", port), _Handler)
        self.flavor = flavor
        self.engine = Engine(build_model(seed, layers, hidden).to(device), spec_steps)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up between keep-alive requests is normal, not an error."""
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)

    def __enter__(self) -> OpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.engine.stop.set()
        self.server_close()
        self.engine.thread.join(timeout=5)


def main() -> None:
    """Serve until killed: `python tests/openai_server.py --port 8000 --device cuda`."""
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--spec-steps", type=int, default=0)
    p.add_argument("--flavor", default="sglang", choices=("sglang", "vllm", "plain"))
    a = p.parse_args()
    server = OpenAIServer(spec_steps=a.spec_steps, flavor=a.flavor, layers=a.layers,
                          hidden=a.hidden, device=a.device, port=a.port)  # fmt: skip
    print(server.url, flush=True)
    with server:
        server.engine.thread.join()


if __name__ == "__main__":
    main()
