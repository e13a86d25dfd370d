"""Toy attention calculator: the course's worked example (manual section 9), one step at a time, then editable.

Reads the widgets, calls `lib.teaching.toy_attention`, draws `lib.charts` figures and explains each step with the
numbers on screen. Needs no model. The last valid inputs live in `st.session_state["calc_valid"]` (a `ToyInputs`), so a bad
cell shows a message and the steps keep showing the last numbers that worked. The steps, their tables and charts are
made once per inputs and switches (ui.cache, keyed by the numbers themselves): a rerun that changes nothing finds them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from lib.charts.attention import attention_heatmap
from lib.charts.toy import vector_arrows, warmup_arrows
from lib.models.encoder import default_head_width
from lib.teaching import toy_attention as ta
from ui import cache, link
from ui.widgets import chart, page_intro, prose
from ui.widgets import escape_md as md

# the page's parameters, declared once (ui.link.Param): the switches travel in the link, the words do not
PARAMS = [
    link.Param("calc_tokens", "text", " ".join(ta.COURSE_TOKENS), max_chars=130, in_url=False),
    link.Param("calc_d", "int", 2, lo=2, hi=4),
    link.Param("calc_use_pos", "bool", True),
    link.Param("calc_scale", "bool", False),
    link.Param("calc_causal", "bool", False),
    link.Param("calc_temperature", "float", 1.0, lo=0.01, hi=100.0),
    link.Param("calc_block", "bool", False),
]
DEFAULT_HEAD_WIDTH = default_head_width()  # what the default model's scaling divides by the root of
FOLLOW = {"calc_row": 1, "calc_col": 2}  # follow the cell S[cat, sat] through every step (0-based token indices)
WARMUP_ROWS = [  # course lesson 002: bank [0.5, 0.5] pushed by a finance or a nature context
    {"word": "bank", "context": "finance", "base x": 0.5, "base y": 0.5, "shift x": 0.3, "shift y": -0.2},
    {"word": "bank", "context": "nature", "base x": 0.5, "base y": 0.5, "shift x": -0.2, "shift y": 0.3},
]
WARMUP_REFERENCES = {"money": (0.9, 0.1), "river": (0.1, 0.9)}
APPLE_ROWS = [
    {"word": "apple", "context": "fruit", "base x": 0.3, "base y": 0.3, "shift x": None, "shift y": None},
    {"word": "apple", "context": "company", "base x": 0.3, "base y": 0.3, "shift x": None, "shift y": None},
]
# The exercise asks for food and technology words, so the chart gets those markers once "apple" is in the
# table, and the answer moves each apple towards its own marker (never towards bank's money/river).
APPLE_REFERENCES = {"pear (food)": (-0.1, 0.6), "laptop (technology)": (0.6, -0.1)}
APPLE_ANSWER = {"fruit": (-0.35, 0.25), "company": (0.25, -0.35)}
MATRIX_NAMES = ("W_Q", "W_K", "W_V")
FFN_NAMES = ("W1", "W2")

session = st.session_state
link.init_params(PARAMS)
session.setdefault("calc_version", 0)
session.setdefault("calc_warm_version", 0)
session.setdefault("calc_warm_base", pd.DataFrame(WARMUP_ROWS))
session.setdefault("calc_memory", {"emb": {}, "pos": {}, "W": {}})


def num(x: float) -> str:
    return ta.format_number(x)


def vec(v) -> str:
    return ta.format_vector(v)


def table(M: np.ndarray, rows, cols):
    """A matrix as strings for st.table (masked cells read 'masked', never inf), made once per numbers and labels."""
    M = np.atleast_2d(np.asarray(M, dtype=float))
    return cache.frame(
        "calc_table",
        (M.shape, M.tobytes(), tuple(rows), tuple(cols)),
        lambda: pd.DataFrame([[num(x) for x in r] for r in M], index=list(rows), columns=list(cols)),
    )


def inputs_key(inputs: ta.ToyInputs) -> tuple:
    """What a ToyInputs holds, as a cache key: its tokens and its arrays' shapes and bytes."""
    arrays = (inputs.embeddings, inputs.positions, inputs.W_q, inputs.W_k, inputs.W_v, inputs.W1, inputs.W2)
    return (inputs.tokens, *((None if x is None else (x.shape, np.asarray(x, dtype=float).tobytes())) for x in arrays))


