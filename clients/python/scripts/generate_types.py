"""Generates src/elementals/schema.py, the protocol's messages as TypedDicts, from the JSON
Schema the protocol crate derives from its Rust types (protocol/schema/messages.json).
`--check` compares instead of writing, and fails if the committed file is not what the
schema generates. Only the standard library: it runs before anything is installed."""

from __future__ import annotations

import json
import keyword
import os
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SCHEMA = Path(os.environ.get("ELEMENTALS_SCHEMA", HERE.parents[2] / "protocol" / "schema" / "messages.json"))
OUT = HERE.parent / "src" / "elementals" / "schema.py"


def ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def type_of(node: dict[str, Any]) -> str:
    """The Python type a schema node describes."""
    if "$ref" in node:
        return ref_name(node["$ref"])
    if "const" in node:
        return f"Literal[{json.dumps(node['const'])}]"
    if "enum" in node:
        return "Literal[" + ", ".join(json.dumps(v) for v in node["enum"]) + "]"
    for key in ("oneOf", "anyOf"):
        if key in node:
            return union([type_of(n) for n in node[key]])
    kinds = node.get("type")
    if isinstance(kinds, list):
        return union([type_of({**node, "type": k}) for k in kinds])
    if node.get("x-msgpack") == "bin":
        return "bytes"
    scalar = {"integer": "int", "number": "float", "string": "str", "boolean": "bool", "null": "None"}
    if kinds in scalar:
        return scalar[kinds]
    if kinds == "array":
        return f"list[{type_of(node.get('items', {}))}]"
    return "Any"


def union(types: list[str]) -> str:
    # Literals of one union read best as one Literal.
    literals = [t[len("Literal["):-1] for t in types if t.startswith("Literal[")]
    rest = [t for t in types if not t.startswith("Literal[")]
    merged = ([f"Literal[{', '.join(literals)}]"] if literals else []) + rest
    seen: list[str] = []
    for t in merged:
        if t not in seen:
            seen.append(t)
    return " | ".join(seen)


def doc(node: dict[str, Any], indent: str) -> list[str]:
    text = node.get("description")
    if not text:
        return []
    lines = text.replace('"""', "'''").strip().splitlines()
    if len(lines) == 1:
        return [f'{indent}"""{lines[0]}"""']
    return [f'{indent}"""{lines[0]}'] + [f"{indent}{line}".rstrip() for line in lines[1:]] + [f'{indent}"""']


def fields(node: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    required = set(node.get("required", []))
    out = []
    for name, prop in node["properties"].items():
        t = type_of(prop)
        out.append((name, t if name in required else f"NotRequired[{t}]", prop))
    return out


def alias(name: str, expr: str) -> str:
    """`name = expr`, one item a line when that is too long for one."""
    line = f"{name} = {expr}"
    if len(line) <= 100:
        return line
    if expr.startswith("Literal[") and expr.endswith("]") and " | " not in expr:
        items = [item.strip() for item in expr[len("Literal["):-1].split(", ")]
        return f"{name} = Literal[\n" + "".join(f"    {item},\n" for item in items) + "]"
    return f"{name} = (\n    " + "\n    | ".join(expr.split(" | ")) + "\n)"


def generate(schema: dict[str, Any]) -> str:
    defs: dict[str, dict[str, Any]] = schema["$defs"]
    aliases, classes, functional = [], [], []
    for name in sorted(defs):
        node = defs[name]
        if node.get("type") == "object" and "properties" in node:
            members = fields(node)
            if any(keyword.iskeyword(f) or not f.isidentifier() for f, _, _ in members):
                # Fields named by keywords (`from`) need the functional form.
                body = "".join(f"        {json.dumps(f)}: {t},\n" for f, t, _ in members)
                functional.append(f"{name} = TypedDict(\n    {json.dumps(name)},\n    {{\n{body}    }},\n)")
            else:
                lines = [f"class {name}(TypedDict):"] + doc(node, "    ")
                for f, t, prop in members:
                    # An attribute docstring: what editors show for the field.
                    lines += [f"    {f}: {t}"] + doc(prop, "    ")
                classes.append("\n".join(lines))
        else:
            aliases.append(alias(name, type_of(node)))
    # An alias is evaluated at import, so whatever it names comes first: aliases naming
    # classes (the unions ClientMsg and ServerMsg), or naming such aliases (ServerBatch),
    # come after the classes, and every alias after the aliases it names.
    names = {c.split("(")[0][len("class "):] for c in classes} | {f.split(" ")[0] for f in functional}
    refs = {a: set(re.findall(r"\w+", a.split(" = ", 1)[1])) for a in aliases}
    alias_of = {a.split(" = ", 1)[0]: a for a in aliases}
    late_names: set[str] = set()
    while True:
        more = {n for n, a in alias_of.items() if refs[a] & (names | late_names)} - late_names
        if not more:
            break
        late_names |= more
    ordered: list[str] = []

    def place(name: str) -> None:
        a = alias_of[name]
        if a in ordered:
            return
        for ref in sorted(refs[a] & alias_of.keys() - {name}):
            place(ref)
        ordered.append(a)

    for name in sorted(alias_of):
        place(name)
    late = [a for a in ordered if a.split(" = ", 1)[0] in late_names]
    early = [a for a in ordered if a not in late]
    parts = [
        '"""Generated by scripts/generate_types.py from protocol/schema/messages.json: do not edit."""\n\n'
        "from __future__ import annotations\n\nfrom typing import Any, Literal, NotRequired, TypedDict",
        "\n".join(early),
        *classes,
        "\n".join(functional),
        "\n".join(late),
    ]
    return "\n\n\n".join(p for p in parts if p) + "\n"


def main() -> None:
    generated = generate(json.loads(SCHEMA.read_text()))
    if "--check" in sys.argv:
        if not OUT.exists() or OUT.read_text() != generated:
            sys.exit("src/elementals/schema.py is not what protocol/schema/messages.json generates: "
                     "run python3 scripts/generate_types.py")
    else:
        OUT.write_text(generated)


if __name__ == "__main__":
    main()
