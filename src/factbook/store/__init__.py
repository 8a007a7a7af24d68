"""The results store and the fact files' write-back: what factbook writes into a knowledge base.

results.py    run history and latest.json per target
writeback.py  comment-keeping, atomic, locked edits of fact files
stamps.py     timestamps and run ids (one of each)
atomic.py     atomic file writes (temp file + rename)
"""
