"""Fine-tune: train on the labelled set and watch what training does to each layer.

The set is split into training and held-out sentences (lib.finetune.data), a method and its settings make a
recipe (lib.finetune.recipe), and the run goes through ui.cache.finetune_run: once per process and recipe,
shared by every session, in a slot of the work queue, stopped when nobody follows it any more. A run starts only
with a click on Train (or a remedy, or the seeds button) in this session: a link that carries ``ft_train=1``
shows its recipe, what training it costs and the button, and shows the run at once only when it is finished or
under way already (or, on a local copy, when it is estimated at a few seconds: lib.serving.hosting). The results
are the run's own numbers (lib.finetune.compare, lib.finetune.verdict); the page computes none.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from lib.charts.finetune import (
    before_after_chart,
    layer_change_chart,
    mix_weights_chart,
    seed_chart,
    training_curves,
)
from lib.charts.projection import projection_scatter
from lib.finetune.data import TASKS, FineTuneError
from lib.finetune.methods import METHODS
from lib.finetune.recipe import DEFAULT_HEAD_LR, DEFAULT_LR, MAX_EPOCHS, MAX_RANK, MAX_SEED, Recipe
from lib.finetune.seeds import DEFAULT_SEEDS
from lib.models.keys import parse_model_key
from lib.serving.work import WorkRefused
from ui import cache, link, session
from ui.analysis import usable
from ui.widgets import chart, escape_md, prose, set_state
from ui.work import about

HELDOUT = 33  # percent of each sense held out (a third: bank's 12 sentences -> 8 train, 4 held out)
SPLIT_SEED = 0
PATIENCE = 3  # early stopping: epochs without a new best held-out loss
METHOD_NAMES = {
    "head": "head on one layer (frozen model)",
    "mix": "ELMo's layer mix (frozen model)",
    "top": "unfreeze the top K layers",
    "lora": "LoRA adapters",
    "full": "every weight",
}
TASK_NAMES = {"token": "the word's sense (token)", "cls": "the sentence's label ([CLS])", "mean": "the sentence's label (mean)"}


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def _params(L: int) -> list[link.Param]:
    return [
        link.Param("ft_task", "choice", "token", choices=tuple(TASKS)),
        link.Param("ft_method", "choice", "top", choices=tuple(METHODS)),
        link.Param("ft_k", "int", 2, lo=1, hi=L),
        link.Param("ft_layer", "int", L, lo=0, hi=L),
        link.Param("ft_rank", "int", 8, lo=1, hi=MAX_RANK),
        link.Param("ft_lr", "float", DEFAULT_LR["top"], lo=1e-6, hi=0.1),
        link.Param("ft_hlr", "float", DEFAULT_HEAD_LR, lo=1e-5, hi=1.0),
        link.Param("ft_epochs", "int", 20, lo=1, hi=MAX_EPOCHS),
        link.Param("ft_seed", "int", 0, lo=0, hi=MAX_SEED),
        link.Param("ft_early", "bool", False),
        link.Param("ft_train", "bool", False, omit_default=True),
        link.Param("ft_seeds", "bool", False, omit_default=True),
    ]


def _remedy_state(recipe: Recipe) -> dict[str, object]:
    """The widgets' values that run a remedy's recipe (handed to ``set_state``: data, not a page function)."""
    m = recipe.parsed
    out: dict[str, object] = {"ft_method": m.kind, "ft_hlr": recipe.head_lr, "ft_epochs": recipe.epochs,
                              "ft_early": bool(recipe.patience), "ft_train": True, "ft_seeds": False,
                              "_ft_clicked": True}  # fmt: skip
    if m.kind == "top":
        out["ft_k"] = m.k
    if m.kind == "head":
        out["ft_layer"] = recipe.layer
    if m.kind == "lora":
        out["ft_rank"] = recipe.rank
    if m.trains_model:
        out["ft_lr"] = recipe.lr
    out["_ft_kind"] = m.kind  # the rate given here is kept, not reset to the method's default
    return out


def _usable_set(base: str):
    """The session's labelled set, its sentences without the target left out (and said)."""
    ss = session.sentence_set()
    if len(ss) == 0:
        st.info("There are no usable sentences yet. Pick a preset in the sidebar, or type “sense | sentence” lines.")
        st.stop()
    return usable(base, ss)[0]


