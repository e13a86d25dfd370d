"""Fine-tune: train on a labelled set and watch what training does to each layer.

The sentences are the default task's real ones (lib.finetune.default_task: CoarseWSD-20, read by path) or the
sentences in use (the sidebar's preset, one's own, the class board's accepted set). The set is split into
train, validation and test sentences (lib.finetune.data), a method and its settings make a recipe
(lib.finetune.recipe), and the run goes through ui.cache.finetune_run: once per process and recipe, shared by
every session, in a slot of the work queue, stopped when nobody follows it any more. A run starts only with a
click on Train (or a remedy, or the seeds button) in this session: a link that carries ``ft_train=1`` shows its
recipe, what training it costs and the button, and shows the run at once only when it is finished or under way
already (or, on a local copy, when it is estimated at a few seconds: lib.serving.hosting). The results are the
run's own numbers (lib.finetune.compare, lib.finetune.verdict, the frozen head of lib.finetune.baseline); the
page computes none.
"""

from __future__ import annotations

from dataclasses import replace

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
from lib.finetune.cost import trained_numbers
from lib.finetune.data import TASKS, FineTuneError
from lib.finetune.default_task import WORD, task_preset
from lib.finetune.heads import mix_is_uniform
from lib.finetune.methods import METHODS
from lib.finetune.recipe import (
    DEFAULT_EPOCHS,
    DEFAULT_HEAD_LR,
    DEFAULT_HELDOUT,
    DEFAULT_LR,
    MAX_EPOCHS,
    MAX_RANK,
    MAX_SEED,
    Recipe,
)
from lib.finetune.seeds import DEFAULT_SEEDS
from lib.inputs.presets import default_preset as app_default_preset
from lib.inputs.wsd_data import default_root
from lib.models.keys import parse_model_key
from lib.serving.work import WorkRefused
from ui import cache, link, session
from ui.analysis import usable
from ui.widgets import chart, escape_md, prose, set_state
from ui.work import about

SPLIT_SEED = 0
PATIENCE = 3  # early stopping: epochs without a better validation loss
METHOD_NAMES = {
    "head": "head on one layer (frozen model)",
    "mix": "ELMo's layer mix (frozen model)",
    "top": "unfreeze the top K layers",
    "lora": "LoRA adapters",
    "full": "every weight",
}
TASK_NAMES = {"token": "the word's sense (token)", "cls": "the sentence's label ([CLS])", "mean": "the sentence's label (mean)"}
DATA_NAMES = {"wsd": f"real sentences: “{WORD}” from CoarseWSD-20", "set": "the sentences in use (sidebar)"}
# keys a link carried before the page chose its sentences: such a link trained on the sentences in use
_OLD_KEYS = ("ft_task", "ft_method", "ft_k", "ft_layer", "ft_rank", "ft_lr", "ft_hlr", "ft_epochs", "ft_seed",
             "ft_early", "ft_train")  # fmt: skip


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def _params(L: int, data_default: str) -> list[link.Param]:
    return [
        link.Param("ft_data", "choice", data_default, choices=tuple(DATA_NAMES)),
        link.Param("ft_task", "choice", "token", choices=tuple(TASKS)),
        link.Param("ft_method", "choice", "top", choices=tuple(METHODS)),
        link.Param("ft_k", "int", 2, lo=1, hi=L),
        link.Param("ft_layer", "int", L, lo=0, hi=L),
        link.Param("ft_rank", "int", 8, lo=1, hi=MAX_RANK),
        link.Param("ft_lr", "float", DEFAULT_LR["top"], lo=1e-6, hi=0.1),
        link.Param("ft_hlr", "float", DEFAULT_HEAD_LR, lo=1e-5, hi=1.0),
        link.Param("ft_epochs", "int", DEFAULT_EPOCHS, lo=1, hi=MAX_EPOCHS),
        link.Param("ft_seed", "int", 0, lo=0, hi=MAX_SEED),
        link.Param("ft_early", "bool", False),
        link.Param("ft_shuffled", "bool", False, omit_default=True),
        link.Param("ft_train", "bool", False, omit_default=True),
        link.Param("ft_seeds", "bool", False, omit_default=True),
    ]


