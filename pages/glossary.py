"""Glossary: each term the pages use, explained in a few lines (assets/glossary.md); the pages link here."""

import streamlit as st

from lib.teaching.glossary import GLOSSARY_PATH, parse_glossary
from ui import link

link.shell_guard()

head, terms = parse_glossary(GLOSSARY_PATH.read_text(encoding="utf-8"))
st.title("Glossary")
st.markdown(head.split("\n", 1)[1].split("Format for editors")[0].strip())
for term in terms:
    st.subheader(term.name, anchor=term.anchor)
    st.markdown(term.text)
