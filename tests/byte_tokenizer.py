"""Save a Hugging Face tokenizer matching tests/openai_server.py's bytes (ids 0-255 are the
latin-1 characters, 256 BOS, 257 EOS) to a folder, for tools that load one by path
(sglang.benchmark.serving --tokenizer DIR). Run with an interpreter that has transformers:

    python tests/byte_tokenizer.py DIR
"""

from __future__ import annotations

import sys

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast


def save(folder: str) -> None:
    vocab = {chr(i): i for i in range(256)}
    vocab.update({"<s>": 256, "</s>": 257})
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="</s>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tokenizer.decoder = decoders.Fuse()
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>")
    fast.save_pretrained(folder)


if __name__ == "__main__":
    save(sys.argv[1])
