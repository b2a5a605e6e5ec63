"""A cluster for the planner whose GPUs are this machine's CPU ranks:
its speeds are placeholders (1), since the tests that plan on it run the
printed command and compare bytes, never times."""

CPU = dict(
    gpu="h100-80gb",
    gpu_memory_GB=80,
    hbm_GBps=1,
    peak_TFLOPs=1,
    nvlink_GBps=1,
    nics_per_node=1,
    nic_GBps=1,
)