def _split_tables(split) -> None:
    listing = split.listing()
    c1, c2 = st.columns(2)
    for col, part, name in ((c1, "train", "Training"), (c2, "heldout", "Held out")):
        rows = listing[part]
        col.markdown(f"**{name}: {len(rows)} sentences**")
        col.dataframe(
            pd.DataFrame(rows, columns=["sense", "sentence"]),
            hide_index=True,
            width="stretch",
            height=min(330, 36 * len(rows) + 40),
        )


def _rate(col, label: str, key: str, lo: float, hi: float, step: float, help: str) -> None:
    """A learning-rate box, shown as a power of ten."""
    col.number_input(label, min_value=lo, max_value=hi, key=key, format="%.0e", step=step, help=help)


def _settings(L: int, kind: str) -> None:
    c1, c2 = st.columns(2)
    if kind == "top":
        c1.slider("K: layers unfrozen (from the top)", 1, L, key="ft_k")
    elif kind == "head":
        c1.slider("Layer the head reads (0 = embeddings)", 0, L, key="ft_layer")
    elif kind == "lora":
        c1.slider("LoRA rank r", 1, MAX_RANK, key="ft_rank")
    if kind in ("top", "lora", "full"):
        _rate(c2, "Learning rate of the model", "ft_lr", 1e-6, 0.1, 1e-5,
              "The course: 1e-5 to 5e-5 for pretrained weights; LoRA's adapters start at zero and take 1e-4 to 5e-4.")  # fmt: skip
    c3, c4, c5 = st.columns(3)
    c3.number_input("Epochs", min_value=1, max_value=MAX_EPOCHS, step=1, key="ft_epochs")
    c4.number_input("Seed", min_value=0, max_value=MAX_SEED, step=1, key="ft_seed",
                    help="Draws the head's start and the order of the batches.")  # fmt: skip
    _rate(c5, "Head's learning rate", "ft_hlr", 1e-5, 1.0, 1e-4,
          "The head starts from nothing, so it takes larger steps than the pretrained weights.")  # fmt: skip
    st.toggle(
        f"Early stopping: stop after {PATIENCE} epochs without a better held-out loss, keep the best weights",
        key="ft_early",
    )


def _recipe(split_digest: str, L: int) -> Recipe:
    kind = st.session_state["ft_method"]
    method = f"top-{st.session_state['ft_k']}" if kind == "top" else kind
    return Recipe.make(
        split_digest,
        method,
        num_layers=L,
        task=st.session_state["ft_task"],
        layer=st.session_state["ft_layer"] if kind == "head" else None,
        rank=st.session_state["ft_rank"] if kind == "lora" else None,
        lr=float(st.session_state["ft_lr"]),
        head_lr=float(st.session_state["ft_hlr"]),
        epochs=int(st.session_state["ft_epochs"]),
        patience=PATIENCE if st.session_state["ft_early"] else 0,
        seed=int(st.session_state["ft_seed"]),
        heldout=HELDOUT,
        split_seed=SPLIT_SEED,
    )


def _armed(flag: str, key: str) -> bool:
    """Whether this session clicked to start the run ``key``: a click sets ``flag`` for the run right after it,
    which arms the recipe computed then; a setting changed since needs a new click."""
    if st.session_state.pop(flag, False):
        st.session_state[flag + "_key"] = key
    return st.session_state.get(flag + "_key") == key


def _cost_text(plan) -> str:
    text = f"Training takes {about(plan.seconds)} of this server's CPU; learners' pages go first."
    return text + (" " + cache.limit_text(plan.limit) if plan.limit is not None else "")


