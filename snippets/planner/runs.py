"""Published training runs, one row each with its source beside it, and
every row's figure converted to one definition.

Papers report speed in their own units: TFLOP/s per GPU counted with
their own formula, an MFU, tokens per second, or the time of one step.
`tokens_per_s_per_gpu(run)` turns each row into tokens per second per
GPU, the ground truth a cost model must predict: a published FLOP rate
is divided by the FLOPs per token of the paper's own formula, worked
out with the row's own shapes. `model_tflops(run)` then counts those
tokens under one definition for every row, the model FLOPs per token

    6 N + 12 L h T

of PaLM (arXiv 2204.02311, Appendix B: 6N + 12 L H Q T, and H Q = h):

- N counts the weights of every matrix multiply a token goes through:
  each layer's attention and MLP matrices, and the output layer once,
  tied to the input embedding or not. The embedding lookup, position
  embeddings, norms and biases are left out.
- 12 L h T is attention's two T x T products at the training sequence
  length T, counted whole (no halving for the causal mask), as PaLM
  and torchtitan count it.
- Recomputed passes never count: this is model FLOPs, not hardware.

`mfu(run)` divides by the dense 16-bit peak of the planner's preset for
the row's GPU (A100 312, H100 SXM 989 TFLOP/s).

The published formulas `tokens_per_s_per_gpu` inverts, per token:

- "megatron": Megatron-LM 2021 (arXiv 2104.04473) Eq. 3 over the B s
  tokens of a step, 96 l h^2 (1 + s/(6h) + V/(16 l h)). It counts the
  forward pass of every layer twice, as full recomputation runs it, the
  attention scores, and the logit layer's 6 V h. For a GPT it is the
  definition above plus one more forward pass, 24 l h^2 + 4 l h s.
- "palm": the definition above.

In each row, `assumed` names the fields its sources do not state and
the row takes from elsewhere (the note says from where); None marks a
field nothing published gives.
"""

# --8<-- [start:model]
from dataclasses import dataclass

from snippets.checks import choice
from snippets.planner.model import GPUS

UNITS = ("TFLOP/s/GPU", "s/step", "tokens/s/GPU")
FORMULAS = ("megatron", "palm")


@dataclass(frozen=True, kw_only=True)
class Run:
    """One published run: the model, the cluster, the layout and the
    figure, as its sources give them."""

    label: str
    source: str
    chosen: bool  # False: run only to compare with the authors' layout
    note: str
    # the model
    model: str
    params_B: float  # as published, billions
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int  # hidden size of the MLP
    gated: bool  # SwiGLU: three matrices of hidden x ffn, else two
    tied_embeddings: bool
    vocab: int  # as trained, padding included
    seq_len: int
    head_dim: int | None = None  # None: hidden / heads
    experts: int = 1  # a mixture of experts: MLPs per layer, of ffn
    top_k: int = 1  # experts each token goes to
    # the hardware
    gpu: str  # the planner's preset, snippets/planner/model.py GPUS
    gpu_published: str
    gpu_memory_GB: int
    # where the row's GPU differs from the preset's: its dense 16-bit
    # peak and HBM bandwidth (None: the preset's)
    peak_TFLOPs: float | None = None
    hbm_GBps: float | None = None
    gpus: int
    gpus_per_node: int
    nics_per_node: int | None
    nic_Gbps: float | None  # per NIC, each way, as published
    network: str
    # the layout
    framework: str
    tp: int
    pp: int
    dp: int
    cp: int  # context parallelism, 1 if none
    ep: int = 1  # expert parallelism: experts spread over ep GPUs
    zero: int | str  # 0, 1, 2, 3 or "hsdp", as the planner names them
    schedule: str  # "none" (pp 1), "1f1b", "interleaved", "gpipe"
    chunks: int | None  # model chunks per pipeline rank (v)
    micro_batch: int | None  # sequences per micro-batch
    global_batch: int  # sequences per optimizer step
    recompute: str  # "none", "selective", "per-op", "full"
    sequence_parallel: bool
    embedding_slots: bool  # first and last stages hold one layer fewer
    flash_attention: bool | None
    precision: str  # "fp16", "bf16", "fp8-linear" (Float8 matmuls)
    # the measurement
    figure: float
    unit: str  # one of UNITS
    formula: str | None  # for TFLOP/s: one of FORMULAS
    counts_recompute: bool | None  # None: the figure is not FLOPs
    counts_attention: bool | None
    assumed: tuple[str, ...] = ()
    # full recomputation keeps each layer's input split among the
    # tensor-parallel ranks (Training.distribute_saved_activations)
    distribute_saved_activations: bool = False
    # where the framework's rule differs from the planner's default:
    # gradients reduced in "bf16" or "fp32" (None: bf16 runs in fp32,
    # fp16 ones in 16 bits), and ZeRO-2/3's sync under accumulation
    reduce_dtype: str | None = None
    gradient_sync: str | None = None

    def __post_init__(self):
        if self.tp * self.cp * self.pp * self.dp != self.gpus:
            raise ValueError(f"{self.label}: tp x cp x pp x dp != gpus")

    @property
    def global_batch_tokens(self):
        return self.global_batch * self.seq_len

    @property
    def nodes(self):
        return self.gpus // self.gpus_per_node


def matmul_weights(run):
    """N: the weights of every matrix multiply a token goes through."""
    h, head = run.hidden, run.head_dim or run.hidden // run.heads
    attention = 2 * h * run.heads * head + 2 * h * run.kv_heads * head
    mlp = (3 if run.gated else 2) * h * run.ffn * run.top_k
    router = h * run.experts if run.experts > 1 else 0
    return run.layers * (attention + mlp + router) + run.vocab * h


