"""The serving engine and its draft model, checked from this side.

sglang/         SGLang launch flags resolved as sglang's own parser does, launch checks
eagle3/         EAGLE-3 draft checkpoint checks and fixes (torch, safetensors)
benchclient.py  the OpenAI-compatible benchmark client (stdlib; also shipped to boxes)
"""
