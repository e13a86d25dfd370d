"""The oversized inputs a hosted server must survive, built the same way for the browser test and benchmarks/hosting_bench.py.

Each is something a new user (or a careless link) can send a hosted copy today; each must end in a chart
or a plain message, with the server's memory bounded.
"""

from __future__ import annotations

from urllib.parse import quote

from lib.inputs.sentences import pack_text


def long_sentences_text(n: int = 500, pieces: int = 385) -> str:
    """n sentences of about ``pieces`` + 5 word pieces each ("!" is one word piece): ~200 kB of text."""
    return "\n".join(f"The bank {k} " + "!" * pieces for k in range(n))


def oversized_link() -> str:
    """?target=bank&text=…: 500 sentences of ~390 word pieces packed into a 2.5 kB link (the home page)."""
    return f"/?target=bank&text={quote(pack_text(long_sentences_text()))}"


def own_sense_link(n: int = 500) -> str:
    """500 sentences that each carry their own sense label, on the Layers page."""
    text = "\n".join(f"sense{k} | The bank {k} opened its doors at nine." for k in range(n))
    return f"/layers?target=bank&text={quote(pack_text(text))}"


def home_500_link(n: int = 500) -> str:
    """500 different short sentences on the home page (its heatmap is n × n)."""
    kinds = ("river", "money")
    text = "\n".join(
        f"{kinds[k % 2]} | Sentence {k}: the bank " + ("by the water" if k % 2 else "lent money") + f" {k}."
        for k in range(n)
    )
    return f"/?target=bank&text={quote(pack_text(text))}"


def big_csv(n: int = 500, target_bytes: int = 2_000_000) -> bytes:
    """A CSV of n labelled rows, each sentence long, about ``target_bytes`` in all (under the 2 MB limit)."""
    filler_words = max(1, (target_bytes // n - 40) // 5)
    rows = ["sense,sentence"]
    for k in range(n):
        rows.append(f"s{k % 3},The bank {k} " + "word " * filler_words)
    return ("\n".join(rows) + "\n").encode("utf-8")


def big_corpus(n: int = 1000, target_bytes: int = 2_000_000) -> bytes:
    """A plain-text reference corpus of n long sentences (the Anisotropy page's upload)."""
    words = max(1, (target_bytes // n - 10) // 6)
    return ("\n".join(f"Line {k} " + "river " * words + "ends." for k in range(n)) + "\n").encode("utf-8")


FOLDER_MODEL_LINK = "/?model=/etc"
