"""Practice ladder: is FP8 worth it for this step?"""

# --8<-- [start:model]
from snippets.checks import number
from snippets.fp8.speedup import fp8_speedup


def fp8_step_estimate(profile_ms, gemm_speedup=2.0, cast_overhead=0.1):
    """The FP8 step time and speed-up from a bf16 profile: milliseconds
    per kind of work, one of them "gemm" (the linear layers' matrix
    multiplies). Those run gemm_speedup times faster and pay
    cast_overhead of their bf16 time for quantizing; all else stays."""
    if not isinstance(profile_ms, dict) or "gemm" not in profile_ms:
        raise TypeError(
            "profile_ms must be a dict of milliseconds with a 'gemm' "
            f"entry, got {profile_ms!r:.60}"
        )
    for kind, ms in profile_ms.items():
        number(f"profile_ms[{kind!r}]", ms, allow_minimum=True)
    total = sum(profile_ms.values())
    number("profile_ms total", total)
    share = profile_ms["gemm"] / total
    number("cast_overhead", cast_overhead, allow_minimum=True)
    speedup = fp8_speedup(share, gemm_speedup, share * cast_overhead)
    return {
        "gemm_share": share,
        "step_ms": total / speedup,
        "speedup": speedup,
    }


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    PROFILES = {  # illustrative bf16 profiles, ms per step
        "wide model, 4K tokens": {
            "gemm": 700,
            "attention": 120,
            "pointwise": 80,
            "optimizer": 30,
            "exposed comms": 70,
        },
        "narrow model, 32K tokens": {
            "gemm": 300,
            "attention": 450,
            "pointwise": 120,
            "optimizer": 10,
            "exposed comms": 120,
        },
    }
    for name, profile in PROFILES.items():
        r = fp8_step_estimate(profile)
        print(
            f"{name}: matmuls {r['gemm_share']:.0%} of the step,"
            f" {sum(profile.values())} -> {r['step_ms']:.0f} ms,"
            f" {r['speedup']:.2f}x"
        )
    # --8<-- [end:demo]
