"""`MemAgentConfig`: every `MEM_*` setting, read from the environment once, typed and checked with
messages that say how to fix them. Python owns every default; the scripts forward only what the user set.
A command's settings model is its flags and variables at once (command.py), every problem in one message.
"""
