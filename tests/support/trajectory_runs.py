"""Runs on disk as the viewer and the comparison read them, built from real records: each memory
is encoded with the real Qwen3 tokenizer into a `Trajectory`, and `record_of` decodes it back,
as training and the evaluator do. The texts are chosen so a test knows what each memory says."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from mem_agent.agent.records import Completion, FinishReason, Trajectory, TrajectoryStatus, Turn, TurnKind
from mem_agent.agent.scoring import score_answer
from mem_agent.observability.trajectory_records import TrajectoryRecord, append_records, record_of
from mem_agent.tokenization.tokenizer import decode, encode


def memories_for(question_index: int, chunks: int) -> list[str]:
    """Memories that grow a fact per chunk and rewrite one word, so consecutive ones differ both ways."""
    notes = [f"Question {question_index}: the river is long."]
    for step in range(1, chunks):
        previous = notes[-1].replace("long", "wide") if step % 2 else notes[-1].replace("wide", "long")
        notes.append(f"{previous} Chunk {step} says <b>fact {step}</b> & more.")
    return notes


def trajectory_of(
    tokenizer, memories: list[str], answer: str, *, cut_steps: frozenset[int] = frozenset()
) -> Trajectory:
    turns = []
    for step, memory in enumerate(memories):
        ids = encode(tokenizer, memory)
        reason = FinishReason.LENGTH if step in cut_steps else FinishReason.STOP
        completion = Completion.build(ids.tolist(), [-0.1] * len(ids), reason)
        turns.append(Turn(TurnKind.MEMORY, step, np.zeros(5, dtype=np.int32), completion, ids))
    answer_ids = encode(tokenizer, answer)
    final = Completion.build(answer_ids.tolist(), [-0.1] * len(answer_ids), FinishReason.STOP)
    turns.append(Turn(TurnKind.FINAL, len(memories), np.zeros(5, dtype=np.int32), final, turns[-1].memory_ids))
    return Trajectory(
        turns, TrajectoryStatus.COMPLETED, answer=answer, context_tokens=1000 * len(memories), num_chunks=len(memories)
    )


def record_for(tokenizer, index: int, chunks: int, *, right: bool, **context) -> TrajectoryRecord:
    gold = f"answer{index}"
    answer = f"It is \\boxed{{{gold if right else 'nothing'}}}"
    trajectory = trajectory_of(tokenizer, memories_for(index, chunks), answer, cut_steps=frozenset({chunks - 1}))
    return record_of(
        trajectory,
        lambda ids: decode(tokenizer, ids),
        question=f"Which river is question {index} about?",
        ground_truths=[gold],
        scores=score_answer(answer, [gold]),
        item_id=str(index),
        **context,
    )


def training_run(tokenizer, folder: Path, rollouts: int = 3, per_rollout: int = 4) -> Path:
    """SAVE_PATH/trajectories/rollout_<id>.jsonl, half right, rewards 1/0 with centred advantages."""
    (folder / "trajectories").mkdir(parents=True)
    for rollout in range(rollouts):
        records = []
        for index in range(per_rollout):
            right = index < (rollout + 1) * per_rollout // (rollouts + 1)
            record = record_for(
                tokenizer, index, chunks=2 + rollout, right=right, source="train", mode="memagent", rollout_id=rollout
            )
            records.append(record)
        mean = sum(r.scores["strict"] for r in records) / len(records)
        records = [replace(r, reward=r.scores["strict"], advantage=r.scores["strict"] - mean) for r in records]
        append_records(folder / "trajectories" / f"rollout_{rollout:07d}.jsonl", records)
    return folder


def evaluation_run(
    tokenizer,
    folder: Path,
    lengths: dict[str, int],
    *,
    questions: int = 3,
    trajectories: bool = True,
    right: Callable[[int], bool] = lambda i: i % 2 == 0,
    facts: dict | None = None,
) -> Path:
    """An evaluator's folder: results_<N>.jsonl, trajectories_<N>.jsonl and summary.json, with
    question i right where `right(i)` (default: i even); `lengths` maps a label to its chunks per
    question; `facts` are summary.json's run facts (default: the mode only)."""
    folder.mkdir(parents=True, exist_ok=True)
    results = []
    for label, chunks in lengths.items():
        records = [
            record_for(
                tokenizer, i, chunks, right=right(i), source="eval", mode="memagent", eval_set=f"eval_{label}.json"
            )
            for i in range(questions)
        ]
        with (folder / f"results_{label}.jsonl").open("w", encoding="utf-8") as handle:
            for r in records:
                line = {"id": r.item_id, "question": r.question, "answers": r.ground_truths, "status": r.status}
                line |= {"answer": r.answer, **r.scores, "context_tokens": r.context_tokens, "dropped_tokens": 0}
                handle.write(json.dumps(line) + "\n")
        if trajectories:
            append_records(folder / f"trajectories_{label}.jsonl", records)
        sub_em = 100.0 * sum(r.scores["sub_em"] for r in records) / questions
        results.append(
            {
                "label": label,
                "items": questions,
                "completed": questions,
                "failed": 0,
                "missing": 0,
                "sub_em": sub_em,
                "em": sub_em,
                "f1": sub_em,
                "strict": sub_em,
                "mean_context_tokens": 1000.0 * chunks,
            }
        )
    (folder / "summary.json").write_text(
        json.dumps({"results": results, "run": facts or {"mode": "memagent"}, "earlier_runs": []})
    )
    return folder
