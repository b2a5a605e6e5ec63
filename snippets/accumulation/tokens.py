"""A token-level loss accumulated over micro-batches of unequal length."""

# --8<-- [start:model]
import math

from snippets.checks import choice, number

NORMALISE = ("micro_batch_mean", "total_tokens")


def _tokens(micro_batches):
    """A list of micro-batches, each a non-empty list of (x, y) tokens."""
    if not isinstance(micro_batches, list | tuple) or not micro_batches:
        raise TypeError(
            "micro_batches must be a non-empty list of micro-batches, got "
            f"{type(micro_batches).__name__} {micro_batches!r:.60}"
        )
    for batch in micro_batches:
        if not isinstance(batch, list | tuple) or not batch:
            raise TypeError(
                "micro_batches must hold non-empty lists of (x, y) tokens,"
                f" got {type(batch).__name__} {batch!r:.60}"
            )
        for token in batch:
            if not isinstance(token, list | tuple) or len(token) != 2:
                raise TypeError(
                    "micro_batches' tokens must be (x, y) pairs, got "
                    f"{type(token).__name__} {token!r:.60}"
                )
            for value in token:
                number("micro_batches' x and y", value, minimum=-math.inf)
    return micro_batches


def _sums(tokens, weight):
    """Summed loss and gradient of the one-weight model y ~ w x, with
    the squared error (w x - y)^2 / 2 of every token."""
    loss = sum((weight * x - y) ** 2 / 2 for x, y in tokens)
    grad = sum((weight * x - y) * x for x, y in tokens)
    return loss, grad


def big_batch(micro_batches, weight):
    """Loss and gradient of the whole batch at once: the mean over all
    its tokens, what accumulation must reproduce."""
    batches = _tokens(micro_batches)
    number("weight", weight, minimum=-math.inf)
    tokens = [token for batch in batches for token in batch]
    loss, grad = _sums(tokens, weight)
    return {"loss": loss / len(tokens), "grad": grad / len(tokens)}


def accumulate(micro_batches, weight, normalise="total_tokens"):
    """Loss and gradient summed over A micro-batches, one at a time.

    "micro_batch_mean": each micro-batch takes the mean over its own
    tokens and is scaled by 1 / A, the recipe for equal micro-batches.
    "total_tokens": each micro-batch sums its tokens' losses and divides
    by the tokens of all A micro-batches, counted before the first.
    """
    batches = _tokens(micro_batches)
    number("weight", weight, minimum=-math.inf)
    choice("normalise", normalise, NORMALISE)
    total = sum(len(batch) for batch in batches)
    loss = grad = 0.0
    for batch in batches:
        part_loss, part_grad = _sums(batch, weight)
        if normalise == "micro_batch_mean":
            scale = 1 / (len(batch) * len(batches))
        else:
            scale = 1 / total
        loss += part_loss * scale
        grad += part_grad * scale
    return {"loss": loss, "grad": grad}


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    W = 0.5
    SHORT = [(2.0, 3.0)] * 2  # 2 tokens, each with gradient -4
    LONG = [(1.0, 1.0)] * 8  # 8 tokens, each with gradient -0.5
    EQUAL = [[(2.0, 3.0), (1.0, 1.0), (1.0, 1.0)], [(1.0, 1.0)] * 3]
    print("one weight, squared error per token, w = 0.5")
    print("micro-batches   big batch  per-mb mean  total tokens")
    for label, batches in (
        ("2 + 8 tokens", [SHORT, LONG]),
        ("8 + 2 tokens", [LONG, SHORT]),
        ("3 + 3 tokens", EQUAL),
    ):
        grads = (
            big_batch(batches, W)["grad"],
            accumulate(batches, W, "micro_batch_mean")["grad"],
            accumulate(batches, W, "total_tokens")["grad"],
        )
        print(f"{label:<12}" + "".join(f"{g:13.4f}" for g in grads))
    losses = (
        big_batch([SHORT, LONG], W)["loss"],
        accumulate([SHORT, LONG], W, "micro_batch_mean")["loss"],
        accumulate([SHORT, LONG], W, "total_tokens")["loss"],
    )
    print("loss, 2 + 8  " + "".join(f"{x:13.4f}" for x in losses))
    # --8<-- [end:demo]
