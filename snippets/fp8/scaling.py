"""FP8 (E4M3) rounding, and why the scales are chosen per block."""

# --8<-- [start:model]
import math

from snippets.checks import count, number

E4M3_MAX = 448.0  # the largest E4M3 value; no infinities in this format


def to_e4m3(x):
    """x rounded to the nearest E4M3 number (4 exponent bits, 3 mantissa
    bits; ties to even), saturating at +-448 as PyTorch's cast does."""
    number("x", x, minimum=-math.inf)
    if x == 0:
        return 0.0
    size = min(abs(x), E4M3_MAX)
    _, e = math.frexp(size)  # size = f * 2**e, 0.5 <= f < 1
    step = 2.0 ** (max(e - 1, -6) - 3)  # 8 steps per binade; subnormals
    return math.copysign(min(round(size / step) * step, E4M3_MAX), x)


def quantize(values, block=None):
    """values as they come back from FP8: each block of `block` values
    (the whole list if None) is scaled so its largest magnitude lands on
    448, rounded to E4M3, and scaled back."""
    if not isinstance(values, list) or not values:
        raise TypeError(f"values must be a non-empty list, got {values!r:.40}")
    for v in values:
        number("values", v, minimum=-math.inf)
    size = len(values) if block is None else count("block", block)
    out = []
    for start in range(0, len(values), size):
        chunk = values[start : start + size]
        amax = max(abs(v) for v in chunk)
        scale = E4M3_MAX / amax if amax else 1.0
        out += [to_e4m3(v * scale) / scale for v in chunk]
    return out


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    import random

    rng = random.Random(0)
    # 1024 activations of about 0.01, and four outliers of 1000
    x = [rng.gauss(0, 0.01) for _ in range(1024)]
    for i in (100, 400, 700, 1000):
        x[i] = 1000.0
    small = [i for i, v in enumerate(x) if abs(v) < 1]
    print("recipe                  small values lost  mean relative error")
    for name, block in (
        ("per tensor", None),
        ("per 128 (DeepSeek-V3)", 128),
        ("per 32 (MX)", 32),
    ):
        q = quantize(x, block)
        zeros = sum(q[i] == 0 for i in small)
        err = sum(abs(q[i] - x[i]) / abs(x[i]) for i in small) / len(small)
        print(f"{name:<22}  {zeros:17}  {err:19.1%}")
    # --8<-- [end:demo]
