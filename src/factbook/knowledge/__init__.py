"""The knowledge base and its model: facts, targets and milestones read from YAML, checked, found.

yamlsrc.py     YAML with a file:line for every value; refuses aliases, deep nesting, huge files
schema.py      the fact/target/milestone JSON Schema (published in schema/)
categories.py  every category declared once
model.py       the value types: Fact, Check, Target, Milestone ...
kb.py          the loader: load_kb, load_kb_with_problems -> KnowledgeBase
names.py       strict names, and paths built from them
locate.py      finding the knowledge base upwards from a folder
linters.py     every linter in one explicit list
fleet/         targets.yaml groups, vars and host patterns; Ansible inventories and ssh config
               Host entries read as targets
starter.py     `factbook init`: a knowledge base that works at once (init_template/)
install_source.py  how this copy of factbook was installed (PEP 610), for CI and hints
halves.py      pure work on a long list split across two cores (an import's proposals, parses)
"""