def _remedy_state(recipe: Recipe) -> dict[str, object]:
    """The widgets' values that run a remedy's recipe (handed to ``set_state``: data, not a page function)."""
    m = recipe.parsed
    out: dict[str, object] = {"ft_method": m.kind, "ft_hlr": recipe.head_lr, "ft_epochs": recipe.epochs,
                              "ft_early": bool(recipe.patience), "ft_shuffled": recipe.shuffled, "ft_train": True,
                              "ft_seeds": False, "_ft_clicked": True}  # fmt: skip
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


def _sentences(base: str):
    """(the labelled set, the data preset's id or "" for the sentences in use): the default task's real
    sentences when chosen and here, else the session's set, without the sentences whose target is unusable."""
    if st.session_state["ft_data"] == "wsd":
        preset = task_preset()
        if preset is not None:
            ss = session.within_budget(preset.sentence_set(), base)[0]
            return usable(base, ss)[0], preset.id
        prose(
            f"The real sentences (CoarseWSD-20) are not on this server: they are read from {default_root()}, which "
            "this copy does not hold. The page uses the sentences in use instead.",
            caption=True,
        )
    ss = session.sentence_set()
    if len(ss) == 0:
        st.info("There are no usable sentences yet. Pick a preset in the sidebar, or type “sense | sentence” lines.")
        st.stop()
    return usable(base, ss)[0], ""


def _split_tables(split) -> None:
    listing = split.listing()
    cols = st.columns(3)
    names = (("train", "Train: fitted to"), ("validation", "Validation: stops, remedies"), ("test", "Test: scored once"))
    for col, (part, name) in zip(cols, names, strict=True):
        rows = listing[part]
        col.markdown(f"**{name} ({len(rows)})**")
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
        f"Early stopping: stop after {PATIENCE} epochs without a better validation loss, keep the best weights",
        key="ft_early",
    )
    st.toggle("Random labels (a control): shuffle the training sentences' senses among them", key="ft_shuffled",
              help="Validation and test keep their true senses. What such a run learns is the training sentences "
              "themselves: what memorising looks like.")  # fmt: skip


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
        heldout=DEFAULT_HELDOUT,
        split_seed=SPLIT_SEED,
        shuffled=bool(st.session_state["ft_shuffled"]),
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
    """Train (or find) the run, with live progress: the epoch, both losses (a bar at once, before the model's
    copy is made and the untrained head scored). None when it is not there and ``start`` is False; a refusal
    (over the server's limit) is said, and gives None."""
    bar = st.empty()
    bar.progress(0.0, text=f"Epoch 0 of {recipe.epochs}: starting")

    def show(rep) -> None:
        bar.progress(
            rep.epoch / recipe.epochs,
            text=f"Epoch {rep.epoch} of {recipe.epochs}: training loss {rep.train_loss:.3f}, validation loss "
            f"{rep.validation_loss:.3f}",
        )

    try:
        result = cache.finetune_run(base, prepared, recipe, show, start=start)
    except WorkRefused as err:
        bar.empty()
        st.warning(escape_md(str(err)))
        return None
    bar.empty()
    return result


def _curves(result) -> None:
    run, v = result.run, result.verdict
    hist = run.history
    epochs = [e.epoch for e in hist]
    best = run.best_epoch if run.stopped == "early" else None
    c1, c2 = st.columns(2)
    with c1:
        chart(training_curves(epochs, [e.train_loss for e in hist], [e.validation_loss for e in hist],
                              what="loss", title="Cross-entropy loss", best_epoch=best),  # fmt: skip
              key="ft_loss", name_model=False, share=0.5)  # fmt: skip
    with c2:
        chart(training_curves(epochs, [e.train_acc for e in hist], [e.validation_acc for e in hist],
                              what="accuracy", title="Accuracy", chance=v.chance, best_epoch=best,
                              test=run.test_acc, test_epoch=run.best_epoch, head_test=v.head_test_acc),  # fmt: skip
              key="ft_acc", name_model=False, share=0.5)  # fmt: skip


