"""A valid template file (MEM_PROMPTS) for tests that need one and not its wording."""

from __future__ import annotations

from pathlib import Path

from mem_agent.templates.template_file import Assembly, MemoryText, Thinking, dump_prompt_file


def write_template_file(path: Path) -> Path:
    """A valid memory-agent template file at `path`."""
    path.write_text(
        dump_prompt_file(
            mode="memagent",
            assembly=Assembly.TOKENS,
            thinking=Thinking.TEMPLATE,
            memory=MemoryText.RESPONSE,
            templates={
                "memory_turn": "{problem} {memory} {section}",
                "final_turn": "{problem} {memory}",
                "no_memory": "-",
            },
            source={"name": "ours", "commit": "none"},
        )
    )
    return path
