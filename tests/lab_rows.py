"""Rows of a page's bad-input table (tests/lab_inputs.py), built from
the lab function's own signature.

Many labs take arguments of the same name and the same kind: a
`world_size` is a count of ranks wherever it is taken, `params` a size.
Those kinds are listed once here, by name, so that a page's row names
only the arguments whose kind is its own:

    row(ring_terms, {"kind": "all_reduce", "ranks": 4}, kind=KIND)

is the row ("ring_terms", ring_terms, valid, {"kind": KIND, "ranks":
COUNT}). Every named argument of the function gets its kind from the
keywords, else from KINDS; one that has neither is an error
when the tests are collected, as an argument left out of a row is in
lab_inputs' coverage check. Arguments taken as **keywords are passed
by the row, since the signature does not name them.
"""

import inspect

from tests import lab_inputs as inputs

COUNTS = (
    "accum_steps",
    "batch_tokens",
    "chunks",
    "forward",
    "gpus_per_node",
    "hidden",
    "layers",
    "micro_batch",
    "microbatches",
    "nics_per_node",
    "ranks",
    "seq_len",
    "stages",
    "tokens",
    "tokens_per_gpu",
    "tp",
    "vocab",
    "world_size",
)
SIZES = (
    "bytes_gathered",
    "bytes_grad",
    "bytes_param",
    "bytes_per_grad",
    "bytes_per_value",
    "flops_per_token_per_param",
    "gemm_speedup",
    "gpu_GB",
    "interconnect_GBps",
    "link_GBps",
    "nic_GBps",
    "nvlink_GBps",
    "params",
    "peak_tflops",
    "size",
    "tflops_per_gpu",
    "unit_params",
)
# the slots of one step, as the pipeline schedule labs return them
SLOTS = inputs.Kind(
    [
        ([], ValueError),
        (None, TypeError),
        (4, TypeError),
        ("FB", TypeError),
        ("FBW", TypeError),
        ([(0, 0, 1, "F", 0)], TypeError),
    ]
)
# a stage of a 4-stage schedule: an int in 0..3
STAGE_OF_4 = inputs.Kind(
    [
        (-1, ValueError),
        (4, ValueError),
        (99, ValueError),
        (1.0, TypeError),
        ("0", TypeError),
        (None, TypeError),
        (True, TypeError),
    ]
)
KINDS = {
    **dict.fromkeys(COUNTS, inputs.COUNT),
    **dict.fromkeys(SIZES, inputs.POSITIVE),
    "bytes_optim": inputs.NON_NEGATIVE,
    "causal": inputs.FLAG,
    "flash_attention": inputs.FLAG,
    "slots": SLOTS,
}


def row(function, valid, /, **kinds):
    """The table row of `function`, called with `valid` keyword
    arguments; `kinds` are the kinds that are not KINDS[argument]."""
    parameters = inspect.signature(function).parameters.values()
    named = [p.name for p in parameters if p.kind != p.VAR_KEYWORD]
    unknown = [a for a in named if a not in kinds and a not in KINDS]
    if unknown:
        raise KeyError(f"{function.__name__}: no kind for {unknown}")
    shared = {a: KINDS[a] for a in named if a not in kinds}
    return (function.__name__, function, valid, {**shared, **kinds})
