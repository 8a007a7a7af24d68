"""File, config, safetensors and tokenizer probes on real files made here."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import struct
from pathlib import Path

import pytest

from factbook.probes import files, ml


def _safetensors(path: Path, tensors: dict[str, list[int]]) -> None:
    """A real safetensors file: 8-byte LE header length, JSON header, then the (sparse) data."""
    header: dict = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, shape in tensors.items():
        size = 2
        for dim in shape:
            size *= dim
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw)
    os.truncate(path, 8 + len(raw) + offset)  # sparse: the data is never read


def test_exists_size_sha256_glob(tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(b"x" * 1000)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.bin").write_bytes(b"y" * 24)
    assert files.file_exists(str(tmp_path / "a.bin")) is True
    assert files.file_exists(str(tmp_path / "nope")) is False
    assert files.file_size(str(tmp_path / "a.bin")) == 1000
    assert files.file_size(str(tmp_path)) == 1024
    assert files.file_sha256(str(tmp_path / "a.bin")) == hashlib.sha256(b"x" * 1000).hexdigest()
    assert files.file_glob_count(str(tmp_path / "**" / "*.bin")) == 2
    assert files.file_total_size(str(tmp_path / "*.bin")) == 1000
    assert files.file_read(str(tmp_path / "sub" / "b.bin"), max_bytes=5) == "yyyyy"
    with pytest.raises(RuntimeError, match="no such file"):
        files.file_size(str(tmp_path / "missing"))


def test_config_values_by_path(tmp_path: Path) -> None:
    config = {"text_config": {"num_hidden_layers": 61, "layers": [{"n": 1}, {"n": 2}]}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "c.yaml").write_text("server:\n  port: 8000\n  hosts: [a, b]\n")
    (tmp_path / "c.toml").write_text('[tool]\nname = "x"\nlevels = [1, 2]\n')
    (tmp_path / "c.ini").write_text("[main]\nthreads = 8\n")
    assert files.config_value(str(tmp_path / "config.json"), "text_config.num_hidden_layers") == 61
    assert files.config_value(str(tmp_path / "config.json"), "text_config.layers[1].n") == 2
    assert files.config_value(str(tmp_path / "config.json"), "text_config.missing") is None
    assert files.config_value(str(tmp_path / "config.json")) == config
    assert files.config_value(str(tmp_path / "c.yaml"), "server.hosts[-1]") == "b"
    assert files.config_value(str(tmp_path / "c.toml"), "tool.levels[0]") == 1
    assert files.config_value(str(tmp_path / "c.ini"), "main.threads") == "8"
    (tmp_path / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.12.3\n")
    assert files.config_value(str(tmp_path / "pyvenv.cfg"), "version") == "3.12.3"
    (tmp_path / "os-release").write_text('ID=debian\nPRETTY_NAME="Debian GNU/Linux 12"\n')
    assert files.config_value(str(tmp_path / "os-release"), "PRETTY_NAME") == "Debian GNU/Linux 12"


def test_safetensors_single_and_sharded(tmp_path: Path) -> None:
    _safetensors(tmp_path / "one.safetensors", {"w": [4, 8], "b": [8]})
    assert ml.safetensors_tensors(str(tmp_path / "one.safetensors")) == {"w": [4, 8], "b": [8]}
    model = tmp_path / "model"
    model.mkdir()
    _safetensors(model / "model-00001-of-00002.safetensors", {"embed.weight": [163840, 7168]})
    _safetensors(model / "model-00002-of-00002.safetensors", {"lm_head.weight": [163840, 7168]})
    assert ml.safetensors_shard_count(str(model)) == 2
    assert ml.safetensors_tensors(str(model)) == {
        "embed.weight": [163840, 7168],
        "lm_head.weight": [163840, 7168],
    }
    # With an index, only the shards it names count.
    (model / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"embed.weight": "model-00001-of-00002.safetensors"}})
    )
    assert ml.safetensors_tensors(str(model)) == {"embed.weight": [163840, 7168]}
    (tmp_path / "bad.safetensors").write_bytes(b"\x01")
    with pytest.raises(RuntimeError, match="too short"):
        ml.safetensors_tensors(str(tmp_path / "bad.safetensors"))


def _tokenizer_json(path: Path) -> None:
    """A byte-level BPE tokenizer.json as Hugging Face writes it (Ġ is a leading space)."""
    data = {
        "added_tokens": [{"id": 100, "content": "<|im_end|>", "special": True}],
        "model": {"type": "BPE", "vocab": {"hello": 5, "Ġworld": 6, "!": 7}},
        "decoder": {"type": "ByteLevel"},
        "pre_tokenizer": {"type": "ByteLevel"},
    }
    path.write_text(json.dumps(data))


def test_tokenizer_json_ids_and_decode(tmp_path: Path) -> None:
    _tokenizer_json(tmp_path / "tokenizer.json")
    path = str(tmp_path / "tokenizer.json")
    assert ml.tokenizer_token_id(path, "<|im_end|>") == 100
    assert ml.tokenizer_token_id(path, " world") == 6
    assert ml.tokenizer_token_id(path, "absent") is None
    assert ml.tokenizer_decode(path, [5, 6, 7]) == "hello world!"
    assert ml.tokenizer_decode(str(tmp_path), [100]) == "<|im_end|>"  # a directory works too
    with pytest.raises(RuntimeError, match="not in the vocabulary"):
        ml.tokenizer_decode(path, [99999])


def test_tiktoken_model_with_special_tokens_beside_it(tmp_path: Path) -> None:
    """Kimi's layout: tiktoken.model (base64 token, rank) + added_tokens_decoder in the config."""
    pieces = [b"hello", b" world", "é".encode(), b"!"]
    lines = [f"{base64.b64encode(p).decode()} {i}" for i, p in enumerate(pieces)]
    (tmp_path / "tiktoken.model").write_text("\n".join(lines) + "\n")
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "added_tokens_decoder": {
                    "163586": {"content": "<|im_end|>", "special": True},
                    "163606": {"content": "<think>", "special": True},
                }
            }
        )
    )
    model = str(tmp_path / "tiktoken.model")
    assert ml.tokenizer_token_id(model, "<|im_end|>") == 163586
    assert ml.tokenizer_token_id(model, "<think>") == 163606
    assert ml.tokenizer_token_id(model, " world") == 1
    assert ml.tokenizer_token_id(model, "é") == 2
    assert ml.tokenizer_decode(model, [0, 1, 3, 163586]) == "hello world!<|im_end|>"


