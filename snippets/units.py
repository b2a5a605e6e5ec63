"""The units every lab uses.

Decimal gigabytes, as in papers and nccl-tests. DeepSpeed and
accelerate print binary gibibytes labelled "GB"; a lab that compares
with them says so and uses GiB.
"""

GB = 1e9  # bytes; GB/s is always one way
MB = 1e6
GiB = 2**30
MiB = 2**20  # PyTorch counts DDP's bucket_cap_mb in MiB
