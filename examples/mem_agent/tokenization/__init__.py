"""Loading a model folder's tokenizer (transformers' `AutoTokenizer`, once per process) and the one
encode every caller uses.
"""
