"""A Python producer and consumer for cuilink (confluent-kafka + fastavro), plain wire format.

    pip install confluent-kafka fastavro
    python docs/examples/python_client.py --brokers host:9092 [--input cuilink.notes --output cuilink.linked]

Produces three NoteEvents (one with an emoji before its mention) and prints the LinkedNotes the
stage writes back. Offsets are UTF-16 code units: see `utf16_offset` and docs/stream-formats.md.
"""
import argparse
import hashlib
import io
import json
import time
import uuid
from pathlib import Path

import fastavro
from confluent_kafka import Consumer, Producer

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


def load(name):
    return fastavro.parse_schema(json.loads((SCHEMAS / name).read_text()))


def fingerprint(schema):
    # SHA-256 of the Parsing Canonical Form: the `cuilink-schema-fingerprint` header.
    return hashlib.sha256(fastavro.schema.to_parsing_canonical_form(schema).encode()).hexdigest()


def utf16_offset(text, index):
    """Python str index (code points) -> UTF-16 code units, what cuilink's start/end count."""
    return len(text[:index].encode("utf-16-le")) // 2


def mention(text, surface, mention_id, label="Phenotype"):
    i = text.index(surface)
    return {"id": mention_id, "start": utf16_offset(text, i), "end": utf16_offset(text, i + len(surface)),
            "text": surface, "label": label, "score": None}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--brokers", required=True)
    parser.add_argument("--input", default="cuilink.notes")
    parser.add_argument("--output", default="cuilink.linked")
    args = parser.parse_args()

    note_schema, linked_schema = load("note-event.avsc"), load("linked-note.avsc")
    headers = [("cuilink-schema-fingerprint", fingerprint(note_schema)), ("cuilink-schema", "org.cuilink.NoteEvent")]
    run = uuid.uuid4().hex[:8]
    texts = ["Seen for seizures and hypotonia.", "\U0001F600 Mother reports ataxia.", "Short stature; scoliosis noted."]
    surfaces = [["seizures", "hypotonia"], ["ataxia"], ["Short stature", "scoliosis"]]
    producer = Producer({"bootstrap.servers": args.brokers, "enable.idempotence": True})
    sent = []
    for n, (text, spans) in enumerate(zip(texts, surfaces)):
        note = {"noteId": f"py-{run}-{n}", "text": text, "mentions": [mention(text, s, f"m{j}") for j, s in enumerate(spans)],
                "source": "python-example", "timestamp": int(time.time() * 1000), "nerModelVersion": None}
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, note_schema, note)
        producer.produce(args.input, key=note["noteId"], value=buf.getvalue(), headers=headers)
        sent.append(note["noteId"])
    producer.flush(30)

    consumer = Consumer({"bootstrap.servers": args.brokers, "group.id": f"py-example-{run}", "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed"})
    consumer.subscribe([args.output])
    found, deadline = {}, time.time() + 120
    while len(found) < len(sent) and time.time() < deadline:
        msg = consumer.poll(1.0)
        if msg is None or msg.error() or msg.key().decode() not in sent:
            continue
        # The header names the writer schema; this example knows only the current LinkedNote.
        fp = dict(msg.headers() or []).get("cuilink-schema-fingerprint", b"").decode()
        assert fp == fingerprint(linked_schema), f"unknown LinkedNote schema {fp}"
        linked = fastavro.schemaless_reader(io.BytesIO(msg.value()), linked_schema)
        found[linked["noteId"]] = linked
        for m in linked["mentions"]:
            print(linked["noteId"], m["mentionId"], m["start"], m["end"], m["conceptId"], m["conceptName"], round(m["score"], 3))
    consumer.close()
    missing = [n for n in sent if n not in found]
    print(f"{len(found)} of {len(sent)} notes linked" + (f"; missing {missing} (check the dead-letter topic)" if missing else ""))
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
