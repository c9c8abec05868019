"""Making data: multi-hop QA rows read from HotpotQA-layout files, the synthetic QA set, RULER-HQA-shaped
contexts, and the training row layout the hooks read.
"""