def cells(M, rows, cols) -> pd.DataFrame:
    """A matrix as editable text cells (10 significant digits, so remembered values keep their precision)."""
    return pd.DataFrame([[f"{float(x) + 0.0:.10g}" for x in r] for r in M], index=list(rows), columns=list(cols))


def fit(values, default: list[float], d: int) -> list[float]:
    """Remembered values cut or padded (from `default`) to width d."""
    values = list(values or [])[:d]
    return [*values, *default[len(values):]]


def square(M: np.ndarray | None, d: int) -> np.ndarray:
    """A remembered (k, k) matrix in the top-left corner of the d × d identity."""
    out = np.eye(d)
    if M is not None:
        k = min(d, M.shape[0])
        out[:k, :k] = M[:k, :k]
    return out


# --- callbacks ----------------------------------------------------------------------------------------


def reset_all() -> None:
    for c in PARAMS:
        session[c.key] = c.default
    for k in FOLLOW:
        session.pop(k, None)  # back to the default cell on the next run
    session["calc_memory"] = {"emb": {}, "pos": {}, "W": {}}
    session.pop("calc_valid", None)
    session.pop("calc_struct", None)
    session["calc_version"] += 1


def add_apple() -> None:
    base = session["calc_warm_edited"] if "calc_warm_edited" in session else session["calc_warm_base"]
    keep = base[base["word"] != "apple"]
    session["calc_warm_base"] = pd.concat([keep, pd.DataFrame(APPLE_ROWS)], ignore_index=True)
    session["calc_warm_version"] += 1


def show_apple_answer() -> None:
    add_apple()
    df = session["calc_warm_base"].copy()
    for ctx, (sx, sy) in APPLE_ANSWER.items():
        rows = (df["word"] == "apple") & (df["context"] == ctx)
        df.loc[rows, "shift x"] = sx
        df.loc[rows, "shift y"] = sy
    session["calc_warm_base"] = df


def reset_warmup() -> None:
    session["calc_warm_base"] = pd.DataFrame(WARMUP_ROWS)
    session["calc_warm_version"] += 1


# --- page -----------------------------------------------------------------------------------------------

st.title("Toy attention calculator")
page_intro("calculator")

# ---- 1. warm-up ----------------------------------------------------------------------------------------
st.header("1. Warm-up: a base vector plus a context shift")
page_intro("calculator_warmup", label="About the warm-up", first=False)
warm_edit = st.data_editor(
    session["calc_warm_base"],
    key=f"calc_warm_v{session['calc_warm_version']}",
    num_rows="dynamic",
    hide_index=True,
    column_config={
        "word": st.column_config.TextColumn("word", max_chars=20),
        "context": st.column_config.TextColumn("context", max_chars=20),
        **{c: st.column_config.NumberColumn(c, step=0.05, format="%.2f") for c in
           ("base x", "base y", "shift x", "shift y")},
    },
    width="stretch",
)
session["calc_warm_edited"] = warm_edit
b1, b2, b3 = st.columns(3)
b1.button("Exercise: add “apple”", on_click=add_apple, key="calc_warm_apple", width="stretch")
b2.button("Show one answer", on_click=show_apple_answer, key="calc_warm_answer", width="stretch")
b3.button("Reset the warm-up", on_click=reset_warmup, key="calc_warm_reset", width="stretch")

warm_rows, warm_msgs = [], []
for pos, row in enumerate(warm_edit.to_dict("records")):
    word = "" if pd.isna(row.get("word")) else str(row.get("word")).strip()
    ctx = "" if pd.isna(row.get("context")) else str(row.get("context")).strip()
    if not word:
        continue
    base = [row.get("base x"), row.get("base y")]
    shift = [row.get("shift x"), row.get("shift y")]
    if any(v is None or pd.isna(v) for v in base):
        warm_msgs.append(f"Row {pos + 1} ({md(word)}): type both numbers of the base vector.")
        continue
    if any(v is None or pd.isna(v) for v in shift):
        warm_msgs.append(
            f"Row {pos + 1}: type the shift that a *{md(ctx or '?')}* context gives *{md(word)}* "
            "(two numbers, e.g. 0.3 and −0.2)."
        )
        shift_v = None
    else:
        shift_v = [float(v) for v in shift]
    base_v = [float(v) for v in base]
    result = ta.contextualize(base_v, shift_v) if shift_v is not None else None
    warm_rows.append((word, ctx or "?", base_v, shift_v, result))

