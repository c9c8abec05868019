"""Prompt templates: chat-templated once, spliced as token ids, structured as MemAgent's."""

from __future__ import annotations

import numpy as np

from mem_agent.agent.prompt_sets import builtin_prompts
from mem_agent.agent.prompts import (
    FINAL_TURN_TEXT,
    MEMORY_TURN_TEXT,
    NO_MEMORY_TEXT,
    compile_template,
)
from mem_agent.settings.config import AgentMode
from mem_agent.tokenization.tokenizer import encode


def _builtin(tokenizer):
    return builtin_prompts(tokenizer, AgentMode.MEMAGENT)


def test_spliced_prompt_decodes_to_the_chat_templated_message(tokenizer):
    """Splicing ids gives the same text as rendering the message through the chat template."""
    prompts = _builtin(tokenizer)
    problem, memory, section = "Who wrote it?", "Notes: a poet.", "Document 1:\nThe poem was written by Ann."
    ids = prompts.memory_turn.render(
        problem=encode(tokenizer, problem),
        memory=encode(tokenizer, memory),
        section=encode(tokenizer, section),
    )
    expected = tokenizer.apply_chat_template(
        [
            {
                "role": "user",
                "content": MEMORY_TURN_TEXT.format(problem=problem, memory=memory, section=section),
            }
        ],
        tokenize=False,
        add_generation_prompt=True,
        enable_thinking=False,
    )
    assert ids.dtype == np.int32
    assert tokenizer.decode(ids.tolist()) == expected


def test_final_prompt_has_problem_and_memory_blocks_and_asks_for_a_box(tokenizer):
    prompts = _builtin(tokenizer)
    assert prompts.final_turn.slots == ("problem", "memory")
    text = tokenizer.decode(
        prompts.final_turn.render(problem=encode(tokenizer, "Q?"), memory=prompts.no_memory).tolist()
    )
    assert "<problem>\nQ?\n</problem>" in text and f"<memory>\n{NO_MEMORY_TEXT}\n</memory>" in text
    assert "\\boxed{}" in text and "<section>" not in text


def test_memory_prompt_slots_are_problem_memory_section_in_that_order(tokenizer):
    assert _builtin(tokenizer).memory_turn.slots == ("problem", "memory", "section")


def test_thinking_switch_changes_only_the_generation_prompt(tokenizer):
    """Qwen3 with thinking off pre-fills an empty think block; with it on the model writes one."""
    off = compile_template(tokenizer, FINAL_TURN_TEXT, thinking=False)
    on = compile_template(tokenizer, FINAL_TURN_TEXT, thinking=True)
    assert tokenizer.decode(off.pieces[-1].tolist()).endswith("<think>\n\n</think>\n\n")
    assert tokenizer.decode(on.pieces[-1].tolist()).endswith("<|im_start|>assistant\n")
    assert all(np.array_equal(a, b) for a, b in zip(off.pieces[:-1], on.pieces[:-1], strict=True))


def test_render_refuses_missing_or_extra_slots(tokenizer):
    template = _builtin(tokenizer).final_turn
    empty = np.zeros(0, dtype=np.int32)
    for values in ({"problem": empty}, {"problem": empty, "memory": empty, "section": empty}):
        try:
            template.render(**values)
        except TypeError as error:
            assert "slots" in str(error)
        else:
            raise AssertionError(f"render accepted {sorted(values)}")