def _run(base: str, prepared, recipe: Recipe, start: bool):
    """Train (or find) the run, with live progress: the epoch, both losses. None when it is not there and
    ``start`` is False; a refusal (over the server's limit) is said, and gives None."""
    bar = st.empty()

    def show(rep) -> None:
        bar.progress(
            rep.epoch / recipe.epochs,
            text=f"Epoch {rep.epoch} of {recipe.epochs}: training loss {rep.train_loss:.3f}, held-out loss "
            f"{rep.heldout_loss:.3f}",
        )

    try:
        result = cache.finetune_run(base, prepared, recipe, show, start=start)
    except WorkRefused as err:
        bar.empty()
        st.warning(escape_md(str(err)))
        return None
    bar.empty()
    return result


def _results(base: str, result, L: int) -> None:
    run, comp, v = result.run, result.comparison, result.verdict
    hist = run.history
    epochs = [e.epoch for e in hist]
    best = run.best_epoch if run.stopped == "early" else None
    st.subheader("Training, epoch by epoch")
    stop = {"early": f" Early stopping ended it after epoch {hist[-1].epoch}; the weights of epoch "
            f"{run.best_epoch} are kept.", "completed": ""}.get(run.stopped, "")  # fmt: skip
    prose(
        f"{run.trained_parameters:,} numbers trained in {result.seconds:.1f} s.{stop} Epoch 0 is the untrained "
        "head."
    )
    c1, c2 = st.columns(2)
    with c1:
        chart(training_curves(epochs, [e.train_loss for e in hist], [e.heldout_loss for e in hist],
                              what="loss", title="Cross-entropy loss", best_epoch=best),  # fmt: skip
              key="ft_loss", name_model=False, share=0.5)  # fmt: skip
    with c2:
        chart(training_curves(epochs, [e.train_acc for e in hist], [e.heldout_acc for e in hist],
                              what="accuracy", title="Accuracy", chance=v.chance, best_epoch=best),  # fmt: skip
              key="ft_acc", name_model=False, share=0.5)  # fmt: skip

    st.subheader("What it says")
    box = st.warning if v.kind in ("memorised", "overfit", "underfit") else st.success
    box(escape_md(v.text))
    fixes = [r for r in v.remedies if r.recipe is not None]
    if fixes:
        cols = st.columns(len(fixes))
        for col, r in zip(cols, fixes, strict=True):
            col.button(r.label.capitalize(), key=f"ft_fix_{r.label}", help=r.why, on_click=set_state,
                       kwargs=_remedy_state(r.recipe), width="stretch")  # fmt: skip
    for r in v.remedies:
        if r.recipe is None:
            prose(f"Or: {r.why}", caption=True)

    if run.mix is not None:
        st.subheader("Which layers the task reads")
        chart(mix_weights_chart(run.mix, run.gamma, title="Learned layer weights s_j"), key="ft_mix",
              name_model=False)  # fmt: skip

    if comp is None:
        return
    st.subheader("Pretrained vs fine-tuned, layer by layer")
    if not result.recipe.parsed.trains_model:
        prose(
            "The model itself did not change: this method trains only what sits on top of it, so every layer's "
            "weights and vectors are the pretrained ones. Unfreeze layers, or add LoRA, to see layers move."
        )
        return
    moved = ["embeddings" if i == 0 else f"L{i}" for i in range(L + 1) if comp.weight_change[i] > 0]
    frozen = (
        f" Below {moved[0]} the vectors are the pretrained ones too (CKA 1)."
        if moved and result.recipe.parsed.kind == "top"
        else ""
    )
    prose(
        f"Weights changed in: {', '.join(moved) or 'no layer (only the head trained)'}; every other layer's weights "
        f"are exactly the pretrained ones (weight change 0).{frozen}"
    )
    chart(layer_change_chart(comp.cka, comp.weight_change, title="How far each layer moved"), key="ft_cka",
          name_model=False)  # fmt: skip
    c1, c2 = st.columns(2)
    with c1:
        chart(before_after_chart(comp.readout_before, comp.readout_after, title="Held-out nearest-sense readout",
                                 what="accuracy", percent=True, chance=v.chance),  # fmt: skip
              key="ft_sep", name_model=False, share=0.5)  # fmt: skip
    with c2:
        chart(before_after_chart(comp.anisotropy_before, comp.anisotropy_after, title="Anisotropy",
                                 what="mean cosine"),  # fmt: skip
              key="ft_aniso", name_model=False, share=0.5)  # fmt: skip
    if comp.gap_before is not None:
        chart(before_after_chart(comp.gap_before, comp.gap_after, title="Same minus different sense (held out)",
                                 what="cosine gap"),  # fmt: skip
              key="ft_gap", name_model=False)  # fmt: skip
    _projection(result, L)


