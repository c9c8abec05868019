"""The floor for benchmark 6: the least a client must do before its first request.

Loads the tokenizer with `tokenizers` alone, builds a Qwen3 chat prompt by hand, encodes it and
sends one `/v1/completions` request with the standard library. Nothing else is imported, so its
start-up is what any client pays (interpreter, `tokenizers`, reading tokenizer.json).

    python bench/minimal_client.py URL TOKENIZER_JSON
"""

import json
import sys
import urllib.request

from tokenizers import Tokenizer


def main() -> None:
    url, tokenizer_json = sys.argv[1], sys.argv[2]
    tokenizer = Tokenizer.from_file(tokenizer_json)
    prompt = "<|im_start|>user\nWhat does the document say?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    ids = tokenizer.encode(prompt, add_special_tokens=False).ids
    body = json.dumps({"prompt": ids, "max_tokens": 16, "temperature": 0.7, "top_p": 0.95}).encode()
    request = urllib.request.Request(f"{url}/v1/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()


if __name__ == "__main__":
    main()
