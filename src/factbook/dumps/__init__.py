"""Status dumps, both ways: written from the knowledge base (status/), read into it (capture/).

status/   the knowledge base as of a moment, in the seeds' structure (`factbook status`)
capture/  a hand-written dump -> proposed facts, reviewed as a diff (`factbook import`)
"""