def _projection(result, L: int) -> None:
    split, comp = result.split, result.comparison
    hover = list(split.sentences)  # escaped by the chart builder
    text = [("T" if i in split.train else "H") + str(i + 1) for i in range(len(split.sentences))]
    prose("**The top layer's vectors, pretrained and fine-tuned (PCA; T = training, H = held out)**")
    c1, c2 = st.columns(2)
    for col, name, vec in ((c1, "pretrained", comp.vectors_before), (c2, "fine-tuned", comp.vectors_after)):
        proj = cache.projection(vec[:, L], "pca", 2)
        with col:
            chart(projection_scatter(proj.coords, split.senses, hover, text, title=name, equal_axes=False),
                  key=f"ft_proj_{name}", name_model=False, share=0.5)  # fmt: skip


def _seeds(base: str, prepared, recipe: Recipe) -> None:
    st.subheader("The same run under three seeds")
    others = [s for s in DEFAULT_SEEDS if s != recipe.seed]
    armed = _armed("_ft_seeds_clicked", recipe.key)
    if not st.session_state.get("ft_seeds") or not armed:
        plan = cache.finetune_plan(base, prepared, recipe, runs=len(others))
        st.button(f"Train under seeds {', '.join(map(str, DEFAULT_SEEDS))}", key="ft_seeds_go",
                  on_click=set_state, kwargs={"ft_seeds": True, "_ft_seeds_clicked": True},
                  disabled=plan.refusal is not None)  # fmt: skip
        prose("On a dozen sentences the result swings with the seed; one run is an anecdote. "
              + (escape_md(plan.refusal) if plan.refusal else _cost_text(plan)), caption=True)  # fmt: skip
        return
    bar = st.empty()

    def show(seed, rep) -> None:
        bar.progress(rep.epoch / recipe.epochs, text=f"Seed {seed}: epoch {rep.epoch} of {recipe.epochs}")

    try:
        spread = cache.finetune_seeds(base, prepared, recipe, DEFAULT_SEEDS, show)
    except WorkRefused as err:
        bar.empty()
        st.warning(escape_md(str(err)))
        return
    bar.empty()
    prose(escape_md(spread.text()[0].upper() + spread.text()[1:]) + ".")
    chart(seed_chart(spread.seeds, spread.train_acc, spread.heldout_acc, title="Accuracy by seed"),
          key="ft_seed_chart", name_model=False)  # fmt: skip