def _verdict(result, L: int) -> None:
    run, v = result.run, result.verdict
    st.subheader("What it says")
    box = st.warning if v.kind in ("memorised", "overfit", "underfit") else st.success
    box(escape_md(v.text))
    fixes = [r for r in v.remedies if r.recipe is not None]
    if fixes:
        prose("Chosen from the training and validation numbers; the test score chose nothing.", caption=True)
        cols = st.columns(len(fixes))
        for col, r in zip(cols, fixes, strict=True):
            col.button(r.label.capitalize(), key=f"ft_fix_{r.label}", help=r.why, on_click=set_state,
                       kwargs=_remedy_state(r.recipe), width="stretch")  # fmt: skip
    for r in v.remedies:
        if r.recipe is None:
            prose(f"Or: {r.why}", caption=True)
    if not run.recipe.shuffled:
        control = replace(run.recipe, shuffled=True, patience=0)
        st.button("Random-label control: the same run, training labels shuffled", key="ft_control",
                  on_click=set_state, kwargs=_remedy_state(control), icon=":material/shuffle:",
                  help="What memorising looks like: training accuracy climbs, validation and test stay at chance.")  # fmt: skip
    if run.mix is not None:
        st.subheader("Which layers the task reads")
        chart(mix_weights_chart(run.mix, run.gamma, title="Learned layer weights s_j"), key="ft_mix",
              name_model=False)  # fmt: skip
        lo, hi = float(run.mix.min()), float(run.mix.max())
        if mix_is_uniform(run.mix):
            prose(f"The weights stayed near uniform ({lo:.3f} to {hi:.3f}; uniform is {1 / len(run.mix):.3f}): in "
                  "this run the mix did not single out layers, so the head read about the average of all of them.")  # fmt: skip
        else:
            top = int(run.mix.argmax())
            prose(f"The weights moved from uniform ({1 / len(run.mix):.3f}) to {lo:.3f}–{hi:.3f}: the head "
                  f"reads {'the embeddings' if top == 0 else f'layer {top}'} most.")  # fmt: skip


def _layers(result, L: int) -> None:
    comp, v = result.comparison, result.verdict
    st.subheader("Pretrained vs fine-tuned, layer by layer")
    if not result.recipe.parsed.trains_model:
        prose(
            "The model itself did not change: this method trains only what sits on top of it, so every layer's "
            "weights and vectors are the pretrained ones. Unfreeze layers, or add LoRA, to see layers move."
        )
        return
    names = ["embeddings" if i == 0 else f"L{i}" for i in range(L + 1)]
    moved = _runs([i for i in range(L + 1) if comp.weight_change[i] > 0], names)
    changed = [f"{names[i]} ({comp.cka[i]:.2f})" for i in range(L + 1) if comp.status(i) == "changed"]
    floor = [f"{names[i]} ({comp.cka[i]:.2f})" for i in range(L + 1) if comp.status(i) == "floor"]
    n = len(result.split.sentences)
    text = (f"Weights changed in: {moved or 'no layer'}; every other layer's weights are exactly the "
            f"pretrained ones. CKA compares each layer's vectors of the {n} sentences before and after; the grey "
            f"band is what it reads when the sentences are paired at random (its floor at {n} sentences in "
            f"{result.comparison.vectors_before.shape[2]} dimensions). ")  # fmt: skip
    text += f"Geometry changed (CKA above the band, below {0.99:.2f}): {', '.join(changed) or 'no layer'}."
    if floor:
        text += (f" At the floor, no more alike than a random pairing, so CKA cannot say how far they moved: "
                 f"{', '.join(floor)}.")  # fmt: skip
    undefined = [names[i] for i in range(L + 1) if comp.status(i) == "undefined"]
    if undefined:
        text += (f" CKA is undefined at {', '.join(undefined)}: the vectors there are the same in every "
                 "sentence.")  # fmt: skip
    prose(text)
    chart(layer_change_chart(comp.cka, comp.weight_change, title="How far each layer moved",
                             floor_low=comp.floor_low, floor_high=comp.floor_high),  # fmt: skip
          key="ft_cka", name_model=False)  # fmt: skip
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


