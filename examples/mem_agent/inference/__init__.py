"""Talking to inference servers: the router client (token ids in, token ids and logprobs out, over
three wire protocols), request scheduling, a pool over several servers, and the flags a command
uses to build an agent and a client.
"""