def main() -> None:
    st.title("Fine-tune it yourself")
    model = session.model_name()
    key = parse_model_key(model)
    base = key.base  # fine-tuning starts from the trained weights of the model in use
    enc = cache.encoder(base)
    if enc.family == "decoder":
        prose(
            "Fine-tuning works on encoders so far: the training loop and the fine-tuned copy know a BERT-style "
            "model's layers, not yet a decoder's (its bfloat16 weights, rotary positions and causal mask). "
            "Choose the default model in the sidebar's Model panel to fine-tune."
        )
        return
    L = enc.num_layers
    params = _params(L)
    link.init_params(params)
    prose(
        "Train the model on your labelled sentences and watch what changes. A third of each sense is held out: "
        "the model never trains on it, so it tells learning from memorising."
    )
    if key.weights not in ("trained", "finetuned"):
        prose(f"The {key.weights} control is not fine-tuned: the runs start from the trained weights.", caption=True)
    ss = _usable_set(base)
    st.radio("Task: predict…", list(TASKS), key="ft_task", format_func=TASK_NAMES.get, horizontal=True)
    try:
        prepared = cache.finetune_prepared(
            base, ss.target, ss.sentences, ss.senses, st.session_state["ft_task"], HELDOUT, SPLIT_SEED
        )
    except FineTuneError as err:
        st.error(escape_md(str(err)))
        prose(
            "Fine-tuning needs at least two senses, each with at least two sentences, written as “sense | "
            "sentence” lines (the presets are); the class board's accepted sentences come here through its "
            "“Open these sentences on every page” button.",
            caption=True,
        )
        link.sync_params(params)
        return
    split = prepared.split
    with st.expander(f"The split: {len(split.train)} training, {len(split.heldout)} held-out sentences"):
        _split_tables(split)

    st.radio("How to adapt", list(METHODS), key="ft_method", format_func=METHOD_NAMES.get)
    kind = st.session_state["ft_method"]
    before = st.session_state.get("_ft_kind")
    if before is not None and before != kind and DEFAULT_LR.get(kind):  # a new method starts at its own rate
        st.session_state["ft_lr"] = DEFAULT_LR[kind]
    st.session_state["_ft_kind"] = kind
    prose(METHODS[kind], caption=True)
    _settings(L, kind)
    try:
        recipe = _recipe(split.digest, L)
    except FineTuneError as err:
        st.error(escape_md(str(err)))
        link.sync_params(params)
        return
    name = recipe.describe(len(split.train), split.target)
    plan = cache.finetune_plan(base, prepared, recipe)
    refused = plan.refusal is not None and not plan.free
    armed = _armed("_ft_clicked", recipe.key)
    start = armed or plan.starts_by_itself  # a link alone never starts a run on a hosted copy
    c1, c2 = st.columns(2)
    c1.button("Train", key="ft_go", type="primary", on_click=set_state, icon=":material/play_arrow:",
              kwargs={"ft_train": True, "ft_seeds": False, "_ft_stopped": False, "_ft_clicked": True},
              width="stretch", disabled=refused)  # fmt: skip
    stop_box = c2.empty()  # Stop while the run trains, then Clear once its results are drawn
    train = bool(st.session_state.get("ft_train"))
    if train and (start or plan.state == "live"):
        stop_box.button("Stop", key="ft_stop", on_click=set_state, icon=":material/stop:", width="stretch",
                        kwargs={"ft_train": False, "ft_seeds": False, "_ft_stopped": True},
                        help="Stops at the next batch. Changing a setting or leaving the page stops it too.")  # fmt: skip
    if refused:
        st.warning(escape_md(plan.refusal))
    if not train or refused or not (start or plan.free):
        if st.session_state.pop("_ft_stopped", False):
            st.info("Training stopped. Press Train to start again.")
        if train and not refused:  # a link asked for this run: it waits for the click
            st.info(f"This link asks to train {escape_md(name)}. {_cost_text(plan)} Press Train to start it.")
        elif not refused:
            prose(f"Ready: {escape_md(name)}. {_cost_text(plan)}", caption=True)
        link.sync_params(params)
        return
    result = _run(base, prepared, recipe, start)
    if result is None:
        if not armed:
            st.info(f"{_cost_text(plan)} Press Train to start it.")
        link.sync_params(params)
        return
    stop_box.button("Clear results", key="ft_clear", on_click=set_state, icon=":material/close:", width="stretch",
                    kwargs={"ft_train": False, "ft_seeds": False},
                    help="Hides this run's results. The run is kept: Train shows it again at once.")  # fmt: skip
    _results(base, result, L)
    if result.encoder is not None:
        st.subheader("Use it on every page")
        prose(f"The model {escape_md(name)}: a link to it carries this recipe, not its weights.", caption=True)
        st.button("Open the fine-tuned model on every page", key="ft_use", on_click=session.use_finetuned,
                  args=(recipe.key,), icon=":material/open_in_new:")  # fmt: skip
    _seeds(base, prepared, recipe)
    link.sync_params(params)


main()
