"""figure("context-balance") on the context-parallelism page: the causal
mask of a sequence in 8 chunks, each query chunk coloured by the rank of
4 that holds it, contiguous and zig-zag (rank_chunks, ring_step_scores)."""

from matplotlib.patches import Polygon, Rectangle

from course.charts._svg import INK, PALETTE, figure_html, new_figure, style
from snippets.context.balance import LAYOUTS, rank_chunks, ring_step_scores

TITLES = {"contiguous": "contiguous chunks", "zigzag": "zig-zag chunks"}


def draw():
    n, seq = 4, 64  # ranks; tokens, in 2n = 8 chunks
    chunks = 2 * n
    work = {}
    with style():
        fig = new_figure(6.4, 3.7)
        axes = fig.subplots(1, 2)
        for ax, layout in zip(axes, LAYOUTS, strict=True):
            owner = {c: r for r in range(n) for c in rank_chunks(r, n, layout)}
            steps = ring_step_scores(seq, n, layout)
            work[layout] = [sum(col) for col in zip(*steps, strict=True)]
            for q in range(chunks):  # query chunk: a row
                color = PALETTE[owner[q]]
                for k in range(q):  # key chunks before it: whole blocks
                    ax.add_patch(
                        Rectangle((k, q), 1, 1, facecolor=color, ec="white")
                    )
                # the diagonal block: keys up to the query, a triangle
                ax.add_patch(
                    Polygon(
                        [(q, q), (q, q + 1), (q + 1, q + 1)],
                        facecolor=color,
                        ec="white",
                    )
                )
                ax.text(
                    chunks + 0.3,
                    q + 0.5,
                    f"rank {owner[q]}",
                    va="center",
                    fontsize=9,
                    color=INK,
                )
            ax.set_xlim(0, chunks + 2.2)
            ax.set_ylim(chunks, 0)
            ax.set_aspect("equal")
            ax.set_xticks([0.5, chunks - 0.5], ["first key", "last"])
            ax.set_yticks([0.5, chunks - 0.5], ["first query", "last"])
            ax.tick_params(length=0)
            for side in ("left", "bottom"):
                ax.spines[side].set_visible(False)
            shares = ", ".join(str(w) for w in work[layout])
            ax.set_title(
                f"{TITLES[layout]}\nscores per rank: {shares}",
                fontsize=9.5,
            )
    plain, zig = work["contiguous"], work["zigzag"]
    return figure_html(
        fig,
        name="context-balance",
        title="The causal mask shared out by contiguous and zig-zag chunks",
        alt=(
            f"Two triangles of query-key blocks for a sequence cut into "
            f"{chunks} chunks on {n} ranks. On the left each rank holds "
            f"two neighbouring chunks, so rank 0 owns the short top rows "
            f"and rank {n - 1} the long bottom rows. On the right rank r "
            f"holds chunk r and chunk {chunks - 1} minus r, so every rank "
            f"owns one short and one long row."
        ),
        caption=(
            f"Causal attention scores a query only against earlier keys. "
            f"With contiguous chunks the last rank computes "
            f"{max(plain)} of the {sum(plain)} scores of a {seq}-token "
            f"sequence and the first {min(plain)}; pairing chunk r with "
            f"chunk {chunks - 1} - r gives every rank {zig[0]}."
        ),
    )