def model_flops_per_token(run):
    """6 N + 12 L h T: forward and backward, no recomputation (h: the
    width of all heads' queries; N: the top_k experts a token goes
    through, not all of them)."""
    width = run.heads * (run.head_dim or run.hidden // run.heads)
    attention = 12 * run.layers * width * run.seq_len
    return 6 * matmul_weights(run) + attention


def published_flops_per_token(run):
    """The FLOPs per token of the formula behind the row's figure."""
    choice("run.formula", run.formula, FORMULAS)
    if run.formula == "palm":
        return model_flops_per_token(run)
    layers, h, s, v = run.layers, run.hidden, run.seq_len, run.vocab
    return 96 * layers * h * h * (1 + s / (6 * h) + v / (16 * layers * h))


def tokens_per_s_per_gpu(run):
    """The row's figure as tokens per second per GPU: the tokens of
    every step, over its time and every GPU of the job."""
    choice("run.unit", run.unit, UNITS)
    if run.unit == "tokens/s/GPU":
        return run.figure
    if run.unit == "s/step":
        return run.global_batch_tokens / (run.figure * run.gpus)
    return run.figure * 1e12 / published_flops_per_token(run)


def model_tflops(run):
    """Model TFLOP/s per GPU, 6 N + 12 L h T per token."""
    return tokens_per_s_per_gpu(run) * model_flops_per_token(run) / 1e12


def mfu(run):
    """Model TFLOP/s over the dense 16-bit peak of the row's GPU."""
    return model_tflops(run) / GPUS[run.gpu]["peak_TFLOPs"]


def planner_model(run):
    """The row's model as the planner's model dict."""
    keys = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab")
    keys += ("seq_len", "gated", "tied_embeddings", "experts", "top_k")
    model = {key: getattr(run, key) for key in keys}
    if run.head_dim is not None:
        model["head_dim"] = run.head_dim
    return model


def by_label(label):
    """The row called `label`."""
    rows = {run.label: run for run in RUNS}
    return rows[choice("label", label, list(rows))]


# --8<-- [end:model]

# --8<-- [start:rows]
# Megatron-LM 2021: NVIDIA's Selene, DGX A100 nodes. The paper counts
# TFLOP/s with its Eq. 3 for every row of Tables 1 and 2.
MEGATRON = "Narayanan et al. 2021, arXiv 2104.04473"
SCRIPTS = "NVIDIA/Megatron-LM examples/academic_paper_scripts/sc21"
SELENE = dict(
    gpu="a100-80gb",
    gpu_published="A100 SXM 80 GB, DGX A100 (Selene)",
    gpu_memory_GB=80,
    gpus_per_node=8,
    nics_per_node=8,
    nic_Gbps=200,
    network="InfiniBand HDR, 8 x 200 Gb/s per node, fat tree",
)
GPT = dict(
    gated=False,
    tied_embeddings=True,
    vocab=51200,  # GPT-2's 50,257 padded to a multiple of 1024
    seq_len=2048,
    cp=1,
    sequence_parallel=False,  # it came a year later, arXiv 2205.05198
    embedding_slots=False,
    flash_attention=False,  # fused softmax; FlashAttention is 2022
)
EQ3 = dict(
    unit="TFLOP/s/GPU",
    formula="megatron",
    counts_recompute=True,
    counts_attention=True,
)


def _gpt(billions, heads, hidden, layers):
    return dict(
        model=f"GPT {billions}B",
        params_B=billions,
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=heads,
        ffn=4 * hidden,
        **GPT,
    )


def _table1(
    billions,
    heads,
    hidden,
    layers,
    tp,
    pp,
    gpus,
    batch,
    tflops,
    micro_batch,
    chunks,
):
    """A row of Table 1 (weak scaling). Its micro-batch and interleaving
    come from run_table_1.sh; every run recomputes each layer
    ("--activations-checkpoint-method uniform") in fp16."""
    dp = gpus // (tp * pp)
    if pp == 1:
        schedule, ddp = "none", "PyTorch DDP, overlapped with backward"
    else:
        schedule = "interleaved" if chunks > 1 else "1f1b"
        ddp = "Megatron's DDP, all-reduce after the backward pass"
    return Run(
        label=f"megatron-t1-{billions:g}b-{gpus}",
        source=f"{MEGATRON}, Table 1; {SCRIPTS}/run_table_1.sh",
        chosen=True,
        note=f"Weak scaling; {ddp}.",
        **_gpt(billions, heads, hidden, layers),
        **SELENE,
        gpus=gpus,
        framework="Megatron-LM",
        tp=tp,
        pp=pp,
        dp=dp,
        zero=0,
        schedule=schedule,
        chunks=chunks,
        micro_batch=micro_batch,
        global_batch=batch,
        recompute="full",
        precision="fp16",
        figure=tflops,
        **EQ3,
    )


TABLE1 = (
    # params, heads, hidden, layers, tp, pp, GPUs, batch, TFLOP/s,
    # micro-batch, chunks: a stage's layers over run_table_1.sh's
    # --num-layers-per-virtual-pipeline-stage
    _table1(1.7, 24, 2304, 24, 1, 1, 32, 512, 137, 16, 1),
    _table1(3.6, 32, 3072, 30, 2, 1, 64, 512, 138, 16, 1),
    _table1(7.5, 32, 4096, 36, 4, 1, 128, 512, 142, 16, 1),
    _table1(18.4, 48, 6144, 40, 8, 1, 256, 1024, 135, 8, 1),
    _table1(39.1, 64, 8192, 48, 8, 2, 512, 1536, 138, 4, 1),
    _table1(76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140, 2, 3),  # 15 / 5
    _table1(145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148, 2, 2),  # 10 / 5
    _table1(310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155, 1, 2),  # 6 / 3
    _table1(529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163, 1, 3),  # 3 / 1
    _table1(1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163, 1, 1),
)

SHAPES = {174.6: (96, 12288, 96), 529.6: (128, 20480, 105)}


def _zero3(billions, gpus, batch, micro_batch, tflops, note=""):
    """A ZeRO-3 row of Table 2: DeepSpeed ZeRO-3 with no model
    parallelism, one micro-batch per GPU per step."""
    return Run(
        label=f"megatron-t2-{round(billions)}b-zero3-{gpus}",
        source=f"{MEGATRON}, Table 2 and Section 5.2",
        chosen=False,
        note="Run to compare with PTD-P at the same batch. Full "
        "recomputation and fp16 are taken as in every other run of the "
        "paper; the activations of a micro-batch of 4 would not fit "
        "without it." + note,
        **_gpt(billions, *SHAPES[billions]),
        **SELENE,
        gpus=gpus,
        framework="DeepSpeed ZeRO-3",
        tp=1,
        pp=1,
        dp=gpus,
        zero=3,
        schedule="none",
        chunks=1,
        micro_batch=micro_batch,
        global_batch=batch,
        recompute="full",
        precision="fp16",
        figure=tflops,
        **EQ3,
        assumed=("recompute", "precision"),
    )


def _ptdp(billions, pp, gpus, batch, tflops, chunks, chunks_from):
    """A PTD-P row of Table 2. The table gives the model-parallel size
    (96 = TP 8 x PP 12 and 280 = TP 8 x PP 35, TP filling each node as
    the paper's takeaway #1 says) and a micro-batch of 1."""
    return Run(
        label=f"megatron-t2-{round(billions)}b-ptdp-{gpus}",
        source=f"{MEGATRON}, Table 2 and Section 5.2",
        chosen=True,
        note="The schedule is not stated for Table 2; the row takes "
        f"the interleaving of {chunks_from}, and full recomputation in "
        "fp16 as every script of the paper runs.",
        **_gpt(billions, *SHAPES[billions]),
        **SELENE,
        gpus=gpus,
        framework="Megatron-LM",
        tp=8,
        pp=pp,
        dp=gpus // (8 * pp),
        zero=0,
        schedule="interleaved",
        chunks=chunks,
        micro_batch=1,
        global_batch=batch,
        recompute="full",
        precision="fp16",
        figure=tflops,
        **EQ3,
        assumed=("tp", "pp", "schedule", "chunks", "recompute", "precision"),
    )


GPT175 = f"{SCRIPTS}/run_figure_12.sh (2 layers per chunk, TP 8 x PP 12)"
GPT530 = "run_table_1.sh's 530B run (1 layer per chunk, TP 8 x PP 35)"
BIGGER = (
    " It did not fit on 560 GPUs at a micro-batch of 4, so the paper ran "
    "640 GPUs and a batch of 2560 (the starred row)."
)
TABLE2 = (
    _zero3(174.6, 384, 1536, 4, 144),
    _zero3(174.6, 768, 1536, 2, 88),
    _zero3(174.6, 1536, 1536, 1, 44),
    _zero3(529.6, 640, 2560, 4, 138, BIGGER),
    _zero3(529.6, 1120, 2240, 2, 98),
    _zero3(529.6, 2240, 2240, 1, 48),
    _ptdp(174.6, 12, 384, 1536, 153, 4, GPT175),
    _ptdp(174.6, 12, 768, 1536, 149, 4, GPT175),
    _ptdp(174.6, 12, 1536, 1536, 141, 4, GPT175),
    _ptdp(529.6, 35, 560, 2240, 171, 3, GPT530),
    _ptdp(529.6, 35, 1120, 2240, 167, 3, GPT530),
    _ptdp(529.6, 35, 2240, 2240, 159, 3, GPT530),
)

# Llama 3 405B pre-training on Meta's H100 cluster. Table 4 gives
# TFLOP/s and BF16 MFU "(MFU; Chowdhery et al. (2023))", PaLM's
# definition; which N Meta counts is not stated, so the row takes the
# module's (the weights of every matrix multiply).
LLAMA3 = "Llama Team 2024, arXiv 2407.21783"
LLAMA3_405B = dict(
    model="Llama 3 405B",
    params_B=405,
    layers=126,
    hidden=16384,
    heads=128,
    kv_heads=8,
    ffn=53248,
    gated=True,
    tied_embeddings=False,
    vocab=128256,
)
META_H100 = dict(
    gpu="h100-80gb",
    gpu_published="H100 SXM 80 GB HBM3, 700 W (Grand Teton)",
    gpu_memory_GB=80,
    gpus_per_node=8,
    nics_per_node=8,
    nic_Gbps=400,
    network="RoCE, 400 Gb/s per GPU; a three-layer Clos, full bisection "
    "inside pods of 3,072 GPUs and 1:7 oversubscribed between pods",
)
LLAMA3_NOTE = (
    "FSDP shards optimizer state and gradients but keeps the weights "
    "gathered from forward to backward (ZeRO-2's memory) and "
    "reduce-scatters gradients in fp32. The first and last pipeline "
    "stages hold one layer fewer, for the embedding and the output "
    "layer; an interleaved schedule with V stages per rank, V and the "
    "micro-batch not published. Sequence parallelism is taken from the "
    "TP the paper cites (Korthikanti et al.)."
)


def _llama3(gpus, cp, dp, seq_len, per_dp, tflops, mfu_published, note):
    """A row of Table 4 (Section 3.3.2): TP 8, PP 16."""
    return Run(
        label=f"llama3-405b-{seq_len // 1024}k-{gpus}",
        source=f"{LLAMA3}, Section 3.3 and Table 4",
        chosen=True,
        note=f"{mfu_published} BF16 MFU published. {LLAMA3_NOTE} {note}",
        **LLAMA3_405B,
        seq_len=seq_len,
        **META_H100,
        gpus=gpus,
        framework="Meta's own 4D parallelism (TP, CP, PP, FSDP)",
        tp=8,
        pp=16,
        dp=dp,
        cp=cp,
        zero=2,
        schedule="interleaved",
        chunks=None,
        micro_batch=None,
        global_batch=per_dp * dp,
        recompute="none",
        sequence_parallel=True,
        embedding_slots=True,
        flash_attention=None,
        precision="bf16",
        figure=tflops,
        unit="TFLOP/s/GPU",
        formula="palm",
        counts_recompute=False,
        counts_attention=True,
        assumed=("sequence_parallel", "formula"),
    )


TABLE4 = (
    _llama3(
        gpus=8192,
        cp=1,
        dp=64,
        seq_len=8192,
        per_dp=32,
        tflops=430,
        mfu_published="43%",
        note="No activation checkpointing at 8K tokens (Section 3.3.2).",
    ),
    _llama3(
        gpus=16384,
        cp=1,
        dp=128,
        seq_len=8192,
        per_dp=16,
        tflops=400,
        mfu_published="41%",
        note="No activation checkpointing at 8K tokens (Section 3.3.2). "
        "400 / 989 is 40.4%: the published 41% and 400 TFLOP/s do not "
        "round from one figure.",
    ),
    _llama3(
        gpus=16384,
        cp=16,
        dp=8,
        seq_len=131072,
        per_dp=16,
        tflops=380,
        mfu_published="38%",
        note="The long-context stage. Table 4 prints DP 4 in the paper's "
        "first versions; 16,384 / (8 x 16 x 16) GPUs and "
        "16M / (16 x 131,072) tokens both give 8, as later versions "
        "print. Recomputation is not stated at 128K (the row takes "
        "none). CP all-gathers the keys and values. Attention is most of "
        "the FLOPs at this length: had Meta halved it for the causal "
        "mask, which is not stated, the converted tokens/s would be "
        "about 40% higher.",
    ),
)

# Three more GPT-3-sized runs on A100 80 GB, each the layout its authors
# trained with.
BLOOM = Run(
    label="bloom-176b-384",
    source="BigScience 2022, arXiv 2211.05100, p. 18 (hardware); "
    "layout and one logged step: bigscience-workshop/bigscience "
    "train/tr11-176B-ml/README.md (replica setup; iteration 85,376) "
    "and tr11-176B-ml.slurm",
    chosen=True,
    note="The logged step (global batch 2048) took 104.70 s, printed as "
    "149.77 TFLOP/s counted with Megatron's Eq. 3. BF16Optimizer shards "
    "the optimizer state as ZeRO-1 does. ALiBi, no position embeddings. "
    "The pipeline is split with 'type:transformer|embedding', so the two "
    "embedding layers count as layers: 72 over 12 stages, one "
    "transformer layer fewer on the first and last. DeepSpeed's "
    "TrainSchedule is a synchronous 1F1B. The sources describe the "
    "GPUs of a node as joined by four NVLink links and say no more.",
    model="BLOOM 176B",
    params_B=176.247,
    layers=70,
    hidden=14336,
    heads=112,
    kv_heads=112,
    ffn=4 * 14336,
    gated=False,
    tied_embeddings=True,
    vocab=250880,  # 250,680 padded (--pad-vocab-size-to 250880)
    seq_len=2048,
    gpu="a100-80gb",
    gpu_published="A100 80 GB, 8 per node (Jean Zay)",
    gpu_memory_GB=80,
    gpus=384,
    gpus_per_node=8,
    nics_per_node=4,
    nic_Gbps=100,
    network="Omni-Path, 4 x 100 Gb/s per node, enhanced hypercube 8D",
    framework="Megatron-DeepSpeed",
    tp=4,
    pp=12,
    dp=8,
    cp=1,
    zero=1,
    schedule="1f1b",
    chunks=1,
    micro_batch=2,
    global_batch=2048,
    recompute="full",
    sequence_parallel=False,
    embedding_slots=True,
    flash_attention=False,
    precision="bf16",
    figure=104.70,
    unit="s/step",
    formula=None,
    counts_recompute=None,
    counts_attention=None,
    assumed=("schedule", "embedding_slots"),
)

OPT = Run(
    label="opt-175b-992",
    source="Zhang et al. 2022, arXiv 2205.01068, Sections 1 and 2.4; "
    "TP 8 and the 2M-token batch: facebookresearch/metaseq "
    "projects/OPT/chronicles/10_percent_update.md; the FLOP count: "
    "chronicles/final_update.md; the launcher: "
    "metaseq/launcher/opt_baselines.py",
    chosen=True,
    note="FSDP with Megatron tensor parallelism, 147 TFLOP/s per GPU. The "
    "formula is inferred: the chronicles' 4.30e23 FLOPs for 300B tokens "
    "is 1.433e12 per token, Eq. 3 for this model (1.434e12), not 6N "
    "(1.05e12); and 4.30e23 FLOPs at 147 TFLOP/s on 1024 GPUs is the "
    "33 days they quote. 2M tokens do not split evenly over 124 ranks: "
    "the launcher gives each (2^21 // 124) // 2048 = 8 sequences, one "
    "micro-batch per step, full recomputation with each layer's input "
    "split among the tensor-parallel ranks "
    "(--distribute-checkpointed-activations), and FSDP without "
    "resharding after forward ('zero2'). Vocabulary as the released OPT "
    "configs pad it. Network not stated.",
    model="OPT 175B",
    params_B=175,
    layers=96,
    hidden=12288,
    heads=96,
    kv_heads=96,
    ffn=4 * 12288,
    gated=False,  # ReLU
    tied_embeddings=True,
    vocab=50272,
    seq_len=2048,
    gpu="a100-80gb",
    gpu_published="A100 80 GB",
    gpu_memory_GB=80,
    gpus=992,
    gpus_per_node=8,
    nics_per_node=None,
    nic_Gbps=None,
    network="not stated",
    framework="metaseq (FSDP and Megatron TP)",
    tp=8,
    pp=1,
    dp=124,
    cp=1,
    zero=2,
    schedule="none",
    chunks=1,
    micro_batch=8,
    global_batch=992,
    recompute="full",
    sequence_parallel=False,
    embedding_slots=False,
    flash_attention=False,
    precision="fp16",
    figure=147,
    **EQ3,
    distribute_saved_activations=True,
    assumed=(
        "zero",
        "micro_batch",
        "global_batch",
        "recompute",
        "vocab",
        "formula",
    ),
)

MTNLG = "Smith et al. 2022, arXiv 2201.11990"


def _mtnlg(nodes, seconds, tflops):
    """A throughput measurement of Section 2.4: the trained layout (TP 8
    within a node, PP 35 across nodes, Section 2.2) at a batch of 1920
    sequences of 2048 tokens (Section 3.2)."""
    gpus = 8 * nodes
    return Run(
        label=f"mtnlg-530b-{gpus}",
        source=f"{MTNLG}, Sections 2.2, 2.4 and 3.2",
        chosen=True,
        note=f"{seconds} s per iteration on {nodes} DGX A100 servers, "
        f"published as {tflops} TFLOP/s per GPU (Eq. 3 of Megatron-LM "
        "gives the same). DeepSpeed's pipeline with Megatron's TP: the "
        "ZeRO stage, the micro-batch and the recomputation are not "
        "stated (the row takes ZeRO-1, the most DeepSpeed's pipeline "
        "allows, and full recomputation as in Megatron's runs of this "
        "model); vocabulary as Megatron pads GPT-2's. PaLM (Section 4.1) "
        "puts the 280-server run at 65.43K tokens/s and 30.2% MFU with "
        "attention, as this module does.",
        model="MT-NLG 530B",
        params_B=530,
        layers=105,
        hidden=20480,
        heads=128,
        kv_heads=128,
        ffn=4 * 20480,
        **GPT,
        **SELENE,
        gpus=gpus,
        framework="DeepSpeed and Megatron-LM",
        tp=8,
        pp=35,
        dp=gpus // 280,
        zero=1,
        schedule="1f1b",
        chunks=1,
        micro_batch=None,
        global_batch=1920,
        recompute="full",
        precision="bf16",
        figure=seconds,
        unit="s/step",
        formula=None,
        counts_recompute=None,
        counts_attention=None,
        assumed=("zero", "schedule", "recompute", "vocab", "precision"),
    )


THREE = (BLOOM, OPT, _mtnlg(280, 60.1, 126), _mtnlg(350, 50.2, 121))
THREE += (_mtnlg(420, 44.4, 113),)

# torchtitan's benchmarks of Llama 3.1 (December 2024): tokens per
# second per GPU as logged at step 90, tokens over time over every GPU
# of a data-parallel replica (train.py at the benchmark's commit).
TITAN = "pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md"
# Its H100s are not the SXM cards of the preset: 96 GB of HBM2e at
# 2.4 TB/s (published) and a 500 W limit, with a peak "between SXM and
# NVL" (989 and 835 TFLOP/s dense BF16, NVIDIA's datasheets): the row
# takes the middle, 912.
TITAN_H100 = dict(
    gpu="h100-80gb",
    gpu_published="H100 96 GB HBM2e at a 500 W limit (Grand Teton)",
    gpu_memory_GB=96,
    peak_TFLOPs=(989 + 835) / 2,
    hbm_GBps=2400,
    gpus_per_node=8,
    nics_per_node=8,
    nic_Gbps=400,
    network="RDMA, 400 Gb/s per GPU",
)
TITAN_NOTE = (
    "The benchmark's H100s have a peak between the SXM's and the NVL's (the "
    "page's footnote), so MFU against 989 TFLOP/s is a lower bound. "
    "Sequence length 8192 unless the table gives one, as "
    "train_configs/llama3_*.toml set it at commit 9dec370."
)
LLAMA31 = {
    "8b": dict(layers=32, hidden=4096, heads=32, ffn=14336, params_B=8),
    "70b": dict(layers=80, hidden=8192, heads=64, ffn=28672, params_B=70),
    "405b": dict(layers=126, hidden=16384, heads=128, ffn=53248, params_B=405),
}


def _titan(
    size,
    table,
    name,
    tps,
    *,
    fsdp,
    tp=1,
    pp=1,
    cp=1,
    seq_len=8192,
    local_batch,
    micro_batch=None,
    recompute="full",
    precision="fp8-linear",
    framework="torch.compile, Float8",
    schedule="none",
    chunks=1,
    chosen=True,
    assumed=(),
    note="",
):
    """A row of the torchtitan benchmarks (parallelize_llama.py at the
    benchmark's commit): FSDP2 reshards the weights after forward
    (ZeRO-3) unless there is a pipeline, which keeps them gathered
    through the step (ZeRO-2's memory); TP shards the sequence around
    the norms."""
    gpus = fsdp * tp * pp * cp
    return Run(
        label=f"torchtitan-{size}-{name}-{gpus}",
        source=f"{TITAN}, Table {table}",
        chosen=chosen,
        note=f"{note} {TITAN_NOTE}".strip(),
        model=f"Llama 3.1 {size.upper()}",
        kv_heads=8,
        gated=True,
        tied_embeddings=False,
        vocab=128256,
        seq_len=seq_len,
        **LLAMA31[size],
        **TITAN_H100,
        gpus=gpus,
        framework=f"torchtitan, {framework}",
        tp=tp,
        pp=pp,
        dp=fsdp,
        cp=cp,
        zero=2 if pp > 1 else 3,
        schedule=schedule,
        chunks=chunks,
        micro_batch=local_batch if micro_batch is None else micro_batch,
        global_batch=local_batch * fsdp,
        recompute=recompute,
        sequence_parallel=tp > 1,
        embedding_slots=pp > 1,
        flash_attention=True,
        precision=precision,
        figure=tps,
        unit="tokens/s/GPU",
        formula=None,
        counts_recompute=None,
        counts_attention=None,
        assumed=(() if seq_len != 8192 else ("seq_len",)) + assumed,
    )


SAC = (
    "Selective activation checkpointing: torchtitan's per-op policy "
    "(train_configs/llama3_8b.toml, selective_ac_option = 'op'), which "
    "saves the outputs of every other matrix multiply and of attention."
)
COMPILED = "torch.compile, Float8, async TP"
MFU_8B = (
    " The page gives 33% to 39% MFU for its bf16 8B runs, counted as this "
    "module counts."
)
# Tables 1 and 3: Llama 3.1 8B with FSDP alone, local batch 2; TPS/GPU
# eager, with torch.compile, and compiled with Float8 matmuls.
TORCHTITAN = tuple(
    _titan(
        "8b",
        table,
        name,
        tps,
        fsdp=fsdp,
        local_batch=2,
        recompute="per-op",
        precision=precision,
        framework=framework,
        note=SAC + (MFU_8B if precision == "bf16" else ""),
    )
    for table, fsdp, speeds in (
        (1, 8, (5762, 6667, 8532)),
        (3, 128, (5605, 6514, 8380)),
    )
    for (name, framework, precision), tps in zip(
        (
            ("fsdp", "eager", "bf16"),
            ("fsdp-compile", "torch.compile", "bf16"),
            ("fsdp-fp8", "torch.compile, Float8", "fp8-linear"),
        ),
        speeds,
        strict=True,
    )
)
# Table 2: 8B on 8 GPUs, context parallelism against sequence length.
TORCHTITAN += tuple(
    _titan(
        "8b",
        2,
        f"cp{cp}-{seq // 1024}k",
        tps,
        fsdp=8 // cp,
        cp=cp,
        seq_len=seq,
        local_batch=1,
    )
    for cp, seq, tps in (
        (1, 32768, 3890),
        (2, 65536, 2540),
        (4, 131072, 1071),
        (8, 262144, 548),
    )
)
# Table 4: 70B, FSDP 32 x TP 8, without and with async TP.
TORCHTITAN += (
    _titan("70b", 4, "2d", 829, fsdp=32, tp=8, local_batch=16),
    _titan(
        "70b",
        4,
        "2d-asynctp",
        876,
        fsdp=32,
        tp=8,
        local_batch=16,
        framework=COMPILED,
    ),
)
# Tables 5 and 6: 405B on FSDP 8 x TP 8 x PP 8, then CP. Their split is
# the default (pipelining_utils.generate_split_points): the first and
# last stages hold one layer fewer, an interleaved schedule puts two
# chunks on each rank, and there are as many micro-batches as stages.
PP_DEFAULTS = ("micro_batch", "embedding_slots")
TORCHTITAN += (
    _titan(
        "405b",
        5,
        "3d-1f1b",
        100,
        fsdp=8,
        tp=8,
        pp=8,
        local_batch=32,
        micro_batch=4,
        schedule="1f1b",
        framework=COMPILED,
        chosen=False,
        assumed=PP_DEFAULTS,
        note="Run to compare the schedules.",
    ),
    _titan(
        "405b",
        5,
        "3d-interleaved",
        128,
        fsdp=8,
        tp=8,
        pp=8,
        local_batch=32,
        micro_batch=4,
        schedule="interleaved",
        chunks=2,
        framework=COMPILED,
        assumed=(*PP_DEFAULTS, "chunks"),
    ),
)
TORCHTITAN += tuple(
    _titan(
        "405b",
        6,
        f"4d-cp{cp}-{seq // 1024}k",
        tps,
        fsdp=8 // cp,
        tp=8,
        pp=8,
        cp=cp,
        seq_len=seq,
        local_batch=8,
        micro_batch=1,
        schedule="1f1b",
        framework=COMPILED,
        assumed=PP_DEFAULTS,
    )
    for cp, seq, tps in (
        (1, 32768, 76),
        (2, 65536, 47),
        (4, 131072, 31),
        (8, 262144, 16),
    )
)
# NVIDIA's NeMo benchmarks (Megatron-Bridge, Transformer Engine) of
# Llama 3 on DGX H100 with FP8 linear layers (current scaling):
# tokens/s per GPU as the performance summary prints them, with the
# layout from its own columns (GBS, MBS, FSDP, TP, PP, CP, VP).
NEMO = (
    "NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md, "
    "DGX-H100 tables"
)
NEMO_H100 = dict(
    gpu="h100-80gb",
    gpu_published="H100 SXM 80 GB (DGX H100)",
    gpu_memory_GB=80,
    gpus_per_node=8,
    nics_per_node=8,
    nic_Gbps=400,
    network="InfiniBand NDR, 400 Gb/s per GPU",
)
NEMO_NOTE = (
    "Recomputation and the sharding of the optimizer state are not in "
    "the table: taken as none and as Megatron's distributed optimizer "
    "(ZeRO-1) without FSDP; the 405B runs split their 126 layers and "
    "the embedding and output layers evenly over the stages."
)


def _llama_on_dgx_h100(size, gpus, global_batch, tp, pp, cp, vp, **row):
    """A Llama 3 (3.1) row run by NVIDIA's fused stack on DGX H100s:
    micro-batch 1, flash attention, no recomputation, sequence parallel
    with tp; `row` gives what differs (name, source, precision, ...)."""
    return Run(
        chosen=True,
        kv_heads=8,
        gated=True,
        tied_embeddings=False,
        vocab=128256,
        seq_len=8192,
        **LLAMA31[size],
        **NEMO_H100,
        gpus=gpus,
        tp=tp,
        pp=pp,
        dp=gpus // (tp * pp * cp),
        cp=cp,
        schedule="interleaved" if vp else ("1f1b" if pp > 1 else "none"),
        chunks=vp or 1,
        micro_batch=1,
        global_batch=global_batch,
        recompute="none",
        sequence_parallel=tp > 1,
        flash_attention=True,
        formula=None,
        counts_recompute=None,
        counts_attention=None,
        **row,
    )


def _nemo(release, size, gpus, global_batch, tp, pp, cp, vp, fsdp, tps):
    """A dense Llama 3 row of a NeMo release's DGX-H100 table."""
    return _llama_on_dgx_h100(
        size,
        gpus,
        global_batch,
        tp,
        pp,
        cp,
        vp,
        label=f"nemo-{release}-{size}-{gpus}",
        source=f"{NEMO}, NeMo {release}",
        note=NEMO_NOTE,
        model=f"Llama 3 {size.upper()}",
        framework="NeMo (Megatron-Bridge, Transformer Engine)",
        zero=3 if fsdp else 1,
        embedding_slots=size == "405b",
        precision="fp8-linear",
        figure=tps,
        unit="tokens/s/GPU",
        assumed=("recompute", "zero"),
    )


NEMO_RUNS = (
    _nemo("25.11", "8b", 8, 128, 1, 1, 1, None, True, 14451),
    _nemo("25.11", "70b", 64, 128, 4, 8, 1, 5, False, 1602),
    _nemo("25.11", "405b", 1024, 512, 8, 8, 2, 8, False, 292),
    _nemo("26.02", "70b", 64, 256, 4, 8, 1, 5, False, 1621),
    _nemo("26.02", "405b", 1024, 1536, 8, 8, 2, 8, False, 311),
)
# Qwen3's mixtures of experts (Qwen, 2025; config.json): heads of 128,
# 4 KV heads, 128 experts a layer, top-8, untied embeddings. The 30B-A3B
# rows of the same tables are left out: their experts' matrices (2,048 x
# 768) are too small for the planner's one GEMM share per GPU, which
# rates them about 3 times too fast.
QWEN3 = {
    "235b-a22b": dict(
        layers=94, hidden=4096, heads=64, ffn=1536, params_B=235
    ),
}
QWEN3_NOTE = (
    "The table's MoE runs force an even load over the experts and drop "
    "no token. Each layer's experts go whole to EP GPUs drawn from the "
    "TP x DP GPUs of a stage (Megatron-Core's MoE parallel folding, "
    "expert tensor parallelism 1, assumed). Recomputation and optimizer "
    "sharding are not in the table: taken as none and ZeRO-1."
)


def _qwen3(release, size, gpus, batch, mbs, tp, pp, vp, ep, tps):
    """A Qwen3 MoE row of a NeMo release's DGX-H100 table (FP8)."""
    return Run(
        label=f"nemo-{release}-qwen3-{size}-{gpus}",
        source=f"{NEMO}, NeMo {release}",
        chosen=True,
        note=QWEN3_NOTE,
        model=f"Qwen3 {size.upper()}",
        kv_heads=4,
        head_dim=128,
        experts=128,
        top_k=8,
        gated=True,
        tied_embeddings=False,
        vocab=151936,
        seq_len=4096,
        **QWEN3[size],
        **NEMO_H100,
        gpus=gpus,
        framework="NeMo (Megatron-Bridge, Transformer Engine)",
        tp=tp,
        pp=pp,
        dp=gpus // (tp * pp),
        cp=1,
        ep=ep,
        zero=1,
        schedule="interleaved",
        chunks=vp,
        micro_batch=mbs,
        global_batch=batch,
        recompute="none",
        sequence_parallel=tp > 1,
        embedding_slots=True,
        flash_attention=True,
        precision="fp8-linear",
        figure=tps,
        unit="tokens/s/GPU",
        formula=None,
        counts_recompute=None,
        counts_attention=None,
        assumed=("recompute", "zero"),
    )


NEMO_RUNS += (
    _qwen3("25.11", "235b-a22b", 256, 2048, 1, 2, 8, 4, 32, 1575),
    _qwen3("26.02", "235b-a22b", 256, 8192, 1, 2, 8, 4, 32, 1633),
)
# NVIDIA's DGX Cloud benchmarking recipes of Llama 3.1 on DGX H100
# (NeMo 24.09 container, recipes release 25.01): each model in one
# layout, run in BF16 and in FP8 (Transformer Engine's FP8 linear
# layers), at the smallest GPU count that trains the whole model. The
# one fused stack measured in both precisions: it tells the stack's
# speed-up apart from FP8's.
DGXC = "NVIDIA/dgxc-benchmarking llama3.1 recipes"
DGXC_COMMIT = "143b90dd91f9be958fed4773ae95d941a3356a82"
DGXC_NOTE = (
    "Step time, global batch, micro-batch and layout (TP, PP, CP, VP) "
    "from the README's BF16 and FP8 tables; the 405B's 126 layers split "
    "evenly over 9 stages of 7 chunks. Recomputation, the sharding of "
    "the optimizer state and the network are not stated: taken as none, "
    "Megatron's distributed optimizer (ZeRO-1) and a DGX H100's 8 x 400 "
    "Gb/s, as for NeMo's own tables, and TP overlapped as NeMo's recipes "
    "do."
)


def _dgxc(size, gpus, global_batch, tp, pp, cp, vp, precision, seconds):
    """A row of llama3.1/README_{size}.md: BF16 or FP8, one layout."""
    return _llama_on_dgx_h100(
        size,
        gpus,
        global_batch,
        tp,
        pp,
        cp,
        vp,
        label=f"dgxc-{size}-{precision}-{gpus}",
        source=f"{DGXC}, llama3.1/README_{size}.md at {DGXC_COMMIT[:7]}",
        note=DGXC_NOTE,
        model=f"Llama 3.1 {size.upper()}",
        framework="NeMo 24.09 (Megatron-Core, Transformer Engine)",
        zero=1,
        embedding_slots=False,
        precision="fp8-linear" if precision == "fp8" else "bf16",
        figure=seconds,
        unit="s/step",
        assumed=("recompute", "zero", "nics_per_node", "nic_Gbps", "network"),
    )


DGXC_RUNS = tuple(
    _dgxc(size, gpus, batch, tp, pp, cp, vp, precision, seconds)
    for size, gpus, batch, tp, pp, cp, vp, times in (
        ("8b", 8, 128, 1, 1, 2, None, (12.91, 9.67)),
        ("70b", 64, 128, 4, 4, 2, 5, (14.72, 11.01)),
        ("405b", 576, 252, 8, 9, 2, 7, (17.20, 11.24)),
    )
    for precision, seconds in zip(("bf16", "fp8"), times, strict=True)
)

# MosaicML's llm-foundry benchmarks: MPT models trained by Composer
# with PyTorch FSDP (FULL_SHARD, each block a unit), flash attention,
# on one node or several. The tables sweep models, sequence lengths
# and GPU counts with the micro-batch tuned for each; one rule picks
# the rows: every row of the 7B to 70B models at their 2,048-token
# training sequence, in the three BF16 tables (A100 80 GB, A100 40 GB
# and H100 80 GB).
FOUNDRY = "mosaicml/llm-foundry scripts/train/benchmarking/README.md"
FOUNDRY_COMMIT = "061f2c7ce64e655100286584a7629e2a09f827ba"
# scripts/train/yamls/pretrain/mpt-<size>.yaml: layers, width, heads
MPT = {
    "7b": (32, 4096, 32),
    "13b": (40, 5120, 40),
    "30b": (48, 7168, 56),
    "70b": (80, 8192, 64),
}
FOUNDRY_TABLES = {
    "a100-80": ("a100-80gb", "A100 SXM 80 GB", 80),
    "a100-40": ("a100-80gb", "A100 SXM 40 GB", 40),
    "h100": ("h100-80gb", "H100 SXM 80 GB", 80),
}
FOUNDRY_NOTE = (
    "Composer syncs FSDP's gradients every micro-batch: its no_sync "
    "applies to DDP alone (composer/trainer/dist_strategy.py). Mixed "
    "precision PURE gathers bf16 weights and reduces gradients in bf16; "
    "DEFAULT, in Composer's later releases, gathers bf16 and reduces in "
    "fp32 (an earlier one gathered fp32 weights and reduced in bf16; "
    "the README does not say which release ran). MPT: "
    "GELU MLP of 4 h, learned position embeddings, the output layer "
    "tied to the embedding."
)


def _mpt(table, size, gpus, micro, steps, batch, recompute, tps, pure):
    """A row of the benchmark README's table: FSDP over every GPU,
    `steps` micro-batches of `micro` sequences per step."""
    if micro * steps * gpus != batch:
        raise ValueError(
            f"mpt-{size}-{table}-{gpus}: the batch is not "
            f"{micro} x {steps} x {gpus}"
        )
    gpu, published, memory = FOUNDRY_TABLES[table]
    layers, hidden, heads = MPT[size]
    if table == "h100":  # the README does not give the H100s' network
        network = dict(
            nics_per_node=None,
            nic_Gbps=None,
            network="not published; the planner's 8 x 400 Gb/s",
        )
        assumed = ("nics_per_node", "nic_Gbps", "network")
    else:
        network = dict(
            nics_per_node=8,
            nic_Gbps=200,
            network="RoCE, 1,600 Gb/s per node (as 8 x 200 Gb/s)",
        )
        assumed = ("nics_per_node",)
    return Run(
        label=f"mpt-{size}-{table}-{gpus}",
        source=f"MosaicML llm-foundry, {FOUNDRY} at {FOUNDRY_COMMIT[:7]}",
        chosen=False,  # the suite sweeps FSDP alone
        note=FOUNDRY_NOTE,
        model=f"MPT {size.upper()}",
        params_B=float(size[:-1]),
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=heads,
        ffn=4 * hidden,
        gated=False,
        tied_embeddings=True,
        vocab=50368,
        seq_len=2048,
        gpu=gpu,
        gpu_published=published,
        gpu_memory_GB=memory,
        gpus=gpus,
        gpus_per_node=8,
        **network,
        framework="Composer (PyTorch FSDP)",
        tp=1,
        pp=1,
        dp=gpus,
        cp=1,
        zero=3,
        schedule="none",
        chunks=1,
        micro_batch=micro,
        global_batch=batch,
        recompute=recompute,
        sequence_parallel=False,
        embedding_slots=False,
        flash_attention=True,
        precision="bf16",
        reduce_dtype="bf16" if pure else "fp32",
        gradient_sync="every",
        figure=tps,
        unit="tokens/s/GPU",
        formula=None,
        counts_recompute=None,
        counts_attention=None,
        assumed=assumed + (() if pure else ("reduce_dtype",)),
    )


FULL, NONE = "full", "none"
FOUNDRY_RUNS = tuple(
    _mpt(*row)
    for row in (
        # table, size, GPUs, micro-batch, accumulation, global batch,
        # recompute, tokens/s per GPU, mixed precision PURE
        ("a100-80", "70b", 64, 8, 4, 2048, FULL, 410, True),
        ("a100-80", "70b", 32, 2, 16, 1024, FULL, 373, True),
        ("a100-80", "30b", 8, 3, 21, 504, FULL, 916, False),
        ("a100-80", "13b", 8, 2, 3, 48, NONE, 2262, False),
        ("a100-80", "7b", 8, 6, 2, 96, NONE, 4641, False),
        ("a100-40", "70b", 128, 4, 1, 512, FULL, 376, True),
        ("a100-40", "70b", 64, 2, 1, 128, FULL, 276, True),
        ("a100-40", "30b", 128, 6, 1, 768, FULL, 865, True),
        ("a100-40", "30b", 32, 4, 1, 128, FULL, 857, True),
        ("a100-40", "13b", 128, 16, 1, 2048, FULL, 1972, True),
        ("a100-40", "13b", 64, 16, 1, 1024, FULL, 1976, True),
        ("a100-40", "13b", 32, 14, 1, 448, FULL, 1998, True),
        ("a100-40", "13b", 16, 10, 1, 160, FULL, 1993, True),
        ("a100-40", "13b", 8, 4, 16, 512, FULL, 1668, True),
        ("a100-40", "7b", 128, 18, 1, 2304, FULL, 3623, True),
        ("a100-40", "7b", 64, 18, 1, 1152, FULL, 3665, True),
        ("a100-40", "7b", 32, 18, 1, 576, FULL, 3725, True),
        ("a100-40", "7b", 16, 16, 1, 256, FULL, 3645, True),
        ("a100-40", "7b", 8, 12, 4, 384, FULL, 3679, True),
        ("h100", "70b", 64, 8, 4, 2048, FULL, 1039, False),
        ("h100", "70b", 32, 2, 16, 1024, FULL, 882, False),
        ("h100", "30b", 32, 14, 3, 1344, FULL, 2308, False),
        ("h100", "30b", 16, 10, 3, 480, FULL, 2263, False),
        ("h100", "30b", 8, 3, 21, 504, FULL, 2002, False),
        ("h100", "13b", 64, 2, 1, 128, NONE, 4800, False),
        ("h100", "13b", 32, 2, 1, 64, NONE, 4811, False),
        ("h100", "13b", 16, 2, 1, 32, NONE, 4767, False),
        ("h100", "13b", 8, 2, 1, 16, NONE, 4792, False),
        ("h100", "7b", 8, 6, 1, 48, NONE, 10643, False),
    )
)
# --8<-- [end:rows]


# --8<-- [start:links]
@dataclass(frozen=True, kw_only=True)
class Link:
    """A published bandwidth measurement: what NCCL reaches, in GB/s
    (1e9 bytes) each way, next to the line rate."""

    label: str
    source: str
    what: str
    low_GBps: float
    high_GBps: float
    line_GBps: float | None
    note: str


NCCL_TESTS = "NVIDIA/nccl-tests issue"
LINKS = (
    Link(
        label="h100-nvlink-ring",
        source=f"{NCCL_TESTS} #212 (S. Jeaugey, NVIDIA, 2024)",
        what="NVLink 4 on one H100 node, NCCL's ring (NCCL_ALGO=RING) or "
        "any collective but all-reduce: bus bandwidth",
        low_GBps=370,
        high_GBps=370,
        line_GBps=450,
        note="About 20% of the line rate goes to NCCL's protocol.",
    ),
    Link(
        label="h100-nvls-allreduce",
        source=f"{NCCL_TESTS} #212 (S. Jeaugey, NVIDIA, 2024); #290",
        what="all-reduce on 8 H100 of one node with NVLink SHARP, NCCL's "
        "default there: bus bandwidth",
        low_GBps=476,
        high_GBps=480,
        line_GBps=450,
        note="Algorithm bandwidth about 275 GB/s; the switch does the "
        "reduction, so the bus bandwidth is not what crosses a link. "
        "476 GB/s measured in #290, 'in the expected range' (NVIDIA).",
    ),
    Link(
        label="a100-nvlink-allreduce",
        source=f"{NCCL_TESTS} #149 (S. Jeaugey, NVIDIA, 2023)",
        what="all-reduce on 8 A100 of one NVSwitch node: bus bandwidth",
        low_GBps=230,
        high_GBps=230,
        line_GBps=300,
        note="12 NVLinks of 25 GB/s each way; about 20 GB/s each is "
        "effective with the SMs' 128-byte payloads (240 GB/s), and "
        "other limits on the GPU leave about 230.",
    ),
    Link(
        label="hdr-nic",
        source=f"{NCCL_TESTS} #119 (S. Jeaugey, NVIDIA, 2022); #160",
        what="InfiniBand HDR, 200 Gb/s per NIC: bus bandwidth per NIC "
        "across nodes (12 GB/s for a 100 Gb/s NIC)",
        low_GBps=24,
        high_GBps=24,
        line_GBps=25,
        note="On three nodes or more a ring's bus bandwidth is the "
        "node's NICs together (#160).",
    ),
    Link(
        label="ndr-nic",
        source=f"{NCCL_TESTS} #290 (NVIDIA, 2025)",
        what="InfiniBand NDR, 400 Gb/s per NIC: bus bandwidth per NIC "
        "across nodes, NCCL_ALGO=RING",
        low_GBps=46,
        high_GBps=48,
        line_GBps=50,
        note="On two nodes NCCL's tree can exceed the network; force the "
        "ring to measure it.",
    ),
    Link(
        label="hgx-h100-8-ndr-4-nodes",
        source=f"{NCCL_TESTS} #309 (2025)",
        what="all-reduce on 4 HGX H100 nodes, 8 NDR NICs each: bus bandwidth",
        low_GBps=365.84,
        high_GBps=365.84,
        line_GBps=400,
        note="Measured by the issue's author; NVIDIA's reply puts the "
        "peak of 8 x 400 Gb/s NICs at 400 GB/s and calls it a good "
        "number.",
    ),
)
# --8<-- [end:links]

MEGATRON_RUNS = TABLE1 + TABLE2
RUNS = MEGATRON_RUNS + TABLE4 + THREE + TORCHTITAN + NEMO_RUNS + DGXC_RUNS

if __name__ == "__main__":
    # --8<-- [start:demo]
    print(
        "| run | published | tokens/s per GPU | model TFLOP/s per GPU | MFU |"
    )
    print("| --- | --- | --- | --- | --- |")
    for run in RUNS:
        print(
            f"| {run.label} | {run.figure:g} {run.unit} | "
            f"{tokens_per_s_per_gpu(run):,.1f} | {model_tflops(run):.1f} | "
            f"{mfu(run):.1%} |"
        )
    print()
    print("| link | NCCL reaches, GB/s | line rate, GB/s | source |")
    print("| --- | --- | --- | --- |")
    for link in LINKS:
        low, high = f"{link.low_GBps:g}", f"{link.high_GBps:g}"
        reach = low if low == high else f"{low} to {high}"
        print(
            f"| {link.label} | {reach} | {link.line_GBps:g} | {link.source} |"
        )
    # --8<-- [end:demo]
