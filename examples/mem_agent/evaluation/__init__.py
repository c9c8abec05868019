"""The RULER-HQA evaluator's parts: eval files (found, checked, streamed), the per-item result store
(appended, resumed, repaired), and the report (table, summary.json, plot).
"""
