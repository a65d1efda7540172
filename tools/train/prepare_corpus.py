#!/usr/bin/env python3
"""Builds the training corpus from Debian-packaged, permissively licensed text.

Sources (see ../../../shared/spec/corpora.md):
  code    Python 3.11 standard library source, /usr/lib/python3.11/**/*.py   PSF-2.0 (libpython3.11-stdlib)
  pydocs  Python 3.11 documentation sources, _sources/**/*.rst.txt          PSF-2.0 (python3.11-doc, unpacked, not installed)
  austen  Jane Austen's six novels                                         public domain text (r-cran-janeaustenr, MIT)
  moby    Moby Dick (Gutenberg header/footer stripped)                     public domain text (r-cran-tokenizers, MIT)
  web     World English Bible                                              Public Domain (sword-text-web)
  chat    ChatML pairs derived from the train split of code and prose      (inherits the licences above)

Output (default tools/train/data/corpus/): <source>.train.jsonl and <source>.heldout.jsonl, one
document per line ({"id", "text"} or, for chat, {"id", "user", "assistant"}), and manifest.json
with packages, versions, licences and sizes. The split is deterministic (sha1 of the document id):
held-out code files are whole files never seen in training, used for perplexity and acceptance.

Usage: prepare_corpus.py [--out DIR] [--install]   (--install apt-gets the missing packages)
"""

from __future__ import annotations

import argparse
import ast
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
PY_STDLIB = "/usr/lib/python3.11"

PACKAGES = {
    "code": ("libpython3.11-stdlib", "PSF-2.0", "/usr/share/doc/libpython3.11-stdlib/copyright"),
    "pydocs": ("python3.11-doc", "PSF-2.0", "python3.11-doc: /usr/share/doc/python3.11-doc/copyright"),
    "austen": ("r-cran-janeaustenr", "Public domain text (package code MIT)",
               "/usr/share/doc/r-cran-janeaustenr/copyright"),
    "moby": ("r-cran-tokenizers", "Public domain text (Project Gutenberg #2701; package code MIT)",
             "/usr/share/doc/r-cran-tokenizers/copyright"),
    "web": ("sword-text-web", "Public Domain (module conf: DistributionLicense=Public Domain)",
            "/usr/share/sword/mods.d/engWEB2015eb.conf"),
}
APT_NEEDED = ["r-cran-janeaustenr", "r-cran-tokenizers", "sword-text-web", "libsword-utils"]


def sh(cmd, **kw):
    return subprocess.run(cmd, shell=True, check=True, text=True, capture_output=True, **kw).stdout


def pkg_version(pkg):
    try:
        return sh(f"dpkg-query -W -f='${{Version}}' {pkg}").strip()
    except subprocess.CalledProcessError:
        return None


def held_out(doc_id: str, fraction: float) -> bool:
    h = int(hashlib.sha1(doc_id.encode()).hexdigest()[:8], 16)
    return (h % 10000) < fraction * 10000


def clean(text: str) -> str:
    text = text.replace("\ufeff", "").replace("\r\n", "\n").replace("\r", "\n")
    return unicodedata.normalize("NFC", text)


def unwrap_paragraphs(lines):
    """Hard-wrapped book text -> paragraphs separated by blank lines, each on one line."""
    paras, cur = [], []
    for line in lines:
        s = line.strip()
        if not s:
            if cur:
                paras.append(" ".join(cur))
                cur = []
        else:
            cur.append(re.sub(r"\s+", " ", s))
    if cur:
        paras.append(" ".join(cur))
    return paras


def chunk_paragraphs(paras, target_chars=6000):
    """Groups paragraphs into documents of about target_chars."""
    docs, cur, n = [], [], 0
    for p in paras:
        cur.append(p)
        n += len(p) + 2
        if n >= target_chars:
            docs.append("\n\n".join(cur))
            cur, n = [], 0
    if cur:
        docs.append("\n\n".join(cur))
    return docs


# ---------------------------------------------------------------------------------------------
# Sources
# ---------------------------------------------------------------------------------------------

SKIP_CODE = re.compile(r"(^|/)(site-packages|dist-packages|__pycache__)/|^encodings/(?!__init__|aliases)"
                       r"|^pydoc_data/|^lib2to3/tests/data/|^config-3")


def source_code():
    docs = []
    for path in sorted(glob.glob(f"{PY_STDLIB}/**/*.py", recursive=True)):
        rel = os.path.relpath(path, PY_STDLIB)
        if SKIP_CODE.search(rel):
            continue
        if os.path.getsize(path) > 250_000:
            continue
        try:
            text = open(path, encoding="utf-8").read()
        except UnicodeDecodeError:
            continue
        text = clean(text).strip("\n") + "\n"
        if len(text) < 200:
            continue
        docs.append({"id": f"python3.11/{rel}", "text": text})
    return docs


