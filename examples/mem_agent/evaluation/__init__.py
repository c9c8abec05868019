"""The RULER-HQA evaluator's parts: eval files (found, checked, streamed), the per-item result store
(appended, resumed, repaired), and the report (table, summary.json, plot); and RULER-HQA's eval files
made ready in DATA_ROOT, downloaded or built (hqa_files, `mem-agent prepare-eval-data`).
"""