warm_chart, warm_text = st.columns([3, 2])
with warm_chart:
    if warm_rows:
        fig_warm = cache.shared_figure(  # once per rows typed
            "calc_warmup",
            tuple((w, c, tuple(b), None if r is None else tuple(r.tolist())) for w, c, b, _, r in warm_rows),
            lambda: warmup_arrows(
                [r[0] for r in warm_rows],
                [r[1] for r in warm_rows],
                np.array([r[2] for r in warm_rows]),
                np.array([r[4] if r[4] is not None else [np.nan, np.nan] for r in warm_rows]),
                references=WARMUP_REFERENCES
                | (APPLE_REFERENCES if any(r[0].lower() == "apple" for r in warm_rows) else {}),
                height=420,
            ),
        )
        chart(fig_warm, key="calc_warm_chart", width="stretch")
    else:
        st.info("Type a word, a context and numbers in the table to draw them.")
with warm_text:
    for m in warm_msgs:
        st.info(m)
    lines = [
        f"- {md(w)} in a {md(c)} context: {vec(b)} + {vec(s)} = **{vec(r)}**"
        for w, c, b, s, r in warm_rows
        if r is not None
    ]
    if lines:
        prose("\n".join(lines))
    prose(caption=True, text=
    "Exercise (lesson 002): add “apple” with shifts for a *fruit* context (towards *pear*) and a *company* "
    "context (towards *laptop*). Grey: base vectors; diamonds: fixed reference words."
    )

# ---- 2. inputs -----------------------------------------------------------------------------------------
st.header("2. Your sentence and its numbers")
c1, c2, c3 = st.columns([3, 1, 2], vertical_alignment="bottom")
tokens_text = c1.text_input(
    "Tokens (2 to 6, separated by spaces)", key="calc_tokens", max_chars=130,
    help="Each token gets a row. A repeated word shares its embedding but not its position.",
)
d = c2.selectbox("Width d", [2, 3, 4], key="calc_d", help="Numbers per vector. The picture needs d = 2.")
c3.button("Reset to the course example", on_click=reset_all, key="calc_reset", width="stretch")

t1, t2, t3 = st.columns(3)
use_pos = t1.toggle("Positions (X = E + P)", key="calc_use_pos")
scale = t2.toggle("÷ √d_k scaling", key="calc_scale")
causal = t3.toggle("Causal mask", key="calc_causal", help="Decoder-style: a token sees only itself and earlier tokens.")
t4, t5 = st.columns([1, 2], vertical_alignment="bottom")
temperature = t4.number_input(
    "Temperature", key="calc_temperature", min_value=0.01, max_value=100.0, step=0.1, format="%.2f",
    help="Divides the scores before softmax: below 1 sharpens, above 1 flattens. 1 = ordinary attention.",
)
use_block = t5.toggle("Residual + LayerNorm + FFN", key="calc_block", help="The rest of an encoder layer (course 3.2).")
link.sync_params(PARAMS)

errors: list[str] = []
try:
    tokens = ta.parse_tokens(tokens_text)
except ta.ToyAttentionError as err:
    errors.append(str(err))
    tokens = session["calc_struct"][0] if "calc_struct" in session else ta.COURSE_TOKENS

struct = (tokens, int(d))
memory = session["calc_memory"]
if session.get("calc_struct") != struct:
    # New words or width: new editors, filled from the last valid numbers (or the defaults).
    if "calc_struct" in session:
        session["calc_version"] += 1
    session["calc_struct"] = struct
    words = list(dict.fromkeys(tokens))
    dims = [f"dim {c + 1}" for c in range(d)]
    in_out = ([f"in {r + 1}" for r in range(d)], [f"out {c + 1}" for c in range(d)])
    bases = {
        "E": cells([fit(memory["emb"].get(w), ta.default_embedding(w, d), d) for w in words], words, dims),
        "P": cells(
            [fit(memory["pos"].get(k), ta.default_position(k, d), d) for k in range(len(tokens))],
            [f"p{k + 1} ({t})" for k, t in enumerate(tokens)],
            dims,
        ),
    }
    for name in MATRIX_NAMES + FFN_NAMES:
        bases[name] = cells(square(memory["W"].get(name), d), *in_out)
    session["calc_bases"] = bases

