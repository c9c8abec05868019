"""Prompt-template files (`MEM_PROMPTS`, TOML): their format and checks (template_file), and where the
MemAgent and ReMemR1 authors' own templates come from (sources). Below settings, which loads a
template file as one of its values.
"""