def source_pydocs(cache):
    deb_dir = os.path.join(cache, "deb")
    out_dir = os.path.join(cache, "python3.11-doc")
    if not os.path.isdir(out_dir):
        os.makedirs(deb_dir, exist_ok=True)
        sh("apt-get download python3.11-doc", cwd=deb_dir)
        deb = sorted(glob.glob(os.path.join(deb_dir, "python3.11-doc_*.deb")))[-1]
        sh(f"dpkg -x {deb} {out_dir}.tmp && mv {out_dir}.tmp {out_dir}")
    version = None
    debs = sorted(glob.glob(os.path.join(deb_dir, "python3.11-doc_*.deb")))
    if debs:
        version = os.path.basename(debs[-1]).split("_")[1]
    docs = []
    for path in sorted(glob.glob(f"{out_dir}/usr/share/doc/python3.11/html/_sources/**/*.rst.txt",
                                 recursive=True)):
        rel = os.path.relpath(path, f"{out_dir}/usr/share/doc/python3.11/html/_sources")
        if rel.startswith(("whatsnew/changelog", "license")):
            continue
        text = clean(open(path, encoding="utf-8", errors="replace").read()).strip() + "\n"
        if len(text) < 200:
            continue
        # very long reference pages: split at section boundaries so held-out sampling is finer
        for i, part in enumerate(chunk_paragraphs(text.split("\n\n"), 12000)):
            docs.append({"id": f"python3.11-doc/{rel}#{i}", "text": part.strip() + "\n"})
    return docs, version


def source_austen(cache):
    path = os.path.join(cache, "austen.tsv")
    if not os.path.exists(path):
        sh("Rscript -e 'library(janeaustenr); d <- austen_books(); "
           f"write.table(data.frame(b=as.character(d$book), t=d$text), \"{path}\", sep=\"\\t\", "
           "quote=FALSE, row.names=FALSE, col.names=FALSE)'")
    books = {}
    for line in open(path, encoding="utf-8"):
        b, _, t = line.rstrip("\n").partition("\t")
        books.setdefault(b, []).append(t)
    docs = []
    for b, lines in books.items():
        paras = unwrap_paragraphs(clean("\n".join(lines)).split("\n"))
        for i, d in enumerate(chunk_paragraphs(paras)):
            docs.append({"id": f"austen/{b}#{i}", "text": d + "\n"})
    return docs


def source_moby(cache):
    path = os.path.join(cache, "mobydick.txt")
    if not os.path.exists(path):
        sh(f"Rscript -e 'writeLines(tokenizers::mobydick, \"{path}\")'")
    text = clean(open(path, encoding="utf-8").read())
    start = text.find("*** START OF")
    end = text.find("*** END OF")
    text = text[text.find("\n", start) + 1: end if end > 0 else len(text)]
    end_marker = text.find("End of Project Gutenberg")
    if end_marker > 0:
        text = text[:end_marker]
    paras = unwrap_paragraphs(text.split("\n"))
    # drop the transcriber's notes before the book proper
    for i, p in enumerate(paras):
        if p.startswith("ETYMOLOGY"):
            paras = paras[i:]
            break
    return [{"id": f"moby/{i}", "text": d + "\n"} for i, d in enumerate(chunk_paragraphs(paras))]


def source_web(cache):
    path = os.path.join(cache, "web.imp")
    if not os.path.exists(path):
        sh(f"mod2imp engWEB2015eb > {path}")
    chapters = {}
    order = []
    ref = None
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("$$$"):
            ref = line[3:]
            continue
        if ref is None or not re.match(r"^[1-3]? ?[A-Za-z ]+ \d+:\d+$", ref):
            continue
        book_ch, verse = ref.rsplit(":", 1)
        if verse == "0" or book_ch.endswith(" 0"):
            continue
        # a footnote sits between words without spaces ("God<note>..</note><w>created"): replace
        # it by a space, then drop spaces that end up before punctuation
        t = re.sub(r"<note.*?</note>", " ", line)
        t = re.sub(r"<[^>]+>", "", t)
        t = re.sub(r"\s+", " ", t).strip()
        t = re.sub(r" ([,.;:!?’”)\]])", r"\1", t)
        if not t:
            continue
        if book_ch not in chapters:
            chapters[book_ch] = []
            order.append(book_ch)
        chapters[book_ch].append(t)
    docs = []
    for bc in order:
        verses = chapters[bc]
        # a paragraph every five verses keeps lines a readable length
        paras = [" ".join(verses[i:i + 5]) for i in range(0, len(verses), 5)]
        docs.append({"id": f"web/{bc}", "text": clean(bc + "\n\n" + "\n\n".join(paras)) + "\n"})
    return docs


# ---------------------------------------------------------------------------------------------
# Chat pairs (ChatML is rendered at encode time with the real special tokens)
# ---------------------------------------------------------------------------------------------