bases = session["calc_bases"]
ver = session["calc_version"]
words = list(bases["E"].index)
dims = list(bases["E"].columns)
text_cols = {c: st.column_config.TextColumn(c) for c in dims}
w_cols = {c: st.column_config.TextColumn(c) for c in bases["W_Q"].columns}


def editor(name: str, label: str, cols: dict):
    prose(label)
    return st.data_editor(bases[name], key=f"calc_{name}_v{ver}", column_config=cols, width="stretch")


e_col, p_col = st.columns(2) if d < 3 else (st.container(), st.container())
with e_col:
    e_edit = editor("E", "**Word embeddings E** — one row per distinct word", text_cols)
with p_col:
    p_edit = editor("P", "**Position vectors P** — one row per position" + ("" if use_pos else " (switched off)"),
                    text_cols)
with st.expander("Projection matrices W_Q, W_K, W_V (default: identity, the course's Q = K = V = X)"):
    prose(caption=True, text="Q = X·W_Q: row r of W says how input dimension r feeds each output column.")
    w_edits = {}
    for col, name in zip(st.columns(3), MATRIX_NAMES, strict=True):
        with col:
            w_edits[name] = editor(name, f"**{name}**", w_cols)
ffn_edits = {}
if use_block:
    with st.expander("Feed-forward weights W1, W2 (default: identity, so FFN(h) = ReLU(h))"):
        for col, name in zip(st.columns(2), FFN_NAMES, strict=True):
            with col:
                ffn_edits[name] = editor(name, f"**{name}**", w_cols)
prose(caption=True, text=
    "Type numbers such as 0.5, −1e6 or 1/3. New words start from made-up values in {−1, −0.5, 0, 0.5, 1}; "
    "positions continue the course's pattern (0.1 × the binary digits of the position)."
)


def parse_editor(name: str, df: pd.DataFrame) -> np.ndarray | None:
    try:
        return ta.parse_matrix(df.to_numpy(dtype=object).tolist(), name, list(df.index), list(df.columns))
    except ta.ToyAttentionError as err:
        errors.append(str(err))
        return None


E_words = parse_editor("E", e_edit)
P = parse_editor("P", p_edit)
Ws = {name: parse_editor(name, df) for name, df in w_edits.items()}
ffn = {name: parse_editor(name, df) for name, df in ffn_edits.items()}

fresh = None
if not errors and E_words is not None and P is not None and all(v is not None for v in Ws.values()):
    candidate = ta.ToyInputs.from_tables(tokens, words, E_words, P, Ws, ffn)
    try:
        switches = (use_pos, scale, causal, temperature)
        cache.computed(  # the steps, once per numbers and switches (the check: they can be computed)
            "calc_steps",
            (inputs_key(candidate), *switches),
            lambda: candidate.steps(use_positions=use_pos, scale=scale, causal=causal, temperature=temperature),
        )
        fresh = candidate
    except ta.ToyAttentionError as err:
        errors.append(str(err))
    if fresh is not None:
        session["calc_valid"] = fresh
        memory["emb"].update({w: list(E_words[i]) for i, w in enumerate(words)})
        memory["pos"].update({k: list(P[k]) for k in range(len(tokens))})
        memory["W"].update({**Ws, **fresh.ffn})

for msg in errors:
    st.error(msg)

if "calc_valid" not in session:  # a bad cell before anything was valid: fall back to the course example
    session["calc_valid"] = ta.ToyInputs.course_example()
inputs: ta.ToyInputs = session["calc_valid"]
if errors:
    st.warning("The steps below still show the last valid numbers. Fix the cell above and they update.")

# ---- 3. the steps --------------------------------------------------------------------------------------
tokens = inputs.tokens
labels = ta.unique_labels(tokens)
n = len(tokens)
E_rows, P_rows = inputs.embeddings, inputs.positions
X = inputs.x(use_positions=use_pos)
view = (inputs_key(inputs), use_pos, scale, causal, temperature)  # what every step below is made from
try:
    steps = cache.computed(
        "calc_steps", view, lambda: inputs.steps(use_positions=use_pos, scale=scale, causal=causal, temperature=temperature)
    )
except ta.ToyAttentionError as err:  # e.g. a toggle pushes the last valid numbers out of range
    st.error(f"{err} Change the setting back, or press “Reset to the course example”.")
    st.stop()