def _runs(indices: list[int], names: list[str]) -> str:
    """Layers by name, a run of three or more written as its ends: "L1–L30", "L5, L6"."""
    out, start = [], 0
    while start < len(indices):
        end = start
        while end + 1 < len(indices) and indices[end + 1] == indices[end] + 1:
            end += 1
        if end - start >= 2:
            out.append(f"{names[indices[start]]}–{names[indices[end]]}")
        else:
            out += [names[i] for i in indices[start : end + 1]]
        start = end + 1
    return ", ".join(out)


def _projection(result, L: int) -> None:
    split, comp = result.split, result.comparison
    hover = list(split.sentences)  # escaped by the chart builder
    letter = {"train": "T", "validation": "V", "test": "S"}
    text = [letter[split.part_of(i)] + str(i + 1) for i in range(len(split.sentences))]
    prose("**The top layer's vectors, pretrained and fine-tuned (PCA; T = train, V = validation, S = test)**")
    c1, c2 = st.columns(2)
    for col, name, vec in ((c1, "pretrained", comp.vectors_before), (c2, "fine-tuned", comp.vectors_after)):
        proj = cache.projection(vec[:, L], "pca", 2)
        with col:
            chart(projection_scatter(proj.coords, split.senses, hover, text, title=name, equal_axes=False),
                  key=f"ft_proj_{name}", name_model=False, share=0.5)  # fmt: skip


