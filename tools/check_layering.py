#!/usr/bin/env python3
"""Checks every #include in src/ against the allowed layering (docs/architecture.md).

Each src/<area> may include only its own headers, the areas listed for it below, the C++
standard library, and the third-party headers the table confines to it. Exits non-zero and
lists each violation as file:line.
"""
import pathlib
import re
import sys

ALLOWED = {
    "base": set(),
    "tensor": {"base"},
    "kernels": {"tensor", "base"},
    "io": {"tensor", "base"},
    "state": {"kernels", "tensor", "base"},
    "model": {"state", "kernels", "io", "tensor", "base"},
    "tokenizer": {"base"},
    "pack": {"io", "kernels", "tensor", "base"},
    "synth": {"pack", "io", "kernels", "tensor", "tokenizer", "base"},
    "sample": {"kernels", "tensor", "base"},
    "chat": {"base"},
    "grammar": {"tokenizer", "base"},
    "hub": {"io", "base"},
    "engine": {"model", "state", "sample", "tokenizer", "chat", "grammar", "io", "tensor", "kernels",
               "base"},
    "api": {"engine", "sample", "chat", "grammar", "tokenizer", "base"},
    "server": {"api", "engine", "chat", "tokenizer", "base"},
    "cli": {"server", "api", "engine", "pack", "synth", "model", "state", "sample", "tokenizer", "chat",
            "grammar", "hub", "io", "kernels", "tensor", "base"},
}
THIRD_PARTY = {
    "hwy/": {"kernels"},
    "nlohmann/": {"io", "tokenizer", "pack", "synth", "api", "server", "cli", "chat", "grammar",
                  "hub"},
    "curl/": {"hub"},
    "pcre2.h": {"tokenizer"},
    "utf8proc.h": {"tokenizer"},
    "httplib.h": {"server"},
    "CLI/": {"cli"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def check(root: pathlib.Path) -> list[str]:
    errors = []
    src = root / "src"
    for path in sorted(src.rglob("*")):
        if path.suffix not in {".h", ".cc", ".cpp", ".hpp"}:
            continue
        area = path.relative_to(src).parts[0]
        if area not in ALLOWED:
            errors.append(f"{path}: area '{area}' is missing from the layering table")
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            header = match.group(2)
            first = header.split("/")[0]
            if first in ALLOWED:
                if first != area and first not in ALLOWED[area]:
                    errors.append(f"{path}:{number}: {area} may not include {header}")
                continue
            for prefix, areas in THIRD_PARTY.items():
                if header.startswith(prefix) and area not in areas:
                    errors.append(f"{path}:{number}: only {sorted(areas)} may include {header}")
    return errors


def main() -> int:
    root = pathlib.Path(__file__).resolve().parent.parent
    errors = check(root)
    for error in errors:
        print(error)
    print(f"layering: {'FAILED' if errors else 'ok'} ({len(errors)} violations)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
