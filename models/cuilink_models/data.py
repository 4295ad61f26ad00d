"""Concept JSONL (docs/kb-jsonl.md) reading, the MONDO rare-disease data-prep step, and the
training groups (synonym sets) built from one or more exported KBs.

No ontology parsing happens here: MEDIC, DOID and HPO come from `cuilink kb export`. The only
conversion is MONDO's `new-rare-diseases.tsv` (ID, LABEL, SYNONYMS joined by '|'), which the kb
exporter has no reader for; it is a three-column table and is turned into the documented JSONL.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Concept:
    id: str
    name: str
    synonyms: list[str] = field(default_factory=list)
    semanticTypes: list[str] = field(default_factory=list)
    parents: list[str] = field(default_factory=list)
    xrefs: list[str] = field(default_factory=list)
    altIds: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        seen, out = set(), []
        for n in [self.name, *self.synonyms]:
            k = n.strip()
            if k and k.lower() not in seen:
                seen.add(k.lower())
                out.append(k)
        return out


def open_text(path: Path | str):
    path = str(path)
    return gzip.open(path, "rt", encoding="utf-8") if path.endswith(".gz") else open(path, encoding="utf-8")


def read_concepts(path: Path | str) -> list[Concept]:
    out = []
    with open_text(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
                if not isinstance(obj, dict) or not obj.get("id") or not obj.get("name"):
                    raise ValueError("not a concept object with id and name")
            except ValueError as e:
                raise ValueError(f"{path}:{lineno}: {e}") from None
            out.append(
                Concept(
                    id=obj["id"],
                    name=obj["name"],
                    synonyms=list(obj.get("synonyms") or []),
                    semanticTypes=list(obj.get("semanticTypes") or []),
                    parents=list(obj.get("parents") or []),
                    xrefs=list(obj.get("xrefs") or []),
                    altIds=list(obj.get("altIds") or []),
                )
            )
    if not out:
        # An empty export (a failed `cuilink kb export`, a wrong path to a .gz) is never a KB to
        # train on or evaluate against: every caller would go on with nothing to learn or match.
        raise ValueError(f"{path}: no concept (an empty concept JSONL)")
    return out


def kb_specs(specs: list[str]) -> list[tuple[str, str]]:
    """(name, path) of each `--kb [name=]concept.jsonl`; without a name, the file's stem."""
    return [(name, path) for name, _, path in
            (spec.partition("=") if "=" in spec else (Path(spec).stem, "", spec) for spec in specs)]


# ----------------------------------------------------------------------------------------------
# MONDO rare-disease table -> concept JSONL (data prep only)


def convert_mondo_rare(tsv: Path, out: Path, mesh_sssom: Path | None = None) -> int:
    mesh: dict[str, list[str]] = {}
    if mesh_sssom is not None and Path(mesh_sssom).exists():
        with open_text(mesh_sssom) as f:
            header = None
            for line in f:
                if line.startswith("#"):
                    continue
                cols = line.rstrip("\n").split("\t")
                if header is None:
                    header = cols
                    continue
                row = dict(zip(header, cols))
                if row.get("predicate_id") == "skos:exactMatch" and row.get("object_id", "").lower().startswith("mesh:"):
                    mesh.setdefault(row["subject_id"], []).append("MESH:" + row["object_id"].split(":", 1)[1])
    n = 0
    out.parent.mkdir(parents=True, exist_ok=True)
    with open_text(tsv) as f, open(out, "w", encoding="utf-8") as w:
        header = f.readline().rstrip("\n").split("\t")
        if header[:3] != ["ID", "LABEL", "SYNONYMS"]:
            raise ValueError(f"{tsv}: unexpected header {header}")
        for lineno, line in enumerate(f, 2):
            cols = line.rstrip("\n").split("\t")
            if len(cols) < 2 or not cols[0].startswith("MONDO:") or not cols[1].strip():
                continue
            syns = [s.strip() for s in (cols[2] if len(cols) > 2 else "").split("|") if s.strip()]
            obj = {"id": cols[0], "name": cols[1].strip(), "synonyms": syns, "semanticTypes": [], "parents": [],
                   "xrefs": mesh.get(cols[0], []), "altIds": []}
            w.write(json.dumps(obj, ensure_ascii=False) + "\n")
            n += 1
    return n


# ----------------------------------------------------------------------------------------------
# training groups


@dataclass
class Group:
    """One training concept: a MEDIC concept with the synonyms of concepts merged into it, or a
    concept of another ontology on its own."""

    id: str
    names: list[str]
    parents: list[str]  # group ids
    sources: list[str]


def _norm_id(x: str) -> str:
    p, _, rest = x.partition(":")
    return f"{p.upper()}:{rest}" if rest else x


def build_groups(kbs: dict[str, list[Concept]], anchor: str = "medic", merge: bool = True) -> list[Group]:
    """Groups of names per concept. With merge, a concept of another KB joins the anchor KB's
    concept when it points to exactly one anchor concept: anchor altIds naming it (CTD lists DOID
    ids as AltDiseaseIDs), or its own MESH/OMIM xrefs naming an anchor id or alt id."""
    anchor_concepts = kbs.get(anchor, [])
    key_to_anchor: dict[str, set[str]] = {}
    for c in anchor_concepts:
        for k in [c.id, *c.altIds]:
            key_to_anchor.setdefault(_norm_id(k), set()).add(c.id)

    groups: dict[str, Group] = {}
    for c in anchor_concepts:
        groups[c.id] = Group(c.id, list(c.names), list(c.parents), [anchor])
    member_of: dict[str, str] = {c.id: c.id for c in anchor_concepts}

    for kb_name, concepts in kbs.items():
        if kb_name == anchor:
            continue
        for c in concepts:
            target = None
            if merge:
                hits: set[str] = set()
                hits |= key_to_anchor.get(_norm_id(c.id), set())
                for x in c.xrefs:
                    if x.split(":")[0].upper() in ("MESH", "OMIM"):
                        hits |= key_to_anchor.get(_norm_id(x), set())
                if len(hits) == 1:
                    target = next(iter(hits))
            if target is not None:
                g = groups[target]
                have = {n.lower() for n in g.names}
                g.names.extend(n for n in c.names if n.lower() not in have)
                if kb_name not in g.sources:
                    g.sources.append(kb_name)
                member_of[c.id] = target
            else:
                groups[c.id] = Group(c.id, list(c.names), list(c.parents), [kb_name])
                member_of[c.id] = c.id
    # parents expressed as group ids
    for g in groups.values():
        g.parents = sorted({member_of[p] for p in g.parents if p in member_of and member_of[p] != g.id})
    return list(groups.values())


def normalize_name(s: str) -> str:
    s = s.lower().strip()
    s = re.sub(r"\s+", " ", s)
    return s


def main(argv=None):
    ap = argparse.ArgumentParser(description="data prep: convert MONDO new-rare-diseases.tsv to concept JSONL")
    ap.add_argument("--mondo-rare", required=True)
    ap.add_argument("--mondo-mesh-sssom")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    n = convert_mondo_rare(Path(a.mondo_rare), Path(a.out), Path(a.mondo_mesh_sssom) if a.mondo_mesh_sssom else None)
    print(f"mondo rare diseases: {n} concepts -> {a.out}")


if __name__ == "__main__":
    main()
