"""What several charts share: the lesson's 7B model, the comms lab's
job and the world sizes the curves sweep."""

P7B = 7_000_000_000  # the 7B model used across the lesson
# The job of the comms lab demo: 64-way DDP on H100s at 40% of the
# 989 TFLOP/s dense bf16 peak, 8192 tokens per GPU per micro-batch.
COMMS_JOB = {
    "params": P7B,
    "world_size": 64,
    "tflops_per_gpu": 989 * 0.40,
    "tokens_per_gpu": 8192,
}
WORLD_SIZES = [2**k for k in range(11)]  # 1 ... 1024
