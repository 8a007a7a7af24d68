"""factbook inside other people's tools.

pytest_plugin.py  `pytest --factbook`: one item per fact x target (entry point `factbook`)
serve.py          `factbook serve`: /metrics (OpenMetrics) and /healthz
ansible_facts.py  facts.d JSON for Ansible's setup module
benchimport.py    SGLang and vLLM benchmark result files -> measurements
completion.py     bash, zsh and fish completion
mcp/              `factbook mcp`: the knowledge base for AI assistants (Model Context Protocol)
"""