d_now = X.shape[1]
dcols = [f"dim {c + 1}" for c in range(d_now)]

st.header("3. Step by step")
link.init_params([link.Param(k, "int", min(v, n - 1), lo=0, hi=n - 1, in_url=False) for k, v in FOLLOW.items()])
s1, s2, _ = st.columns([1, 1, 2])
i = s1.selectbox("Follow the query (row)", range(n), format_func=lambda k: labels[k], key="calc_row")
j = s2.selectbox("… and the key (column)", range(n), format_func=lambda k: labels[k], key="calc_col")
a, b = md(labels[i]), md(labels[j])
work = cache.computed(
    "calc_worked",
    (*view, i, j),
    lambda: ta.worked_cell(steps, labels, i, j, embeddings=E_rows, positions=P_rows if use_pos else None),
)
prose(caption=True, text=f"Each step shows its whole matrix and, below it, the arithmetic for row {a} / column {b}, "
           "rounded to 4 decimals.")


def step(title: str, latex: str, text: str, frame: pd.DataFrame | None, worked: str | None) -> None:
    st.subheader(title)
    st.latex(latex)
    # side by side while the tables are small; stacked (full width) for 5 or more tokens
    left, right = st.columns([2, 3]) if n < 5 else (st.container(), st.container())
    with left:
        if frame is not None:
            st.table(frame, hide_index=False)
    with right:
        prose(text)
        if worked:
            st.code(worked, language="text", wrap_lines=True)


# Step 1: X
if use_pos:
    x_text = (
        "Each row is one token's starting vector: the embedding of its word plus the vector of its position. "
        f"{a} starts at {vec(X[i])}. The same word at another position would start elsewhere: position "
        "vectors are all the model knows of word order."
    )
else:
    x_text = (
        "Positions are switched off, so X = E: a word has the same row wherever it stands, and attention "
        "alone cannot tell “The cat sat” from “sat cat The”."
    )
step("Step 1 · Input X = E + P" if use_pos else "Step 1 · Input X = E", r"X = E + P" if use_pos else r"X = E",
     x_text, table(X, labels, dcols), work["X"])

# Step 2: Q, K, V
facts = cache.computed("calc_facts", (*view, i), lambda: ta.step_facts(steps, i))
identity = facts.identity_projections
if identity:
    qkv_text = (
        "All three projections are the identity (the course's simplification), so Q = K = V = X. In a trained "
        "model they are learned and shared by every token: rows differ only because the tokens' X rows differ."
    )
else:
    qkv_text = (
        "Your projections change the vectors before they are compared. "
        + ("W_Q = W_K, so scores stay symmetric. " if facts.same_query_key else
           "W_Q ≠ W_K: what a token asks for (query) now differs from what it offers (key), so a token can "
           "match another strongly without the reverse being true. ")
        + "The values V are what gets mixed in the end."
    )
st.subheader("Step 2 · Queries, keys, values")
st.latex(r"Q = X W_Q,\quad K = X W_K,\quad V = X W_V")
qc = st.columns(3)
for col, (name, M) in zip(qc, (("Q", steps.Q), ("K", steps.K), ("V", steps.V)), strict=True):
    with col:
        prose(f"**{name}**")
        st.table(table(M, labels, [f"{name.lower()}{c + 1}" for c in range(M.shape[1])]), hide_index=False)
prose(qkv_text)
st.code(work["QKV"], language="text", wrap_lines=True)

# Step 3: scores
raw = steps.raw_scores
big, row_best = facts.largest_score, facts.row_best
s_text = (
    f"S[i, j] = Q[i] · K[j] is large when token i's query points the same way as token j's key and both "
    f"are long. In row {a} the largest score is {num(raw[i, row_best])}, with "
    + " and ".join(md(labels[j]) for j in facts.row_ties)
    + (" (a tie)" if len(facts.row_ties) > 1 else "")
    + ". The "
    f"largest in the whole table is S[{md(labels[big[0]])}, {md(labels[big[1]])}] = {num(raw[big])}."
    + (" With Q = K the table is symmetric: S[i, j] = S[j, i]." if facts.symmetric_scores else "")
)
step("Step 3 · Scores S = QKᵀ", r"S = Q K^\top,\qquad S_{ij} = \sum_c Q_{ic} K_{jc}", s_text,
     table(raw, labels, labels), work["scores"])