def functions_of(source: str):
    """(signature line, full dedented source, first docstring line) of reasonably sized defs."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    lines = source.split("\n")
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if node.decorator_list or node.end_lineno is None:
            continue
        n = node.end_lineno - node.lineno + 1
        if n < 3 or n > 40:
            continue
        body = "\n".join(lines[node.lineno - 1: node.end_lineno])
        body = textwrap.dedent(body).rstrip() + "\n"
        sig = body.split("\n", 1)[0]
        if not sig.rstrip().endswith(":"):
            continue
        doc = ast.get_docstring(node) or ""
        doc = doc.strip().split("\n")[0].strip()
        out.append((sig.rstrip(), body, doc, node.name))
    return out


def build_chat(train_sources, seed_text="mtplx"):
    pairs = []
    for d in train_sources["code"]:
        for k, (sig, body, doc, name) in enumerate(functions_of(d["text"])):
            if name.startswith("__") and name != "__init__":
                continue
            key = f"{d['id']}:{name}:{k}"
            r = int(hashlib.sha1((seed_text + key).encode()).hexdigest()[:8], 16)
            if r % 3 != 0:  # keep a third: enough pairs, no single file dominates
                continue
            if doc and r % 2 == 0 and not name.startswith("_"):
                user = f"Write a Python function `{name}`: {doc}"
            else:
                user = sig
            pairs.append({"id": "chat/" + key, "user": user, "assistant": body})
    for src in ("austen", "moby", "web"):
        for d in train_sources[src]:
            paras = [p for p in d["text"].split("\n\n") if len(p) > 200]
            for k, p in enumerate(paras):
                key = f"{d['id']}:{k}"
                r = int(hashlib.sha1((seed_text + key).encode()).hexdigest()[:8], 16)
                if r % 4 != 0:
                    continue
                m = re.match(r"(.{40,300}?[.!?;:][”\"’]?)\s+(.+)", p, re.S)
                if not m:
                    continue
                first, rest = m.group(1), m.group(2)
                user = first if r % 2 == 0 else f"Continue this text: {first}"
                pairs.append({"id": "chat/" + key, "user": user, "assistant": rest})
    return pairs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "data", "corpus"))
    ap.add_argument("--cache", default=os.path.join(HERE, "data", "raw"))
    ap.add_argument("--install", action="store_true", help="apt-get install the missing packages")
    ap.add_argument("--heldout-code", type=float, default=0.04, help="fraction of code files held out")
    ap.add_argument("--heldout-prose", type=float, default=0.02)
    args = ap.parse_args()

    missing = [p for p in APT_NEEDED if pkg_version(p) is None]
    if missing:
        if not args.install:
            sys.exit(f"missing Debian packages: {' '.join(missing)} (rerun with --install, or apt-get install them)")
        subprocess.run("apt-get update", shell=True, check=True)
        subprocess.run("DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
                       + " ".join(missing), shell=True, check=True)

    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.cache, exist_ok=True)
    sources = {}
    sources["code"] = source_code()
    sources["pydocs"], pydocs_version = source_pydocs(args.cache)
    sources["austen"] = source_austen(args.cache)
    sources["moby"] = source_moby(args.cache)
    sources["web"] = source_web(args.cache)

    manifest = {"sources": {}, "split": {"method": "sha1(doc id) % 10000 < fraction * 10000",
                                         "heldout_code": args.heldout_code,
                                         "heldout_prose": args.heldout_prose}}
    train_sources = {}
    for name, docs in sources.items():
        frac = args.heldout_code if name == "code" else args.heldout_prose
        tr = [d for d in docs if not held_out(d["id"], frac)]
        ho = [d for d in docs if held_out(d["id"], frac)]
        train_sources[name] = tr
        for split, part in (("train", tr), ("heldout", ho)):
            with open(os.path.join(args.out, f"{name}.{split}.jsonl"), "w", encoding="utf-8") as f:
                for d in part:
                    f.write(json.dumps(d, ensure_ascii=False) + "\n")
        pkg, lic, lic_file = PACKAGES[name]
        version = pydocs_version if name == "pydocs" else pkg_version(pkg)
        manifest["sources"][name] = {
            "package": pkg, "version": version, "licence": lic, "licence_file": lic_file,
            "documents": {"train": len(tr), "heldout": len(ho)},
            "bytes": {"train": sum(len(d["text"].encode()) for d in tr),
                      "heldout": sum(len(d["text"].encode()) for d in ho)},
            "heldout_ids": [d["id"] for d in ho] if name == "code" else None,
        }
        print(f"{name:7s} {len(tr):5d} train docs {manifest['sources'][name]['bytes']['train']:>10,d} B,"
              f" {len(ho):4d} held out {manifest['sources'][name]['bytes']['heldout']:>9,d} B", flush=True)

    chat = build_chat(train_sources)
    with open(os.path.join(args.out, "chat.train.jsonl"), "w", encoding="utf-8") as f:
        for d in chat:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
    cb = sum(len((d["user"] + d["assistant"]).encode()) for d in chat)
    manifest["sources"]["chat"] = {
        "package": None, "version": None,
        "licence": "derived from the train splits of code, austen, moby, web (licences as those)",
        "documents": {"train": len(chat), "heldout": 0}, "bytes": {"train": cb, "heldout": 0},
        "format": "<|im_start|>user\\n{user}<|im_end|>\\n<|im_start|>assistant\\n{assistant}<|im_end|>\\n",
    }
    print(f"chat    {len(chat):5d} pairs {cb:>10,d} B")
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
