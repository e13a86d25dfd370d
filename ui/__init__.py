"""The Streamlit edge. Importing any of it registers the weights variants built above the model layer, so every
model key a link, the sidebar or a cache reads resolves (lib.models.keys knows only its own controls)."""

import lib.finetune.model  # noqa: F401  (registers "<id>#finetuned-<recipe>")
