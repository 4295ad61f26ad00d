"""Lay phrases against HPO (issue 24, docs/confidence.md "Non-entities"): what the calibration does to
mentions written the way patients talk. HPO's layperson synonyms are taken out of the KB and used as
the mentions: each is a phrase a clinician or patient might write ("Coughing up blood") whose
concept the KB still has under its clinical names, so NIL is never right for them.

Writes OUT/hp-nolay.json.gz (hp.json without its layperson synonyms) and OUT/lay.PubTator (600
seeded layperson synonyms that are no remaining name of any concept, 5 to a note). Python stdlib only.
Usage: python3 bench/lay-phrases.py HP_JSON_GZ OUT_DIR
"""
import gzip
import json
import random
import re
import sys

LAYPERSON = 'hp#layperson'
SEED = 37
COUNT = 600
PER_NOTE = 5


def norm(text):
    return re.sub(r'\s+', ' ', text.lower()).strip()


def main(source, out):
    with gzip.open(source, 'rt') as f:
        graph = json.load(f)
    lay, names = [], set()
    for node in graph['graphs'][0]['nodes']:
        meta = node.get('meta') or {}
        synonyms = meta.get('synonyms') or []
        kept = [s for s in synonyms if LAYPERSON not in s.get('synonymType', '')]
        lay += [(node['id'].split('/')[-1].replace('_', ':'), s['val']) for s in synonyms if LAYPERSON in s.get('synonymType', '')]
        if synonyms:
            meta['synonyms'] = kept
        if node.get('lbl'):
            names.add(norm(node['lbl']))
        names.update(norm(s['val']) for s in kept)
    with gzip.open(f'{out}/hp-nolay.json.gz', 'wt') as f:
        json.dump(graph, f)
    candidates = [(cid, text) for cid, text in lay if norm(text) not in names and len(text) <= 60]
    random.Random(SEED).shuffle(candidates)
    picked = candidates[:COUNT]
    with open(f'{out}/lay.PubTator', 'w') as f:
        for k in range(0, len(picked), PER_NOTE):
            pmid, text, annotations = str(900000 + k // PER_NOTE), '', []
            for cid, phrase in picked[k:k + PER_NOTE]:
                start = len(text)
                text += phrase
                annotations.append(f'{pmid}\t{start}\t{len(text)}\t{phrase}\tPhenotype\t{cid}')
                text += '. '
            f.write(f'{pmid}|t|{text.rstrip()}\n{pmid}|a|\n' + '\n'.join(annotations) + '\n\n')
    print(f'{len(lay)} layperson synonyms, {len(candidates)} not a remaining name, {len(picked)} used')


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