# Step 4: scale and mask
if scale or causal:
    parts = []
    if scale:
        parts.append(
            f"Dividing by √d_k = √{facts.d_k} = {num(facts.sqrt_d_k)} keeps scores from growing with the width of the "
            "vectors (BERT-base: d_k = 64, so ÷ 8). Smaller scores make the weights more even."
        )
    if causal:
        parts.append(
            "The causal mask hides every key after the query (shown as “masked”, i.e. −∞, so its weight "
            "becomes 0): token i sees only tokens 1 … i, as in a GPT-style decoder. An encoder like BERT has "
            "no mask: every token sees the whole sentence, left and right."
        )
    latex = (r"S \leftarrow \frac{QK^\top}{\sqrt{d_k}}" if scale else r"S \leftarrow QK^\top") + (
        r",\quad S_{ij} = -\infty \text{ for } j > i" if causal else "")
    step("Step 4 · Scale and mask", latex, " ".join(parts), table(steps.scores, labels, labels), work["scores"])
else:
    st.subheader("Step 4 · Scale and mask (both off)")
    prose(
        "Scaling and mask are off, as in the course's example. BERT-base divides by √64 = 8, the app's default "
        f"model by √{DEFAULT_HEAD_WIDTH} ≈ {DEFAULT_HEAD_WIDTH ** 0.5:.2f}; a decoder masks the future. Switch them on above."
    )

# Step 5: exp
ratio = facts.exp_ratio
exp_text = (
    "exp makes every score positive and stretches the differences: a score larger by 1 becomes e ≈ 2.72 "
    f"times larger. In row {a} the biggest exp is "
    + (f"{num(ratio)} times the smallest." if np.isfinite(ratio) and ratio < 1e6 else "vastly larger than the smallest.")
)
if temperature != 1.0:
    exp_text += (
        f" The temperature {num(temperature)} divides each score first: "
        + ("below 1 it sharpens the contrast." if temperature < 1 else "above 1 it flattens the contrast.")
    )
if (steps.exp_shift != 0).any():
    exp_text += (
        " Some rows hold huge scores whose exp would overflow, so their largest value is subtracted first "
        "(the softmax does not change, because the common factor cancels)."
    )
exp_latex = r"\exp(S_{ij})" if temperature == 1.0 else r"\exp(S_{ij} / T)"
step("Step 5 · Exponentiate", exp_latex, exp_text, table(steps.exp_scores, labels, labels), work["exp"])

# Step 6: row sums
step(
    "Step 6 · Row sums",
    r"Z_i = \sum_j \exp(S_{ij})" if temperature == 1.0 else r"Z_i = \sum_j \exp(S_{ij}/T)",
    f"Each row's sum is the softmax's denominator for that token: row {a} sums to {num(steps.row_sums[i])}.",
    table(steps.row_sums[:, None], labels, ["row sum"]),
    work["row_sum"],
)

# Step 7: weights
st.subheader("Step 7 · Softmax weights")
st.latex(
    (r"\alpha_{ij} = \frac{\exp(S_{ij})}{Z_i}" if temperature == 1.0 else r"\alpha_{ij} = \frac{\exp(S_{ij}/T)}{Z_i}")
    + r",\qquad \sum_j \alpha_{ij} = 1"
)
wl, wr = st.columns([2, 3]) if n < 5 else (st.container(), st.container())
with wl:
    fig_w = cache.shared_figure(
        "calc_weights",
        view,
        lambda: attention_heatmap(steps.weights, labels, title="Attention weights (rows sum to 1)", height=380),
    )
    chart(fig_w, key="calc_weights_chart", width="stretch")
with wr:
    row_txt = ", ".join(f"{md(labels[k])} {num(steps.weights[i, k])}" for k in range(n))
    prose(
        "Dividing each exp by its row sum turns the scores into mixing weights: all between 0 and 1, each row "
        f"summing to 1. Row {a}: {row_txt}."
    )
    st.code(work["weights"], language="text", wrap_lines=True)

# Step 8: output
v_names = [f"v{c + 1}" for c in range(steps.V.shape[1])]
step(
    "Step 8 · Output = weights · V",
    r"\text{out}_i = \sum_j \alpha_{ij} V_j",
    "Each output row is a weighted average of the value rows, so it lies between them: attention mixes, it "
    f"cannot extrapolate. {a} goes from {vec(X[i])} to {vec(steps.output[i])}.",
    table(steps.output, labels, v_names),
    work["output"],
)

