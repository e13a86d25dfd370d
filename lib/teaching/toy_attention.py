"""The toy attention calculator: one self-attention head, small enough to check by hand.

Over 600 lines and still one concept: the toy calculator, its numbers and the text that walks through them.

The course manual (section 9) sets an exercise: tokens "The cat sat", d = 2, e(The) = [1, 0],
e(cat) = [0, 1], e(sat) = [1, 1], positions p1 = [0.1, 0], p2 = [0, 0.1], p3 = [0.1, 0.1],
Q = K = V = X, no scaling. `attention_steps` does that computation and keeps every intermediate
matrix, so a page or a notebook can show each step; `encoder_block` adds the residual + LayerNorm +
feed-forward step of course section 3.2. The rest of the module turns the numbers into text a learner
can follow (one cell's arithmetic written out in full, "which token does each token attend to").

Conventions (the same as the course and `torch.nn.functional.scaled_dot_product_attention`):
    Q = X W_Q, K = X W_K, V = X W_V                      # (n, d_k), (n, d_k), (n, d_v)
    scores = Q Kᵀ [÷ √d_k] [causal mask: -inf above the diagonal]   # (n, n)
    weights = softmax(scores / temperature)  row by row  # (n, n), every row sums to 1
    output = weights V                                   # (n, d_v)
Temperature divides the scores just before the softmax: T > 1 flattens the weights towards uniform,
T < 1 sharpens them towards the single best-matching key. T = 1 is ordinary attention.

No Streamlit here: the page `pages/calculator.py` draws what this module computes.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lib.errors import ContextLensError

# --- the course's worked example (manual, section 9) --------------------------------------------------

COURSE_TOKENS: tuple[str, ...] = ("The", "cat", "sat")
COURSE_EMBEDDINGS: dict[str, tuple[float, ...]] = {"The": (1.0, 0.0), "cat": (0.0, 1.0), "sat": (1.0, 1.0)}
COURSE_POSITIONS: tuple[tuple[float, ...], ...] = ((0.1, 0.0), (0.0, 0.1), (0.1, 0.1))

# Rows whose largest logit lies within ±EXP_SHIFT_LIMIT are exponentiated as they are, so the numbers on
# screen match a hand calculation (exp(1.21) = 3.3535...). Rows beyond it (e.g. scores of 1e6, whose exp
# overflows) have their largest logit subtracted first; softmax is unchanged because the factor cancels.
EXP_SHIFT_LIMIT = 30.0


class ToyAttentionError(ContextLensError):
    """Bad input for the toy calculator; the message says what to change."""


# --- results ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AttentionSteps:
    """Every intermediate matrix of one attention head. n = tokens, d = input width.

    X: (n, d) the input rows (token embedding + position, as given)
    W_q, W_k: (d, d_k); W_v: (d, d_v) the projections used (identity where none was given)
    Q, K: (n, d_k); V: (n, d_v)
    raw_scores: (n, n) Q Kᵀ, before scaling and masking
    scores: (n, n) after ÷ √d_k (when `scale`) and the causal mask (-inf above the diagonal), before the
        temperature and the softmax
    logits: (n, n) scores / temperature, what the softmax sees
    exp_shift: (n,) what was subtracted from each row of `logits` before exp; 0 unless the row's largest
        logit is beyond ±EXP_SHIFT_LIMIT (then it is that largest logit)
    exp_scores: (n, n) exp(logits - exp_shift[:, None]); masked cells are 0
    row_sums: (n,) exp_scores summed over each row, always > 0
    weights: (n, n) exp_scores / row_sums[:, None]; every row sums to 1; masked cells are 0
    output: (n, d_v) weights V; row i mixes the value rows by token i's weights
    scale_factor: 1 / √d_k when `scale`, else 1.0
    temperature: the temperature used (> 0)
    causal: whether token i could only see tokens 0..i
    """

    X: np.ndarray
    W_q: np.ndarray
    W_k: np.ndarray
    W_v: np.ndarray
    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    raw_scores: np.ndarray
    scores: np.ndarray
    logits: np.ndarray
    exp_shift: np.ndarray
    exp_scores: np.ndarray
    row_sums: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    scale_factor: float
    temperature: float
    causal: bool

    @property
    def masked(self) -> np.ndarray:
        """(n, n) bool: True where the causal mask hides key j from query i."""
        return np.isneginf(self.scores)


@dataclass(frozen=True)
class BlockSteps:
    """Residual + LayerNorm + feed-forward after attention (course section 3.2). n tokens, d wide, h hidden.

    LayerNorm here has no learned gain or bias: each row is shifted to mean 0 and scaled to variance 1.
    residual: (n, d) X + attention output
    norm1: (n, d) LayerNorm(residual)
    hidden: (n, h) ReLU(norm1 W1 + b1)
    ffn: (n, d) hidden W2 + b2
    output: (n, d) LayerNorm(norm1 + ffn), the block's output
    W1: (d, h), b1: (h,), W2: (h, d), b2: (d,) the feed-forward weights used
    """

    residual: np.ndarray
    norm1: np.ndarray
    hidden: np.ndarray
    ffn: np.ndarray
    output: np.ndarray
    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray


@dataclass(frozen=True)
class TokenSummary:
    """What happened to one token: whom it attends to most and how far its vector moved."""

    label: str
    top_labels: tuple[str, ...]  # the key token(s) with the largest weight in this row (ties: all of them)
    top_weight: float
    self_weight: float  # weight on itself
    before: np.ndarray  # (d,) input row X[i]
    after: np.ndarray  # (d_v,) output row
    moved: float  # Euclidean distance before -> after (nan when d_v != d)


@dataclass(frozen=True)
class StepFacts:
    """The numbers the calculator's explanations quote about one run of the steps, following query row ``i``.

    identity_projections: W_Q, W_K and W_V are all the identity (the course's Q = K = V = X)
    same_query_key:       W_Q = W_K (up to rounding), so the scores are symmetric
    symmetric_scores:     the raw scores QKᵀ equal their transpose (up to rounding)
    largest_score:        (row, column) of the largest raw score in the whole table
    row_best:             the key with the largest raw score in row i (the first, on a tie)
    row_ties:             every key tied with it (within 1e-9), in order, row_best first
    d_k, sqrt_d_k:        the query/key width and its square root (what scaling divides by)
    exp_ratio:            largest / smallest exp among the keys row i sees; inf when the smallest is 0
    row_sum_error:        max over rows of |Σⱼ αᵢⱼ − 1| (rounding only)
    """

    identity_projections: bool
    same_query_key: bool
    symmetric_scores: bool
    largest_score: tuple[int, int]
    row_best: int
    row_ties: tuple[int, ...]
    d_k: int
    sqrt_d_k: float
    exp_ratio: float
    row_sum_error: float


def step_facts(steps: AttentionSteps, i: int) -> StepFacts:
    """:class:`StepFacts` of ``steps`` for query row ``i`` (0-based)."""
    raw = steps.raw_scores
    seen = steps.exp_scores[i][~steps.masked[i]]  # the diagonal is never masked, so never empty
    smallest = float(seen.min())
    big = np.unravel_index(int(np.argmax(raw)), raw.shape)
    d_k = int(steps.Q.shape[1])
    return StepFacts(
        identity_projections=all(_is_identity(W) for W in (steps.W_q, steps.W_k, steps.W_v)),
        same_query_key=steps.W_q.shape == steps.W_k.shape and bool(np.allclose(steps.W_q, steps.W_k)),
        symmetric_scores=bool(np.allclose(raw, raw.T)),
        largest_score=(int(big[0]), int(big[1])),
        row_best=int(np.argmax(raw[i])),
        row_ties=tuple(int(j) for j in np.flatnonzero(np.isclose(raw[i], raw[i].max(), rtol=0, atol=1e-9))),
        d_k=d_k,
        sqrt_d_k=float(np.sqrt(d_k)),
        exp_ratio=float(seen.max()) / smallest if smallest > 0 else float("inf"),
        row_sum_error=float(np.abs(steps.weights.sum(axis=1) - 1).max()),
    )


# --- validation ---------------------------------------------------------------------------------------


def _matrix(name: str, value: object, hint: str = "") -> np.ndarray:
    """`value` as a finite float (rows, cols) array, or a ToyAttentionError saying what to fix."""
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError) as err:
        raise ToyAttentionError(f"{name} must hold numbers only{hint}; found something else ({err}).") from None
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ToyAttentionError(
            f"{name} must be a table of numbers (rows × columns), at least 1 × 1; got shape {arr.shape}{hint}."
        )
    bad = np.argwhere(~np.isfinite(arr))
    if bad.size:
        r, c = bad[0]
        raise ToyAttentionError(
            f"{name} has {arr[r, c]} in row {r + 1}, column {c + 1}; type an ordinary (finite) number there."
        )
    return arr


def _projection(name: str, W: object | None, d: int) -> np.ndarray:
    if W is None:
        return np.eye(d)
    W = _matrix(name, W)
    if W.shape[0] != d:
        raise ToyAttentionError(
            f"{name} needs {d} rows (one per input dimension) but has {W.shape[0]}; give it shape ({d}, k)."
        )
    return W


def _check_temperature(temperature: object) -> float:
    try:
        t = float(temperature)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ToyAttentionError(f"The temperature must be a number above 0; got {temperature!r}.") from None
    if not math.isfinite(t) or t <= 0:
        raise ToyAttentionError(f"The temperature must be a finite number above 0 (1 = plain softmax); got {t}.")
    return t


# --- the computation ----------------------------------------------------------------------------------


def attention_steps(
    X: object,
    W_q: object | None = None,
    W_k: object | None = None,
    W_v: object | None = None,
    *,
    scale: bool = False,
    causal: bool = False,
    temperature: float = 1.0,
) -> AttentionSteps:
    """One self-attention head on the rows of X, keeping every step. Identity where a W is None.

    X: (n, d); W_q, W_k: (d, d_k); W_v: (d, d_v). `scale` divides the scores by √d_k; `causal` hides
    keys after the query (as in a decoder); `temperature` (> 0) divides the scores before the softmax.
    Raises ToyAttentionError (a ValueError) for empty, non-numeric, non-finite or mis-shaped input.
    The softmax never overflows: see EXP_SHIFT_LIMIT.
    """
    X = _matrix("X", X)
    n, d = X.shape
    W_q = _projection("W_Q", W_q, d)
    W_k = _projection("W_K", W_k, d)
    W_v = _projection("W_V", W_v, d)
    if W_q.shape[1] != W_k.shape[1]:
        raise ToyAttentionError(
            f"W_Q and W_K must have the same number of columns (queries and keys are compared by a dot "
            f"product); they have {W_q.shape[1]} and {W_k.shape[1]}."
        )
    t = _check_temperature(temperature)

    with np.errstate(over="ignore", invalid="ignore"):
        Q = X @ W_q  # (n, d_k)
        K = X @ W_k  # (n, d_k)
        V = X @ W_v  # (n, d_v)
        raw = Q @ K.T  # (n, n)
    if not (np.isfinite(Q).all() and np.isfinite(K).all() and np.isfinite(V).all() and np.isfinite(raw).all()):
        raise ToyAttentionError(
            "The numbers are too large: Q Kᵀ overflows. Use values below about 1e150 in X and the W matrices."
        )
    d_k = Q.shape[1]
    scale_factor = 1.0 / math.sqrt(d_k) if scale else 1.0
    scores = raw * scale_factor
    mask = np.triu(np.ones((n, n), dtype=bool), k=1) if causal else np.zeros((n, n), dtype=bool)
    scores = np.where(mask, -np.inf, scores)

    with np.errstate(over="ignore"):
        logits = scores / t
    if not np.isfinite(logits[~mask]).all():
        raise ToyAttentionError(
            f"The temperature {t:g} is too small for these scores (scores ÷ temperature overflow); raise it."
        )
    row_max = np.where(mask, -np.inf, logits).max(axis=1)  # the diagonal is never masked
    exp_shift = np.where(np.abs(row_max) > EXP_SHIFT_LIMIT, row_max, 0.0)
    with np.errstate(under="ignore"):
        exp_scores = np.exp(logits - exp_shift[:, None])  # masked: exp(-inf) = 0
    row_sums = exp_scores.sum(axis=1)  # >= exp(-EXP_SHIFT_LIMIT) > 0
    weights = exp_scores / row_sums[:, None]
    output = weights @ V

    return AttentionSteps(
        X=X, W_q=W_q, W_k=W_k, W_v=W_v, Q=Q, K=K, V=V, raw_scores=raw, scores=scores, logits=logits,
        exp_shift=exp_shift, exp_scores=exp_scores, row_sums=row_sums, weights=weights, output=output,
        scale_factor=scale_factor, temperature=t, causal=bool(causal),
    )


@dataclass(frozen=True)
class ToyInputs:
    """The calculator's last valid inputs: the tokens, their embedding and position rows, the weights.

    tokens:     n token strings (repeats allowed)
    embeddings: (n, d) one embedding row per token (E)
    positions:  (n, d) one position row per token (P)
    W_q, W_k, W_v: (d, d) projections; W1, W2: the feed-forward weights, None for the identity
    """

    tokens: tuple[str, ...]
    embeddings: np.ndarray
    positions: np.ndarray
    W_q: np.ndarray
    W_k: np.ndarray
    W_v: np.ndarray
    W1: np.ndarray | None = None
    W2: np.ndarray | None = None

    @classmethod
    def course_example(cls) -> ToyInputs:
        """The course's "The cat sat" in 2-D, identity projections, no feed-forward weights."""
        return cls(
            tokens=COURSE_TOKENS,
            embeddings=np.array([COURSE_EMBEDDINGS[t] for t in COURSE_TOKENS], dtype=float),
            positions=np.array(COURSE_POSITIONS, dtype=float),
            W_q=np.eye(2),
            W_k=np.eye(2),
            W_v=np.eye(2),
        )

    @classmethod
    def from_tables(
        cls,
        tokens: Sequence[str],
        words: Sequence[str],
        word_embeddings: np.ndarray,
        positions: np.ndarray,
        weights: dict[str, np.ndarray],
        ffn: dict[str, np.ndarray | None] | None = None,
    ) -> ToyInputs:
        """From the page's tables: one embedding row per distinct word (`words`, (w, d)), expanded to the tokens.

        weights: "W_Q", "W_K", "W_V"; ffn: "W1", "W2" (missing or None: the identity).
        """
        ffn = ffn or {}
        rows = np.array([word_embeddings[list(words).index(t)] for t in tokens], dtype=float)
        return cls(
            tokens=tuple(tokens),
            embeddings=rows,
            positions=np.asarray(positions, dtype=float),
            W_q=weights["W_Q"],
            W_k=weights["W_K"],
            W_v=weights["W_V"],
            W1=ffn.get("W1"),
            W2=ffn.get("W2"),
        )

    @property
    def ffn(self) -> dict[str, np.ndarray]:
        """The feed-forward weights that were given ("W1", "W2"), without the identity defaults."""
        return {k: v for k, v in (("W1", self.W1), ("W2", self.W2)) if v is not None}

    def x(self, *, use_positions: bool) -> np.ndarray:
        """The input rows X: (n, d), E + P with positions, E without."""
        return self.embeddings + self.positions if use_positions else self.embeddings

    def steps(
        self, *, use_positions: bool, scale: bool = False, causal: bool = False, temperature: float = 1.0
    ) -> AttentionSteps:
        """:func:`attention_steps` on these inputs (raises ToyAttentionError as it does)."""
        return attention_steps(
            self.x(use_positions=use_positions), self.W_q, self.W_k, self.W_v,
            scale=scale, causal=causal, temperature=temperature,
        )

    def block(self, attention_output: np.ndarray, *, use_positions: bool) -> BlockSteps:
        """:func:`encoder_block` after the attention output, with this input's W1 and W2."""
        return encoder_block(self.x(use_positions=use_positions), attention_output, W1=self.W1, W2=self.W2)


def layer_norm(H: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """Each row of H (n, d) shifted to mean 0 and divided by sqrt(variance + eps); no gain or bias."""
    mean = H.mean(axis=1, keepdims=True)
    var = H.var(axis=1, keepdims=True)
    return (H - mean) / np.sqrt(var + eps)


def encoder_block(
    X: object,
    attention_output: object,
    W1: object | None = None,
    b1: object | None = None,
    W2: object | None = None,
    b2: object | None = None,
    eps: float = 1e-5,
) -> BlockSteps:
    """The rest of an encoder layer (course section 3.2) after attention, with a ReLU feed-forward.

    H1 = LayerNorm(X + attention_output); FFN(H1) = ReLU(H1 W1 + b1) W2 + b2; out = LayerNorm(H1 + FFN).
    X, attention_output: (n, d); W1: (d, h) (default identity), W2: (h, d) (default identity),
    b1: (h,), b2: (d,) (default zeros). BERT uses GELU and a learned gain/bias; ReLU keeps it hand-checkable.
    """
    X = _matrix("X", X)
    A = _matrix("The attention output", attention_output)
    n, d = X.shape
    if A.shape != X.shape:
        raise ToyAttentionError(
            f"The residual adds the attention output to X, so both need shape {X.shape}; the output has "
            f"{A.shape}. Give W_V as many columns as X has ({d})."
        )
    W1 = _projection("W1", W1, d)
    h = W1.shape[1]
    W2 = np.eye(d) if W2 is None else _matrix("W2", W2)
    if W2.shape != (h, d):
        raise ToyAttentionError(f"W2 must have shape ({h}, {d}) to map the hidden layer back; got {W2.shape}.")
    b1 = np.zeros(h) if b1 is None else _matrix("b1", np.reshape(b1, (1, -1)))[0]
    b2 = np.zeros(d) if b2 is None else _matrix("b2", np.reshape(b2, (1, -1)))[0]
    if b1.shape != (h,) or b2.shape != (d,):
        raise ToyAttentionError(f"b1 needs {h} numbers and b2 needs {d}; got {b1.size} and {b2.size}.")
    residual = X + A
    norm1 = layer_norm(residual, eps)
    hidden = np.maximum(norm1 @ W1 + b1, 0.0)
    ffn = hidden @ W2 + b2
    out = layer_norm(norm1 + ffn, eps)
    if not np.isfinite(out).all():
        raise ToyAttentionError("The block's numbers overflow; use smaller values in W1 and W2.")
    return BlockSteps(residual=residual, norm1=norm1, hidden=hidden, ffn=ffn, output=out, W1=W1, b1=b1, W2=W2, b2=b2)


def contextualize(base: Sequence[float], shift: Sequence[float]) -> np.ndarray:
    """The course lesson's warm-up: a word's base vector pushed by a context's shift (base + shift)."""
    b = _matrix("The base vector", [list(base)])[0]
    s = _matrix("The context shift", [list(shift)])[0]
    if b.shape != s.shape:
        raise ToyAttentionError(f"The base vector has {b.size} numbers and the shift {s.size}; give both the same.")
    return b + s


# --- inputs: tokens, defaults, parsing typed cells ----------------------------------------------------


def parse_tokens(text: str, min_tokens: int = 2, max_tokens: int = 6, max_len: int = 20) -> tuple[str, ...]:
    """Split typed text into tokens on whitespace; ToyAttentionError unless min..max tokens of sane length."""
    tokens = tuple(str(text).split())
    if not min_tokens <= len(tokens) <= max_tokens:
        raise ToyAttentionError(
            f"Type {min_tokens} to {max_tokens} tokens separated by spaces (e.g. 'The cat sat'); "
            f"got {len(tokens)}."
        )
    long = [t for t in tokens if len(t) > max_len]
    if long:
        raise ToyAttentionError(f"Keep each token to {max_len} characters or fewer; shorten '{long[0][:max_len]}…'.")
    return tokens


def unique_labels(tokens: Sequence[str]) -> list[str]:
    """Token labels for tables and charts, made unique by position where a token repeats ("the (1)")."""
    counts: dict[str, int] = {}
    for t in tokens:
        counts[t] = counts.get(t, 0) + 1
    return [f"{t} ({i + 1})" if counts[t] > 1 else t for i, t in enumerate(tokens)]


def default_embedding(word: str, d: int) -> list[float]:
    """The course's e(word) (any capitalisation: "the" = "The") padded with zeros to d; other words get fixed
    made-up values in {-1, -0.5, 0, 0.5, 1}, the same on every call."""
    course = {w.casefold(): v for w, v in COURSE_EMBEDDINGS.items()}
    if word.casefold() in course:
        base = list(course[word.casefold()])
        return (base + [0.0] * d)[:d]
    rng = np.random.default_rng(zlib.crc32(word.encode("utf-8")))
    return [float(v) / 2 for v in rng.integers(-2, 3, size=d)]


def default_position(index: int, d: int) -> list[float]:
    """The position row of token ``index`` (0-based; shown as p1, p2, ...): 0.1 × the binary digits of
    index + 1, lowest first, so p1..p3 are the course's [0.1, 0], [0, 0.1], [0.1, 0.1] in d = 2 (padded
    with zeros in larger d)."""
    k = index + 1  # the course numbers positions from 1, and position 0 would be the zero vector
    return [0.1 * ((k >> bit) & 1) for bit in range(d)]


def parse_cell(value: object, where: str) -> float:
    """One typed table cell as a finite float. Accepts numbers, '1.5', '-1e6', '1/3', '1,5' (decimal comma).

    Raises ToyAttentionError naming `where` for empty cells, text, NaN and infinity.
    """
    if value is None or repr(value) == "<NA>":  # None, or pandas' missing value from an emptied cell
        raise ToyAttentionError(f"{where} is empty; type a number such as 0.5.")
    if isinstance(value, bool):
        raise ToyAttentionError(f"{where} holds {value}; type a number such as 0.5.")
    if isinstance(value, int | float | np.integer | np.floating):
        x = float(value)
    else:
        text = str(value).strip()
        if not text:
            raise ToyAttentionError(f"{where} is empty; type a number such as 0.5.")
        shown = text if len(text) <= 20 else text[:20] + "…"
        cleaned = text.replace("−", "-").replace(" ", "")
        if cleaned.count(",") == 1 and "." not in cleaned:
            cleaned = cleaned.replace(",", ".")
        try:
            if cleaned.count("/") == 1:
                num, den = cleaned.split("/")
                x = float(num) / float(den)
            else:
                x = float(cleaned)
        except (ValueError, ZeroDivisionError):
            raise ToyAttentionError(
                f"{where} holds '{shown}', which is not a number; type a number such as 0.5, -1e6 or 1/3."
            ) from None
    if math.isnan(x):
        raise ToyAttentionError(f"{where} is empty or NaN; type a number such as 0.5.")
    if math.isinf(x):
        raise ToyAttentionError(f"{where} is infinite; type an ordinary number (e.g. 1e6 for a very large one).")
    return x


def parse_matrix(
    rows: Sequence[Sequence[object]], name: str, row_labels: Sequence[str], col_labels: Sequence[str]
) -> np.ndarray:
    """A table of typed cells as a (len(row_labels), len(col_labels)) float array.

    The first bad cell raises ToyAttentionError naming the table, the row and the column.
    """
    out = np.zeros((len(row_labels), len(col_labels)))
    for r, row_label in enumerate(row_labels):
        for c, col_label in enumerate(col_labels):
            out[r, c] = parse_cell(rows[r][c], f"{name}, row '{row_label}', column '{col_label}',")
    return out


# --- text for the page --------------------------------------------------------------------------------


def format_number(x: float, digits: int = 4) -> str:
    """A number as a learner reads it: up to `digits` decimals, no trailing zeros, 'masked' for -inf.

    Very large or very small magnitudes use scientific notation (1e+06). Never prints 'nan' or 'inf'.
    """
    x = float(x)
    if math.isnan(x):
        return "—"
    if math.isinf(x):
        return "masked" if x < 0 else "too large"
    if x != 0 and (abs(x) >= 1e5 or abs(x) < 10 ** (-digits)):
        return f"{x:.3g}"
    s = f"{x:.{digits}f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def format_vector(v: Sequence[float]) -> str:
    return "[" + ", ".join(format_number(x) for x in v) + "]"


def _dot_text(a: Sequence[float], b: Sequence[float]) -> str:
    return " + ".join(f"{format_number(x)}·{format_number(y)}" for x, y in zip(a, b, strict=True))


def _is_identity(W: np.ndarray) -> bool:
    return W.shape[0] == W.shape[1] and np.array_equal(W, np.eye(W.shape[0]))


def worked_cell(
    steps: AttentionSteps,
    labels: Sequence[str],
    i: int,
    j: int,
    embeddings: np.ndarray | None = None,
    positions: np.ndarray | None = None,
) -> dict[str, str]:
    """One query/key pair (row i, column j) followed through every step, arithmetic written out in full.

    embeddings, positions: (n, d) e(token) and p rows that made X (positions None when switched off).
    Returns {"X", "QKV", "scores", "exp", "row_sum", "weights", "output"} -> plain text (numbers rounded
    to 4 decimals), for a monospace block.
    """
    a, b = labels[i], labels[j]
    X = steps.X
    out: dict[str, str] = {}

    lines = []
    for k, lab in ((i, a), (j, b)) if i != j else ((i, a),):
        if embeddings is not None and positions is not None:
            lines.append(
                f"X[{lab}] = e({lab}) + p{k + 1} = {format_vector(embeddings[k])} + {format_vector(positions[k])}"
                f" = {format_vector(X[k])}"
            )
        elif embeddings is not None:
            lines.append(f"X[{lab}] = e({lab}) = {format_vector(X[k])}   (positions switched off)")
        else:
            lines.append(f"X[{lab}] = {format_vector(X[k])}")
    out["X"] = "\n".join(lines)

    lines = []
    for mat_name, W, row, lab in (("Q", steps.W_q, i, a), ("K", steps.W_k, j, b), ("V", steps.W_v, j, b)):
        result = X[row] @ W
        if _is_identity(W):
            lines.append(f"{mat_name}[{lab}] = X[{lab}] · W_{mat_name} = X[{lab}] · I = {format_vector(result)}")
            continue
        lines.append(f"{mat_name}[{lab}] = X[{lab}] · W_{mat_name}:")
        for c in range(W.shape[1]):
            lines.append(
                f"  {mat_name}[{lab}, {c + 1}] = {_dot_text(X[row], W[:, c])} = {format_number(result[c])}"
            )
    out["QKV"] = "\n".join(lines)

    q, k_ = steps.Q[i], steps.K[j]
    raw = steps.raw_scores[i, j]
    lines = [f"Q[{a}] · K[{b}] = {_dot_text(q, k_)} = {format_number(raw)}"]
    if steps.scale_factor != 1.0:
        d_k = steps.Q.shape[1]
        lines.append(
            f"÷ √d_k = ÷ √{d_k} = ÷ {format_number(math.sqrt(d_k))}  →  {format_number(raw * steps.scale_factor)}"
        )
    if steps.masked[i, j]:
        lines.append(
            f"causal mask: {b} comes after {a}, so S[{a}, {b}] = −∞ (the query may not look ahead)"
        )
    else:
        lines.append(f"S[{a}, {b}] = {format_number(steps.scores[i, j])}")
    out["scores"] = "\n".join(lines)

    t = steps.temperature
    shift = steps.exp_shift[i]
    if steps.masked[i, j]:
        text = f"exp(S[{a}, {b}]) = exp(−∞) = 0"
    else:
        z = steps.scores[i, j]
        arg = f"{format_number(z)} / {format_number(t)}" if t != 1.0 else format_number(z)
        if shift != 0.0:
            text = (
                f"exp({arg} − {format_number(shift)}) = exp({format_number(steps.logits[i, j] - shift)}) = "
                f"{format_number(steps.exp_scores[i, j])}\n(the row's largest value {format_number(shift)} is "
                "subtracted first: exp of it would overflow, and the factor cancels in the softmax)"
            )
        else:
            text = f"exp({arg}) = {format_number(steps.exp_scores[i, j])}"
    out["exp"] = text

    terms = " + ".join(format_number(e) for e in steps.exp_scores[i])
    out["row_sum"] = f"sum over row {a} = {terms} = {format_number(steps.row_sums[i])}"

    out["weights"] = (
        f"weight[{a}, {b}] = {format_number(steps.exp_scores[i, j])} / {format_number(steps.row_sums[i])}"
        f" = {format_number(steps.weights[i, j])}"
    )

    parts = [f"{format_number(w)}·{format_vector(v)}" for w, v in zip(steps.weights[i], steps.V, strict=True)]
    out["output"] = f"output[{a}] = " + "\n      + ".join(parts) + f"\n    = {format_vector(steps.output[i])}"
    return out


def token_summaries(steps: AttentionSteps, labels: Sequence[str]) -> list[TokenSummary]:
    """For each token: the key it weights most, its weight on itself, and how far its vector moved."""
    result = []
    for i, label in enumerate(labels):
        row = steps.weights[i]
        top_weight = float(row.max())
        tops = tuple(labels[j] for j in np.flatnonzero(np.isclose(row, top_weight, rtol=0, atol=1e-9)))
        before, after = steps.X[i], steps.output[i]
        moved = float(np.linalg.norm(after - before)) if after.shape == before.shape else float("nan")
        result.append(
            TokenSummary(
                label=label, top_labels=tops, top_weight=top_weight, self_weight=float(row[i]),
                before=before, after=after, moved=moved,
            )
        )
    return result
