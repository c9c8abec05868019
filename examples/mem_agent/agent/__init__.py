"""The memory agent, with no knowledge of trainers or HTTP: typed records, the answer rules (scoring),
chunking, the prompts and their assembly into token ids, ReMemR1's recall, the loop itself
(workflow: memory turns, then the final turn) and ReMemR1's per-turn rewards. Training and
evaluation both run this one loop, so what is evaluated is what is trained.
"""
