"""Fleets: groups of targets, per-target variables, host patterns and foreign inventories.

inventory.py   Group, Inventory: membership through children, merged variables
patterns.py    `@gpu-nodes`, `node-*`, `tag:h100`, `a:&b:!c` -> target names (as Ansible)
ansible.py     Ansible inventories (INI, YAML, directories with group_vars/host_vars, the
               JSON of `ansible-inventory --list`) -> an Inventory
sshconfig.py   `Host` entries of ~/.ssh/config -> targets
outliers.py    which targets differ: a fact's results grouped by observed value
"""
