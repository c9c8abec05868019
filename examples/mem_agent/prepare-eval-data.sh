#!/usr/bin/env bash
# RULER-HQA evaluation files: check which eval_<N>.json are in DATA_ROOT, and fetch or build the
# missing ones. Every file is checked by the evaluator's own checker, streamed (an eval_6400.json is
# ~450 MB). Every setting is a variable or a flag: --help.
#
#   DATA_ROOT=data/ruler_hqa bash examples/mem_agent/prepare-eval-data.sh              # check only
#   DATA_ROOT=data/ruler_hqa bash examples/mem_agent/prepare-eval-data.sh --download   # from the Hugging Face Hub
#   DATA_ROOT=data/ruler_hqa bash examples/mem_agent/prepare-eval-data.sh --build-from hotpot_dev_distractor_v1.json
set -euo pipefail

# shellcheck source=examples/mem_agent/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"
PYTHON=${PYTHON:-$(checkout_python)} # the interpreter with mem-agent installed
require_python

# One process, `mem-agent prepare-eval-data` (prepare_eval_data.py): every setting checked at once
# (exit 2), then each length's file checked, the missing ones downloaded (connect and read timeouts,
# a progress line) or built in-process by build_long_context's builder, and the status table (exit 0:
# every length ready; 1: some are not).
exec "${PYTHON}" -m mem_agent prepare-eval-data "$@"
