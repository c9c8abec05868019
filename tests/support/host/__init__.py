"""A test double of the trainer hosts (slime HEAD and current vime), which cannot be installed here.

Everywhere our hooks touch them, these modules behave like slime at commit 624b824 and vime as
the search tool's file index holds it (commit 2b83ea2 for `vime/data/batch_builder.py`,
`vime/utils/types.py` and `vime/observability/rollout_metrics.py`; 052693a for
`vime/rollout/vllm_rollout.py`; 035f983 for `vime/utils/arguments.py`; the newer `abort_mode`
path as vime's own tests pin it, index id 70447660666). Each module's docstring cites the lines
it mirrors. Nothing here is our code under test: it is the contract our hooks must satisfy,
written down in our own words.

    sample.py        Sample, Status, SpecInfo / PrefixCacheInfo objects, vime's extra fields
    args.py          the parsed flags, HEAD defaults and validate_args' derived values
    data_source.py   prompt groups with run-wide group_index / index counters
    rollout_loop.py  semaphore, group tasks, dynamic filter, over-sampling, abort (both modes)
    sample_hooks.py  --rollout-sample-hook-path over every Sample leaf
    rm.py            custom reward model calls and vime's return checks
    filters.py       the dynamic-filter contract and the host's own sample-level filter
    eval_loop.py     evaluation with n samples per prompt and the eval reward key
    metrics.py       log_rollout_data / log_eval_rollout_data over the flat samples, custom log hooks first
    observability.py the hosts' logging_utils.log and compute_rollout_step, as the hooks find them
    train_data.py    rollout-id validation, flatten, convert, DP split, loss token weights
    dp_schedule.py   whole rollouts per step, token-budget packing, rank dealing, asserts
    step.py          one training step in the host's order

What still differs from the hosts, and why:
- One process, one event loop, no Ray: the rollout manager is a Ray actor upstream; our hooks
  see the same calls and objects either way.
- Only custom generate and custom rm are modelled: the hooks always install both, so the
  built-in SGLang/vLLM generate and the rule-based reward models are never on our path.
- Partial rollout, `--group-rm`, `--rollout-sample-filter-path`,
  `--rollout-all-samples-process-path` and the buffer are not modelled: the hooks refuse those
  flags at their first call, so the host never reaches that code with our samples.
- The server-wide abort posts `/abort_requests` to every worker and does not poll the engines'
  load until idle: the scripted engine ends held requests at once, the real one a moment later.
- Metrics keep the parts that read our samples' fields (rewards, masks, statuses, the
  spec/prefix-cache objects, top-p offsets, weight versions) and leave out logging back ends,
  trace spans and perf timings.
- `--balance-data` deals micro-batches by a greedy equal-count split instead of Karmarkar-Karp,
  and virtual pipeline stages are not modelled: neither moves a row to another step.
- Tensorising keeps the dtypes and the float32 `rollout_mask_sums`, on CPU, with no Ray boxes.
- Slime HEAD zips a batched rm's rewards without checking their count; the double applies
  current vime's stricter checks, which a correct rm passes on both.
"""
