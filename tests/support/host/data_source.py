"""The host's prompt source: n deep copies per prompt, numbered across the whole run.

Mirrors RolloutDataSource.get_samples (slime/rollout/data_source.py:90-118, vime's
vime/rollout/data_source.py alike): `group_index` counts prompts and `index` counts samples over
every call of a run (the counters live on the source, data_source.py:54-56, and are saved with
checkpoints, :127-136), so two rollout steps never reuse a group or sample number; past the last
prompt the source wraps to the first (a new epoch, :97-103). A prompt row becomes a Sample with
its prompt, label and metadata, as slime/utils/data.py's Dataset builds it.
"""

from __future__ import annotations

import copy
from typing import Any

from support.host.sample import Sample


class DataSource:
    def __init__(self, rows: list[dict[str, Any]], n_samples_per_prompt: int, sample_type: type = Sample) -> None:
        """`sample_type`: the checkout's own Sample class, where a fake checkout defines one."""
        assert rows, "no prompt rows"
        self.prompts = [
            sample_type(prompt=row["prompt"], label=row.get("label"), metadata=copy.deepcopy(row.get("metadata") or {}))
            for row in rows
        ]
        self.n_samples_per_prompt = n_samples_per_prompt
        self.sample_group_index = 0
        self.sample_index = 0
        self.sample_offset = 0
        self.epoch_id = 0

    def _prompts(self, count: int) -> list[Sample]:
        taken: list[Sample] = []
        while len(taken) < count:
            take = min(count - len(taken), len(self.prompts) - self.sample_offset)
            taken += self.prompts[self.sample_offset : self.sample_offset + take]
            self.sample_offset += take
            if self.sample_offset == len(self.prompts):
                self.sample_offset, self.epoch_id = 0, self.epoch_id + 1
        return taken

    def get_samples(self, num_samples: int) -> list[list[Sample]]:
        groups = []
        for prompt in self._prompts(num_samples):
            group = []
            for _ in range(self.n_samples_per_prompt):
                sample = copy.deepcopy(prompt)
                sample.group_index, sample.index = self.sample_group_index, self.sample_index
                self.sample_index += 1
                group.append(sample)
            self.sample_group_index += 1
            groups.append(group)
        return groups