# ---- 4. in words and in the plane ----------------------------------------------------------------------
st.header("4. What happened, in words and in the plane")
summaries = cache.computed("calc_summaries", view, lambda: ta.token_summaries(steps, labels))
lines = []
for s in summaries:
    tops = " and ".join("itself" if t == s.label else f"**{md(t)}**" for t in s.top_labels)
    each = " each" if len(s.top_labels) > 1 else ""
    own = "" if s.label in s.top_labels else f", {num(s.self_weight)} to itself"
    moved = f" (moved {num(s.moved)})" if np.isfinite(s.moved) else ""
    lines.append(
        f"- **{md(s.label)}** attends most to {tops} ({num(s.top_weight)}{each}){own}; "
        f"its vector goes {vec(s.before)} → {vec(s.after)}{moved}."
    )
prose("\n".join(lines))

block = None
if use_block:
    try:
        block = cache.computed("calc_block", view, lambda: inputs.block(steps.output, use_positions=use_pos))
    except ta.ToyAttentionError as err:
        st.error(str(err))

pic_l, pic_r = st.columns([3, 2])
with pic_l:
    outputs, out_name = steps.output, "after attention"
    if block is not None:
        choice = st.radio("Draw", ["after attention", "after the whole block"], key="calc_picture", horizontal=True)
        if choice == "after the whole block":
            outputs, out_name = block.output, "after the block"
    if outputs.shape[1] >= 2 and d_now >= 2:
        fig = cache.shared_figure(
            "calc_arrows",
            (*view, out_name),
            lambda: vector_arrows(X, outputs, labels, input_name="input X", output_name=out_name, height=560),
        )
        chart(fig, key="calc_arrows_chart", width="stretch", download="context_lens_attention_by_hand")
    else:
        st.info("The picture needs at least two numbers per vector; give W_V two or more columns.")
with pic_r:
    movers = [s for s in summaries if np.isfinite(s.moved)]
    most = max(movers, key=lambda s: s.moved) if movers else None
    least = min(movers, key=lambda s: s.moved) if movers else None
    prose(
        "Thin arrows: the inputs X; thick: the outputs (′); dotted: how far attention pulled each token towards "
        "the ones it attends to."
        + (
            f" Here the token **{md(most.label)}** moved most ({num(most.moved)}) and **{md(least.label)}** least "
            f"({num(least.moved)})."
            if most is not None and least is not None and most.label != least.label
            else ""
        )
    )
    if d_now > 2:
        prose(caption=True, text=f"d = {d_now}: the picture shows dimensions 1 and 2 only; the tables have all of them.")
    if not identity:
        prose(caption=True, text="With W_V ≠ I the outputs blend V's rows, not X's, so they can leave the region of the inputs.")

# ---- 5. the rest of the layer --------------------------------------------------------------------------
if block is not None:
    st.header("5. Residual, LayerNorm and a tiny feed-forward network")
    st.latex(
        r"H_1 = \mathrm{LN}(X + \text{out}),\quad \mathrm{FFN}(h) = \mathrm{ReLU}(h W_1) W_2,"
        r"\quad H = \mathrm{LN}(H_1 + \mathrm{FFN}(H_1))"
    )
    msg = (
        "Course section 3.2: the layer adds the attention output back to its input (the residual), normalises "
        "each row to mean 0 and variance 1 (LayerNorm, here without the learned gain and bias), passes it "
        "through a small network applied to each token separately, and normalises again. BERT uses GELU "
        "instead of ReLU and a 4× wider hidden layer."
    )
    if d_now == 2:
        msg += (
            " In d = 2 LayerNorm keeps only the sign of x₁ − x₂: every row becomes about [1, −1], [−1, 1] or "
            "[0, 0] — a reminder that LayerNorm needs many dimensions to leave room for meaning."
        )
    prose(msg)
    bcols = st.columns(4)
    for col, (name, M) in zip(
        bcols,
        (("X + out", block.residual), ("H₁ = LN(·)", block.norm1), ("FFN(H₁)", block.ffn), ("H", block.output)),
        strict=True,
    ):
        with col:
            prose(f"**{name}**")
            st.table(table(M, labels, dcols), hide_index=False)