def _seeds(base: str, prepared, recipe: Recipe, result):
    st.subheader("The same run under three seeds")
    others = [s for s in DEFAULT_SEEDS if s != recipe.seed]
    armed = _armed("_ft_seeds_clicked", recipe.key)
    if not st.session_state.get("ft_seeds") or not armed:
        plan = cache.finetune_plan(base, prepared, recipe, runs=len(others))
        st.button(f"Train under seeds {', '.join(map(str, DEFAULT_SEEDS))}", key="ft_seeds_go",
                  on_click=set_state, kwargs={"ft_seeds": True, "_ft_seeds_clicked": True},
                  disabled=plan.refusal is not None)  # fmt: skip
        prose("The result swings with the seed; one run is an anecdote. The frozen head trains under the same "
              "seeds, so the margin over it is read seed by seed. "
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
    judged = result.with_spread(spread)
    box = st.success if judged.verdict.comparison is not None and judged.verdict.comparison.beats else st.info
    box(escape_md(spread.text()[0].upper() + spread.text()[1:] + ". " + judged.verdict.compared))
    chart(seed_chart(spread.seeds, spread.train_acc, spread.test_acc, title="Accuracy by seed",
                     head_test=spread.head_test_acc),  # fmt: skip
          key="ft_seed_chart", name_model=False)  # fmt: skip


def _use_it(result, recipe: Recipe, preset_id: str) -> None:
    st.subheader("Use it on every page")
    split = result.split
    prose(
        f"The model {escape_md(result.name)}. Every page then leaves out the {len(split.train)} sentences it "
        "was fitted to, so its separation is shown on sentences it never trained on; a link to it carries this "
        "recipe, not its weights.",
        caption=True,
    )
    st.button("Open the fine-tuned model on every page", key="ft_use", on_click=session.use_finetuned,
              args=(recipe.key, preset_id), icon=":material/open_in_new:")  # fmt: skip


def main() -> None:
    st.title("Fine-tune it yourself")
    model = session.model_name()
    key = parse_model_key(model)
    base = key.base  # fine-tuning starts from the trained weights of the model in use
    enc = cache.encoder(base)
    L = enc.num_layers
    # the real sentences by default, unless the learner chose sentences of their own (a preset, their own, the
    # class board's) or this server has no data; a link made before this choice trained on the sentences in use
    chose = st.session_state.get(session.K_PRESET) != app_default_preset().id
    params = _params(L, "set" if chose or task_preset() is None else "wsd")
    if not link.url_has("ft_data") and "ft_data" not in st.session_state and any(link.url_has(k) for k in _OLD_KEYS):
        st.session_state["ft_data"] = "set"
    link.init_params(params)
    prose(
        "Train the model on labelled sentences and watch what changes. Half of each sense trains; a quarter "
        "(validation) decides when to stop and which remedy to try; a quarter (test) is scored once, at the end, "
        "beside the frozen model with a head on the same split."
    )
    if key.weights not in ("trained", "finetuned"):
        prose(f"The {key.weights} control is not fine-tuned: the runs start from the trained weights.", caption=True)
    st.radio("Sentences", list(DATA_NAMES), key="ft_data", format_func=DATA_NAMES.get, horizontal=True)
    ss, preset_id = _sentences(base)
    st.radio("Task: predict…", list(TASKS), key="ft_task", format_func=TASK_NAMES.get, horizontal=True)
    try:
        prepared = cache.finetune_prepared(
            base, ss.target, ss.sentences, ss.senses, st.session_state["ft_task"], DEFAULT_HELDOUT, SPLIT_SEED
        )
    except FineTuneError as err:
        st.error(escape_md(str(err)))
        prose(
            "Fine-tuning needs at least two senses, each with at least three sentences, written as “sense | "
            "sentence” lines (the presets are); the class board's accepted sentences come here through its "
            "“Open these sentences on every page” button.",
            caption=True,
        )
        link.sync_params(params)
        return
    split = prepared.split
    with st.expander(f"The {len(split.sentences)} “{escape_md(split.target)}” sentences: {len(split.train)} train, "
                     f"{len(split.validation)} validation, {len(split.test)} test"):  # fmt: skip
        _split_tables(split)

    st.radio("How to adapt", list(METHODS), key="ft_method", format_func=METHOD_NAMES.get)
    kind = st.session_state["ft_method"]
    before = st.session_state.get("_ft_kind")
    if before is not None and before != kind and DEFAULT_LR.get(kind):  # a new method starts at its own rate
        st.session_state["ft_lr"] = DEFAULT_LR[kind]
    st.session_state["_ft_kind"] = kind
    _settings(L, kind)
    try:
        recipe = _recipe(split.digest, L)
    except FineTuneError as err:
        st.error(escape_md(str(err)))
        link.sync_params(params)
        return
    total = sum(p.numel() for p in enc.model.parameters())
    prose(METHODS[kind] + f" Here it trains {trained_numbers(enc, recipe, len(split.classes)):,} numbers, head "
          f"included, of the model's {total:,}.", caption=True)  # fmt: skip
    name = recipe.describe(len(split.train), split.target, n_set=len(split.sentences))
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
    try:
        result = _run(base, prepared, recipe, start)
    except FineTuneError as err:  # a setting this model cannot train (every weight of a bfloat16 model)
        st.error(escape_md(str(err)))
        link.sync_params(params)
        return
    if result is None:
        if not armed:
            st.info(f"{_cost_text(plan)} Press Train to start it.")
        link.sync_params(params)
        return
    stop_box.button("Clear results", key="ft_clear", on_click=set_state, icon=":material/close:", width="stretch",
                    kwargs={"ft_train": False, "ft_seeds": False},
                    help="Hides this run's results. The run is kept: Train shows it again at once.")  # fmt: skip
    st.subheader("Training, epoch by epoch")
    stop = {"early": f" Early stopping ended it after epoch {result.run.history[-1].epoch}; the weights of epoch "
            f"{result.run.best_epoch} are kept.", "completed": ""}.get(result.run.stopped, "")  # fmt: skip
    prose(f"{result.run.trained_parameters:,} numbers trained in {result.seconds:.1f} s.{stop} Epoch 0 is the "
          "untrained head; the star is the test score, read once with the weights kept.")  # fmt: skip
    _curves(result)
    _verdict(result, L)
    if result.comparison is not None:
        _layers(result, L)
    if result.encoder is not None:
        _use_it(result, recipe, preset_id)
    if result.run.stopped != "cancelled":
        _seeds(base, prepared, recipe, result)
    link.sync_params(params)


main()
