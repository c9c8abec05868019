"""Seeing inside a memory agent: what each trajectory wrote into memory (trajectory records), the
memory-agent metrics handed to the trainer's logger, and the views built from them. The top
layer: it reads the agent's records, the hosts' samples and the evaluator's results.
"""