@pytest.mark.parametrize("bad", ["!!notbase64 1", "aGVsbG8 1", "aGVsbG8= rank", "aGVsbG8= 1.5"])
def test_a_bad_tiktoken_line_is_named_with_its_file_and_number(tmp_path: Path, bad: str) -> None:
    """A line that is not `BASE64 RANK` (bad base64, bad padding, a rank that is no integer)
    is one error naming the file and the line, not binascii's "Incorrect padding"."""
    (tmp_path / "tiktoken.model").write_text(f"aGVsbG8= 0\n{bad}\n")
    with pytest.raises(RuntimeError, match=r"tiktoken\.model:2: not a tiktoken line"):
        ml.tokenizer_token_id(str(tmp_path / "tiktoken.model"), "hello")


@pytest.mark.parametrize(
    "data",
    [
        {"added_tokens": [{"content": "x"}]},
        {"added_tokens": [5]},
        {"model": {"vocab": 5}},
        {"model": {"vocab": {"a": "b"}}},
    ],
)
def test_a_tokenizer_json_of_another_shape_is_one_named_error(tmp_path: Path, data: dict) -> None:
    (tmp_path / "tokenizer.json").write_text(json.dumps(data))
    with pytest.raises(RuntimeError, match=r"tokenizer\.json: not a tokenizer this probe can read"):
        ml.tokenizer_token_id(str(tmp_path), "a")
