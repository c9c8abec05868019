"""`MemAgentConfig`: every `MEM_*` setting, read from the environment once, typed and checked with
messages that say how to fix them. Python owns every default; the scripts forward only what the user set.
"""
