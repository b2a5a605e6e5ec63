"""python -m snippets.planner: rank the layouts of a training job.

python -m snippets.planner --preset llama3-8b --gpu h100-80gb --nodes 1
python -m snippets.planner --config config.json --seq-len 4096
python -m snippets.planner --preset llama3-8b --gpus-per-node 4 --nic-gbps 25
"""

import argparse
import json
import sys

from snippets.planner.model import GPUS, MODELS, PRECISIONS, STACKS
from snippets.planner.report import plan, text


def number(text):
    """A number as typed: "80" stays an int, as the planner's form
    sends it, so both print it alike; "12.5" is a float."""
    try:
        return int(text)
    except ValueError:
        return float(text)


# The cluster's values that may replace the --gpu preset's: plan()'s
# keyword (the cluster dict's key), its type, and what it is.
CLUSTER = (
    ("gpus_per_node", int, "GPUs per node"),
    ("gpu_memory_GB", number, "memory per GPU, GB"),
    ("peak_TFLOPs", number, "peak dense 16-bit TFLOP/s per GPU"),
    ("hbm_GBps", number, "memory (HBM) bandwidth per GPU, GB/s"),
    ("nvlink_GBps", number, "NVLink bandwidth per GPU, GB/s"),
    ("nics_per_node", int, "network cards per node"),
    ("nic_GBps", number, "bandwidth per network card, GB/s"),
)


def parser():
    p = argparse.ArgumentParser(
        prog="python -m snippets.planner",
        description="Rank the parallel layouts of a training job.",
    )
    model = p.add_mutually_exclusive_group(required=True)
    model.add_argument("--preset", choices=sorted(MODELS))
    model.add_argument(
        "--config", metavar="PATH", help="a Hugging Face config.json"
    )
    p.add_argument("--seq-len", type=int, help="tokens per sequence")
    p.add_argument("--gpu", choices=sorted(GPUS), default="h100-80gb")
    p.add_argument("--nodes", type=int, default=1)
    p.add_argument("--global-batch-tokens", type=int, default=4 * 1024 * 1024)
    p.add_argument("--micro-batch", type=int, default=1)
    p.add_argument(
        "--reserve-gb",
        dest="reserve_GB",
        type=number,
        default=4.0,
        help="GB per GPU kept back for the CUDA context, NCCL's buffers "
        "and fragmentation (default: 4.0)",
    )
    p.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="bf16",
        help="fp8: the layers' matrix multiplies in FP8 (default: bf16)",
    )
    p.add_argument(
        "--stack",
        choices=STACKS,
        default="native",
        help="the software that runs the layers: native (PyTorch under "
        "torch.compile), eager (PyTorch, a kernel per operator) or fused "
        "(Megatron-LM's and NeMo's kernels) (default: native)",
    )
    p.add_argument("--top", type=int, default=5, help="rows to print")
    p.add_argument(
        "--json", action="store_true", help="print the answer as JSON"
    )
    for key, kind, what in CLUSTER:
        p.add_argument(
            "--" + key.lower().replace("_", "-"),
            dest=key,
            type=kind,
            help=f"{what} (default: the --gpu preset's)",
        )
    return p


def main(argv=None):
    p = parser()
    args = p.parse_args(argv)
    try:
        config = None
        if args.config:
            with open(args.config, encoding="utf-8") as f:
                config = f.read()
        result = plan(
            config,
            preset=args.preset,
            seq_len=args.seq_len,
            gpu=args.gpu,
            nodes=args.nodes,
            global_batch_tokens=args.global_batch_tokens,
            micro_batch=args.micro_batch,
            reserve_GB=args.reserve_GB,
            precision=args.precision,
            stack=args.stack,
            top=args.top,
            **{key: getattr(args, key) for key, _, _ in CLUSTER},
        )
    except (OSError, TypeError, ValueError) as error:
        p.error(str(error))
    print(json.dumps(result, indent=1) if args.json else text(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
