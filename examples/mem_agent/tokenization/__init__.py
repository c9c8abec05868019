"""Loading a model folder's tokenizer: the light loader (`tokenizers` plus the chat template rendered
with jinja2, no torch) and the transformers fallback, giving identical ids.
"""
